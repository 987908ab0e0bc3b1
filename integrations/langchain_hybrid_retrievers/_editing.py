"""Editing methods shared by the retrievers that wrap one core index (BM25, dense)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document

from ._convert import copy_metadatas, documents_to_columns

__all__ = ["IndexEditingMixin"]


class IndexEditingMixin:
    """``add_documents`` / ``add_texts`` / ``delete`` delegated to ``self.index``.

    The core index does the work (embedding new texts for a dense index, updating
    N, avgdl and idf for BM25), so every retriever edits exactly like its index.
    """

    index: Any

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Add documents; returns their ids (``Document.id`` or content ids).

        Raises:
            ValueError: if an id is already indexed (nothing is added then).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return self.index.add(texts, ids=ids, metadatas=metadatas)

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
    ) -> list[str]:
        """Add raw texts; returns the ids added (metadata is copied, nested values too)."""
        return self.index.add(texts, ids=ids, metadatas=copy_metadatas(metadatas))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id.

        Raises:
            KeyError: naming unknown ids (nothing is deleted then).
        """
        self.index.delete(ids)
