"""Issue 35: code written for ``llama_index.retrievers.bm25.BM25Retriever`` runs on ours.

Our own tests of the original's behaviours and usage patterns (its constructor with
nodes, MetadataMode.EMBED indexing, bm25s's tokenizer options, persistence, filters,
recursive retrieval), through the namespace import a user swaps in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import IndexNode, MetadataMode, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
from llama_index.retrievers.hybrid import BM25Retriever

from hybrid_retrievers.text import register_tokenizer, unregister_tokenizer

BM25S_PATTERN = r"(?u)\b\w\w+\b"


def books() -> list[TextNode]:
    return [
        TextNode(id_="hp1", text="A boy learns he is a wizard and goes to a school of magic.",
                 metadata={"title": "Harry Potter and the Philosopher's Stone",
                           "author": "J. K. Rowling"}),
        TextNode(id_="hp2", text="Harry Potter returns to school, where a chamber opens.",
                 metadata={"title": "Harry Potter and the Chamber of Secrets",
                           "author": "J. K. Rowling"}),
        TextNode(id_="lotr", text="A hobbit carries a ring across Middle-earth.",
                 metadata={"title": "The Fellowship of the Ring", "author": "J. R. R. Tolkien"},
                 excluded_embed_metadata_keys=["title"]),
        TextNode(id_="dune", text="A desert planet, spice and a prophecy.",
                 metadata={"title": "Dune", "author": "Frank Herbert"}),
    ]


def _ids(retriever: BM25Retriever, query: str) -> list[str]:
    return [n.node.node_id for n in retriever.retrieve(query)]


def test_constructor_with_nodes_is_the_common_way_to_build_it() -> None:
    retriever = BM25Retriever(nodes=books(), similarity_top_k=2)
    assert retriever.similarity_top_k == 2
    assert len(retriever.retrieve("school wizard magic")) == 2
    assert BM25Retriever(nodes=books()).similarity_top_k == 2  # the original's default


def test_empty_or_missing_nodes_are_value_errors_as_there() -> None:
    # The original's words, so code matching its messages keeps working.
    with pytest.raises(ValueError, match="Please pass at least one node"):
        BM25Retriever(nodes=[])
    with pytest.raises(ValueError, match="pass nodes="):
        BM25Retriever()
    for texts in ([""], ["", "the of and"]):  # nothing indexable: empty or stopwords only
        with pytest.raises(ValueError, match=r"No valid tokens found in the \d node"):
            BM25Retriever(nodes=[TextNode(text=t) for t in texts])
    assert BM25Retriever(nodes=[TextNode(text=""), TextNode(id_="w", text="wizard")]
                         ).retrieve("wizard")[0].node.node_id == "w"


def test_metadata_is_searchable_through_metadata_mode_embed() -> None:
    query = "Tell me about Harry Potter books"
    assert sorted(_ids(BM25Retriever(nodes=books(), similarity_top_k=2), query)) == [
        "hp1", "hp2"]
    # Text only: the first book's text never names Harry Potter.
    text_only = BM25Retriever(nodes=books(), similarity_top_k=2,
                              metadata_mode=MetadataMode.NONE)
    assert _ids(text_only, query) == ["hp2"]
    # excluded_embed_metadata_keys are left out, as in get_content(MetadataMode.EMBED).
    retriever = BM25Retriever(nodes=books(), similarity_top_k=4)
    assert "fellowship" not in " ".join(_ids(retriever, "Fellowship"))
    assert _ids(retriever, "Tolkien") == ["lotr"]
    # Results are the caller's nodes, unchanged (their text has no metadata in it).
    node = retriever.retrieve("Rowling chamber")[0].node
    assert node.node_id == "hp2" and node.text.startswith("Harry Potter returns")


def test_bm25s_tokenizer_options_are_honoured_and_read_back(tmp_path: Path) -> None:
    nodes = books()
    retriever = BM25Retriever(nodes=nodes, similarity_top_k=3, token_pattern=BM25S_PATTERN,
                              language="en", skip_stemming=True)
    # bm25s's pattern drops one-character words: "a" is not a token (nor a stopword here).
    assert retriever.index.analyzer.tokenize("A boy wizards") == ["boy", "wizards"]
    assert _ids(retriever, "wizards") == []  # not stemmed
    assert _ids(retriever, "wizard") == ["hp1"]
    retriever.persist(str(tmp_path / "r"))
    loaded = BM25Retriever.from_persist_dir(str(tmp_path / "r"))
    # language reads back as given (the original's "en"), the analyzer's is its full name.
    assert (loaded.token_pattern, loaded.language, loaded.skip_stemming) == (
        BM25S_PATTERN, "en", True)
    assert loaded.index.analyzer.language == "english"
    assert loaded.metadata_mode is MetadataMode.EMBED and loaded.similarity_top_k == 3
    assert _ids(loaded, "Harry Potter") == _ids(retriever, "Harry Potter")
    default = BM25Retriever(nodes=nodes)
    assert (default.token_pattern, default.language, default.skip_stemming) == (
        None, "english", False)
    default.persist(str(tmp_path / "d"))
    assert BM25Retriever.from_persist_dir(str(tmp_path / "d")).language == "english"


def test_a_callable_tokenizer_works_in_memory_and_saves_only_when_registered(
        tmp_path: Path) -> None:
    def whitespace(text: str) -> list[str]:
        return text.split()

    retriever = BM25Retriever(nodes=books(), tokenizer=whitespace, skip_stemming=True,
                              similarity_top_k=4)
    assert _ids(retriever, "school,") == ["hp2"]  # "school," is one whitespace token
    with pytest.raises(ValueError, match="unregistered tokenizer callable"):
        retriever.persist(str(tmp_path / "no"))
    register_tokenizer("tests.whitespace", whitespace, replace=True)
    try:
        retriever.persist(str(tmp_path / "yes"))
        loaded = BM25Retriever.from_persist_dir(str(tmp_path / "yes"))
        assert _ids(loaded, "school,") == ["hp2"]
    finally:
        unregister_tokenizer("tests.whitespace")


def test_original_usage_patterns_docstore_filters_persist(tmp_path: Path) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(books())
    retriever = BM25Retriever.from_defaults(docstore=docstore, similarity_top_k=2)
    assert sorted(_ids(retriever, "Harry Potter")) == ["hp1", "hp2"]
    filters = MetadataFilters(filters=[MetadataFilter(key="author", value="J. K. Rowling")])
    filtered = BM25Retriever.from_defaults(nodes=books(), filters=filters, similarity_top_k=4)
    assert set(_ids(filtered, "school ring spice")) == {"hp1", "hp2"}
    retriever.persist(str(tmp_path / "bm25"))
    loaded = BM25Retriever.from_persist_dir(str(tmp_path / "bm25"))
    assert [(n.node.node_id, n.score) for n in loaded.retrieve("magic school")] == [
        (n.node.node_id, n.score) for n in retriever.retrieve("magic school")]


def test_objects_give_recursive_retrieval_as_in_base_retriever() -> None:
    inner = BM25Retriever(nodes=books(), similarity_top_k=1)
    link = IndexNode(id_="link", text="fantasy book shelf", index_id="shelf")
    outer = BM25Retriever(nodes=[link, TextNode(id_="x", text="kitchen recipes")],
                          objects=[IndexNode(index_id="shelf", obj=inner, text="shelf")],
                          similarity_top_k=1)
    # The link node is replaced by what its object (the inner retriever) retrieves.
    assert _ids(outer, "fantasy book shelf wizard") == ["hp1"]
