"""LlamaIndex retriever over the core `BM25Index`.

Thin by design: the core does the scoring, filtering and top-k; this module converts
nodes to `Doc`s (their ``MetadataMode.EMBED`` content by default, as
``llama-index-retrievers-bm25`` indexes them), maps ``similarity_top_k`` and bm25s's
tokenizer options onto the core's, wraps hits in new `NodeWithScore` objects and runs
async retrieval in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.integration import query_field_weights

from ._base import (
    CoreIndexRetriever,
    LoadOptions,
    checks_keywords,
    constructor_keywords,
    refuse_arguments,
)
from ._convert import as_node_list, nodes_to_docs, one_source, source_nodes
from ._nodes import NodeCache

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["BM25Retriever"]


class BM25Retriever(CoreIndexRetriever[BM25Index]):
    """BM25 keyword retriever for LlamaIndex backed by `hybrid_retrievers.BM25Index`.

    A drop-in for ``llama_index.retrievers.bm25.BM25Retriever``: its constructor and
    ``from_defaults`` take the nodes (``BM25Retriever(nodes=nodes, similarity_top_k=2)``)
    or a ``docstore`` / an ``index``, and index what it indexes: each node's
    ``get_content(metadata_mode=MetadataMode.EMBED)``, its text with its metadata
    (titles, file names...) less ``excluded_embed_metadata_keys``. ``metadata_mode=
    MetadataMode.NONE`` indexes the text alone. ``language``, ``stemmer``,
    ``skip_stemming`` and ``token_pattern`` (bm25s's tokenizer options) become the
    index's `Analyzer`, saved with it, and read back as properties after
    `from_persist_dir` (``language`` as given: ``"en"`` stays ``"en"``); as there,
    ``nodes=[]`` and nodes with no term to index are ``ValueError``s in the original's
    words ("Please pass at least one node", "No valid tokens found"). ``filters``
    (`MetadataFilters`, a mapping, or a callable over a `Doc`) apply before top-k;
    ``objects`` / ``object_map`` are LlamaIndex's recursive retrieval. A core index built elsewhere goes in as ``bm25_index`` (first argument).

    Refused, with a `TypeError` naming what to pass instead: ``existing_bm25`` (a
    ``bm25s.BM25`` object: another library's index, which holds no texts to convert),
    ``corpus_weight_mask`` (its values multiply scores by node position; a 0/1 mask is a
    filter: pass ``filters=``) and ``corpus``. ``tokenizer``, deprecated and ignored
    there, is used here: it is the analyzer's tokenizer hook (see `Analyzer`; a callable
    works in memory, and saving needs it registered with ``register_tokenizer``).
    Differences kept on principle (docs/frameworks.md, "Differences from the originals"): only
    nodes matching a query term are returned (no zero-score padding), so up to
    ``similarity_top_k``, never more than the corpus (no warning needed);
    ``similarity_top_k`` is at least 1 (0 is a ``ValueError``, not ``[]``); the default
    analysis is this package's (`Analyzer`: NLTK's English stopwords, Snowball, codes
    and CJK kept; pass ``token_pattern=r"(?u)\\b\\w\\w+\\b"`` for bm25s's split).

    Fields (BM25F, see `hybrid_retrievers.bm25.fields`): ``fields={"title": 2.0,
    "text": 1.0}`` indexes ``node.metadata["title"]`` as its own field beside the text,
    each length-normalised on its own. With fields the metadata is fields, so
    ``metadata_mode`` defaults to ``NONE`` (``"text"`` is
    ``node.get_content(MetadataMode.NONE)``; ``EMBED`` would count a title twice, in its
    field and in the text: pass it explicitly if that is what you want).
    ``field_weights`` (settable, saved by `persist`) are the query weights, fields left
    out keeping their build weight; the fields come back with `from_persist_dir`.

    Each result is a new `NodeWithScore` carrying the BM25 score; its node is the
    caller's node object (not modified; after `from_persist_dir`, rebuilt from its saved
    fields) while it agrees with the index, else a `TextNode` of the stored document.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import BM25Retriever
        >>> retriever = BM25Retriever(
        ...     nodes=[TextNode(id_="a", text="BM25 ranks documents"),
        ...            TextNode(id_="b", text="Cats sleep all day",
        ...                     metadata={"title": "Ranking cats"})],
        ...     similarity_top_k=2,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("ranking documents")]
        ['a', 'b']
    """

    searcher_type = BM25Index
    searcher_argument = "bm25_index"
    build_hint = "BM25Retriever(nodes=...)"

    def __init__(
        self,
        bm25_index: BM25Index | Sequence[BaseNode] | None = None,
        *,
        nodes: Iterable[BaseNode] | NodeCache | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        metadata_mode: MetadataMode | str | None = None,
        analyzer: Analyzer | None = None,
        language: str | None = None,
        stemmer: Any = None,
        skip_stemming: bool = False,
        token_pattern: str | None = None,
        tokenizer: Callable[[str], Iterable[str]] | str | None = None,
        k1: float | None = None,
        b: float | None = None,
        method: str | None = None,
        delta: float | None = None,
        fields: Mapping[str, float] | None = None,
        field_weights: Mapping[str, float] | None = None,
        **options: Any,
    ) -> None:
        refuse_arguments(type(self).__name__, {
            key: options.pop(key) for key in list(options) if key in _UNSUPPORTED
        }, _UNSUPPORTED)
        if bm25_index is not None and not isinstance(bm25_index, BM25Index) and \
                isinstance(bm25_index, Sequence) and not isinstance(bm25_index, (str, bytes)):
            if nodes is not None:  # the original's first argument is the nodes
                raise ValueError("pass the nodes once: as the first argument or as nodes=")
            bm25_index, nodes = None, bm25_index
        build = {"analyzer": analyzer, "language": language, "stemmer": stemmer,
                 "skip_stemming": skip_stemming or None, "token_pattern": token_pattern,
                 "tokenizer": tokenizer, "k1": k1, "b": b, "method": method, "delta": delta,
                 "fields": fields}
        if bm25_index is None:
            if nodes is None or isinstance(nodes, NodeCache):
                raise ValueError("pass nodes= (the nodes to index) or bm25_index= (a "
                                 "hybrid_retrievers.BM25Index); got neither")
            default = MetadataMode.EMBED if fields is None else MetadataMode.NONE
            mode = default if metadata_mode is None else MetadataMode(metadata_mode)
            node_list = as_node_list(nodes)
            if not node_list:  # the original's words, so code matching them keeps working
                raise ValueError("Please pass at least one node: nodes= is empty (an empty "
                                 "corpus cannot be indexed)")
            bm25_index = BM25Index.from_docs(
                nodes_to_docs(node_list, mode),
                analyzer=analyzer_from_bm25s(analyzer, language, stemmer, skip_stemming,
                                             token_pattern, tokenizer),
                k1=k1, b=b, method=method, delta=delta, fields=fields,
                show_progress=bool(options.get("verbose", False)))
            if bm25_index.vocabulary_size == 0:
                raise ValueError(
                    f"No valid tokens found in the {len(node_list)} node(s) given: each is "
                    f"empty or only stopwords after analysis ({bm25_index.analyzer!r})")
            nodes = NodeCache(node_list, mode)
        else:
            given = sorted(key for key, value in build.items() if value is not None)
            if given:
                raise ValueError(f"an existing BM25Index keeps its analyzer and parameters; "
                                 f"do not pass {', '.join(given)} with it")
            if not isinstance(nodes, NodeCache):  # the caller's nodes for an index built
                mode = MetadataMode.NONE if metadata_mode is None else MetadataMode(
                    metadata_mode)  # elsewhere: from texts as given, unless told
                nodes = NodeCache(nodes or (), mode)
        super().__init__(bm25_index, nodes=nodes, similarity_top_k=similarity_top_k,
                         **options)
        self._language_as_given = language  # read back as given ("en"), saved with it
        self.field_weights = field_weights

    @property
    def field_weights(self) -> dict[str, float] | None:
        """The query's BM25F field weights (``None``: the index's build-time weights);
        checked on every assignment against the index's fields."""
        return self._field_weights

    @field_weights.setter
    def field_weights(self, value: Mapping[str, float] | None) -> None:
        if value is not None:
            query_field_weights(self._searcher.fields, value)
        self._field_weights = None if value is None else dict(value)

    @property
    def fields(self) -> dict[str, float] | None:
        """The index's build-time field weights (BM25F), or ``None`` for one field."""
        return self._searcher.fields

    def _search_options(self) -> dict[str, Any]:
        return {**super()._search_options(), "field_weights": self._field_weights}

    @property
    def bm25_index(self) -> BM25Index:
        """The core BM25 index."""
        return self._searcher

    @property
    def metadata_mode(self) -> MetadataMode:
        """Which content of a node is indexed (``EMBED``: with its metadata; ``NONE``)."""
        return self._nodes.metadata_mode

    @property
    def language(self) -> str:
        """``language`` as given (``"en"`` reads back ``"en"``, also after
        `from_persist_dir`), else the analyzer's language (``"english"`` by default)."""
        return self._language_as_given or self._searcher.analyzer.language

    @property
    def skip_stemming(self) -> bool:
        """Whether terms are not stemmed."""
        return self._searcher.analyzer.stemmer is None

    @property
    def token_pattern(self) -> str | None:
        """The token regex, or ``None`` for the analyzer's tokenizer (`Analyzer`)."""
        return self._searcher.analyzer.token_pattern

    def _settings(self) -> dict[str, Any]:
        language = {} if self._language_as_given is None else {
            "language": self._language_as_given}
        weights = {} if self._field_weights is None else {"field_weights": self._field_weights}
        return {**super()._settings(), "metadata_mode": self._nodes.metadata_mode.value,
                **language, **weights}

    @classmethod
    def _saved_options(cls, settings: dict[str, Any]) -> dict[str, Any]:
        weights = settings.get("field_weights")
        return {} if weights is None else {"field_weights": weights}

    def _restore(self, settings: dict[str, Any]) -> None:
        language = settings.get("language")
        self._language_as_given = language if isinstance(language, str) else None

    @classmethod
    @checks_keywords(lambda cls: constructor_keywords(cls) | set(_UNSUPPORTED))
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        index: Any = None,
        bm25_index: BM25Index | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        **kwargs: Any,
    ) -> BM25Retriever:
        """Index nodes (or a docstore's, or a LlamaIndex index's) and return a retriever.

        Exactly one source: ``nodes``, a ``docstore`` or a LlamaIndex ``index`` whose
        nodes are all indexed, or a core ``bm25_index`` used as it is. ``kwargs`` are the
        constructor's (``metadata_mode``, ``language``, ``stemmer``, ``skip_stemming``,
        ``token_pattern``, ``analyzer``, ``k1``, ``b``, ``method``, ``delta``,
        ``fields``, ``field_weights``, ``filters``, ``callback_manager``, ``verbose``, ``objects``, ``object_map``).
        """
        refuse_arguments("BM25Retriever.from_defaults", {
            key: kwargs.pop(key) for key in list(kwargs) if key in _UNSUPPORTED
            and key != "index"}, _UNSUPPORTED)
        one_source(nodes=nodes, docstore=docstore, index=index, bm25_index=bm25_index)
        if bm25_index is not None:
            return cls(bm25_index, similarity_top_k=similarity_top_k, **kwargs)
        if index is not None:
            docstore = getattr(index, "docstore", None)
            if docstore is None:
                raise TypeError(
                    f"index must be a LlamaIndex index with a docstore (VectorStoreIndex...), "
                    f"got {type(index).__name__}; a hybrid_retrievers BM25Index goes in "
                    "bm25_index="
                )
        return cls(nodes=source_nodes(nodes, docstore), similarity_top_k=similarity_top_k,
                   **kwargs)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | os.PathLike[str], *, mmap: bool = False,
                         **options: Unpack[LoadOptions]) -> BM25Retriever:
        """Load a retriever saved with `persist` (or a `BM25Index.save` folder).

        ``options`` default to the saved ones; ``mmap`` memory-maps the index arrays.
        The analyzer (``language``, ``skip_stemming``, ``token_pattern``) and the
        ``metadata_mode`` come back as saved. `IndexFormatError` for a missing, corrupt
        or foreign directory.
        """
        return cls._load(persist_dir, lambda folder: BM25Index.load(folder, mmap=mmap),  # type: ignore[no-any-return]
                         bare_index_kind="bm25", **options)


_UNSUPPORTED = {
    "existing_bm25": "a bm25s.BM25 object holds no texts to convert: pass "
                     "bm25_index=<hybrid_retrievers.BM25Index> (e.g. BM25Index.load(path)), "
                     "or use BM25Retriever.from_persist_dir",
    "corpus_weight_mask": "its values multiply scores by node position; to keep some nodes "
                          "pass filters= (MetadataFilters, a mapping, or a callable over a "
                          "hybrid_retrievers.Doc, e.g. lambda doc: doc.id in keep)",
    "corpus": "pass nodes=, docstore= or index=",
    "filter": "LlamaIndex spells it filters=, as VectorIndexRetriever does",
    "index": "pass the core index as bm25_index= (in LlamaIndex, index= is a "
             "VectorStoreIndex: BM25Retriever.from_defaults(index=...) takes one)",
}


# The bm25s library's tokenizer options (what llama-index-retrievers-bm25 takes: language,
# a PyStemmer stemmer, skip_stemming) as one Analyzer, saved with the index. A PyStemmer
# object is accepted only when it stems like the Snowball stemmer of ``language`` (the
# analyzer uses that one, so the index can be saved).
_PROBE = ["running", "connections", "generously", "nations", "happiness"]


def analyzer_from_bm25s(analyzer: Analyzer | None, language: str | None, stemmer: Any,
                        skip_stemming: bool, token_pattern: str | None = None,
                        tokenizer: Any = None) -> Analyzer | None:
    """``analyzer``, or the `Analyzer` of the bm25s options (``None`` when none is given):
    ``token_pattern`` is `Analyzer`'s, ``tokenizer`` its tokenizer hook.

    Raises:
        ValueError: for ``analyzer`` together with a bm25s option, ``stemmer`` together
            with ``skip_stemming``, or a PyStemmer stemmer that does not stem like
            Snowball ``language`` (default English).
    """
    if language is None and stemmer is None and not skip_stemming and \
            token_pattern is None and tokenizer is None:
        return analyzer
    if analyzer is not None:
        raise ValueError("pass analyzer= or language= / stemmer= / skip_stemming= / "
                         "token_pattern= / tokenizer=, not both")
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
    split = {} if tokenizer is None else {"tokenizer": tokenizer}
    return Analyzer(lang, stemmer=spec, token_pattern=token_pattern, **split)
