"""LlamaIndex retriever over the core `BM25Index`.

Thin by design: the core does the scoring, filtering and top-k; this module converts
nodes to `Doc`s, maps ``similarity_top_k`` onto the core's ``k``, wraps hits in new
`NodeWithScore` objects and runs async retrieval in a worker thread.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.types import MetadataFilter

from ._base import CoreIndexRetriever, IndexOptions, one_filter, one_source, source_nodes
from ._convert import nodes_to_docs

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["BM25Retriever"]


class BM25Retriever(CoreIndexRetriever):
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
        bm25_index: The core index that does all scoring (shared, not copied);
            ``index=`` is its deprecated name.
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

    index_type = BM25Index
    index_argument = "bm25_index"
    build_hint = "BM25Retriever.from_defaults(nodes=...)"
    legacy_kind = "bm25"

    def __init__(self, bm25_index: BM25Index | None = None,
                 **options: Unpack[IndexOptions]) -> None:
        super().__init__(bm25_index, **options)

    @property
    def bm25_index(self) -> BM25Index:
        """The core BM25 index."""
        return self._searcher  # type: ignore[no-any-return]

    # ----------------------------------------------------------------- build

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        index: Any = None,
        bm25_index: BM25Index | None = None,
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
                docstore is indexed (a core `BM25Index` here is deprecated).
            bm25_index: Alternatively, a core `BM25Index`, used as it is.
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
            ValueError: unless exactly one of ``nodes``, ``docstore``, ``index`` and
                ``bm25_index`` is given.
            TypeError: for an argument of llama-index-retrievers-bm25 that has no meaning
                here (``tokenizer``, ``token_pattern``, ``existing_bm25``...).
        """
        _refuse(unsupported)
        where = one_filter(filter, filters)
        if index is not None and bm25_index is not None:
            raise ValueError("pass index= or bm25_index=, not both")
        one_source(" (a core BM25Index goes in bm25_index=)", nodes=nodes, docstore=docstore,
                   index=index if bm25_index is None else bm25_index)
        if isinstance(index, BM25Index):
            warnings.warn("BM25Retriever.from_defaults(index=<BM25Index>) is deprecated; pass "
                          "bm25_index=", DeprecationWarning, stacklevel=2)
            index, bm25_index = None, index
        analyzer = _analyzer(analyzer, language, stemmer, skip_stemming)
        if bm25_index is not None:
            if analyzer is not None:
                raise ValueError("an existing BM25Index keeps its analyzer; do not pass one")
            return cls(bm25_index, similarity_top_k=similarity_top_k, filter=where,
                       callback_manager=callback_manager, verbose=verbose)
        if index is not None:
            docstore = getattr(index, "docstore", None)
            if docstore is None:
                raise TypeError(
                    f"index must be a LlamaIndex index with a docstore (VectorStoreIndex...) "
                    f"or a hybrid_retrievers BM25Index, got {type(index).__name__}"
                )
        node_list = source_nodes(nodes, docstore)
        core = BM25Index.from_docs(nodes_to_docs(node_list), analyzer=analyzer, k1=k1, b=b,
                                   method=method, delta=delta, show_progress=verbose)
        return cls(core, similarity_top_k=similarity_top_k, filter=where, nodes=node_list,
                   callback_manager=callback_manager, verbose=verbose)

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
        return cls._load(persist_dir, lambda folder: BM25Index.load(folder, mmap=mmap),  # type: ignore[no-any-return]
                         similarity_top_k=similarity_top_k, filter=filter, filters=filters,
                         callback_manager=callback_manager, verbose=verbose)


_UNSUPPORTED = {
    "tokenizer": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook "
                 "(saved with the index, used for documents and queries)",
    "token_pattern": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook",
    "existing_bm25": "pass bm25_index=<hybrid_retrievers.BM25Index> (e.g. BM25Index.load(path)), "
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
