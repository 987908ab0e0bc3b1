"""LangChain rerankers: document compressors over the core `Reranker` / `LLMReranker`.

* `CrossEncoderReranker` — a cross-encoder (or any `PairScorer`) as a
  ``BaseDocumentCompressor``; drop it into ``ContextualCompressionRetriever``.
* `LLMReranker` — listwise reranking with any LangChain LLM, chat model or runnable.
* `RerankingRetriever` — "retrieve ``fetch_k``, keep the best ``top_n``" as one retriever.

The adapters are thin: scoring, sorting, thresholds, tie-breaking and the LLM's answer
parsing all happen in `hybrid_retrievers.rerank`, so LlamaIndex users get the same order.

Returned documents are new `Document` objects (the inputs are never edited) with the
original ``id``, ``page_content`` and a copy of the metadata, plus:

=========================  ============================================================
key                        value
=========================  ============================================================
``relevance_score``        the rerank score (the key is the ``score_key`` field);
                           cross-encoder: the model's score (a probability with the
                           default sigmoid); LLM: ``1 / rank``
``rank``                   the new 1-based rank (overwrites a retriever's ``rank``)
``previous_rank``          the document's 1-based position in the input list
``previous_<score_key>``   only when the input already carried ``score_key`` (reranked
                           twice): its earlier value
``rerank_status``          LLM only: ``"ok"``, ``"repaired"`` or ``"fallback"``
``rerank_detail``          LLM only: what was repaired, or why the input order was kept
=========================  ============================================================

Other metadata, such as the retriever's own ``score``, is kept unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, PrivateAttr, field_validator, model_validator

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.timeout import DEFAULT_LLM_TIMEOUT
from hybrid_retrievers.validation import check_k
from hybrid_retrievers.models.cross_encoder import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import (
    DEFAULT_LLM_RERANK_PROMPT,
    RERANK_KEY,
)
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker
from hybrid_retrievers.rerank import Reranker as CoreReranker

from ._base import StrictRetriever, accepts_k, check_arguments, child_config
from ._convert import RANK_KEY, copy_metadata

__all__ = ["CrossEncoderReranker", "LLMReranker", "RerankingRetriever"]

PREVIOUS_RANK_KEY = "previous_rank"
STATUS_KEY = "rerank_status"
DETAIL_KEY = "rerank_detail"
_RESERVED = (RANK_KEY, PREVIOUS_RANK_KEY, STATUS_KEY, DETAIL_KEY)


def _check_documents(documents: Any) -> list[Document]:
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


def _to_core(documents: list[Document]) -> list[Doc]:
    # Positions as ids: LangChain documents may lack ids, and every input must map back to
    # exactly its own Document. A repeated Document.id gets its first occurrence's
    # position, so the core keeps only that one, as it does for repeated Doc ids.
    first: dict[str, int] = {}
    out = []
    for i, d in enumerate(documents):
        position = i if d.id is None else first.setdefault(d.id, i)
        out.append(Doc(str(position), d.page_content))
    return out


def _to_documents(hits: list[Hit], documents: list[Document], score_key: str) -> list[Document]:
    out = []
    for hit in hits:
        original = documents[int(hit.doc.id)]
        info = hit.explanation[RERANK_KEY]
        metadata = copy_metadata(original.metadata)
        if score_key in metadata:
            metadata[f"previous_{score_key}"] = metadata[score_key]
        metadata[score_key] = float(hit.score)
        metadata[RANK_KEY] = hit.rank
        metadata[PREVIOUS_RANK_KEY] = info["previous_rank"]
        if "status" in info:
            metadata[STATUS_KEY] = info["status"]
            metadata[DETAIL_KEY] = info["detail"]
        out.append(Document(id=original.id, page_content=original.page_content,
                            metadata=metadata))
    return out


def _check_score_key(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"score_key must be a non-empty string, got {value!r}; "
                         "e.g. 'relevance_score'")
    if value in _RESERVED:
        raise ValueError(f"score_key must not be one of {_RESERVED!r} (used for provenance), "
                         f"got {value!r}; use e.g. 'relevance_score'")
    return value


class _RerankCompressor(BaseDocumentCompressor):
    """Shared plumbing: validation of ``top_n`` / ``score_key`` and per-call ``top_n``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    top_n: int = 3
    """How many documents to keep (>= 1); more than the input keeps all."""

    score_key: str = "relevance_score"
    """Metadata key of the rerank score on returned documents."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        return check_arguments(cls, values)

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    @field_validator("score_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        return _check_score_key(value)

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        raise NotImplementedError

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        raise NotImplementedError

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; return the best ``top_n`` as new documents."""
        return self._rerank_documents(documents, query, top_n=None, callbacks=callbacks)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async `compress_documents` (the model never runs on the event loop)."""
        return await self._arerank_documents(documents, query, top_n=None, callbacks=callbacks)


# ----------------------------------------------------------------- cross-encoder


class CrossEncoderReranker(_RerankCompressor):
    """Rerank documents with a cross-encoder, keeping scores (a document compressor).

    Unlike ``langchain_classic``'s ``CrossEncoderReranker`` it keeps the score on every
    document, has a threshold and a batch size, sorts pairs by length before batching,
    handles two-logit models, and runs the model in a worker thread under
    ``acompress_documents``. The model is loaded on first use.

    See the module docstring for the metadata of returned documents.

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

        With a real model, inside LangChain's ``ContextualCompressionRetriever``::

            from langchain_classic.retrievers import ContextualCompressionRetriever
            compressor = CrossEncoderReranker(model="cross-encoder/ms-marco-MiniLM-L-6-v2",
                                              top_n=5)
            retriever = ContextualCompressionRetriever(base_compressor=compressor,
                                                       base_retriever=bm25_retriever)
    """

    model: Any = DEFAULT_CROSS_ENCODER
    """A model name or local path (loaded on first use), a loaded
    ``sentence_transformers.CrossEncoder``, or any scorer with ``score(pairs)`` (a
    `hybrid_retrievers.PairScorer`, or LangChain's ``HuggingFaceCrossEncoder``)."""

    score_threshold: float | None = None
    """Drop documents scoring below this (in the model's units: a probability for the
    default sigmoid), before ``top_n``; ``None`` keeps every score."""

    batch_size: int = 32
    """Pairs per forward pass (for a name, path or ``CrossEncoder`` model)."""

    max_length: int | None = None
    """Longest input in tokens, when loading a model by name or path."""

    device: str | None = None
    """Device for a model loaded by name or path (``None``: sentence-transformers chooses)."""

    _reranker: CoreReranker = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        model = self.model
        if isinstance(model, str) or callable(getattr(model, "predict", None)) and not callable(
            getattr(model, "score", None)
        ):
            from hybrid_retrievers.models import CrossEncoderScorer

            scorer: Any = CrossEncoderScorer(model, batch_size=self.batch_size,
                                             max_length=self.max_length, device=self.device)
        elif callable(getattr(model, "score", None)):
            scorer = model
        else:
            raise TypeError(
                "model must be a model name, a local path, a sentence_transformers "
                "CrossEncoder or an object with score(pairs), got "
                f"{type(model).__name__}: {model!r:.80}"
            )
        # Validates score_threshold; top_n and the threshold are read per call from the
        # fields, so assigning them later takes effect.
        self._reranker = CoreReranker(scorer, top_n=self.top_n,
                                      score_threshold=self.score_threshold)

    @property
    def reranker(self) -> CoreReranker:
        """The core `hybrid_retrievers.rerank.Reranker` doing the work."""
        return self._reranker

    def _args(self, documents: Sequence[Document], top_n: int | None) -> tuple[Any, ...]:
        docs = _check_documents(documents)
        return docs, _to_core(docs), {
            "top_n": self.top_n if top_n is None else top_n,
            "score_threshold": self.score_threshold,
        }

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs, core, kwargs = self._args(documents, top_n)
        if not docs:
            return []
        hits = self._reranker.rerank(query, core, **kwargs)
        return _to_documents(hits, docs, self.score_key)

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs, core, kwargs = self._args(documents, top_n)
        if not docs:
            return []
        hits = await self._reranker.arerank(query, core, **kwargs)
        return _to_documents(hits, docs, self.score_key)


# ----------------------------------------------------------------------- LLM


def _message_text(answer: Any) -> Any:
    """The text of an LLM's answer: a str, or a chat message's text."""
    if isinstance(answer, BaseMessage):
        text = answer.text  # a str-like property in langchain-core >= 1.0, a method before
        return str(text) if isinstance(text, str) else text()
    return answer


def _llm_name(llm: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value.strip():
            return value
    if isinstance(llm, Runnable):
        return llm.get_name()
    return getattr(llm, "__name__", None) or type(llm).__name__


class LLMReranker(_RerankCompressor):
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
        llm = self.llm
        if not isinstance(llm, Runnable) and not callable(llm):
            raise TypeError(
                "llm must be a LangChain LLM, chat model or runnable, or a callable "
                f"str -> str, got {type(llm).__name__}: {llm!r:.80}"
            )
        self._reranker = CoreLLMReranker(
            self._generate(None), top_n=self.top_n, window=self.window, step=self.step,
            prompt=self.prompt, max_passage_chars=self.max_passage_chars, name=_llm_name(llm),
            timeout=self.timeout,
        )

    @property
    def reranker(self) -> CoreLLMReranker:
        """The core `hybrid_retrievers.rerank.LLMReranker` doing the work."""
        return self._reranker

    def _generate(self, callbacks: Callbacks) -> Any:
        llm = self.llm
        if isinstance(llm, Runnable):
            config = {"callbacks": callbacks} if callbacks is not None else None
            return lambda prompt: _message_text(llm.invoke(prompt, config=config))
        return lambda prompt: _message_text(llm(prompt))

    def _agenerate(self, callbacks: Callbacks) -> Any:
        llm = self.llm
        if not isinstance(llm, Runnable):
            return None  # the core runs the plain callable in a worker thread
        config = {"callbacks": callbacks} if callbacks is not None else None

        async def agenerate(prompt: str) -> Any:
            return _message_text(await llm.ainvoke(prompt, config=config))

        return agenerate

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = _check_documents(documents)
        if not docs:
            return []
        hits = self._reranker.rerank(query, _to_core(docs),
                                     top_n=self.top_n if top_n is None else top_n,
                                     generate=self._generate(callbacks))
        return _to_documents(hits, docs, self.score_key)

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = _check_documents(documents)
        if not docs:
            return []
        agenerate = self._agenerate(callbacks)
        hits = await self._reranker.arerank(
            query, _to_core(docs), top_n=self.top_n if top_n is None else top_n,
            generate=self._generate(callbacks),
            agenerate=agenerate,
        )
        return _to_documents(hits, docs, self.score_key)


# ----------------------------------------------------------------- retriever


class RerankingRetriever(StrictRetriever):
    """Retrieve ``fetch_k`` candidates, rerank them, return the best ``top_n``: one object.

    How ``fetch_k`` reaches the base retriever: it is passed as ``k=fetch_k`` to
    ``base_retriever.invoke`` when the base retriever takes a per-call ``k`` (its
    ``_get_relevant_documents`` — for ``ainvoke``, its ``_aget_relevant_documents`` — has a
    ``k`` parameter, as this package's retrievers do) or
    is a ``VectorStoreRetriever`` (whose keyword arguments become search arguments).
    Otherwise the base retriever is called as configured and ``fetch_k`` is not used:
    give it a size of its own (e.g. ``search_kwargs={"k": 30}``). ``fetch_k=None`` never
    passes ``k``.

    Per call, ``invoke(q, top_n=3)`` (or ``k=3``, as for other retrievers) changes how many
    documents come back and ``invoke(q, fetch_k=50)`` how many are reranked.

    The reranker is one of this module's compressors, or any ``BaseDocumentCompressor``
    (its output is then cut to ``top_n``; it may return fewer by its own settings).

    Example:
        >>> from langchain_hybrid_retrievers import (
        ...     BM25Retriever, CrossEncoderReranker, RerankingRetriever)
        >>> class Overlap:
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> retriever = RerankingRetriever(
        ...     base_retriever=BM25Retriever.from_texts(
        ...         ["wing lift", "wing", "lift and drag of a wing", "bread"]),
        ...     reranker=CrossEncoderReranker(model=Overlap()), fetch_k=3, top_n=1)
        >>> [d.page_content for d in retriever.invoke("lift of a wing")]
        ['lift and drag of a wing']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    base_retriever: RetrieverLike
    """The retriever that finds the candidates (any retriever or runnable from a query to
    a list of `Document`, e.g. one wrapped by ``with_config``)."""

    reranker: BaseDocumentCompressor
    """Reorders the candidates (`CrossEncoderReranker`, `LLMReranker`, or any compressor)."""

    fetch_k: int | None = 30
    """Candidates to ask the base retriever for (see the class docstring for the rule)."""

    top_n: int = 5
    """Documents to return (>= 1); ``k=`` is accepted as another name for it, in the
    constructor (``RerankingRetriever(..., k=3)``) and per call (``invoke(q, k=3)``)."""

    @model_validator(mode="before")
    @classmethod
    def _k_is_top_n(cls, values: Any) -> Any:
        if isinstance(values, dict) and "k" in values:
            values = dict(values)
            k = values.pop("k")
            top_n = values.get("top_n")
            if top_n is not None and k is not None and top_n != k:
                raise ValueError(f"pass top_n or k (they mean the same), not both: got "
                                 f"top_n={top_n!r}, k={k!r}")
            if k is not None:
                values["top_n"] = k
        return values

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    @field_validator("fetch_k", mode="before")
    @classmethod
    def _check_fetch_k(cls, value: Any) -> int | None:
        return None if value is None else check_k(value, name="fetch_k")

    def _resolve(self, top_n: int | None, k: int | None, fetch_k: int | None, *,
                 asynchronous: bool = False) -> tuple[int, dict[str, Any]]:
        if top_n is not None and k is not None and top_n != k:
            raise ValueError(f"pass top_n or k (they mean the same), not both: got top_n={top_n}, "
                             f"k={k}")
        n = self.top_n if top_n is None and k is None else check_k(
            top_n if top_n is not None else k, name="top_n")
        fetch = self.fetch_k if fetch_k is None else check_k(fetch_k, name="fetch_k")
        passes = fetch is not None and accepts_k(self.base_retriever, asynchronous=asynchronous)
        kwargs = {"k": fetch} if passes else {}
        return n, kwargs

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        top_n: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Retrieve candidates, rerank them and return the best ``top_n``."""
        n, kwargs = self._resolve(top_n, k, fetch_k)
        config = child_config(run_manager)
        callbacks = config["callbacks"]
        docs = self.base_retriever.invoke(query, config, **kwargs)
        if isinstance(self.reranker, _RerankCompressor):
            return self.reranker._rerank_documents(docs, query, top_n=n, callbacks=callbacks)
        return list(self.reranker.compress_documents(docs, query, callbacks=callbacks))[:n]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        top_n: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: async retrieval, reranking in a worker thread."""
        n, kwargs = self._resolve(top_n, k, fetch_k, asynchronous=True)
        config = child_config(run_manager)
        callbacks = config["callbacks"]
        docs = await self.base_retriever.ainvoke(query, config, **kwargs)
        if isinstance(self.reranker, _RerankCompressor):
            return await self.reranker._arerank_documents(docs, query, top_n=n,
                                                          callbacks=callbacks)
        out = await self.reranker.acompress_documents(docs, query, callbacks=callbacks)
        return list(out)[:n]
