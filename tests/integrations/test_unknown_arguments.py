"""No silently ignored arguments: every public adapter class, of both frameworks, refuses
an unknown keyword with a `TypeError` naming it and the nearest valid name.

The walk starts from ``__all__`` of ``langchain_hybrid_retrievers``,
``llama_index_hybrid_retrievers`` and LlamaIndex's integration paths
(``llama_index.retrievers.hybrid``, ``llama_index.postprocessor.hybrid``), so a class
added later is walked too: a class that builds with no argument is called generically,
any other needs its entry in ``ROUTES`` below (its constructor and each of its
factories: ``from_*``, ``load_local``), and `test_every_public_class_has_routes` fails
for a class or factory with neither. Each route is called with ``bogus_arg=1`` and with
a misspelling of one of its real keywords (the letter in the middle dropped:
``similarity_top_k`` -> ``similariy_top_k``); the error must name the keyword and, for
the misspelling, suggest the real one (``did you mean similarity_top_k=?``). The
LangChain retrievers' per-call options (``invoke(q, filter=...)``) are walked as well.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import PromptTemplate
from langchain_core.retrievers import BaseRetriever as LangChainRetriever
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

import langchain_hybrid_retrievers as lc
import llama_index.postprocessor.hybrid as li_postprocessor
import llama_index.retrievers.hybrid as li_retrievers
import llama_index_hybrid_retrievers as li
from hybrid_retrievers import BM25Index, SparseIndex
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.fusion import MultimodalSearcher
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.vector import VectorIndex

from corpora import WordOverlap

TEXTS = ["wing lift and drag", "bread and butter", "drag of a flat plate"]
EMBED = HashingEmbedder(dimension=16)
SPARSE = HashingSparseEmbedder()
FACTORY_PREFIXES = ("from_", "load_local")
NOT_FACTORIES = {"from_orm", "from_dict", "from_json"}  # pydantic's / LlamaIndex's own


def documents() -> list[Document]:
    return [Document(id=f"d{i}", page_content=t) for i, t in enumerate(TEXTS)]


def nodes() -> list[TextNode]:
    return [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(TEXTS)]


def ranking(prompt: str) -> str:
    return "[1]"


def hyde_llm(prompt: str) -> str:
    return "wing lift"


def saved(build: Callable[[], Any], folder: Path, method: str) -> Path:
    """``folder`` after saving what ``build`` returns with its ``method``."""
    getattr(build(), method)(folder)
    return folder


@dataclass(frozen=True)
class Route:
    """One way to call a public class.

    Args:
        call: ``call(tmp_path, **extra)`` builds with minimal valid arguments plus ``extra``.
        real: a keyword the route takes; its misspelling must be answered with it.
    """

    call: Callable[..., Any]
    real: str


def lc_bm25() -> Any:
    return lc.BM25Retriever.from_texts(TEXTS)


def lc_dense() -> Any:
    return lc.DenseRetriever.from_texts(TEXTS, EMBED)


def lc_hybrid() -> Any:
    return lc.HybridRetriever.from_texts(TEXTS, EMBED)


def lc_fusion() -> Any:
    return lc.FusionRetriever(retrievers=[lc_bm25(), lc_dense()])


def li_bm25() -> Any:
    return li.BM25Retriever.from_defaults(nodes=nodes())


def li_dense() -> Any:
    return li.DenseRetriever.from_defaults(nodes=nodes(), embed_model=EMBED)


def li_hybrid() -> Any:
    return li.HybridRetriever.from_defaults(nodes=nodes(), embed_model=EMBED)


def li_parent() -> Any:
    return li.ParentDocumentRetriever.from_defaults(nodes(), chunk_size=60, chunk_overlap=0)


def multimodal_searcher() -> MultimodalSearcher:
    return MultimodalSearcher.from_index(BM25Index.from_texts(TEXTS))


def vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents(documents())
    return store


# Classes that need arguments: "<Class>" is the constructor, "<Class>.<factory>" a factory.
ROUTES: dict[tuple[Any, str], Route] = {
    # ------------------------------------------------------------------ LangChain
    (lc, "BM25Retriever"): Route(
        lambda t, **kw: lc.BM25Retriever(index=BM25Index.from_texts(TEXTS), **kw), "score_key"),
    (lc, "BM25Retriever.from_texts"): Route(
        lambda t, **kw: lc.BM25Retriever.from_texts(TEXTS, **kw), "score_key"),
    (lc, "BM25Retriever.from_documents"): Route(
        lambda t, **kw: lc.BM25Retriever.from_documents(documents(), **kw), "score_key"),
    (lc, "BM25Retriever.load_local"): Route(lambda t, **kw: lc.BM25Retriever.load_local(
        saved(lc_bm25, t, "save_local"), **kw), "score_key"),
    (lc, "ChatModelDescriber"): Route(
        lambda t, **kw: lc.ChatModelDescriber(FakeListChatModel(responses=["a"]), **kw),
        "callbacks"),
    (lc, "DenseRetriever"): Route(lambda t, **kw: lc.DenseRetriever(
        index=VectorIndex.from_texts(TEXTS, embedder=EMBED), **kw), "score_key"),
    (lc, "DenseRetriever.from_texts"): Route(
        lambda t, **kw: lc.DenseRetriever.from_texts(TEXTS, EMBED, **kw), "metric"),
    (lc, "DenseRetriever.from_documents"): Route(
        lambda t, **kw: lc.DenseRetriever.from_documents(documents(), EMBED, **kw), "metric"),
    (lc, "DenseRetriever.load_local"): Route(lambda t, **kw: lc.DenseRetriever.load_local(
        saved(lc_dense, t, "save_local"), EMBED, **kw), "score_key"),
    (lc, "FusionRetriever"): Route(
        lambda t, **kw: lc.FusionRetriever(retrievers=[lc_bm25()], **kw), "weights"),
    (lc, "FusionRetriever.load_local"): Route(lambda t, **kw: lc.FusionRetriever.load_local(
        saved(lc_fusion, t, "save_local"), EMBED, **kw), "weights"),
    (lc, "HyDERetriever"): Route(lambda t, **kw: lc.HyDERetriever(
        searcher=lc.HyDERetriever.from_documents(
            documents(), embedding=EMBED, llm=hyde_llm).searcher, **kw), "score_key"),
    (lc, "HyDERetriever.from_documents"): Route(lambda t, **kw: lc.HyDERetriever.from_documents(
        documents(), embedding=EMBED, llm=hyde_llm, **kw), "score_key"),
    (lc, "HyDERetriever.from_retriever"): Route(lambda t, **kw: lc.HyDERetriever.from_retriever(
        lc_dense(), llm=hyde_llm, **kw), "score_key"),
    (lc, "HypotheticalDocumentEmbedder"): Route(lambda t, **kw: lc.HypotheticalDocumentEmbedder(
        base_embeddings=DeterministicFakeEmbedding(size=8),
        llm_chain=PromptTemplate.from_template("Answer: {question}")
        | FakeListChatModel(responses=["wing lift"]), **kw), "include_query"),
    (lc, "HypotheticalDocumentEmbedder.from_llm"): Route(
        lambda t, **kw: lc.HypotheticalDocumentEmbedder.from_llm(
            FakeListChatModel(responses=["wing lift"]), DeterministicFakeEmbedding(size=8),
            prompt_key="web_search", **kw), "include_query"),
    (lc, "HybridRetriever"): Route(lambda t, **kw: lc.HybridRetriever(
        searcher=FusionSearcher.hybrid(TEXTS, EMBED), **kw), "score_key"),
    (lc, "HybridRetriever.from_texts"): Route(
        lambda t, **kw: lc.HybridRetriever.from_texts(TEXTS, EMBED, **kw), "score_key"),
    (lc, "HybridRetriever.from_documents"): Route(
        lambda t, **kw: lc.HybridRetriever.from_documents(documents(), EMBED, **kw),
        "score_key"),
    (lc, "HybridRetriever.load_local"): Route(lambda t, **kw: lc.HybridRetriever.load_local(
        saved(lc_hybrid, t, "save_local"), EMBED, **kw), "score_key"),
    (lc, "ImageRetriever"): Route(
        lambda t, **kw: lc.ImageRetriever(searcher=multimodal_searcher(), **kw), "score_key"),
    (lc, "ImageRetriever.from_index"): Route(lambda t, **kw: lc.ImageRetriever.from_index(
        BM25Index.from_texts(TEXTS), **kw), "describer"),
    (lc, "ImageRetriever.from_components"): Route(
        lambda t, **kw: lc.ImageRetriever.from_components(BM25Index.from_texts(TEXTS), **kw),
        "descriptions"),
    (lc, "LLMRerankCompressor"): Route(
        lambda t, **kw: lc.LLMRerankCompressor(llm=ranking, **kw), "max_passage_chars"),
    (lc, "LLMRerankCompressor.from_llm"): Route(
        lambda t, **kw: lc.LLMRerankCompressor.from_llm(ranking, **kw), "max_passage_chars"),
    (lc, "LLMChoiceRerankCompressor"): Route(
        lambda t, **kw: lc.LLMChoiceRerankCompressor(llm=ranking, **kw), "choice_batch_size"),
    (lc, "LangChainEmbedder"): Route(
        lambda t, **kw: lc.LangChainEmbedder(DeterministicFakeEmbedding(size=8), **kw),
        "dimension"),
    (lc, "LangChainParentStore"): Route(
        lambda t, **kw: lc.LangChainParentStore(InMemoryStore(), **kw), "store"),
    (lc, "MultimodalRetriever"): Route(
        lambda t, **kw: lc.MultimodalRetriever(searcher=multimodal_searcher(), **kw),
        "score_key"),
    (lc, "MultimodalRetriever.from_index"): Route(
        lambda t, **kw: lc.MultimodalRetriever.from_index(BM25Index.from_texts(TEXTS), **kw),
        "describer"),
    (lc, "MultimodalRetriever.from_components"): Route(
        lambda t, **kw: lc.MultimodalRetriever.from_components(
            BM25Index.from_texts(TEXTS), **kw), "descriptions"),
    (lc, "MultiVectorRetriever"): Route(lambda t, **kw: lc.MultiVectorRetriever(
        vectorstore=vector_store(), docstore=InMemoryStore(), **kw), "search_kwargs"),
    (lc, "ParentDocumentRetriever"): Route(lambda t, **kw: lc.ParentDocumentRetriever(
        searcher=lc.ParentDocumentRetriever.from_documents(documents()).searcher, **kw),
        "score_key"),
    (lc, "ParentDocumentRetriever.from_documents"): Route(
        lambda t, **kw: lc.ParentDocumentRetriever.from_documents(documents(), **kw),
        "chunk_overlap"),
    (lc, "RerankingRetriever"): Route(lambda t, **kw: lc.RerankingRetriever(
        base_retriever=lc_bm25(), reranker=lc.CrossEncoderReranker(model=WordOverlap()), **kw),
        "base_retriever"),
    (lc, "ScoredVectorStoreRetriever"): Route(
        lambda t, **kw: lc.ScoredVectorStoreRetriever(vectorstore=vector_store(), **kw),
        "score_method"),
    (lc, "ScoredVectorStoreRetriever.from_retriever"): Route(
        lambda t, **kw: lc.ScoredVectorStoreRetriever.from_retriever(
            vector_store().as_retriever(), **kw), "retriever"),
    (lc, "SearcherRetriever"): Route(
        lambda t, **kw: lc.SearcherRetriever(searcher=BM25Index.from_texts(TEXTS), **kw),
        "score_key"),
    (lc, "SparseRetriever"): Route(lambda t, **kw: lc.SparseRetriever(
        index=SparseIndex.from_texts(TEXTS, embedder=SPARSE), **kw), "score_key"),
    (lc, "SparseRetriever.from_texts"): Route(
        lambda t, **kw: lc.SparseRetriever.from_texts(TEXTS, SPARSE, **kw), "backend"),
    (lc, "SparseRetriever.from_documents"): Route(
        lambda t, **kw: lc.SparseRetriever.from_documents(documents(), SPARSE, **kw),
        "backend"),
    (lc, "SparseRetriever.load_local"): Route(lambda t, **kw: lc.SparseRetriever.load_local(
        saved(lambda: lc.SparseRetriever.from_texts(TEXTS, SPARSE), t, "save_local"), SPARSE,
        **kw), "score_key"),
    # ------------------------------------------------------------------ LlamaIndex
    (li, "BM25Retriever"): Route(
        lambda t, **kw: li.BM25Retriever(nodes=nodes(), **kw), "similarity_top_k"),
    (li, "BM25Retriever.from_defaults"): Route(
        lambda t, **kw: li.BM25Retriever.from_defaults(nodes=nodes(), **kw), "docstore"),
    (li, "BM25Retriever.from_persist_dir"): Route(
        lambda t, **kw: li.BM25Retriever.from_persist_dir(saved(li_bm25, t, "persist"), **kw),
        "similarity_top_k"),
    (li, "DenseRetriever"): Route(lambda t, **kw: li.DenseRetriever(
        VectorIndex.from_texts(TEXTS, embedder=EMBED), **kw), "similarity_top_k"),
    (li, "DenseRetriever.from_defaults"): Route(lambda t, **kw: li.DenseRetriever.from_defaults(
        nodes=nodes(), embed_model=EMBED, **kw), "docstore"),
    (li, "DenseRetriever.from_persist_dir"): Route(
        lambda t, **kw: li.DenseRetriever.from_persist_dir(
            saved(li_dense, t, "persist"), embed_model=EMBED, **kw), "similarity_top_k"),
    (li, "FusionRetriever"): Route(
        lambda t, **kw: li.FusionRetriever([li_bm25()], **kw), "similarity_top_k"),
    (li, "FusionRetriever.from_persist_dir"): Route(
        lambda t, **kw: li.FusionRetriever.from_persist_dir(saved(lambda: li.FusionRetriever(
            [li_bm25(), li_dense()]), t, "persist"), embed_model=EMBED, **kw),
        "similarity_top_k"),
    (li, "HyDERetriever"): Route(lambda t, **kw: li.HyDERetriever(li.HyDERetriever.from_defaults(
        nodes(), embed_model=EMBED, llm=hyde_llm).searcher, **kw), "similarity_top_k"),
    (li, "HyDEQueryTransform"): Route(lambda t, **kw: li.HyDEQueryTransform(
        llm=MockLLM(), **kw), "include_original"),
    (li, "HyDERetriever.from_defaults"): Route(lambda t, **kw: li.HyDERetriever.from_defaults(
        nodes(), embed_model=EMBED, llm=hyde_llm, **kw), "similarity_top_k"),
    (li, "HybridRetriever"): Route(lambda t, **kw: li.HybridRetriever(
        FusionSearcher.hybrid(TEXTS, EMBED), **kw), "similarity_top_k"),
    (li, "HybridRetriever.from_defaults"): Route(
        lambda t, **kw: li.HybridRetriever.from_defaults(nodes=nodes(), embed_model=EMBED,
                                                         **kw), "similarity_top_k"),
    (li, "HybridRetriever.from_persist_dir"): Route(
        lambda t, **kw: li.HybridRetriever.from_persist_dir(
            saved(li_hybrid, t, "persist"), embed_model=EMBED, **kw), "similarity_top_k"),
    (li, "LLMRerank"): Route(
        lambda t, **kw: li.LLMRerank(llm=ranking, **kw), "choice_batch_size"),
    (li, "LLMListwiseRerank"): Route(
        lambda t, **kw: li.LLMListwiseRerank(llm=ranking, **kw), "max_passage_chars"),
    (li, "LlamaIndexEmbedder"): Route(
        lambda t, **kw: li.LlamaIndexEmbedder(MockEmbedding(embed_dim=8), **kw), "dimension"),
    (li, "MultiModalLLMDescriber"): Route(
        lambda t, **kw: li.MultiModalLLMDescriber(MockLLM(), **kw), "name"),
    (li, "MultimodalRetriever"): Route(
        lambda t, **kw: li.MultimodalRetriever(multimodal_searcher(), **kw), "similarity_top_k"),
    (li, "MultimodalRetriever.from_index"): Route(
        lambda t, **kw: li.MultimodalRetriever.from_index(BM25Index.from_texts(TEXTS), **kw),
        "similarity_top_k"),
    (li, "MultimodalRetriever.from_components"): Route(
        lambda t, **kw: li.MultimodalRetriever.from_components(
            BM25Index.from_texts(TEXTS), **kw), "descriptions"),
    (li, "ParentDocumentRetriever"): Route(lambda t, **kw: li.ParentDocumentRetriever(
        li_parent().searcher, **kw), "merge_threshold"),
    (li, "ParentDocumentRetriever.from_defaults"): Route(
        lambda t, **kw: li.ParentDocumentRetriever.from_defaults(
            nodes(), chunk_size=60, chunk_overlap=0, **kw), "chunk_overlap"),
    (li, "ParentDocumentRetriever.from_persist_dir"): Route(
        lambda t, **kw: li.ParentDocumentRetriever.from_persist_dir(
            saved(li_parent, t, "persist"), **kw), "similarity_top_k"),
    (li, "SearcherRetriever"): Route(lambda t, **kw: li.SearcherRetriever(
        BM25Index.from_texts(TEXTS), **kw), "similarity_top_k"),
    (li, "SparseRetriever"): Route(lambda t, **kw: li.SparseRetriever(
        SparseIndex.from_texts(TEXTS, embedder=SPARSE), **kw), "similarity_top_k"),
    (li, "SparseRetriever.from_defaults"): Route(lambda t, **kw: li.SparseRetriever.from_defaults(
        nodes=nodes(), sparse_embed_model=SPARSE, **kw), "docstore"),
    (li, "SparseRetriever.from_persist_dir"): Route(
        lambda t, **kw: li.SparseRetriever.from_persist_dir(saved(
            lambda: li.SparseRetriever.from_defaults(nodes=nodes(), sparse_embed_model=SPARSE),
            t, "persist"), sparse_embed_model=SPARSE, **kw), "similarity_top_k"),
}

# Generic routes that fail until another branch is merged: class name -> helper.
def public_classes() -> list[tuple[Any, str]]:
    """Every public class of both adapters, as (adapter module, name); the classes of
    LlamaIndex's integration paths are the adapter's own (checked here)."""
    out = [(module, name) for module in (lc, li) for name in module.__all__
           if isinstance(getattr(module, name), type)]
    for path in (li_retrievers, li_postprocessor):
        for name in path.__all__:
            if isinstance(getattr(path, name), type):
                assert getattr(path, name) is getattr(li, name), f"{path.__name__}.{name}"
    return out


def factories(cls: type) -> list[str]:
    return sorted(name for name in dir(cls) if name.startswith(FACTORY_PREFIXES)
                  and name not in NOT_FACTORIES and callable(getattr(cls, name)))


def builds_bare(cls: type) -> bool:
    """Whether ``cls()`` works: a generic route (no argument needed)."""
    try:
        cls()
    except (TypeError, ValueError):
        return False
    return True


def all_routes() -> Iterator[tuple[str, Route]]:
    for module, name in public_classes():
        cls = getattr(module, name)
        for label in (name, *(f"{name}.{f}" for f in factories(cls))):
            route = ROUTES.get((module, label))
            if route is None and label == name and builds_bare(cls):
                route = Route(lambda t, _cls=cls, **kw: _cls(**kw), longest_keyword(cls))
            if route is not None:
                yield f"{module.__name__.split('_')[0]}.{label}", route


def longest_keyword(function: Callable[..., Any], besides: tuple[str, ...] = ()) -> str:
    """The longest keyword ``function`` names (a misspelling of it has one nearest name)."""
    return max((p.name for p in inspect.signature(function).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.name not in besides), key=len)


def misspelt(name: str) -> str:
    """``name`` with its middle letter dropped (``similarity_top_k`` -> ``similariy_top_k``)."""
    middle = len(name) // 2
    return name[:middle] + name[middle + 1:]


def _params() -> list[Any]:
    return [pytest.param(route, id=label) for label, route in all_routes()]


def test_every_public_class_has_routes() -> None:
    """A public class, or a factory of one, that this file cannot call fails here."""
    walked = {label for label, _ in all_routes()}
    missing = [f"{module.__name__}.{label}" for module, name in public_classes()
               for label in (name, *(f"{name}.{f}" for f in factories(getattr(module, name))))
               if f"{module.__name__.split('_')[0]}.{label}" not in walked]
    assert not missing, f"add a ROUTES entry (minimal valid arguments) for {missing}"
    assert len(walked) >= 60


@pytest.mark.parametrize("route", _params())
def test_unknown_keyword_is_refused_with_the_nearest_name(route: Route, tmp_path: Path) -> None:
    route.call(tmp_path / "plain")  # the minimal arguments are valid
    with pytest.raises(TypeError) as bogus:
        route.call(tmp_path / "bogus", bogus_arg=1)
    assert "'bogus_arg'" in str(bogus.value)
    assert f" {route.real}" in str(bogus.value).split("accepted:")[1]  # the valid names
    typo = misspelt(route.real)
    with pytest.raises(TypeError) as near:
        route.call(tmp_path / "typo", **{typo: 1})
    assert f"'{typo}' (did you mean {route.real}=?)" in str(near.value)


def retrievers_with_call_options() -> list[Any]:
    """The LangChain retrievers, built by their constructor route, whose
    ``_get_relevant_documents`` names its per-call options (no ``**kwargs``: those pass
    every keyword on, as LangChain's ``VectorStoreRetriever`` does)."""
    out = []
    for module, name in public_classes():
        cls = getattr(module, name)
        if module is not lc or not issubclass(cls, LangChainRetriever):
            continue
        search = cls._get_relevant_documents
        if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(search).parameters.values()):
            continue
        out.append(pytest.param(ROUTES[(lc, name)], longest_keyword(
            search, besides=("self", "query", "run_manager")), id=name))
    return out


@pytest.mark.parametrize(("route", "option"), retrievers_with_call_options())
def test_unknown_call_option_is_refused(route: Route, option: str, tmp_path: Path) -> None:
    retriever = route.call(tmp_path)
    with pytest.raises(TypeError, match=r"\.invoke got unexpected argument\(s\) 'bogus_arg'"):
        retriever.invoke("wing", bogus_arg=1)
    with pytest.raises(TypeError) as near:
        retriever.invoke("wing", **{misspelt(option): 1})
    assert f"'{misspelt(option)}' (did you mean {option}=?)" in str(near.value)


def test_known_foreign_arguments_keep_their_hint() -> None:
    with pytest.raises(TypeError, match=r"'top_k' \(the number of documents to return is k"):
        lc.DenseRetriever.from_texts(TEXTS, EMBED, top_k=2)
    with pytest.raises(TypeError, match=r"'filter' \(LlamaIndex spells it filters="):
        li.DenseRetriever.from_defaults(nodes=nodes(), embed_model=EMBED, filter={"a": 1})
