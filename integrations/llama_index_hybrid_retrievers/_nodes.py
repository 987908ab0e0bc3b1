"""The caller's nodes, kept beside the core index: handed back only while they are current.

The core indexes store what they score (id, text, metadata); a LlamaIndex node has more
(relationships, excluded metadata keys, templates...), so the retrievers keep the node
objects by id. `NodeCache.node_for` hands a node back only while its content in the
cache's ``metadata_mode`` (the indexed text) and its metadata equal the stored
document's (else a `TextNode` is rebuilt), so a retriever never returns text it did not
score. Persisted node fields are LlamaIndex's docstore JSON, never pickle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc

from hybrid_retrievers.types import Doc

_DATA = "__data__"


def doc_to_text_node(doc: Doc) -> TextNode:
    """Rebuild a `TextNode` (id, text, a copy of the metadata) from a stored `Doc`."""
    return TextNode(id_=doc.id, text=doc.text, metadata=dict(doc.metadata))


def indexed_text(node: BaseNode, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
    """What an index stores and scores for ``node``: its content in ``metadata_mode``
    (``NONE``: its own text; ``EMBED``: with its metadata, less the excluded keys)."""
    return node.get_content(metadata_mode=metadata_mode)


class NodeCache:
    """Node objects by id (see the module docstring); ``metadata_mode`` says which content
    of a node the index holds (`indexed_text`)."""

    def __init__(self, nodes: Iterable[BaseNode] = (),
                 metadata_mode: MetadataMode = MetadataMode.NONE) -> None:
        self._nodes: dict[str, BaseNode] = {}
        self._mode = MetadataMode(metadata_mode)
        self.update(nodes)

    @property
    def metadata_mode(self) -> MetadataMode:
        """The content of a node that the index holds (see `indexed_text`)."""
        return self._mode

    def _agrees(self, node: BaseNode, doc: Doc) -> bool:
        """Whether ``node`` still shows exactly what the index stored (and scored)."""
        return indexed_text(node, self._mode) == doc.text and node.metadata == dict(doc.metadata)

    def update(self, nodes: Iterable[BaseNode]) -> None:
        """Remember ``nodes`` (a node with an id already kept replaces it)."""
        self._nodes.update((n.node_id, n) for n in nodes)

    def discard(self, ids: Iterable[str]) -> None:
        """Forget the nodes with these ids (unknown ids are ignored)."""
        for i in ids:
            self._nodes.pop(i, None)

    def get(self, node_id: str) -> BaseNode | None:
        """The kept node with ``node_id``, current or not (``None`` if none)."""
        return self._nodes.get(node_id)

    def node_for(self, doc: Doc) -> BaseNode:
        """The caller's node for ``doc`` while it agrees with it, else a rebuilt `TextNode`."""
        node = self._nodes.get(doc.id)
        if node is not None and self._agrees(node, doc):
            return node
        return doc_to_text_node(doc)

    def ids_of_ref_doc(self, ref_doc_id: str) -> list[str]:
        """Ids of kept nodes whose ``ref_doc_id`` (source document) is ``ref_doc_id``."""
        return [i for i, n in self._nodes.items() if n.ref_doc_id == ref_doc_id]

    # ---------------------------------------------------------------- persistence

    def to_json(self, docs: Iterable[Doc]) -> dict[str, Any]:
        """JSON node fields of the kept nodes that agree with ``docs`` (by id)."""
        out: dict[str, Any] = {}
        for doc in docs:
            node = self._nodes.get(doc.id)
            if node is None or not self._agrees(node, doc):
                continue
            data = doc_to_json(node)
            fields = data[_DATA]
            # The index holds these: do not store them twice (the node's own text only
            # when it is what the index holds).
            fields["metadata"] = {}
            fields["embedding"] = None
            if self._mode is MetadataMode.NONE:
                fields.pop("text", None)
                resource = fields.get("text_resource")
                if isinstance(resource, dict):
                    resource["text"] = None
            out[doc.id] = data
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], docs: Iterable[Doc],
                  metadata_mode: MetadataMode = MetadataMode.NONE) -> NodeCache:
        """Rebuild the nodes written by `to_json` (of a cache in ``metadata_mode``) for
        the stored ``docs``.

        Raises:
            ValueError: for node JSON that LlamaIndex cannot read.
        """
        cache = cls(metadata_mode=metadata_mode)
        own_text = cache._mode is MetadataMode.NONE
        for doc in docs:
            entry = data.get(doc.id)
            if entry is None:
                continue
            try:
                entry = {**entry, _DATA: dict(entry[_DATA])}
                fields = entry[_DATA]
                fields["metadata"] = dict(doc.metadata)
                if own_text:
                    fields["text"] = doc.text
                    if isinstance(fields.get("text_resource"), dict):
                        fields["text_resource"] = {**fields["text_resource"], "text": doc.text}
                node = json_to_doc(entry)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"node {doc.id!r}: unreadable node fields ({exc})") from None
            if node.node_id == doc.id:
                cache._nodes[doc.id] = node
        return cache
