"""State shared by the retrievers that wrap core searchers: top-k, filter, nodes, editing."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.validation import check_k
from hybrid_retrievers.types import MetadataFilter

from ._query import QueryChecked
from ._convert import nodes_to_docs, to_core_filter
from ._nodes import NodeCache
from ._persist import filter_from_json, filter_to_json, read_retriever, write_retriever

__all__ = ["CoreSearcherRetriever", "one_filter"]


def one_filter(filter: Any, filters: Any) -> Any:
    """``filter`` or LlamaIndex's spelling ``filters`` (``VectorIndexRetriever``'s), not both."""
    if filter is not None and filters is not None:
        raise ValueError("pass filter= or filters= (the same), not both")
    return filters if filter is None else filter


class CoreSearcherRetriever(QueryChecked, BaseRetriever):
    """Base of the BM25, dense and HyDE retrievers.

    Holds ``similarity_top_k`` (validated on every assignment), the filter as given
    and its core form, and the caller's nodes (`NodeCache`), so results can hand back
    the caller's node objects while they agree with the index. Editing
    (`insert_nodes` / `delete_nodes` / `delete_ref_doc`, the names of LlamaIndex's
    indexes) goes to every core index the retriever searches (`_editable_indexes`).
    """

    def _setup(
        self,
        *,
        similarity_top_k: int,
        filter: MetadataFilter | MetadataFilters | None,
        nodes: Iterable[BaseNode] | NodeCache | None,
        callback_manager: CallbackManager | None,
        verbose: bool,
    ) -> None:
        self.similarity_top_k = similarity_top_k
        self._filter = filter
        self._core_filter: Any = to_core_filter(filter)
        self._nodes = nodes if isinstance(nodes, NodeCache) else NodeCache(nodes or ())
        BaseRetriever.__init__(self, callback_manager=callback_manager, verbose=verbose)

    @property
    def similarity_top_k(self) -> int:
        """Number of nodes to return; validated on every assignment."""
        return self._similarity_top_k

    @similarity_top_k.setter
    def similarity_top_k(self, value: int) -> None:
        self._similarity_top_k = check_k(value, name="similarity_top_k")

    @property
    def filter(self) -> MetadataFilter | MetadataFilters | None:
        """The filter as given at construction."""
        return self._filter

    filters = filter  # LlamaIndex's spelling

    # ------------------------------------------------------------------ editing

    def _editable_indexes(self) -> list[Any]:
        """The core indexes searched by this retriever (each gets every edit)."""
        raise NotImplementedError

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
        if isinstance(nodes, BaseNode):
            raise TypeError("nodes must be a list of nodes, got a single node; wrap it in a list")
        node_list = list(nodes)
        docs = nodes_to_docs(node_list)
        done: list[Any] = []
        try:
            for index in self._editable_indexes():
                index.add_docs(docs)
                done.append(index)
        except BaseException:
            for index in done:  # keep the indexes consistent with each other
                index.delete([d.id for d in docs])
            raise
        self._nodes.update(node_list)
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

    # -------------------------------------------------------------- persistence

    def _settings(self) -> dict[str, Any]:
        return {"similarity_top_k": self._similarity_top_k,
                "filter": filter_to_json(self._filter)}

    def _write(self, persist_dir: str | os.PathLike[str], docs: Iterable[Any],
               indexes: dict[str, Callable[[Path], None]]) -> None:
        write_retriever(persist_dir, type(self).__name__, self._settings(),
                        self._nodes.to_json(docs), indexes)

    @classmethod
    def _read(
        cls,
        persist_dir: str | os.PathLike[str],
        legacy_kinds: tuple[str, ...],
        similarity_top_k: int | None,
        filter: Any,
    ) -> tuple[Path, dict[str, Any], dict[str, Any], dict[str, Any]]:
        """``(index folder, node fields, retriever kwargs, all saved settings)``.

        Per-call arguments that are not ``None`` win over the saved settings.
        """
        settings, nodes, folder = read_retriever(persist_dir, cls.__name__, legacy_kinds)
        saved_filter = filter_from_json(settings.get("filter"), str(persist_dir))
        kwargs = {
            "similarity_top_k": settings.get("similarity_top_k", 4)
            if similarity_top_k is None else similarity_top_k,
            "filter": saved_filter if filter is None else filter,
        }
        return folder, nodes, kwargs, settings
