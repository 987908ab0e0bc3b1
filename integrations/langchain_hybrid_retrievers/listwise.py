"""`LLMRerankCompressor`: listwise reranking with any LangChain LLM, as a document compressor.

The model is wrapped by ``_llm`` and the work done by the core's `LLMReranker`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import Callbacks

from hybrid_retrievers.integration import DEFAULT_LLM_TIMEOUT
from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT, LLMReranker

from ._llm import LangChainGenerator, as_text_generator, llm_name
from ._rerank import RerankCompressor

__all__ = ["LLMRerankCompressor"]


class LLMRerankCompressor(RerankCompressor):
    """Listwise reranking by an LLM, failing safe (a document compressor).

    The LangChain face of the core `hybrid_retrievers.LLMReranker`; the name says it is a
    ``BaseDocumentCompressor`` (drop it into ``ContextualCompressionRetriever``).

    The LLM is asked for the order of the numbered documents; when its answer is unusable
    or it raises, the input order is kept and ``rerank_status`` / ``rerank_detail`` say
    why. The LLM call goes through the compressor's callbacks, so it shows up in traces.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_hybrid_retrievers import LLMRerankCompressor
        >>> reranker = LLMRerankCompressor(llm=FakeListLLM(responses=["[2] > [1]"]), top_n=2)
        >>> docs = [Document("cats sleep"), Document("wing lift and drag")]
        >>> [d.page_content for d in reranker.compress_documents(docs, "wing lift")]
        ['wing lift and drag', 'cats sleep']
    """

    llm: Any
    """A LangChain LLM, chat model or any runnable taking a prompt string (e.g. a
    ``prompt | model | parser`` chain), or a plain callable ``str -> str``."""

    window: int | None = None
    """Most documents per prompt; longer lists use RankGPT's sliding window. ``None``: all."""

    step: int | None = None
    """How far the sliding window moves (``None``: half the window)."""

    prompt: str = DEFAULT_LLM_RERANK_PROMPT
    """Prompt template with ``{query}``, ``{passages}`` and optionally ``{n}``."""

    max_passage_chars: int | None = 1000
    """Longer documents are cut to this many characters in the prompt (``None``: whole)."""

    timeout: float | None = DEFAULT_LLM_TIMEOUT
    """Seconds to wait for each LLM answer before keeping the input order (``None``: no
    limit)."""

    def model_post_init(self, context: Any, /) -> None:
        generate, agenerate = self._generators(None)  # checks the llm
        self._reranker = LLMReranker(
            generate, agenerate=agenerate, top_n=self.top_n, window=self.window,
            step=self.step, prompt=self.prompt, max_passage_chars=self.max_passage_chars,
            name=llm_name(self.llm), timeout=self.timeout,
        )

    def _generators(self, callbacks: Callbacks) -> tuple[Any, Any]:
        """``(generate, agenerate)`` reporting to ``callbacks``; a plain callable has no
        ``agenerate`` (the core runs it in a worker thread). Read per call, so
        assigning ``llm`` later takes effect."""
        generator = as_text_generator(self.llm)
        if isinstance(generator, LangChainGenerator):
            bound = generator.with_callbacks(callbacks)
            return bound, bound.agenerate
        return generator, None

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        generate, agenerate = self._generators(callbacks)
        if asynchronous:
            return self._reranker.arerank, {"generate": generate, "agenerate": agenerate}
        return self._reranker.rerank, {"generate": generate}
