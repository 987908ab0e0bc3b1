"""LlamaIndex retriever over the core `BM25Index`.

Thin by design: the core does the scoring, filtering and top-k; this module converts
nodes to `Doc`s, maps ``similarity_top_k`` onto the core's ``k``, wraps hits in new
`NodeWithScore` objects and runs async retrieval in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.types import MetadataFilter

from ._base import CoreSearcherRetriever, one_filter
from ._convert import hit_to_node_with_score, nodes_to_docs
from ._nodes import NodeCache

__all__ = ["BM25Retriever"]


class BM25Retriever(CoreSearcherRetriever):
    """BM25 keyword retriever for LlamaIndex backed by `hybrid_retrievers.BM25Index`.

    Returned nodes: each result is a new `NodeWithScore` carrying the BM25 score.
    Its node is the caller's node object (not modified) given to `from_defaults` /
    `insert_nodes`, or after `from_persist_dir` the same node rebuilt from its saved
    fields (type, relationships, excluded metadata keys, templates); a `TextNode`
    rebuilt from the stored id, text and metadata for documents added to ``index``
    directly, or replaced there (the index's text always wins). Indexed text is the
    node's own text (``MetadataMode.NONE``). Only nodes matching at least one query
    term are returned, best first. `insert_nodes` / `delete_nodes` edit the index.

    Args:
        index: The core index that does all scoring (shared, not copied).
        similarity_top_k: Number of nodes to return (>= 1).
        filter: Applied before top-k: a mapping (metadata equality on every key), a
            callable receiving a `hybrid_retrievers.Doc`, or a LlamaIndex
            `MetadataFilters` (``filters=`` is LlamaIndex's spelling).
        nodes: Original node objects to hand back for matching ids.
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import BM25Retriever
        >>> retriever = BM25Retriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="BM25 ranks documents"),
        ...            TextNode(id_="b", text="Cats sleep all day")],
        ...     similarity_top_k=1,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("ranking documents")]
        ['a']
    """

    def __init__(
        self,
        index: BM25Index,
        *,
        similarity_top_k: int = 4,
        filter: MetadataFilter | MetadataFilters | None = None,
        nodes: Iterable[BaseNode] | NodeCache | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> None:
        filter = one_filter(filter, filters)
        if not isinstance(index, BM25Index):
            raise TypeError(
                f"index must be a hybrid_retrievers.BM25Index, got {type(index).__name__}; "
                "build one with BM25Retriever.from_defaults(nodes=...)"
            )
        self._index = index
        self._setup(similarity_top_k=similarity_top_k, filter=filter, nodes=nodes,
                    callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------ properties

    @property
    def index(self) -> BM25Index:
        """The core BM25 index."""
        return self._index

    # ----------------------------------------------------------------- build

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        index: Any = None,
        similarity_top_k: int = 4,
        analyzer: Analyzer | None = None,
        language: str | None = None,
        stemmer: Any = None,
        skip_stemming: bool = False,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        filters: MetadataFilters | MetadataFilter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **unsupported: Any,
    ) -> BM25Retriever:
        """Index nodes (or a docstore's, or a LlamaIndex index's) and return a retriever.

        The arguments of ``llama_index.retrievers.bm25.BM25Retriever.from_defaults`` are
        accepted where they mean something here (``index``, ``nodes``, ``docstore``,
        ``similarity_top_k``, ``language``, ``stemmer``, ``skip_stemming``, ``filters``,
        ``verbose``); the others raise a `TypeError` naming the alternative.

        Args:
            nodes: The nodes to index; ids are ``node.node_id``.
            docstore: Alternatively, a docstore whose ``docs`` are all indexed.
            index: Alternatively, a LlamaIndex index (``VectorStoreIndex``...) whose
                docstore is indexed, or a core `BM25Index` used as it is.
            similarity_top_k: Number of nodes to return (>= 1).
            analyzer: Tokenizer settings; ``None`` uses the core default (English).
            language: Shorthand for ``analyzer=Analyzer(language=...)`` (``"en"``,
                ``"english"``, ``"es"``...): stopwords and Snowball stemmer of that language.
            stemmer: ``"default"`` (Snowball), ``None``... as for `Analyzer`; a PyStemmer
                ``Stemmer.Stemmer(lang)`` object is accepted when it is ``language``'s.
            skip_stemming: Do not stem (``stemmer=None``).
            k1, b, method, delta: BM25 parameters, passed to `BM25Index.from_docs`.
            filter: See the class docstring; ``filters`` is LlamaIndex's spelling.
            callback_manager: LlamaIndex callback manager.
            verbose: Also shows a progress bar while indexing.

        Raises:
            ValueError: unless exactly one of ``nodes``, ``docstore`` and ``index`` is given.
            TypeError: for an argument of llama-index-retrievers-bm25 that has no meaning
                here (``tokenizer``, ``token_pattern``, ``existing_bm25``...).
        """
        _refuse(unsupported)
        where = one_filter(filter, filters)
        sources = sum(x is not None for x in (nodes, docstore, index))
        if sources != 1:
            raise ValueError(
                "pass exactly one of nodes=, docstore= or index=, got "
                f"{'none' if sources == 0 else sources}"
            )
        analyzer = _analyzer(analyzer, language, stemmer, skip_stemming)
        if isinstance(index, BM25Index):
            if analyzer is not None:
                raise ValueError("an existing BM25Index keeps its analyzer; do not pass one")
            return cls(index, similarity_top_k=similarity_top_k, filter=where,
                       callback_manager=callback_manager, verbose=verbose)
        if index is not None:
            docstore = getattr(index, "docstore", None)
            if docstore is None:
                raise TypeError(
                    f"index must be a LlamaIndex index with a docstore (VectorStoreIndex...) "
                    f"or a hybrid_retrievers BM25Index, got {type(index).__name__}"
                )
        if docstore is not None:
            if not isinstance(docstore, BaseDocumentStore):
                raise TypeError(
                    "docstore must be a llama_index BaseDocumentStore, got "
                    f"{type(docstore).__name__}"
                )
            node_list = list(docstore.docs.values())
        else:
            if isinstance(nodes, BaseNode):
                raise TypeError("nodes must be a list of nodes, got a single node; wrap it in a list")
            node_list = list(nodes)  # type: ignore[arg-type]
        core = BM25Index.from_docs(
            nodes_to_docs(node_list),
            analyzer=analyzer,
            k1=k1,
            b=b,
            method=method,
            delta=delta,
            show_progress=verbose,
        )
        return cls(
            core,
            similarity_top_k=similarity_top_k,
            filter=where,
            nodes=node_list,
            callback_manager=callback_manager,
            verbose=verbose,
        )

    # ---------------------------------------------------------------- search

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._index.search(
            query_bundle.query_str, k=self._similarity_top_k, filter=self._core_filter
        )
        return [hit_to_node_with_score(hit, self._nodes) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # BM25 scoring is CPU work: keep it off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # --------------------------------------------------------------- editing

    def _editable_indexes(self) -> list[Any]:
        return [self._index]

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the retriever: index, node fields, ``similarity_top_k`` and filter.

        Written atomically as data (JSON + ``.npy``, never pickle): the core index
        (ids, texts, metadata, analyzer, BM25 parameters) under ``index/``, which
        ``BM25Index.load`` reads, and each node's LlamaIndex fields (type,
        relationships / ``ref_doc_id``, excluded metadata keys, templates) as JSON. A
        filter that is code (a callable) is not saved (a warning says so).
        """
        self._write(persist_dir, self._index.docs, {"index": self._index.save})

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str],
        *,
        similarity_top_k: int | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        filters: MetadataFilters | MetadataFilter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        mmap: bool = False,
    ) -> BM25Retriever:
        """Load a retriever saved with `persist`: same results, same node fields.

        ``similarity_top_k`` and ``filter`` default to the saved ones. A directory
        holding a bare `BM25Index` (``BM25Index.save``) loads too, with `TextNode`s.

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign directory.
        """
        folder, fields, kwargs, _ = cls._read(persist_dir, ("bm25",), similarity_top_k,
                                              one_filter(filter, filters))
        index = BM25Index.load(folder, mmap=mmap)
        return cls(index, nodes=NodeCache.from_json(fields, index.docs),
                   callback_manager=callback_manager, verbose=verbose, **kwargs)


_UNSUPPORTED = {
    "tokenizer": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook "
                 "(saved with the index, used for documents and queries)",
    "token_pattern": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook",
    "existing_bm25": "pass index=<hybrid_retrievers.BM25Index> (e.g. BM25Index.load(path)), "
                     "or use BM25Retriever.from_persist_dir",
    "corpus": "pass nodes=, docstore= or index=",
}


def _refuse(unsupported: dict[str, Any]) -> None:
    if unsupported:
        parts = [f"{k!r} ({_UNSUPPORTED[k]})" if k in _UNSUPPORTED else repr(k)
                 for k in unsupported]
        raise TypeError(f"BM25Retriever.from_defaults got unexpected argument(s) "
                        f"{', '.join(parts)}")


def _analyzer(analyzer: Analyzer | None, language: str | None, stemmer: Any,
              skip_stemming: bool) -> Analyzer | None:
    """llama-index-retrievers-bm25's ``language`` / ``stemmer`` / ``skip_stemming`` as an Analyzer."""
    if language is None and stemmer is None and not skip_stemming:
        return analyzer
    if analyzer is not None:
        raise ValueError("pass analyzer= or language= / stemmer= / skip_stemming=, not both")
    if skip_stemming and stemmer is not None:
        raise ValueError("pass stemmer= or skip_stemming=True, not both")
    lang = "english" if language is None else language
    spec: Any = "default"
    if skip_stemming:
        spec = None
    elif callable(getattr(stemmer, "stemWords", None)):  # a PyStemmer Stemmer object
        probe = ["running", "connections", "generously", "nations", "happiness"]
        reference = Analyzer(lang, stopwords=None)
        if [reference.tokenize(w)[0] for w in probe] != list(stemmer.stemWords(probe)):
            raise ValueError(
                f"the PyStemmer stemmer given does not stem like Snowball {lang!r}; pass "
                "language= matching it (it sets the Snowball stemmer and stopwords)"
            )
    elif stemmer is not None:
        spec = stemmer
    return Analyzer(lang, stemmer=spec)
