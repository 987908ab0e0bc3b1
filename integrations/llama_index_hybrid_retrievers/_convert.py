"""Conversions between core `Doc` / `Hit` and LlamaIndex nodes, filters and node sources.

The text that is indexed is the node's content in a `MetadataMode`: its own text
(``NONE``, the default here) or, for `BM25Retriever`, with its metadata as LlamaIndex's
own BM25 retriever indexes it (``EMBED``); the metadata is also kept (copied) for filters.
``from_defaults`` takes its nodes from exactly one source (`one_source`, `source_nodes`).
`QueryChecked` refuses a query of the wrong type before LlamaIndex's instrumentation
sees it (``BaseRetriever.retrieve(None)`` fails there with "2 validation errors for
RetrievalStartEvent", which names neither the argument nor the fix).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from hybrid_retrievers.types import Doc, Hit, MetadataFilter

from ._nodes import NodeCache, indexed_text

FUSION_KEY = "fusion"
"""Metadata key of the provenance on the copied node of each fused result (see
`hybrid_retrievers.fusion` for the keys of the mapping)."""


def type_error(expected: str, value: Any) -> TypeError:
    """The package's one wording of a wrong kind: what was expected, then what came."""
    return TypeError(f"{expected}, got {type(value).__name__}: {value!r:.80}")


def node_to_doc(node: BaseNode, metadata_mode: MetadataMode = MetadataMode.NONE) -> Doc:
    """A LlamaIndex node as a core `Doc` (id ``node.node_id``, text its `indexed_text` in
    ``metadata_mode``); TypeError for a non-node."""
    if not isinstance(node, BaseNode):
        raise type_error("nodes must contain llama_index BaseNode objects (e.g. TextNode, "
                         "Document)", node)
    return Doc(id=node.node_id, text=indexed_text(node, metadata_mode),
               metadata=dict(node.metadata))


def as_node_list(nodes: Iterable[BaseNode]) -> list[BaseNode]:
    """``nodes`` as a new list; TypeError for a single node (wrap it in a list)."""
    if isinstance(nodes, BaseNode):
        raise TypeError("nodes must be a list of nodes, got a single node; wrap it in a list")
    return list(nodes)


def nodes_to_docs(nodes: Iterable[BaseNode],
                  metadata_mode: MetadataMode = MetadataMode.NONE) -> list[Doc]:
    """Convert many nodes (see `node_to_doc`)."""
    return [node_to_doc(n, metadata_mode) for n in as_node_list(nodes)]


def hit_to_node_with_score(hit: Hit, nodes: NodeCache) -> NodeWithScore:
    """A new `NodeWithScore` for a hit: the caller's node while it agrees with the stored
    document (`NodeCache.node_for`; not modified), else a `TextNode` rebuilt from it."""
    return NodeWithScore(node=nodes.node_for(hit.doc), score=float(hit.score))


def node_with_score_to_hit(node_with_score: NodeWithScore, position: int) -> Hit:
    """Any LlamaIndex retriever's output `NodeWithScore` as a core `Hit`, for fusion: id
    ``node.node_id``, the node's own text, no metadata, its score (or ``None``), rank
    ``position`` (1-based), and a nested fusion's provenance kept as the explanation."""
    if not isinstance(node_with_score, NodeWithScore):
        raise type_error("retrievers must return NodeWithScore objects", node_with_score)
    node, score = node_with_score.node, node_with_score.score
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
    """A filter in the core's form: mappings and callables (over a `Doc`) pass through;
    `MetadataFilters` are evaluated by LlamaIndex's own ``build_metadata_filter_fn`` (so
    every operator means what LlamaIndex says); TypeError for any other kind."""
    if filter is None or isinstance(filter, Mapping) or (
        callable(filter) and not isinstance(filter, MetadataFilters)
    ):
        return filter
    if isinstance(filter, MetadataFilters):
        filters = filter

        def predicate(doc: Doc) -> bool:
            return build_metadata_filter_fn(lambda _id: doc.metadata, filters)(doc.id)

        return predicate
    raise type_error("filters must be a mapping, a callable(Doc) -> bool or a llama_index "
                     "MetadataFilters", filter)


def one_source(note: str = "", **sources: Any) -> str:
    """The name of the one source given (not ``None``); ValueError naming the choices
    (and ``note``) unless exactly one is given."""
    given = [name for name, value in sources.items() if value is not None]
    if len(given) != 1:
        names = [f"{name}=" for name in sources]
        if len(sources) == 2:
            got = "both" if given else "neither"
        else:
            got = str(len(given)) if given else "none"
        raise ValueError(
            f"pass exactly one of {', '.join(names[:-1])} or {names[-1]}, got {got}{note}")
    return given[0]


def source_nodes(nodes: Iterable[BaseNode] | None,
                 docstore: BaseDocumentStore | None = None) -> list[BaseNode]:
    """The nodes given, or every node of ``docstore`` when it is given instead."""
    if docstore is not None:
        if not isinstance(docstore, BaseDocumentStore):
            raise TypeError(
                f"docstore must be a llama_index BaseDocumentStore, got {type(docstore).__name__}"
            )
        return list(docstore.docs.values())
    return as_node_list(nodes or ())


def check_query_type(query: Any) -> None:
    """Raise a TypeError naming the argument unless ``query`` is a str or a QueryBundle."""
    if isinstance(query, str):
        return
    if isinstance(query, QueryBundle):
        if not isinstance(query.query_str, str):
            raise TypeError(
                f"QueryBundle.query_str must be a str, got {type(query.query_str).__name__}"
            )
        return
    raise type_error("str_or_query_bundle must be a str or a llama_index QueryBundle", query)


class QueryChecked:
    """Mixin placed before ``BaseRetriever`` in a retriever's bases: ``retrieve`` /
    ``aretrieve`` check the query, then call the real ones (whose spans and events are
    unchanged; these are not span-decorated, as the mixin is not a ``BaseRetriever``)."""

    def retrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        check_query_type(str_or_query_bundle)
        return super().retrieve(str_or_query_bundle)  # type: ignore[misc]

    async def aretrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        check_query_type(str_or_query_bundle)
        return await super().aretrieve(str_or_query_bundle)  # type: ignore[misc]
