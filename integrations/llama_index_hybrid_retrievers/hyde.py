"""LlamaIndex HyDE: a retriever over the core `HyDESearcher`, and LlamaIndex's
`HyDEQueryTransform` in its own shape over the core `HyDE` generation.

Any LlamaIndex `LLM` (``complete`` / ``acomplete``) writes the hypothetical passages;
a plain callable ``prompt -> str`` works too. Averaging, search, the query-expansion
side and the fall-back to the raw query when the LLM fails are the core's.
`HyDEQueryTransform` (for ``TransformQueryEngine`` / ``TransformRetriever``) puts the
generations into ``QueryBundle.custom_embedding_strs``, as LlamaIndex's does, with the
LLM call bounded by a timeout and the raw query kept when it fails.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.indices.query.query_transform.base import BaseQueryTransform
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.default_prompts import DEFAULT_HYDE_PROMPT
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import BaseNode, QueryBundle, QueryType
from llama_index.core.settings import Settings
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.hyde import HyDE, HyDEResult, HyDESearcher
from hybrid_retrievers.integration import DEFAULT_LLM_TIMEOUT, check_keywords, keyword_names
from hybrid_retrievers.types import MetadataFilter
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreSearcherRetriever, checks_keywords
from ._convert import as_node_list, nodes_to_docs, one_source, type_error
from ._llm import LlamaIndexGenerator, as_text_generator
from .embeddings import as_embedder

__all__ = ["HyDEQueryTransform", "HyDERetriever", "LlamaIndexGenerator", "as_text_generator"]


class HyDERetriever(CoreSearcherRetriever[HyDESearcher]):
    """HyDE retrieval (Gao et al. 2022) for LlamaIndex, backed by `HyDESearcher`.

    Results are as for `BM25Retriever`. The passages of a query are not stored on the
    retriever (it may serve several threads): call `generate`, or read the core hits'
    ``explanation["hyde"]``. The constructor takes the searcher and `SearcherOptions`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HyDERetriever
        >>> retriever = HyDERetriever.from_defaults(
        ...     nodes=[TextNode(id_="w", text="an aircraft wing generates lift"),
        ...            TextNode(id_="b", text="bread rises with yeast")],
        ...     embed_model=HashingEmbedder(64), llm=lambda prompt: "A wing generates lift.",
        ...     similarity_top_k=1)
        >>> [n.node.node_id for n in retriever.retrieve("how do planes fly?")]
        ['w']
    """

    searcher_type = HyDESearcher
    build_hint = "HyDERetriever.from_defaults(...)"

    @classmethod
    @checks_keywords(lambda cls: keyword_names(HyDESearcher.from_docs, HyDESearcher.from_index)
                     - {"docs", "index", "embedder", "generate"})
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        *,
        embed_model: Any,
        llm: Any,
        index: VectorIndex | None = None,
        similarity_top_k: int = 4,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
        **options: Any,
    ) -> HyDERetriever:
        """Index ``nodes`` (or use an existing ``index``, e.g. a `DenseRetriever`'s) with HyDE.

        Exactly one of ``nodes`` and ``index``; ``embed_model`` is a `BaseEmbedding` or
        core `Embedder`, ``llm`` a LlamaIndex `LLM` or a callable ``prompt -> str``;
        ``options`` are the core recipe's (`HyDESearcher.from_index`: ``n``,
        ``expand_with_bm25``...), the rest the constructor's.
        """
        one_source(nodes=nodes, index=index)
        embedder = as_embedder(embed_model)
        generate = as_text_generator(llm)
        node_list: list[BaseNode] = []
        if index is None:
            node_list = as_node_list(nodes)  # type: ignore[arg-type]
            searcher = HyDESearcher.from_docs(nodes_to_docs(node_list), embedder=embedder,
                                              generate=generate, **options)
        elif not isinstance(index, VectorIndex):
            raise TypeError(f"index must be a hybrid_retrievers VectorIndex, got {type(index).__name__}")
        else:
            searcher = HyDESearcher.from_index(index, generate=generate, embedder=embedder,
                                               **options)
        return cls(searcher, similarity_top_k=similarity_top_k, filters=filters,
                   nodes=node_list, callback_manager=callback_manager, verbose=verbose)

    def _editable_indexes(self) -> list[Any]:
        return [i for i in (self._searcher.index, self._searcher.expansion_searcher)
                if i is not None]

    def generate(self, query: str) -> HyDEResult:
        """The hypothetical passages for ``query`` (for debugging; never raises for the LLM)."""
        return self._searcher.hyde.generate(query)


_PROMPT_VARIABLE = "context_str"  # where LlamaIndex's HyDE prompt takes the query
_TRANSFORM_ARGUMENTS = ("llm", "hyde_prompt", "include_original", "n", "timeout")
_TRANSFORM_HINTS = {
    "llm_predictor": "older LlamaIndex's llm_predictor is llm= (a LlamaIndex LLM)",
    "include_query": "LlamaIndex spells it include_original=",
    "prompt": "the prompt is hyde_prompt= (a PromptTemplate with {context_str})",
}


class HyDEQueryTransform(BaseQueryTransform):
    """HyDE as a LlamaIndex query transform (Gao et al. 2022), in the shape of
    ``llama_index.core.indices.query.query_transform.HyDEQueryTransform``.

    `run` asks the LLM (``llm.predict(hyde_prompt, context_str=query)``) for a
    hypothetical document and returns a `QueryBundle` whose ``custom_embedding_strs``
    are the generations, followed by the query's own embedding strings when
    ``include_original``; a retriever that honours them (LlamaIndex's
    ``VectorIndexRetriever``, our `DenseRetriever`) searches with the mean of their
    vectors. Use it with ``TransformQueryEngine`` or ``TransformRetriever``.

    Beyond the original: ``n`` generations (concurrent), and a ``timeout`` on the LLM
    (default 30 s): when every generation fails or times out the bundle holds the
    query's own embedding strings only, a warning is logged on ``hybrid_retrievers.hyde``
    and `run_with_result` says so (``result.fallback``); async `arun`.

    Args:
        llm: a LlamaIndex `LLM` (default ``Settings.llm``).
        hyde_prompt: the prompt, with ``{context_str}`` for the query (default
            LlamaIndex's ``DEFAULT_HYDE_PROMPT``).
        include_original: also embed the query's own strings (averaged with the
            generations by the retriever).
        n: generations per query, 1..8.
        timeout: seconds to wait for the generations (``None``: no limit).

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> from llama_index.core.prompts import PromptTemplate
        >>> from llama_index_hybrid_retrievers import HyDEQueryTransform
        >>> hyde = HyDEQueryTransform(MockLLM(), PromptTemplate("Wings and {context_str}"))
        >>> hyde.run("lift").custom_embedding_strs
        ['Wings and lift', 'lift']
    """

    def __init__(
        self,
        llm: Any = None,
        hyde_prompt: BasePromptTemplate | None = None,
        include_original: bool = True,
        *,
        n: int = 1,
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
        **unexpected: Any,
    ) -> None:
        check_keywords(type(self).__name__, unexpected, _TRANSFORM_ARGUMENTS, _TRANSFORM_HINTS)
        if not isinstance(include_original, bool):
            raise type_error("include_original must be a bool", include_original)
        super().__init__()
        self._llm = Settings.llm if llm is None else llm
        if not (callable(getattr(self._llm, "predict", None))
                and callable(getattr(self._llm, "apredict", None))):
            raise type_error("llm must be a llama_index LLM (with predict and apredict)",
                             self._llm)
        self._hyde_prompt = _check_prompt(DEFAULT_HYDE_PROMPT if hyde_prompt is None
                                          else hyde_prompt)
        self._include_original = include_original
        self._hyde = HyDE(_PromptedLLM(self), None, n=n, include_query=False, prompt=None,
                          timeout=timeout)

    @property
    def include_original(self) -> bool:
        """Whether the query's own embedding strings follow the generations."""
        return self._include_original

    @property
    def hyde(self) -> HyDE:
        """The core generation (``n``, ``timeout``)."""
        return self._hyde

    def _get_prompts(self) -> PromptDictType:
        return {"hyde_prompt": self._hyde_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "hyde_prompt" in prompts:
            self._hyde_prompt = _check_prompt(prompts["hyde_prompt"])

    def _run(self, query_bundle: QueryBundle, metadata: dict[str, Any]) -> QueryBundle:
        return self.run_with_result(query_bundle, metadata)[0]

    def run_with_result(
        self, query_bundle_or_str: QueryType, metadata: dict[str, Any] | None = None
    ) -> tuple[QueryBundle, HyDEResult]:
        """`run`, and what was generated: ``result.passages``, and ``result.fallback`` /
        ``error`` when the LLM gave nothing in time and the query is searched as it is."""
        bundle = _as_bundle(query_bundle_or_str)
        result = self._hyde.generate(bundle.query_str)
        return self._transformed(bundle, result), result

    async def arun(
        self, query_bundle_or_str: QueryType, metadata: dict[str, Any] | None = None
    ) -> QueryBundle:
        """Async `run`: the generations await ``llm.apredict`` (``TransformQueryEngine``
        calls the sync `run`, also from its ``aquery``)."""
        return (await self.arun_with_result(query_bundle_or_str, metadata))[0]

    async def arun_with_result(
        self, query_bundle_or_str: QueryType, metadata: dict[str, Any] | None = None
    ) -> tuple[QueryBundle, HyDEResult]:
        """Async `run_with_result`."""
        bundle = _as_bundle(query_bundle_or_str)
        result = await self._hyde.agenerate(bundle.query_str)
        return self._transformed(bundle, result), result

    def _transformed(self, bundle: QueryBundle, result: HyDEResult) -> QueryBundle:
        strs = list(result.passages)
        if self._include_original or result.fallback:
            strs.extend(bundle.embedding_strs)
        return QueryBundle(query_str=bundle.query_str, image_path=bundle.image_path,
                           custom_embedding_strs=strs)


class _PromptedLLM:
    """The transform's LLM with its current prompt as the core's generator: the query
    goes into the prompt's ``{context_str}`` (``predict`` formats chat models' messages)."""

    def __init__(self, transform: HyDEQueryTransform) -> None:
        self._transform = transform

    def __call__(self, query: str) -> str:
        t = self._transform
        return t._llm.predict(t._hyde_prompt, **{_PROMPT_VARIABLE: query})

    async def agenerate(self, query: str) -> str:
        t = self._transform
        return await t._llm.apredict(t._hyde_prompt, **{_PROMPT_VARIABLE: query})


def _check_prompt(prompt: Any) -> BasePromptTemplate:
    if not isinstance(prompt, BasePromptTemplate):
        raise type_error("hyde_prompt must be a llama_index prompt template (e.g. "
                         "PromptTemplate('... {context_str} ...'))", prompt)
    if _PROMPT_VARIABLE not in prompt.template_vars:
        raise ValueError(
            f"hyde_prompt must have a {{{_PROMPT_VARIABLE}}} variable (where the query goes), "
            f"got variables {prompt.template_vars}"
        )
    return prompt


def _as_bundle(query_bundle_or_str: QueryType) -> QueryBundle:
    """As `BaseQueryTransform.run`: a str is a bundle embedding that str."""
    if isinstance(query_bundle_or_str, str):
        return QueryBundle(query_str=query_bundle_or_str,
                           custom_embedding_strs=[query_bundle_or_str])
    if not isinstance(query_bundle_or_str, QueryBundle):
        raise type_error("the query must be a str or a QueryBundle", query_bundle_or_str)
    return query_bundle_or_str
