"""LlamaIndex parent-document retriever over the core `ParentChildSearcher`.

Unlike LlamaIndex's ``AutoMergingRetriever`` it needs no configured docstore: parents
live in the core's in-memory `ParentStore` (with save/load) unless another store is
given. Splitting, grouping, the "fetch more children until k parents" loop, the
auto-merge rule and the ``from_defaults`` recipe (`ParentChildSearcher.from_docs`) are
the core's; this module converts nodes and keeps search off the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import BaseNode

from hybrid_retrievers.integration import check_k, check_merge_threshold
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore, ParentStoreLike

from ._base import (
    BuildOptions,
    LoadOptions,
    SearcherOptions,
    SearcherState,
    constructor_factory,
)
from ._convert import QueryChecked, as_node_list, nodes_to_docs
from ._editing import id_list
from .embeddings import as_embedder

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["ParentDocumentRetriever"]


class ParentDocumentRetriever(SearcherState[ParentChildSearcher], QueryChecked, BaseRetriever):
    """Match small child chunks, return their parent nodes (backed by `ParentChildSearcher`).

    Each result is a new `NodeWithScore` scored by the parent's best child, its node the
    caller's parent node (else a `TextNode` rebuilt from the store). ``similarity_top_k``
    counts parents; ``fetch_k`` and ``merge_threshold`` are `ParentChildSearcher.search`'s.
    The constructor takes the searcher, those two and the `SearcherOptions`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import ParentDocumentRetriever
        >>> retriever = ParentDocumentRetriever.from_defaults(
        ...     nodes=[TextNode(id_="wings", text="Wings make lift. Flaps add lift."),
        ...            TextNode(id_="bread", text="Yeast makes bread rise.")],
        ...     similarity_top_k=1, chunk_size=20, chunk_overlap=0,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("flaps")]
        ['wings']
    """

    searcher_type = ParentChildSearcher
    build_hint = "ParentDocumentRetriever.from_defaults"

    def __init__(self, searcher: ParentChildSearcher, *, fetch_k: int | None = None,
                 merge_threshold: float | None = None,
                 **options: Unpack[SearcherOptions]) -> None:
        self._fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self._merge = check_merge_threshold(merge_threshold)  # now, not at the first query
        super().__init__(searcher, **options)

    @classmethod
    @constructor_factory
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode],
        *,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        splitter: Any = None,
        embed_model: Any = None,
        parent_store: ParentStoreLike | None = None,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
        **options: Unpack[BuildOptions],
    ) -> ParentDocumentRetriever:
        """Split parent nodes (or Documents) into children and index them.

        The recipe is `ParentChildSearcher.from_docs` (``splitter`` may be a LlamaIndex
        node parser with ``split_text``); with ``embed_model`` the children are indexed
        hybrid (BM25 + dense). The other arguments are the constructor's.
        """
        node_list = as_node_list(nodes)
        searcher = ParentChildSearcher.from_docs(
            nodes_to_docs(node_list), chunk_size=chunk_size, chunk_overlap=chunk_overlap,
            splitter=splitter, embedder=_embedder(embed_model), parent_store=parent_store,
            k=options.get("similarity_top_k", 4),
        )
        return cls(searcher, fetch_k=fetch_k, merge_threshold=merge_threshold, nodes=node_list,
                   **options)

    def _search_options(self) -> dict[str, Any]:
        return {**super()._search_options(), "fetch_k": self._fetch_k,
                "merge_threshold": self._merge}

    def insert_nodes(self, nodes: Sequence[BaseNode]) -> list[str]:
        """Add parent nodes (split, children indexed); returns their ids."""
        node_list = list(nodes)
        ids = self._searcher.add(nodes_to_docs(node_list))
        self._nodes.update(node_list)
        return ids  # type: ignore[no-any-return]

    def delete(self, parent_ids: Sequence[str]) -> None:
        """Remove parents and all their children by parent id (KeyError for unknown ids)."""
        ids = id_list(parent_ids)
        self._searcher.delete(ids)
        self._nodes.discard(ids)

    delete_nodes = delete  # the name LlamaIndex's indexes use

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the parents, the child index, the parents' node fields and the settings
        (data only; the searcher under ``index/`` by `ParentChildSearcher.save`)."""
        self._write(persist_dir)

    @staticmethod
    def _stored_docs(searcher: Any) -> list[Any]:
        # The parents of an in-memory ParentStore (another store keeps its own).
        store = searcher.parent_store
        return list(store) if isinstance(store, ParentStore) else []

    def _settings(self) -> dict[str, Any]:
        return {**super()._settings(), "fetch_k": self._fetch_k, "merge_threshold": self._merge}

    @classmethod
    def _saved_options(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return {"fetch_k": settings.get("fetch_k"),
                "merge_threshold": settings.get("merge_threshold")}

    @classmethod
    @constructor_factory
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: Any = None,
        splitter: Any = None, **options: Unpack[LoadOptions],
    ) -> ParentDocumentRetriever:
        """Load a retriever saved with `persist`: same results, same parent node fields.

        ``embed_model`` is a dense child index's model; ``splitter`` splits parents
        inserted later; ``options`` default to the saved ones.
        """
        return cls._load(  # type: ignore[no-any-return]
            persist_dir, lambda folder: ParentChildSearcher.load(
                folder, embedder=_embedder(embed_model), splitter=splitter), **options)


def _embedder(embed_model: Any) -> Any:
    """``embed_model`` as a core `Embedder`; ``None`` (BM25 children) stays ``None``."""
    return None if embed_model is None else as_embedder(embed_model)
