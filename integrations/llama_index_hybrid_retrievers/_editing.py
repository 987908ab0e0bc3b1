"""Editing a LlamaIndex retriever: ``insert_nodes`` / ``delete_nodes`` / ``delete_ref_doc``.

The names are those of LlamaIndex's indexes. Each edit goes to every core index the
retriever searches (`NodeEditing._editable_indexes`), all or nothing, and keeps the
retriever's `NodeCache` (``self._nodes``) in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from ._convert import as_node_list, nodes_to_docs
from ._nodes import NodeCache

__all__ = ["NodeEditing"]


class NodeEditing:
    """Mixin: the editing methods over ``self._searcher`` and ``self._nodes``."""

    _searcher: Any
    _nodes: NodeCache

    # ------------------------------------------------------------------ editing

    def _editable_indexes(self) -> list[Any]:
        """The core indexes searched by this retriever (each gets every edit)."""
        return [self._searcher]

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> list[str]:
        """Index more nodes (``VectorStoreIndex.insert_nodes``'s name); returns their ids.

        The core updates its statistics (N, avgdl, idf for BM25; a dense index embeds
        the new texts). ``insert_kwargs`` are accepted for LlamaIndex compatibility and
        must be empty.

        Raises:
            ValueError: an id already indexed (nothing is inserted then).
        """
        if insert_kwargs:
            raise TypeError(f"insert_nodes got unexpected argument(s) {sorted(insert_kwargs)}")
        new_nodes = as_node_list(nodes)
        docs = nodes_to_docs(new_nodes)
        done: list[Any] = []
        try:
            for index in self._editable_indexes():
                index.add_docs(docs)
                done.append(index)
        except BaseException:
            for index in done:  # keep the indexes consistent with each other
                index.delete([d.id for d in docs])
            raise
        self._nodes.update(new_nodes)
        return [d.id for d in docs]

    def delete_nodes(self, node_ids: Sequence[str], **delete_kwargs: Any) -> None:
        """Remove nodes by id (``VectorStoreIndex.delete_nodes``'s name).

        Raises:
            KeyError: naming unknown ids (nothing is deleted then).
        """
        if delete_kwargs:
            raise TypeError(f"delete_nodes got unexpected argument(s) {sorted(delete_kwargs)}")
        ids = [node_ids] if isinstance(node_ids, str) else list(node_ids)
        indexes = self._editable_indexes()
        for index in indexes:  # check everywhere first: all or nothing
            unknown = [i for i in ids if i not in index]
            if unknown:
                raise KeyError(f"{len(unknown)} node id(s) not in the index: {unknown[:5]}")
        for index in indexes:
            index.delete(ids)
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
