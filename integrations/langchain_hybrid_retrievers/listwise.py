"""`LLMReranker`: listwise reranking with any LangChain LLM, as a document compressor.

The model is wrapped by `langchain_hybrid_retrievers._llm` (one wrapper for every
adapter) and the work done by the core's `hybrid_retrievers.rerank.LLMReranker`; see
`langchain_hybrid_retrievers.compressors` for the metadata of returned documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from pydantic import PrivateAttr

from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker
from hybrid_retrievers.timeout import DEFAULT_LLM_TIMEOUT

from ._llm import LangChainGenerator, as_text_generator, llm_name
from ._rerank import RerankCompressor, check_documents, to_core, to_documents

__all__ = ["LLMReranker"]


class LLMReranker(RerankCompressor):
    """Listwise reranking by an LLM, failing safe (a document compressor).

    The LLM sees the query and the numbered documents and is asked for their order; its
    answer is parsed leniently (``"[2] > [1] > [3]"``, ``"2, 1, 3"``, extra prose,
    repeats, out-of-range numbers). When the answer is unusable or the LLM raises, the
    input order is kept and ``rerank_status="fallback"`` / ``rerank_detail`` say why
    (and a warning is logged): the query never fails because of the reranker.
    The LLM call goes through LangChain's callbacks (``invoke`` / ``ainvoke`` with the
    compressor's callbacks), so it shows up in traces.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_hybrid_retrievers import LLMReranker
        >>> reranker = LLMReranker(llm=FakeListLLM(responses=["[2] > [1]"]), top_n=2)
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
    limit); a hung LLM never blocks the query nor keeps the process alive at exit."""

    _reranker: CoreLLMReranker = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        generate, agenerate = self._generators(None)  # checks the llm
        self._reranker = CoreLLMReranker(
            generate, agenerate=agenerate, top_n=self.top_n, window=self.window,
            step=self.step, prompt=self.prompt, max_passage_chars=self.max_passage_chars,
            name=llm_name(self.llm), timeout=self.timeout,
        )

    @property
    def reranker(self) -> CoreLLMReranker:
        """The core `hybrid_retrievers.rerank.LLMReranker` doing the work."""
        return self._reranker

    def _generators(self, callbacks: Callbacks) -> tuple[Any, Any]:
        """``(generate, agenerate)`` reporting to ``callbacks``; a plain callable has no
        ``agenerate`` (the core runs it in a worker thread). Read per call, so
        assigning ``llm`` later takes effect."""
        generator = as_text_generator(self.llm)
        if isinstance(generator, LangChainGenerator):
            bound = generator.with_callbacks(callbacks)
            return bound, bound.agenerate
        return generator, None

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        generate, _ = self._generators(callbacks)
        hits = self._reranker.rerank(query, to_core(docs),
                                     top_n=self.top_n if top_n is None else top_n,
                                     generate=generate)
        return to_documents(hits, docs, self.score_key)

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        generate, agenerate = self._generators(callbacks)
        hits = await self._reranker.arerank(
            query, to_core(docs), top_n=self.top_n if top_n is None else top_n,
            generate=generate, agenerate=agenerate)
        return to_documents(hits, docs, self.score_key)
