"""LangChain HyDE: a retriever over the core `HyDESearcher`, and LangChain's
`HypotheticalDocumentEmbedder` in its own shape over the core `HyDE` generation.

A LangChain LLM, chat model or `Runnable` (or a callable ``prompt -> str``) writes the
hypothetical passages; embedding, search, fusion and the fallback to the raw query are
the core's. This module adapts the model, converts documents and wires async.
`HypotheticalDocumentEmbedder` is an `Embeddings` (a drop-in for
``langchain_classic.chains.hyde.base.HypotheticalDocumentEmbedder``, with its `PROMPT_MAP`
keys) whose LLM call is bounded by a timeout, with the raw query embedded on failure.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import BasePromptTemplate, PromptTemplate
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator, model_validator

from hybrid_retrievers.hyde import HYDE_OPTIONS, HYDE_PROMPTS, HyDE, HyDEResult, HyDESearcher
from hybrid_retrievers.integration import (
    DEFAULT_LLM_TIMEOUT,
    check_keywords,
    check_timeout,
    mean_vector,
)
from hybrid_retrievers.types import Hit
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreRetriever, count_validator, pop_options
from ._convert import documents_to_docs
from ._llm import LangChainGenerator, as_text_generator
from .embeddings import as_embedder

__all__ = ["HYDE_KEY", "PROMPT_MAP", "HyDERetriever", "HypotheticalDocumentEmbedder",
           "LangChainGenerator", "as_text_generator"]

logger = logging.getLogger("hybrid_retrievers.hyde")

HYDE_KEY = "hyde"
"""Metadata key of a returned document: ``{"passages", "fallback", "error", "mode"}``."""

class HyDERetriever(CoreRetriever):
    """HyDE retrieval (Gao et al. 2022) backed by `hybrid_retrievers.hyde.HyDESearcher`.

    Each returned `Document` carries the score under ``score_key``, the ``"rank"`` and
    ``"hyde"``: what the model wrote and whether the raw query was used because it
    failed. Each model call is a child run of the retriever's run.

    Example:
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_core.documents import Document
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import HyDERetriever
        >>> retriever = HyDERetriever.from_documents(
        ...     [Document(id="w", page_content="an aircraft wing generates lift"),
        ...      Document(id="b", page_content="bread rises with yeast")],
        ...     embedding=HashingEmbedder(64),
        ...     llm=FakeListLLM(responses=["A wing generates lift."]),
        ...     k=1,
        ... )
        >>> doc = retriever.invoke("how do planes fly?")[0]
        >>> doc.id, doc.metadata["hyde"]["passages"]
        ('w', ['A wing generates lift.'])
    """

    searcher: HyDESearcher
    """The core HyDE searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # each LLM call is a child run of the retrieval
    reserved_key: ClassVar[str | None] = HYDE_KEY

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *, embedding: Any, llm: Any,
                       k: int = 4, **kwargs: Any) -> HyDERetriever:
        """Embed and index ``documents`` and return a HyDE retriever over them.

        ``llm`` is a LangChain LLM, chat model or `Runnable`, or a callable ``prompt ->
        str``; ``**kwargs`` are the recipe's options (`HYDE_OPTIONS`, see
        `HyDESearcher.from_index`) and retriever fields (``filter``, ``score_key``...).
        """
        docs = documents_to_docs(documents)
        options = pop_options(kwargs, HYDE_OPTIONS)
        searcher = HyDESearcher.from_docs(docs, embedder=as_embedder(embedding),
                                          generate=as_text_generator(llm), **options)
        return cls(searcher=searcher, k=k, **kwargs)

    @classmethod
    def from_retriever(cls, retriever: Any, *, llm: Any, **kwargs: Any) -> HyDERetriever:
        """HyDE over an existing `DenseRetriever` or core `VectorIndex` (its embedder is used).

        ``k`` defaults to the dense retriever's ``k``. Other arguments as for
        `from_documents`.
        """
        index = getattr(retriever, "index", retriever)
        if not isinstance(index, VectorIndex):
            raise TypeError(
                "retriever must be a DenseRetriever or a hybrid_retrievers VectorIndex, "
                f"got {type(retriever).__name__}"
            )
        if "k" not in kwargs and isinstance(getattr(retriever, "k", None), int):
            kwargs["k"] = retriever.k
        options = pop_options(kwargs, HYDE_OPTIONS)
        searcher = HyDESearcher.from_index(index, generate=as_text_generator(llm), **options)
        return cls(searcher=searcher, **kwargs)

    def _extra(self, hit: Hit) -> Mapping[str, Any]:
        info = hit.explanation["hyde"]
        return {HYDE_KEY: {key: info[key] for key in ("passages", "fallback", "error", "mode")}}


# LangChain's PROMPT_MAP keys (BEIR / Mr.TyDi datasets of Gao et al. 2022) -> our prompt of
# the same instruction (`HYDE_PROMPTS`) and the variable name LangChain's template uses.
_PROMPT_SOURCES: Mapping[str, tuple[str, str]] = {
    "web_search": ("web", "QUESTION"),
    "sci_fact": ("claim", "Claim"),
    "arguana": ("argument", "PASSAGE"),
    "trec_covid": ("scientific", "QUESTION"),
    "fiqa": ("financial", "QUESTION"),
    "dbpedia_entity": ("web", "QUESTION"),
    "trec_news": ("news", "TOPIC"),
    "mr_tydi": ("multilingual", "QUESTION"),
}

PROMPT_MAP: Mapping[str, PromptTemplate] = {
    key: PromptTemplate(template=HYDE_PROMPTS[name].replace("{query}", "{" + variable + "}"),
                        input_variables=[variable])
    for key, (name, variable) in _PROMPT_SOURCES.items()
}
"""`HypotheticalDocumentEmbedder.from_llm`'s ``prompt_key`` choices: LangChain's keys, each
the instruction of its dataset in Gao et al. 2022 (`HYDE_PROMPTS`; ``mr_tydi`` asks for
the question's language where LangChain's names four)."""


class HypotheticalDocumentEmbedder(BaseModel, Embeddings):
    """HyDE as LangChain `Embeddings` (Gao et al. 2022), in the shape of LangChain's
    ``HypotheticalDocumentEmbedder``: `embed_query` asks ``llm_chain`` for a hypothetical
    document and returns `combine_embeddings` (the mean) of its `embed_documents` vectors;
    `embed_documents` is the base model's. Use it wherever an `Embeddings` goes, e.g. as
    the query embedding of a vector store or of our `DenseRetriever`.

    Beyond the original: ``n`` generations (concurrent), ``include_query`` (the paper's
    mean with the query's own vector), a ``timeout`` on the LLM (default 30 s) with the
    raw query's embedding as the fallback when every generation fails (a warning is
    logged on ``hybrid_retrievers.hyde``; `embed_query_with_result` says so), and async
    `aembed_query`. The LLM call is a child run of our retrievers' runs and of a runnable
    that calls `embed_query` (LangChain's own retrievers do not hand their run on to an
    embedding: there it is a run of its own, as with the original).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_hybrid_retrievers import HypotheticalDocumentEmbedder
        >>> base = DeterministicFakeEmbedding(size=8)
        >>> hyde = HypotheticalDocumentEmbedder.from_llm(
        ...     FakeListLLM(responses=["Wings generate lift."]), base, "web_search")
        >>> hyde.embed_query("how do planes fly?") == base.embed_documents(
        ...     ["Wings generate lift."])[0]
        True
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid", validate_assignment=True)

    base_embeddings: Embeddings
    """Embeds the hypothetical documents, documents passed through, and the raw query
    (on fallback, and with ``include_query``)."""

    llm_chain: Runnable
    """Writes one hypothetical document: receives ``{input_key: query}`` (its one input
    variable, `input_keys`) and returns a str or a message (``prompt | llm |
    StrOutputParser()``, as `from_llm` builds it)."""

    n: int = 1
    """Generations per query (1..8; the original makes one, the paper 8), run
    concurrently; their vectors are averaged."""

    include_query: bool = False
    """Also average in the query's own ``embed_query`` vector (the paper's method; the
    original leaves it out)."""

    timeout: float | None = DEFAULT_LLM_TIMEOUT
    """Seconds to wait for the generations (``None``: no limit); with none back in
    time, the raw query is embedded."""

    _hyde: HyDE = PrivateAttr()

    _check_n = count_validator("n")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        if isinstance(values, Mapping):
            check_keywords(cls.__name__, values, cls.model_fields)
        return values

    @field_validator("include_query", mode="before")
    @classmethod
    def _check_include_query(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"include_query must be a bool, got {type(value).__name__}")
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _check_timeout(cls, value: Any) -> float | None:
        return check_timeout(value)

    @model_validator(mode="after")
    def _build(self) -> HypotheticalDocumentEmbedder:
        keys = self.input_keys
        if len(keys) != 1:
            raise ValueError(
                "llm_chain must take exactly one input variable, the query (e.g. "
                f"PromptTemplate.from_template('... {{question}} ...') | llm), got {keys}"
            )
        generator = LangChainGenerator(self.llm_chain, input_key=keys[0])
        self._hyde = HyDE(generator, None, n=self.n, include_query=False, prompt=None,
                          timeout=self.timeout)
        return self

    @classmethod
    def from_llm(
        cls,
        llm: Runnable,
        base_embeddings: Embeddings,
        prompt_key: str | None = None,
        custom_prompt: BasePromptTemplate | None = None,
        **kwargs: Any,
    ) -> HypotheticalDocumentEmbedder:
        """``llm_chain = prompt | llm | StrOutputParser()`` with ``custom_prompt`` (one
        input variable: the query) or `PROMPT_MAP` ``[prompt_key]``; ``kwargs`` are the
        other fields (``n``, ``include_query``, ``timeout``).

        Raises:
            ValueError: with neither a ``custom_prompt`` nor a known ``prompt_key``.
        """
        check_keywords(f"{cls.__name__}.from_llm", kwargs,
                       {*cls.model_fields, "llm", "prompt_key", "custom_prompt"} - {"llm_chain"})
        if not isinstance(llm, Runnable):
            raise TypeError("llm must be a LangChain LLM, chat model or Runnable, got "
                            f"{type(llm).__name__}")
        if custom_prompt is not None:
            if not isinstance(custom_prompt, BasePromptTemplate):
                raise TypeError(
                    "custom_prompt must be a LangChain prompt template (e.g. "
                    "PromptTemplate.from_template('... {question} ...')), got "
                    f"{type(custom_prompt).__name__}")
            prompt = custom_prompt
        elif prompt_key is not None and prompt_key in PROMPT_MAP:
            prompt = PROMPT_MAP[prompt_key]
        else:
            nearest = difflib.get_close_matches(str(prompt_key), list(PROMPT_MAP), n=1)
            hint = f" (did you mean {nearest[0]!r}?)" if prompt_key and nearest else ""
            raise ValueError(
                f"Must specify prompt_key if custom_prompt not provided. Should be one of "
                f"{list(PROMPT_MAP)}; got {prompt_key!r}{hint}"
            )
        return cls(base_embeddings=base_embeddings,
                   llm_chain=prompt | llm | StrOutputParser(), **kwargs)

    @property
    def input_keys(self) -> list[str]:
        """The input variables ``llm_chain`` requires (the one that receives the query)."""
        schema = self.llm_chain.get_input_jsonschema()
        return list(schema.get("required", [])) if isinstance(schema, dict) else []

    # ---------------------------------------------------------------- embedding

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The base embeddings' vectors of ``texts``."""
        return self.base_embeddings.embed_documents(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async `embed_documents` (the base embeddings' own)."""
        return await self.base_embeddings.aembed_documents(texts)

    def combine_embeddings(self, embeddings: list[list[float]]) -> list[float]:
        """The mean of ``embeddings`` (in float64, as the original's numpy mean).

        Raises:
            ValueError: for no vectors or vectors of different lengths.
        """
        return [float(x) for x in mean_vector(embeddings, dtype=np.float64)]

    def embed_query(self, text: str) -> list[float]:
        """The mean vector of the hypothetical documents for ``text`` (the raw query's
        vector when the LLM failed or timed out)."""
        return self.embed_query_with_result(text)[0]

    async def aembed_query(self, text: str) -> list[float]:
        """Async `embed_query`: generations and embeddings awaited."""
        return (await self.aembed_query_with_result(text))[0]

    def embed_query_with_result(self, text: str) -> tuple[list[float], HyDEResult]:
        """`embed_query`, and what was generated: ``result.passages``, and
        ``result.fallback`` / ``error`` when the raw query was embedded instead."""
        result = self._hyde.generate(text)
        docs = [] if result.fallback else self.embed_documents(list(result.passages))
        raw = self.base_embeddings.embed_query(text) if self._needs_query(result) else None
        return self._combine(result, docs, raw), result

    async def aembed_query_with_result(self, text: str) -> tuple[list[float], HyDEResult]:
        """Async `embed_query_with_result`."""
        result = await self._hyde.agenerate(text)
        docs = [] if result.fallback else await self.aembed_documents(list(result.passages))
        raw = (await self.base_embeddings.aembed_query(text) if self._needs_query(result)
               else None)
        return self._combine(result, docs, raw), result

    def _needs_query(self, result: HyDEResult) -> bool:
        return result.fallback or self.include_query

    def _combine(self, result: HyDEResult, docs: list[list[float]],
                 raw: list[float] | None) -> list[float]:
        if result.fallback and raw is not None:
            return [float(x) for x in raw]  # the raw query's vector, as the model gave it
        if len(docs) != len(result.passages):
            logger.warning("HyDE: embed_documents returned %d vectors for %d passages; "
                           "averaging them all", len(docs), len(result.passages))
        return self.combine_embeddings([*docs, *([] if raw is None else [raw])])
