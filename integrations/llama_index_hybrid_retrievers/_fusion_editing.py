"""Editing a LlamaIndex `FusionRetriever`: every child, consistently.

`FusionEditing` gives a fusion of editable children (this package's BM25, dense and
fusion retrievers) ``insert_nodes`` / ``delete_nodes``: an insert that fails in one
child is undone in the others, and a delete checks every child first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

__all__ = ["FusionEditing"]


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

        Raises:
            TypeError: a child that cannot be edited (nothing is inserted then).
            ValueError: an id already indexed (nothing is inserted then).
        """
        children = self._editable_children()
        node_list = list(nodes)
        done: list[Any] = []
        ids: list[str] = []
        try:
            for child in children:
                ids = child.insert_nodes(node_list, **insert_kwargs)
                done.append(child)
        except BaseException:
            for child in done:  # keep the children consistent with each other
                child.delete_nodes([n.node_id for n in node_list])
            raise
        return ids

    def delete_nodes(self, node_ids: Sequence[str], **delete_kwargs: Any) -> None:
        """Delete nodes by id from every child.

        Raises:
            KeyError: naming ids a child does not hold (checked in every child first
                when the children are this package's, so nothing is deleted then).
        """
        children = self._editable_children()
        ids = [node_ids] if isinstance(node_ids, str) else list(node_ids)
        for child in children:
            for index in getattr(child, "_editable_indexes", list)():
                unknown = [i for i in ids if i not in index]
                if unknown:
                    raise KeyError(f"{len(unknown)} node id(s) not in {type(child).__name__}: "
                                   f"{unknown[:5]}")
        for child in children:
            child.delete_nodes(ids, **delete_kwargs)
