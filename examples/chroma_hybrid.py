"""Hybrid retrieval over a Chroma collection of text chunks and image descriptions.

The seed pipeline keeps text chunks and image descriptions in one Chroma collection
with a ``type`` metadata field. This script starts a real local Chroma server
(``chroma run`` from the ``chromadb`` package, on 127.0.0.1 and a free port), writes
the documents through ``langchain-chroma`` and through LlamaIndex's Chroma vector
store, and fuses Chroma's dense retrieval with our BM25 over the same documents:
one source per type (text-only, image-only) and per retriever, weighted by the query
(image sources count more when the query asks for a figure or photo), fused by RRF,
and by score fusion, which reads Chroma's own relevance scores
(``similarity_search_with_relevance_scores``). The fused list is then reranked.
HyDE runs over the same collection: `ChromaSearcher` sends the HyDE vector (a fake
LLM's passage, embedded) to Chroma as the query embedding.

Embeddings are local: our `HashingEmbedder` behind tiny LangChain / LlamaIndex
adapters (MiniLM from `local_minilm_path()` works the same way). Chroma's default
embedding function downloads an ONNX model, so it is disabled before anything runs.

Run: ``pip install 'hybrid-retrievers[chroma]'`` then ``python examples/chroma_hybrid.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import chromadb
from chromadb.api.types import DefaultEmbeddingFunction
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import FakeListLLM
from langchain_core.runnables import RunnableLambda
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import BaseEmbedding

from hybrid_retrievers import BM25Index
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.models import HashingEmbedder

DIM = 256
IMAGE_WORDS = re.compile(r"\b(figure|photo\w*|image|diagram|picture|plot|schlieren)\b", re.I)

IMAGES = [
    ("img-01", "schlieren photograph of the bow shock ahead of a blunt body at mach 3"),
    ("img-02", "diagram of the boundary layer velocity profile over a flat plate"),
    ("img-03", "photo of a swept wing model mounted in the supersonic wind tunnel"),
    ("img-04", "plot of lift coefficient against angle of attack for a delta wing"),
    ("img-05", "figure showing pressure distribution on a cone in hypersonic flow"),
    ("img-06", "interferogram of heat transfer in the laminar boundary layer of a cylinder"),
    ("img-07", "photograph of panel flutter test rig with accelerometers"),
    ("img-08", "diagram of shock wave boundary layer interaction and separation bubble"),
]


def _disable_default_embedding() -> None:
    """Chroma's default embedding function downloads a model: make any use an error."""

    def refuse(self: Any, input: Any) -> Any:  # noqa: A002 - Chroma's protocol name
        raise RuntimeError("Chroma's default embedding function would download a model; "
                           "pass embeddings from a local model instead")

    DefaultEmbeddingFunction.__call__ = refuse  # type: ignore[method-assign]


_disable_default_embedding()


# ---------------------------------------------------------------------- local embeddings


class LangChainHashingEmbeddings(Embeddings):
    """LangChain `Embeddings` over our deterministic `HashingEmbedder` (no download)."""

    def __init__(self, dimension: int = DIM) -> None:
        self.embedder = HashingEmbedder(dimension)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


class LlamaIndexHashingEmbedding(BaseEmbedding):
    """LlamaIndex `BaseEmbedding` over our deterministic `HashingEmbedder` (no download)."""

    _embedder: HashingEmbedder = PrivateAttr()

    def __init__(self, dimension: int = DIM, **kwargs: Any) -> None:
        super().__init__(model_name=f"hashing-{dimension}", **kwargs)
        self._embedder = HashingEmbedder(dimension)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed_query(text).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


# ---------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def chroma_server(path: str | os.PathLike[str], timeout: float = 60.0) -> Iterator[int]:
    """Run ``chroma run`` on 127.0.0.1 and a free port; yield the port, then stop it.

    Raises:
        RuntimeError: the server did not answer its heartbeat within ``timeout``
            (the message carries the end of its log).
    """
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if exe is None:
        raise RuntimeError("the `chroma` command is not installed (pip install chromadb)")
    port = free_port()
    log = tempfile.TemporaryFile()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen([exe, "run", "--host", "127.0.0.1", "--port", str(port),
                             "--path", str(path)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat",
                                            timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-2000:].decode("utf-8", "replace")
                    raise RuntimeError(f"chroma server did not start on port {port}: {tail}")
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def client(port: int) -> Any:
    return chromadb.HttpClient(host="127.0.0.1", port=port,
                               settings=chromadb.config.Settings(anonymized_telemetry=False))


# ---------------------------------------------------------------------- the corpus


# Chroma searches an HNSW graph: with its default 16 neighbours per node it missed true
# nearest neighbours on this corpus in some runs; a denser graph and wider searches make
# its results match exact cosine search, so the tests can compare them.
COLLECTION_METADATA = {"hnsw:space": "cosine", "hnsw:M": 64, "hnsw:construction_ef": 200,
                       "hnsw:search_ef": 200}


def corpus(n_text: int = 150) -> list[Document]:
    """Cranfield abstracts as text chunks plus image descriptions, typed in metadata."""
    docs = list(load_dataset("cranfield").corpus.values())[:n_text]
    texts = [Document(id=f"txt-{d.id}", page_content=d.text, metadata={"type": "text"})
             for d in docs]
    images = [Document(id=i, page_content=t, metadata={"type": "image", "file": f"{i}.png"})
              for i, t in IMAGES]
    return texts + images


def image_weighting(names: Sequence[str]) -> Any:
    """Query-dependent weights: image sources x2 when the query asks for a figure/photo,
    x0.5 otherwise; text sources 1."""

    def weights(query: str) -> list[float]:
        visual = bool(IMAGE_WORDS.search(query))
        return [(2.0 if visual else 0.5) if n.endswith("image") else 1.0 for n in names]

    return weights


class OverlapScorer:
    """A stand-in cross-encoder: query-word overlap (tests and examples only)."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> Any:
        import numpy as np

        return np.array([len(set(q.lower().split()) & set(p.lower().split())) for q, p in pairs],
                        dtype=np.float32)


# ---------------------------------------------------------------------- LangChain


def langchain_hybrid(port: int, docs: list[Document], *, mode: str = "rrf",
                     collection: str = "lc_chunks") -> tuple[Any, Any, BM25Index]:
    """BM25 + Chroma (langchain-chroma) per type, fused; returns (fusion, store, bm25)."""
    from langchain_chroma import Chroma

    from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever

    store = Chroma(collection_name=collection, embedding_function=LangChainHashingEmbeddings(),
                   client=client(port), collection_metadata=COLLECTION_METADATA)
    if not store.get(limit=1)["ids"]:
        store.add_documents(docs, ids=[d.id for d in docs])
    bm25 = BM25Retriever.from_documents(docs)

    def chroma_source(kind: str) -> Any:
        def search(query: str) -> list[Document]:
            with warnings.catch_warnings():
                # Cosine similarities of signed hashing vectors can be negative; LangChain
                # warns that relevance leaves [0, 1], which is harmless for fusion.
                warnings.filterwarnings("ignore", message="Relevance scores must be between")
                pairs = store.similarity_search_with_relevance_scores(query, k=20,
                                                                      filter={"type": kind})
            # Chroma's relevance score goes where fusion reads scores.
            return [Document(id=d.id, page_content=d.page_content,
                             metadata={**d.metadata, "score": s}) for d, s in pairs]

        return RunnableLambda(search, name=f"chroma_{kind}")

    names = ["bm25_text", "bm25_image", "chroma_text", "chroma_image"]
    retrievers = [
        BM25Retriever(index=bm25.index, filter={"type": "text"}, k=20),
        BM25Retriever(index=bm25.index, filter={"type": "image"}, k=20),
        chroma_source("text"),
        chroma_source("image"),
    ]
    fusion = FusionRetriever(retrievers=retrievers, names=names, k=5, mode=mode,
                             weights=image_weighting(names))
    return fusion, store, bm25.index


# ---------------------------------------------------------------------- LlamaIndex


def llama_index_hybrid(port: int, docs: list[Document], *, mode: str = "rrf",
                       collection: str = "li_chunks") -> Any:
    """BM25 + Chroma (llama-index-vector-stores-chroma) per type, fused."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from llama_index_hybrid_retrievers import BM25Retriever, FusionRetriever

    # Metadata stays out of the vectors (LlamaIndex embeds it unless excluded), so both
    # frameworks store the same vectors for the same text.
    nodes = [TextNode(id_=d.id, text=d.page_content, metadata=dict(d.metadata),
                      excluded_embed_metadata_keys=list(d.metadata)) for d in docs]
    chroma = client(port).get_or_create_collection(collection, embedding_function=None,
                                                   metadata=COLLECTION_METADATA)
    store = ChromaVectorStore(chroma_collection=chroma)
    embed = LlamaIndexHashingEmbedding()
    if chroma.count() == 0:
        index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(
            vector_store=store), embed_model=embed)
    else:
        index = VectorStoreIndex.from_vector_store(store, embed_model=embed)

    def typed(kind: str) -> MetadataFilters:
        return MetadataFilters(filters=[ExactMatchFilter(key="type", value=kind)])

    names = ["bm25_text", "bm25_image", "chroma_text", "chroma_image"]
    retrievers = [
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=20, filters={"type": "text"}),
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=20, filters={"type": "image"}),
        index.as_retriever(similarity_top_k=20, filters=typed("text")),
        index.as_retriever(similarity_top_k=20, filters=typed("image")),
    ]
    return FusionRetriever(retrievers, names=names, similarity_top_k=5, mode=mode,
                           weights=image_weighting(names))


# ---------------------------------------------------------------------- HyDE over Chroma


class ChromaSearcher:
    """A ``langchain-chroma`` store as a core searcher: ``search`` and ``search_vector``.

    `hybrid_retrievers.hyde.HyDESearcher` searches its ``index`` with the HyDE vector
    (the mean of the generated passages' embeddings and the query's) through
    ``search_vector``; this sends that vector to Chroma as the query embedding. Scores
    are the store's relevance scores (cosine similarity for a cosine collection). The
    HyDE embedder must be the one the collection was written with. Filters are
    Chroma ``where`` mappings (``{"type": "image"}``).
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> list[Any]:
        return self._hits(self.store.similarity_search_with_relevance_scores(
            query, k=k, filter=self._where(filter)))

    def search_vector(self, vector: Any, k: int = 10, *, filter: Any = None) -> list[Any]:
        pairs = self.store.similarity_search_by_vector_with_relevance_scores(
            [float(x) for x in vector], k=k, filter=self._where(filter))
        relevance = self.store._select_relevance_score_fn()  # Chroma returns distances here
        return self._hits([(d, relevance(distance)) for d, distance in pairs])

    @staticmethod
    def _where(filter: Any) -> dict[str, Any] | None:
        if filter is not None and not isinstance(filter, dict):
            raise TypeError("ChromaSearcher filters are Chroma where= mappings, "
                            f"got {type(filter).__name__}")
        return filter

    @staticmethod
    def _hits(pairs: Sequence[tuple[Document, float]]) -> list[Any]:
        from hybrid_retrievers import Doc
        from hybrid_retrievers.types import Hit

        return [Hit(Doc(str(d.id), d.page_content, dict(d.metadata)), float(s), rank)
                for rank, (d, s) in enumerate(pairs, 1)]


def hyde_over_chroma(store: Any, llm: Any, *, k: int = 3) -> Any:
    """LangChain HyDE whose vector search runs in Chroma (``llm``: any LangChain LLM)."""
    from hybrid_retrievers.hyde import HyDE, HyDESearcher
    from langchain_hybrid_retrievers import HyDERetriever
    from langchain_hybrid_retrievers.hyde import as_text_generator

    hyde = HyDE(as_text_generator(llm), HashingEmbedder(DIM), prompt="technical")
    return HyDERetriever(searcher=HyDESearcher(hyde, ChromaSearcher(store)), k=k)


def reranked_hybrid(fusion: Any, k: int = 3) -> Any:
    """The fused Chroma + BM25 retriever, reranked (a stand-in cross-encoder here)."""
    from langchain_hybrid_retrievers import CrossEncoderReranker, RerankingRetriever

    return RerankingRetriever(base_retriever=fusion, reranker=CrossEncoderReranker(
        model=OverlapScorer()), fetch_k=10, k=k)


def main() -> None:
    docs = corpus()
    with tempfile.TemporaryDirectory() as tmp, chroma_server(Path(tmp) / "db") as port:
        lc, store, _ = langchain_hybrid(port, docs)
        li = llama_index_hybrid(port, docs)
        for query in ["schlieren photo of a bow shock", "heat transfer in the boundary layer"]:
            hits = lc.invoke(query)
            print(f"\nLangChain RRF  {query!r}")
            for d in hits:
                print(f"  {d.metadata['rank']}. [{d.metadata['type']:5}] {d.id:9} "
                      f"{d.metadata['score']:.4f}  {d.page_content[:60]}")
            nodes = li.retrieve(query)
            print(f"LlamaIndex RRF {query!r}: {[n.node.node_id for n in nodes]}")
        visual = lc.invoke("schlieren photo of a bow shock")
        assert visual[0].metadata["type"] == "image", "a visual query should put an image first"
        text_only = lc.invoke("boundary layer", weights=[1, 0, 1, 0])
        assert {d.metadata["type"] for d in text_only} == {"text"}
        score_fused, _, _ = langchain_hybrid(port, docs, mode="relative_score")
        top = score_fused.invoke("pressure distribution on a cone")
        chroma_scores = [s["score"] for s in top[0].metadata["fusion"]["sources"]
                         if s["source"].startswith("chroma")]
        print(f"\nscore fusion top: {top[0].id}, Chroma relevance scores read: {chroma_scores}")
        reranking = reranked_hybrid(score_fused)
        reranked = reranking.invoke("pressure distribution on a cone")
        print("reranked:", [d.id for d in reranked])
        assert {d.id for d in reranked} <= {d.id for d in score_fused.invoke(
            "pressure distribution on a cone", k=10)}
        passage = "A photograph of a panel flutter test rig with accelerometers."
        hyde = hyde_over_chroma(store, FakeListLLM(responses=[passage]))
        hits = hyde.invoke("vibrating skin measurements", filter={"type": "image"})
        print("HyDE over Chroma (images):", [d.id for d in hits])
        assert hits[0].metadata["hyde"]["passages"] == [passage]


if __name__ == "__main__":
    main()
