"""LlamaIndex `HybridRetriever`: BM25 + dense (+ learned sparse) over the same nodes, fused.

A retriever over ONE core `FusionSearcher` built by the core's hybrid recipe
(`FusionSearcher.hybrid`), like `BM25Retriever` over one `BM25Index`: per query one core
call and one conversion of the fused hits to nodes. `FusionRetriever` (``fusion.py``)
is for fusing framework retrievers (vector stores, remote engines).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore
from llama_index.core.storage.docstore.types import BaseDocumentStore

from hybrid_retrievers import BM25Index, SparseIndex, VectorIndex
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.integration import FUSION_KEYWORDS, child_leaves, read_fusion
from hybrid_retrievers.types import Doc, Hit, SparseEmbedder

from ._base import (
    CoreSearcherRetriever,
    Filter,
    LoadOptions,
    checks_keywords,
    refuse_arguments,
)
from ._convert import (
    FUSION_KEY,
    node_with_added_metadata,
    nodes_to_docs,
    one_source,
    source_nodes,
)
from .embeddings import as_embedder

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["HybridRetriever"]


class HybridRetriever(CoreSearcherRetriever[FusionSearcher]):
    """BM25 + dense retrieval over the same nodes, fused: the 90% case in one call.

    `from_defaults` builds one core `FusionSearcher` with the core's hybrid recipe
    (`FusionSearcher.hybrid`: a `BM25Index` and a `VectorIndex` over the same nodes,
    named ``"bm25"`` and ``"dense"``; ``sparse=`` adds a learned sparse `SparseIndex` leg,
    ``"sparse"``, fused by the core's three-way default, see `FusionSearcher.hybrid`).
    Each query is one call to it: the children are
    asked for ``fetch_k`` candidates resolved per call (default
    ``max(similarity_top_k, 20)``, so setting ``similarity_top_k`` later deepens them
    too), and the fused hits become nodes once. Returned nodes are as for
    `FusionRetriever`: the caller's node (while it agrees with the index; else a
    `TextNode` of the stored document), copied with the provenance under
    ``metadata["fusion"]``, excluded from its LLM and embedding text.

    The constructor takes the `FusionSearcher` and the `SearcherOptions`. Queries are
    text: a `QueryBundle`'s ``embedding`` / ``custom_embedding_strs`` are not used (fuse
    a `DenseRetriever` in a `FusionRetriever` for that). Edits (`insert_nodes`,
    `delete_nodes`) reach every index.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HybridRetriever
        >>> nodes = [TextNode(id_=i, text=t) for i, t in [
        ...     ("a", "wings generate lift"), ("b", "cats sleep"), ("c", "lift and drag of wings")]]
        >>> retriever = HybridRetriever.from_defaults(
        ...     nodes=nodes, embed_model=HashingEmbedder(dimension=64), similarity_top_k=2)
        >>> sorted(n.node.node_id for n in retriever.retrieve("wing lift"))
        ['a', 'c']

    Three legs, with a learned sparse model (`hybrid_retrievers.models.SpladeEncoder` for
    a real one):

        >>> from hybrid_retrievers.models import HashingSparseEmbedder
        >>> three = HybridRetriever.from_defaults(
        ...     nodes=nodes, embed_model=HashingEmbedder(dimension=64),
        ...     sparse=HashingSparseEmbedder(), similarity_top_k=2)
        >>> three.searcher.names, three.searcher.plan.mode.value
        (('bm25', 'dense', 'sparse'), 'relative_score')
    """

    searcher_type = FusionSearcher
    build_hint = "HybridRetriever.from_defaults(nodes=..., embed_model=...)"

    @classmethod
    @checks_keywords(lambda cls: FUSION_KEYWORDS | {"filter", "index"})  # those two: hints below
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        embed_model: BaseEmbedding | Any,
        bm25: Mapping[str, Any] | bool | None = None,
        dense: Mapping[str, Any] | None = None,
        sparse: SparseEmbedder | Mapping[str, Any] | None = None,
        similarity_top_k: int = 4,
        filters: Filter = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **fusion: Any,
    ) -> HybridRetriever:
        """Index nodes (or every node of a docstore: exactly one) for BM25, dense (and
        learned sparse) retrieval; fuse.

        Args:
            embed_model: a LlamaIndex `BaseEmbedding` or a core `Embedder` (required).
            bm25: `BM25Index.from_texts` options (``k1``, ``b``, ``method``, ``delta``,
                ``analyzer``); ``False``: no BM25 leg (``bm25`` is then ``None``).
            dense: `VectorIndex.from_texts` options (``metric``, ``batch_size``,
                ``cache``).
            sparse: the learned sparse leg: its model (a `SparseEmbedder` such as
                `hybrid_retrievers.models.SpladeEncoder`), or `SparseIndex.from_texts`
                options with the model as ``"embedder"``; ``None``: two legs.
            similarity_top_k, filters, callback_manager, verbose: the
                constructor's (``similarity_top_k`` counts fused nodes).
            **fusion: `FusionSearcher` arguments (``fetch_k``, ``weights``, ``mode``,
                ``k_rrf``, ``names``, ``dedup``, ``max_workers``).
        """
        refuse_arguments("HybridRetriever.from_defaults",
                         {key: fusion.pop(key) for key in ("filter", "index") if key in fusion},
                         {"filter": "LlamaIndex spells it filters=, as VectorIndexRetriever does",
                          "index": "pass nodes= or docstore=; a built core FusionSearcher goes "
                                   "to HybridRetriever(searcher)"})
        one_source(nodes=nodes, docstore=docstore)
        node_list = source_nodes(nodes, docstore)
        docs = nodes_to_docs(node_list)
        searcher = FusionSearcher.hybrid(
            [d.text for d in docs], as_embedder(embed_model), [d.id for d in docs],
            [d.metadata for d in docs], bm25=bm25, dense=dense, sparse=sparse, show_progress=verbose,
            **fusion)
        return cls(searcher, nodes=node_list, similarity_top_k=similarity_top_k,
                   filters=filters, callback_manager=callback_manager, verbose=verbose)

    @property
    def bm25(self) -> BM25Index | None:
        """The core BM25 index: the leg named ``"bm25"``, or ``None`` when there is none
        (built with ``bm25=False``, or with other ``names=``: then ``searcher.leg(name)``)."""
        return self._searcher.leg("bm25")  # type: ignore[no-any-return]

    @property
    def dense(self) -> VectorIndex | None:
        """The core dense index (the leg named ``"dense"``), or ``None`` without one."""
        return self._searcher.leg("dense")  # type: ignore[no-any-return]

    @property
    def sparse(self) -> SparseIndex | None:
        """The core learned sparse index (the leg named ``"sparse"``), or ``None``."""
        return self._searcher.leg("sparse")  # type: ignore[no-any-return]

    def _editable_indexes(self) -> list[Any]:
        return child_leaves(self._searcher)

    def _wrap(self, hits: Iterable[Hit]) -> list[NodeWithScore]:
        """New nodes for fused hits: the caller's node (`NodeCache.node_for`), copied with
        the provenance under ``"fusion"``."""
        return [NodeWithScore(node=node_with_added_metadata(
                    self._nodes.node_for(hit.doc), {FUSION_KEY: hit.explanation[FUSION_KEY]}),
                    score=float(hit.score)) for hit in hits]

    # ----------------------------------------------------------- persistence

    @staticmethod
    def _stored_docs(searcher: Any) -> Iterable[Doc]:
        return child_leaves(searcher)[0].docs  # type: ignore[no-any-return]

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the retriever: the fusion under ``index/`` (`FusionSearcher.save`), the
        node fields, ``similarity_top_k`` and the filter (data only, never pickle)."""
        self._write(persist_dir)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any = None,
        sparse_embed_model: SparseEmbedder | None = None, mmap: bool = False,
        **options: Unpack[LoadOptions],
    ) -> HybridRetriever:
        """Load a retriever saved with `persist` (or a `FusionSearcher.save` folder, such
        as the LangChain ``HybridRetriever.save_local``'s) with the models it was built
        with (``embed_model``: the dense leg's, ``sparse_embed_model``: the learned sparse
        leg's); ``options`` (`LoadOptions`) default to the saved ones. `IndexFormatError`
        for a missing, corrupt or foreign directory."""

        def load(folder: Any) -> FusionSearcher:
            kinds = {kind for kind, _, _ in read_fusion(folder)[1]}
            for kind, model, argument, what in (
                    ("vector", embed_model, "embed_model", "a dense index"),
                    ("sparse", sparse_embed_model, "sparse_embed_model",
                     "a learned sparse index")):
                if kind in kinds and model is None:
                    raise ValueError(f"{str(persist_dir)!r} holds {what}: pass {argument}= "
                                     "(the model the index was built with) to "
                                     "HybridRetriever.from_persist_dir")
            return FusionSearcher.load(
                folder, None if embed_model is None else as_embedder(embed_model),
                sparse_embedder=sparse_embed_model, mmap=mmap)

        return cls._load(  # type: ignore[no-any-return]
            persist_dir, load, bare_index_kind="fusion", **options)
