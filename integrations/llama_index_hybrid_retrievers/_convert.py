"""Conversions between core `Doc` / `Hit` and LlamaIndex nodes.

The text that is indexed is ``node.get_content(metadata_mode=MetadataMode.NONE)``:
the node's own text, without metadata mixed in, so a keyword in a metadata value does
not change BM25 scores and the stored text is exactly what a rebuilt node shows.
The metadata is kept separately (copied) for filters and for the returned nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore
from llama_index.core.vector_stores.types import MetadataFilters
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from hybrid_retrievers.types import Doc, Hit, MetadataFilter

from ._nodes import NodeCache, doc_to_text_node

__all__ = [
    "FUSION_KEY",
    "as_node_list",
    "doc_to_text_node",
    "hit_to_node_with_score",
    "node_with_added_metadata",
    "node_with_score_to_hit",
    "node_to_doc",
    "nodes_to_docs",
    "to_core_filter",
]

def node_to_doc(node: BaseNode) -> Doc:
    """Convert a LlamaIndex node into a core `Doc` (id = ``node.node_id``).

    Raises:
        TypeError: if ``node`` is not a `BaseNode`.
    """
    if not isinstance(node, BaseNode):
        raise TypeError(
            "nodes must contain llama_index BaseNode objects (e.g. TextNode, Document), "
            f"got {type(node).__name__}: {node!r:.80}"
        )
    return Doc(
        id=node.node_id,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        metadata=dict(node.metadata),
    )

def as_node_list(nodes: Iterable[BaseNode]) -> list[BaseNode]:
    """``nodes`` as a new list.

    Raises:
        TypeError: for a single node (wrap it in a list).
    """
    if isinstance(nodes, BaseNode):
        raise TypeError("nodes must be a list of nodes, got a single node; wrap it in a list")
    return list(nodes)

def nodes_to_docs(nodes: Iterable[BaseNode]) -> list[Doc]:
    """Convert many nodes (see `node_to_doc`)."""
    return [node_to_doc(n) for n in as_node_list(nodes)]

def hit_to_node_with_score(hit: Hit, nodes: NodeCache) -> NodeWithScore:
    """Wrap a hit in a new `NodeWithScore`.

    The node is the caller's node object while it agrees with the stored document
    (see `NodeCache.node_for`; it is not modified), otherwise a `TextNode` rebuilt from
    the stored document.
    """
    return NodeWithScore(node=nodes.node_for(hit.doc), score=float(hit.score))

FUSION_KEY = "fusion"
"""Metadata key of the provenance on the copied node of each fused result (see
`hybrid_retrievers.fusion` for the keys of the mapping)."""


def node_with_score_to_hit(node_with_score: NodeWithScore, position: int) -> Hit:
    """Convert any LlamaIndex retriever's output `NodeWithScore` into a core `Hit`.

    Used to fuse the output of retrievers this package does not own, so the rules are
    written down once: id ``node.node_id``; text the node's own text
    (``MetadataMode.NONE``, for content dedup); metadata left empty (the caller keeps
    the original node); score ``NodeWithScore.score``, ``None`` when the retriever gave
    none (rank-based fusion does not need it); rank ``position`` (1-based); explanation
    ``{"fusion": ...}`` when the node carries a nested fusion's provenance under
    `FUSION_KEY`, so it is kept in the outer provenance.

    Raises:
        TypeError: if ``node_with_score`` is not a `NodeWithScore`.
    """
    if not isinstance(node_with_score, NodeWithScore):
        raise TypeError(
            "retrievers must return NodeWithScore objects, got "
            f"{type(node_with_score).__name__}: {node_with_score!r:.80}"
        )
    node = node_with_score.node
    score = node_with_score.score
    nested = node.metadata.get(FUSION_KEY)
    return Hit(
        Doc(id=node.node_id, text=node.get_content(metadata_mode=MetadataMode.NONE)),
        None if score is None else float(score),  # type: ignore[arg-type]  # None: no score
        position,
        {FUSION_KEY: nested} if isinstance(nested, Mapping) else {},
    )


def node_with_added_metadata(node: BaseNode, added: Mapping[str, Any]) -> BaseNode:
    """A copy of ``node`` (same id, text, relationships) with ``added`` metadata keys.

    The added keys are also excluded from the copy's LLM and embedding text, so
    bookkeeping such as fusion provenance never leaks into prompts or vectors. The
    original node is not modified.
    """
    new_keys = list(added)
    return node.model_copy(update={
        "metadata": {**node.metadata, **added},
        "excluded_llm_metadata_keys": _merge_keys(node.excluded_llm_metadata_keys, new_keys),
        "excluded_embed_metadata_keys": _merge_keys(node.excluded_embed_metadata_keys,
                                                    new_keys),
    })


def _merge_keys(existing: Sequence[str] | None, new: Sequence[str]) -> list[str]:
    out = list(existing or [])
    return out + [k for k in new if k not in out]


def to_core_filter(
    filter: MetadataFilter | MetadataFilters | None,
) -> MetadataFilter | None:
    """Map a LlamaIndex `MetadataFilters` onto the core's predicate form.

    Mappings and callables (receiving a `hybrid_retrievers.Doc`) pass through
    unchanged; `MetadataFilters` are evaluated by LlamaIndex's own
    ``build_metadata_filter_fn`` so every operator means what LlamaIndex says.

    Raises:
        TypeError: for any other kind of filter.
    """
    if filter is None or isinstance(filter, Mapping) or (
        callable(filter) and not isinstance(filter, MetadataFilters)
    ):
        return filter
    if isinstance(filter, MetadataFilters):
        filters = filter

        def predicate(doc: Doc) -> bool:
            return build_metadata_filter_fn(lambda _id: doc.metadata, filters)(doc.id)

        return predicate
    raise TypeError(
        "filter must be a mapping, a callable(Doc) -> bool or a llama_index "
        f"MetadataFilters, got {type(filter).__name__}: {filter!r:.80}"
    )

