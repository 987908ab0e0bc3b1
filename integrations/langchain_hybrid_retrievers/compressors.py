"""LangChain rerankers over the core `Reranker` / `LLMReranker` / `ChoiceSelectReranker`,
and `RerankingRetriever`.

All of reranking for LangChain, in five sections: the shared compressor base
(`RerankCompressor`: checks, conversion, provenance keys), the three compressors
(`CrossEncoderReranker`, `LLMRerankCompressor`, `LLMChoiceRerankCompressor`: drop them into
``ContextualCompressionRetriever``), and `RerankingRetriever`, "retrieve ``fetch_k``,
keep the best ``k``" as one retriever. Scoring, sorting, thresholds and the LLM's answer parsing happen in
`hybrid_retrievers.rerank`, so LlamaIndex users get the same order.

Returned documents are new: the original ``id``, text and a copy of the metadata, plus
the rerank score under ``score_key`` (an earlier value is kept as
``previous_<score_key>``), the new ``rank``, ``previous_rank`` and, for the LLM,
``rerank_status`` / ``rerank_detail`` (`hybrid_retrievers.rerank`'s provenance).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import RetrieverLike
from pydantic import ConfigDict, PrivateAttr, field_validator, model_validator

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.integration import (
    DEFAULT_LLM_TIMEOUT,
    check_k,
    input_position,
    pair_reranker,
    positional_docs,
)
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import (
    DEFAULT_CHOICE_SELECT_PROMPT,
    DEFAULT_LLM_RERANK_PROMPT,
    RERANK_KEY,
    ChoiceSelectReranker,
    LLMReranker,
    Reranker,
)

from ._base import (
    ARGUMENT_HINTS,
    StrictRetriever,
    accepts_k,
    check_arguments,
    child_config,
    count_validator,
)
from ._convert import RANK_KEY, with_metadata
from ._llm import LangChainGenerator, as_text_generator, llm_name

__all__ = ["CrossEncoderReranker", "LLMChoiceRerankCompressor", "LLMRerankCompressor",
           "RerankingRetriever"]


# ------------------------------------------------ the compressors' shared base

PREVIOUS_RANK_KEY = "previous_rank"
STATUS_KEY = "rerank_status"
DETAIL_KEY = "rerank_detail"
_RESERVED = (RANK_KEY, PREVIOUS_RANK_KEY, STATUS_KEY, DETAIL_KEY)


_LOADED_MODEL = ("pass a loaded model instead: model=HuggingFaceCrossEncoder(model_name=..., "
                 "model_kwargs={...}) or sentence_transformers.CrossEncoder(name, ...)")
_COMPRESSOR_HINTS: dict[str, str] = {
    **ARGUMENT_HINTS,
    "trust_remote_code": _LOADED_MODEL,
    "model_kwargs": _LOADED_MODEL,
    "top_k": "the number of documents to keep is top_n",
    "reranker": "LangChain's LLMListwiseRerank takes a runnable; here build it with "
                "LLMRerankCompressor.from_llm(llm) or LLMRerankCompressor(llm=...)",
}
"""Hints of the compressors' refused keywords (LangChain spellings of other classes)."""


def check_documents(documents: Any) -> list[Document]:
    if isinstance(documents, (str, Document)) or not isinstance(documents, Sequence):
        raise TypeError(
            f"documents must be a list of Document, got {type(documents).__name__}; "
            "wrap a single document in a list"
        )
    for i, d in enumerate(documents):
        if not isinstance(d, Document):
            raise TypeError(
                f"documents[{i}] must be a langchain_core Document, got {type(d).__name__}"
            )
    return list(documents)


def to_core(documents: list[Document]) -> list[Doc]:
    """The documents as positional core docs (`positional_docs`), metadata kept."""
    return positional_docs((d.id, d.page_content, d.metadata) for d in documents)


def to_documents(hits: list[Hit], documents: list[Document],
                 score_key: str | None) -> list[Document]:
    """New documents for ``hits``, with the provenance keys (no score when ``score_key``
    is ``None``: a stage that keeps the input order has none of its own)."""
    out = []
    for hit in hits:
        original = documents[input_position(hit)]
        info = hit.explanation[RERANK_KEY]
        updates: dict[str, Any] = {}
        if score_key is not None:
            if score_key in original.metadata:
                updates[f"previous_{score_key}"] = original.metadata[score_key]
            updates[score_key] = float(hit.score)
        updates.update({RANK_KEY: hit.rank, PREVIOUS_RANK_KEY: info["previous_rank"]})
        if "status" in info:
            updates.update({STATUS_KEY: info["status"], DETAIL_KEY: info["detail"]})
        out.append(with_metadata(original, updates))
    return out


class RerankCompressor(BaseDocumentCompressor):
    """Shared plumbing: validation of ``top_n`` / ``score_key`` and per-call ``top_n``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    top_n: int = 3
    """How many documents to keep (>= 1); more than the input keeps all."""

    score_key: str = "relevance_score"
    """Metadata key of the rerank score on returned documents."""

    _reranker: Any = PrivateAttr()
    _check_top_n = count_validator("top_n")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        return check_arguments(cls, values, _COMPRESSOR_HINTS)

    @property
    def reranker(self) -> Reranker | LLMReranker | ChoiceSelectReranker:
        """The core reranker doing the work (`hybrid_retrievers.rerank`)."""
        return self._reranker  # type: ignore[no-any-return]

    @field_validator("score_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"score_key must be a non-empty string, got {value!r}; "
                             "e.g. 'relevance_score'")
        if value in _RESERVED:
            raise ValueError(f"score_key must not be one of {_RESERVED!r} (used for "
                             f"provenance), got {value!r}; use e.g. 'relevance_score'")
        return value

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The core reranker's ``rerank`` (``arerank`` when async) and its keyword
        arguments besides ``top_n``, reporting model calls to ``callbacks``."""
        raise NotImplementedError

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        rerank, kwargs = self._core_call(callbacks, asynchronous=False)
        hits = rerank(query, to_core(docs), top_n=self._top_n(top_n), **kwargs)
        return to_documents(hits, docs, self._written_score_key())

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        arerank, kwargs = self._core_call(callbacks, asynchronous=True)
        hits = await arerank(query, to_core(docs), top_n=self._top_n(top_n), **kwargs)
        return to_documents(hits, docs, self._written_score_key())

    def _written_score_key(self) -> str | None:
        """Where the stage's score goes on returned documents (``None``: nowhere)."""
        return self.score_key

    def _top_n(self, top_n: int | None) -> int:
        return self.top_n if top_n is None else top_n

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; return the best ``top_n`` as new documents."""
        return self._rerank_documents(documents, query, top_n=None, callbacks=callbacks)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async `compress_documents` (the model never runs on the event loop)."""
        return await self._arerank_documents(documents, query, top_n=None, callbacks=callbacks)


# ------------------------------------------------------------- cross-encoder

class CrossEncoderReranker(RerankCompressor):
    """Rerank documents with a cross-encoder, keeping scores (a document compressor).

    Unlike ``langchain_classic``'s ``CrossEncoderReranker`` it keeps the score on every
    document, has a threshold, and runs the model (loaded on first use) in a worker
    thread under ``acompress_documents``.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import CrossEncoderReranker
        >>> class Overlap:  # any object with score(pairs) -> scores works as the model
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> reranker = CrossEncoderReranker(model=Overlap(), top_n=1)
        >>> docs = [Document("cats sleep"), Document("wing lift and drag")]
        >>> best = reranker.compress_documents(docs, "wing lift")[0]
        >>> best.page_content, best.metadata["relevance_score"], best.metadata["previous_rank"]
        ('wing lift and drag', 2.0, 2)

        With a real model: ``ContextualCompressionRetriever(base_compressor=
        CrossEncoderReranker(model="cross-encoder/ms-marco-MiniLM-L-6-v2"), ...)``.
    """

    model: Any = DEFAULT_CROSS_ENCODER
    """A model name or local path (loaded on first use), a loaded
    ``sentence_transformers.CrossEncoder``, or any scorer with ``score(pairs)`` (a
    `hybrid_retrievers.PairScorer`, or LangChain's ``HuggingFaceCrossEncoder``)."""

    score_threshold: float | None = None
    """Drop documents scoring below this (in the model's units), before ``top_n``."""

    batch_size: int = 32
    """Pairs per forward pass (for a name, path or ``CrossEncoder`` model)."""

    max_length: int | None = None
    """Longest input in tokens, when loading a model by name or path."""

    device: str | None = None
    """Device for a model loaded by name or path (``None``: sentence-transformers chooses)."""

    def model_post_init(self, context: Any, /) -> None:
        # Validates score_threshold; top_n and the threshold are read per call (`_core_call`).
        self._reranker = pair_reranker(
            self.model, top_n=self.top_n, score_threshold=self.score_threshold,
            batch_size=self.batch_size, max_length=self.max_length, device=self.device)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        rerank = self._reranker.arerank if asynchronous else self._reranker.rerank
        return rerank, {"score_threshold": self.score_threshold}


# ------------------------------------------------------------- listwise (LLM)

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

    @classmethod
    def from_llm(cls, llm: Any, *, prompt: str | None = None,
                 **kwargs: Any) -> LLMRerankCompressor:
        """A compressor over ``llm``, as LangChain's ``LLMListwiseRerank.from_llm(llm,
        prompt=None, top_n=...)``; ``kwargs`` are the other fields (``top_n``,
        ``timeout``...).

        Any LLM, chat model, runnable or callable works (the answer is parsed from text,
        so ``with_structured_output`` is not needed); ``prompt`` is this class's template
        (``{query}``, ``{passages}``, ``{n}``): a LangChain prompt template is refused
        with a TypeError, as its variables (``{context}``) are not these.

        Example:
            >>> from langchain_core.language_models import FakeListChatModel
            >>> from langchain_hybrid_retrievers import LLMRerankCompressor
            >>> LLMRerankCompressor.from_llm(FakeListChatModel(responses=["[1]"]), top_n=5).top_n
            5
        """
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(
                "prompt must be a str template with {query} and {passages} (this class ranks "
                f"from the text answer), got {type(prompt).__name__}; LangChain's "
                "LLMListwiseRerank prompt ({context}, {query}) does not apply"
            )
        return cls(llm=llm, **kwargs) if prompt is None else cls(llm=llm, prompt=prompt,
                                                                  **kwargs)

    def model_post_init(self, context: Any, /) -> None:
        generate, agenerate = self._generators(None)  # checks the llm
        self._reranker = LLMReranker(
            generate, agenerate=agenerate, top_n=self.top_n, window=self.window,
            step=self.step, prompt=self.prompt, max_passage_chars=self.max_passage_chars,
            name=llm_name(self.llm), timeout=self.timeout,
        )

    def _generators(self, callbacks: Callbacks) -> tuple[Any, Any]:
        """``(generate, agenerate)`` reporting to ``callbacks`` (`_generators`). Read per
        call, so assigning ``llm`` later takes effect."""
        return _generators(self.llm, callbacks)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        generate, agenerate = self._generators(callbacks)
        if asynchronous:
            return self._reranker.arerank, {"generate": generate, "agenerate": agenerate}
        return self._reranker.rerank, {"generate": generate}


# ------------------------------------------------------ choice select (LLM)

class LLMChoiceRerankCompressor(RerankCompressor):
    """LlamaIndex's ``LLMRerank`` algorithm for LangChain: the LLM picks and scores the
    relevant documents of each batch (a document compressor).

    The LangChain face of the core `hybrid_retrievers.rerank.ChoiceSelectReranker`:
    documents go to the LLM in batches of ``choice_batch_size`` as ``"Document 1:\n..."``;
    it answers ``"Doc: N, Relevance: S"`` lines; the chosen documents are sorted by
    relevance (``relevance_score``) across batches and the others dropped, so fewer than
    ``top_n`` may come back. A batch whose call fails, times out or whose answer names
    no document keeps its input order after the chosen ones (``relevance_score`` 0.0,
    ``rerank_status="fallback"``, the reason in ``rerank_detail``).

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_hybrid_retrievers import LLMChoiceRerankCompressor
        >>> llm = FakeListLLM(responses=["Doc: 2, Relevance: 8"])
        >>> docs = [Document("cats sleep"), Document("wing lift and drag")]
        >>> out = LLMChoiceRerankCompressor(llm=llm).compress_documents(docs, "wing lift")
        >>> [(d.page_content, d.metadata["relevance_score"]) for d in out]
        [('wing lift and drag', 8.0)]
    """

    llm: Any
    """A LangChain LLM, chat model or any runnable taking a prompt string, or a plain
    callable ``str -> str``."""

    choice_batch_size: int = 10
    """Documents per LLM call (LlamaIndex's default)."""

    prompt: str = DEFAULT_CHOICE_SELECT_PROMPT
    """Template with ``{context_str}`` (the numbered batch) and ``{query_str}``: LlamaIndex's
    choice-select prompt by default."""

    timeout: float | None = DEFAULT_LLM_TIMEOUT
    """Seconds to wait for each LLM answer before keeping that batch's input order
    (``None``: no limit)."""

    _check_batch = count_validator("choice_batch_size")

    def model_post_init(self, context: Any, /) -> None:
        generate, agenerate = _generators(self.llm, None)  # checks the llm
        self._reranker = ChoiceSelectReranker(
            generate, agenerate=agenerate, top_n=self.top_n,
            choice_batch_size=self.choice_batch_size, prompt=self.prompt,
            name=llm_name(self.llm), timeout=self.timeout)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        generate, agenerate = _generators(self.llm, callbacks)
        build = self._reranker.build_prompt
        options: dict[str, Any] = {
            "ask": lambda query, batch: generate(build(query, [d.text for d in batch])),
            "choice_batch_size": self.choice_batch_size}
        if not asynchronous:
            return self._reranker.rerank, options
        if agenerate is not None:
            async def aask(query: str, batch: list[Doc]) -> Any:
                return await agenerate(build(query, [d.text for d in batch]))

            options["aask"] = aask
        return self._reranker.arerank, options


def _generators(llm: Any, callbacks: Callbacks) -> tuple[Any, Any]:
    """``(generate, agenerate)`` for ``llm``, reporting to ``callbacks``; a plain callable
    has no ``agenerate`` (the core runs it in a worker thread)."""
    generator = as_text_generator(llm)
    if isinstance(generator, LangChainGenerator):
        bound = generator.with_callbacks(callbacks)
        return bound, bound.agenerate
    return generator, None


class RerankingRetriever(StrictRetriever):
    """Retrieve ``fetch_k`` candidates, rerank them, return the best ``k``: one object.

    ``k`` is "how many documents", as on every retriever of this package (the compressors
    say ``top_n``, as LangChain's own compressors do). ``fetch_k`` is passed as
    ``k=fetch_k`` to a base retriever that takes a per-call ``k`` (`accepts_k`); others are
    called as configured. Per call, ``invoke(q, k=3)`` and ``invoke(q, fetch_k=50)``
    override both. The reranker is one of this module's compressors, or any
    ``BaseDocumentCompressor`` (cut to ``k``).

    Example:
        >>> from langchain_hybrid_retrievers import (
        ...     BM25Retriever, CrossEncoderReranker, RerankingRetriever)
        >>> class Overlap:
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> retriever = RerankingRetriever(
        ...     base_retriever=BM25Retriever.from_texts(
        ...         ["wing lift", "wing", "lift and drag of a wing", "bread"]),
        ...     reranker=CrossEncoderReranker(model=Overlap()), fetch_k=3, k=1)
        >>> [d.page_content for d in retriever.invoke("lift of a wing")]
        ['lift and drag of a wing']
    """

    base_retriever: RetrieverLike
    """The retriever that finds the candidates (any retriever or runnable from a query to
    a list of `Document`, e.g. one wrapped by ``with_config``)."""

    reranker: BaseDocumentCompressor
    """Reorders the candidates (`CrossEncoderReranker`, `LLMRerankCompressor`, or any compressor)."""

    fetch_k: int | None = 30
    """Candidates to ask the base retriever for (see the class docstring for the rule)."""

    k: int = 5
    """Documents to return (>= 1); override per call with ``invoke(q, k=3)``."""

    _check_k = count_validator("k")
    _check_fetch_k = count_validator("fetch_k", optional=True)

    def _resolve(self, run_manager: Any, k: int | None, fetch_k: int | None, top_n: Any, *,
                 asynchronous: bool) -> tuple[int, Any, dict[str, Any]]:
        """``k``, the child config for the base retriever and its keyword arguments."""
        _refuse_top_n(type(self), top_n)
        n = self.k if k is None else check_k(k, name="k")
        fetch = self.fetch_k if fetch_k is None else check_k(fetch_k, name="fetch_k")
        passes = fetch is not None and accepts_k(self.base_retriever, asynchronous=asynchronous)
        return n, child_config(run_manager), {"k": fetch} if passes else {}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, fetch_k: int | None = None, top_n: Any = None,
    ) -> list[Document]:
        """Retrieve candidates, rerank them and return the best ``k``."""
        n, config, kwargs = self._resolve(run_manager, k, fetch_k, top_n, asynchronous=False)
        docs = self.base_retriever.invoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return self.reranker._rerank_documents(docs, query, top_n=n,
                                                   callbacks=config["callbacks"])
        out = self.reranker.compress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, fetch_k: int | None = None, top_n: Any = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: async retrieval, reranking in a worker thread."""
        n, config, kwargs = self._resolve(run_manager, k, fetch_k, top_n, asynchronous=True)
        docs = await self.base_retriever.ainvoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return await self.reranker._arerank_documents(docs, query, top_n=n,
                                                          callbacks=config["callbacks"])
        out = await self.reranker.acompress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]


def _refuse_top_n(cls: type, top_n: Any) -> None:
    """`TypeError` for a per-call ``top_n=`` (the compressors' spelling), naming ``k=``."""
    if top_n is not None:
        raise TypeError(f"{cls.__name__}.invoke got an unexpected argument 'top_n' "
                        f"({ARGUMENT_HINTS['top_n']})")
