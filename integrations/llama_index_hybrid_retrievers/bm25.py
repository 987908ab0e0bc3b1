"""LlamaIndex retriever over the core `BM25Index`.

Thin by design: the core does the scoring, filtering and top-k; this module converts
nodes to `Doc`s, maps ``similarity_top_k`` onto the core's ``k``, wraps hits in new
`NodeWithScore` objects and runs async retrieval in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.types import MetadataFilter

from ._base import CoreIndexRetriever, LoadOptions, SearcherOptions, refuse_arguments
from ._convert import nodes_to_docs, one_source, source_nodes

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["BM25Retriever"]


class BM25Retriever(CoreIndexRetriever[BM25Index]):
    """BM25 keyword retriever for LlamaIndex backed by `hybrid_retrievers.BM25Index`.

    Each result is a new `NodeWithScore` carrying the BM25 score; its node is the
    caller's node object (not modified; after `from_persist_dir`, rebuilt from its saved
    fields) while it agrees with the index, else a `TextNode` of the stored document.
    Indexed text is the node's own text (``MetadataMode.NONE``). Only nodes matching at
    least one query term are returned.

    The constructor takes the core index and the
    `SearcherOptions` (``filters`` is a mapping, a callable over a `Doc` or `MetadataFilters`,
    applied before top-k).

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

    searcher_type = BM25Index
    searcher_argument = "bm25_index"
    build_hint = "BM25Retriever.from_defaults(nodes=...)"

    def __init__(self, bm25_index: BM25Index, **options: Unpack[SearcherOptions]) -> None:
        super().__init__(bm25_index, **options)

    @property
    def bm25_index(self) -> BM25Index:
        """The core BM25 index."""
        return self._searcher

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
        filters: MetadataFilters | MetadataFilter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **unsupported: Any,
    ) -> BM25Retriever:
        """Index nodes (or a docstore's, or a LlamaIndex index's) and return a retriever.

        Takes the arguments of ``llama_index.retrievers.bm25.BM25Retriever.from_defaults``
        that mean something here; the others (``tokenizer``, ``token_pattern``,
        ``existing_bm25``...) raise a `TypeError` naming the alternative.

        Exactly one source: ``nodes``, a ``docstore`` or a LlamaIndex ``index`` whose
        nodes are all indexed, or a core ``bm25_index`` used as it is. ``language`` /
        ``stemmer`` / ``skip_stemming`` are bm25s's spelling of an ``analyzer``
        (`analyzer_from_bm25s`); ``k1``, ``b``, ``method`` and ``delta`` are
        `BM25Index.from_docs`'s; the rest are the constructor's.
        """
        refuse_arguments("BM25Retriever.from_defaults", unsupported, _UNSUPPORTED)
        one_source(nodes=nodes, docstore=docstore, index=index, bm25_index=bm25_index)
        analyzer = analyzer_from_bm25s(analyzer, language, stemmer, skip_stemming)
        options = {"similarity_top_k": similarity_top_k, "filters": filters,
                   "callback_manager": callback_manager, "verbose": verbose}
        if bm25_index is not None:
            if analyzer is not None:
                raise ValueError("an existing BM25Index keeps its analyzer; do not pass one")
            return cls(bm25_index, **options)
        if index is not None:
            docstore = getattr(index, "docstore", None)
            if docstore is None:
                raise TypeError(
                    f"index must be a LlamaIndex index with a docstore (VectorStoreIndex...), "
                    f"got {type(index).__name__}; a hybrid_retrievers BM25Index goes in "
                    "bm25_index="
                )
        node_list = source_nodes(nodes, docstore)
        core = BM25Index.from_docs(nodes_to_docs(node_list), analyzer=analyzer, k1=k1, b=b,
                                   method=method, delta=delta, show_progress=verbose)
        return cls(core, nodes=node_list, **options)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | os.PathLike[str], *, mmap: bool = False,
                         **options: Unpack[LoadOptions]) -> BM25Retriever:
        """Load a retriever saved with `persist` (or a `BM25Index.save` folder).

        ``options`` default to the saved ones; ``mmap`` memory-maps the index arrays.
        `IndexFormatError` for a missing, corrupt or foreign directory.
        """
        return cls._load(persist_dir, lambda folder: BM25Index.load(folder, mmap=mmap),  # type: ignore[no-any-return]
                         bare_index_kind="bm25", **options)


_UNSUPPORTED = {
    "tokenizer": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook "
                 "(saved with the index, used for documents and queries)",
    "token_pattern": "pass analyzer=hybrid_retrievers.Analyzer(...) with its tokenizer hook",
    "existing_bm25": "pass bm25_index=<hybrid_retrievers.BM25Index> (e.g. BM25Index.load(path)), "
                     "or use BM25Retriever.from_persist_dir",
    "corpus": "pass nodes=, docstore= or index=",
    "filter": "LlamaIndex spells it filters=, as VectorIndexRetriever does",
}


# The bm25s library's tokenizer options (what llama-index-retrievers-bm25 takes: language,
# a PyStemmer stemmer, skip_stemming) as one Analyzer, saved with the index. A PyStemmer
# object is accepted only when it stems like the Snowball stemmer of ``language`` (the
# analyzer uses that one, so the index can be saved).
_PROBE = ["running", "connections", "generously", "nations", "happiness"]


def analyzer_from_bm25s(analyzer: Analyzer | None, language: str | None, stemmer: Any,
                        skip_stemming: bool) -> Analyzer | None:
    """``analyzer``, or the `Analyzer` of the bm25s options (``None`` when none is given).

    Raises:
        ValueError: for ``analyzer`` together with a bm25s option, ``stemmer`` together
            with ``skip_stemming``, or a PyStemmer stemmer that does not stem like
            Snowball ``language`` (default English).
    """
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
        reference = Analyzer(lang, stopwords=None)
        if [reference.tokenize(w)[0] for w in _PROBE] != list(stemmer.stemWords(_PROBE)):
            raise ValueError(
                f"the PyStemmer stemmer given does not stem like Snowball {lang!r}; pass "
                "language= matching it (it sets the Snowball stemmer and stopwords)"
            )
    elif stemmer is not None:
        spec = stemmer
    return Analyzer(lang, stemmer=spec)
