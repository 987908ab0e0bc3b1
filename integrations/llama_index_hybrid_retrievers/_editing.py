"""Editing retrievers with the names of LlamaIndex's indexes: ``insert_nodes`` / ``delete_nodes``.

`NodeEditing` sends each edit to every core index the retriever searches
(`NodeEditing._editable_indexes`) and keeps its `NodeCache` (``self._nodes``) in step;
`FusionEditing` sends it to every child of a fusion. Both are all or nothing
(`hybrid_retrievers.multi_index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from hybrid_retrievers.integration import (
    add_to_all,
    apply_to_all,
    check_known_ids,
    delete_from_all,
)

from ._convert import as_node_list, nodes_to_docs
from ._nodes import NodeCache


def id_list(node_ids: str | Sequence[str]) -> list[str]:
    """``node_ids`` as a new list (a single id is a list of one)."""
    return [node_ids] if isinstance(node_ids, str) else list(node_ids)


def _no_options(method: str, options: dict[str, Any]) -> None:
    if options:  # accepted for LlamaIndex compatibility, with nothing to mean here
        raise TypeError(f"{method} got unexpected argument(s) {sorted(options)}")


class NodeEditing:
    """Mixin: the editing methods over ``self._searcher`` and ``self._nodes``."""

    _searcher: Any
    _nodes: NodeCache

    def _editable_indexes(self) -> list[Any]:
        """The core indexes searched by this retriever (each gets every edit)."""
        return [self._searcher]

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> list[str]:
        """Index more nodes (``VectorStoreIndex.insert_nodes``'s name); returns their ids.

        The core updates its statistics (N, avgdl, idf for BM25; a dense index embeds
        the new texts). ``insert_kwargs`` must be empty. ValueError for an id already
        indexed (nothing is inserted then).
        """
        _no_options("insert_nodes", insert_kwargs)
        new_nodes = as_node_list(nodes)
        docs = nodes_to_docs(new_nodes, self._nodes.metadata_mode)
        ids = add_to_all(self._editable_indexes(), docs)
        self._nodes.update(new_nodes)
        return ids

    def delete_nodes(self, node_ids: Sequence[str], **delete_kwargs: Any) -> None:
        """Remove nodes by id (``VectorStoreIndex.delete_nodes``'s name); KeyError naming
        unknown ids (nothing is deleted then)."""
        _no_options("delete_nodes", delete_kwargs)
        ids = id_list(node_ids)
        delete_from_all(self._editable_indexes(), ids, "the index")
        self._nodes.discard(ids)

    def delete_ref_doc(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node whose ``ref_doc_id`` (source document) is ``ref_doc_id``.

        Known for the nodes given to this retriever (or restored by ``from_persist_dir``);
        nodes added straight to ``index`` have no source. No match is not an error, as
        for LlamaIndex's indexes.
        """
        ids = self._nodes.ids_of_ref_doc(ref_doc_id)
        present = [i for i in ids if all(i in index for index in self._editable_indexes())]
        if present:
            self.delete_nodes(present, **delete_kwargs)


class FusionEditing:
    """Mixin for a retriever with ``_retrievers`` (its children): edit them all."""

    _retrievers: tuple[Any, ...]

    def _editable_children(self) -> list[Any]:
        children = list(dict.fromkeys(self._retrievers))  # a child listed twice: once
        for child in children:
            if not (callable(getattr(child, "insert_nodes", None))
                    and callable(getattr(child, "delete_nodes", None))):
                raise TypeError(
                    f"cannot edit {type(self).__name__}: child {type(child).__name__} has no "
                    "insert_nodes / delete_nodes; edit the children yourself"
                )
        return children

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> list[str]:
        """Insert nodes into every child (each indexes them its own way); returns the ids.

        TypeError for a child that cannot be edited, ValueError for an id already
        indexed (nothing is inserted then).
        """
        children = self._editable_children()
        node_list = list(nodes)
        return apply_to_all(  # type: ignore[no-any-return]
            children, lambda child: child.insert_nodes(node_list, **insert_kwargs),
            lambda child: child.delete_nodes([n.node_id for n in node_list]))

    def delete_nodes(self, node_ids: Sequence[str], **delete_kwargs: Any) -> None:
        """Delete nodes by id from every child; KeyError naming ids a child does not hold
        (checked in every child first when the children are this package's)."""
        children = self._editable_children()
        ids = id_list(node_ids)
        for child in children:
            check_known_ids(ids, getattr(child, "_editable_indexes", list)(), type(child).__name__)
        for child in children:
            child.delete_nodes(ids, **delete_kwargs)
