"""Adapter latency: what our LangChain and LlamaIndex layers add, beside the stock retrievers.

Usage::

    python benchmarks/adapter_latency.py [--copies 20] [--queries 400] [--rounds 3] [--dim 384]

Corpus: Cranfield (bundled copy, or ``--data-dir``) repeated ``--copies`` times with distinct ids
(28k documents at 20 copies), queried with the Cranfield queries. Dense vectors come from
`HashingEmbedder` (deterministic feature hashing, no model) so that the time is the retrieval
stack, not a transformer.

Per retrieval kind, in ONE process, interleaved rounds (every query is timed once per round per
system, and a query's time is its median over rounds), top 10:

* **bm25**: core ``BM25Index.search``; our LangChain ``BM25Retriever.invoke``; our LlamaIndex
  ``BM25Retriever.retrieve``; LangChain's ``langchain_community`` ``BM25Retriever`` (rank_bm25);
  LlamaIndex's ``llama-index-retrievers-bm25`` (bm25s).
* **dense**: core ``VectorIndex.search``; our two ``DenseRetriever``s; LangChain's
  ``InMemoryVectorStore`` retriever; LlamaIndex's ``VectorStoreIndex`` retriever.
* **hybrid** (BM25 + dense, RRF): core ``FusionSearcher``; our two ``HybridRetriever``s; LangChain's
  ``EnsembleRetriever`` over its stock BM25 + in-memory retrievers; LlamaIndex's
  ``QueryFusionRetriever`` (``reciprocal_rerank``, one query, no LLM) over its stock children.

Stock systems get their own default tokenisation (that is what a user gets). Slow stock systems
are timed on the first ``--slow-queries`` queries only (the table says how many). Reported: build
seconds, median, p95 and mean ms per query. Nothing is downloaded; the table is also written to
``benchmarks/results/adapter_latency.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    environment_lines,
    markdown_table,
    percentile,
    quiet_third_party,
    write_results,
)

Query = Callable[[str], Any]


def _corpus(copies: int, data_dir: Path | None) -> tuple[list[str], list[str], list[str]]:
    """Cranfield texts repeated ``copies`` times, their ids, and the query texts."""
    from hybrid_retrievers.datasets import load_dataset

    name = (
        str(data_dir / "cranfield")
        if data_dir and (data_dir / "cranfield").is_dir()
        else "cranfield"
    )
    ds = load_dataset(name)
    base = [(doc_id, doc.text) for doc_id, doc in ds.corpus.items()]
    ids = [f"{doc_id}#{c}" for c in range(copies) for doc_id, _ in base]
    texts = [text for _ in range(copies) for _, text in base]
    return ids, texts, list(ds.queries.values())


def _timed_build(build: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = build()
    return value, time.perf_counter() - start


def _lc_embeddings(embedder: Any) -> Any:
    from langchain_core.embeddings import Embeddings

    class HashingEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text).tolist()

    return HashingEmbeddings()


def _li_embedding(embedder: Any) -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class HashingEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_query(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.embed_documents([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts).tolist()

    return HashingEmbedding(model_name="hashing", embed_batch_size=512)


def build_systems(
    ids: list[str], texts: list[str], dim: int, stock: bool
) -> dict[str, list[tuple[str, Query, float, bool]]]:
    """``kind -> [(system, query function, build seconds, slow)]``."""
    import langchain_hybrid_retrievers as lc
    import llama_index_hybrid_retrievers as li
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode

    from hybrid_retrievers import BM25Index, FusionSearcher, VectorIndex
    from hybrid_retrievers.models import HashingEmbedder

    embedder = HashingEmbedder(dim)
    systems: dict[str, list[tuple[str, Query, float, bool]]] = {
        "bm25": [],
        "dense": [],
        "hybrid": [],
    }

    bm25, t_bm25 = _timed_build(lambda: BM25Index.from_texts(texts, ids=ids))
    vec, t_vec = _timed_build(lambda: VectorIndex.from_texts(texts, ids, embedder=embedder))
    fusion = FusionSearcher([bm25, vec], names=["bm25", "dense"])
    systems["bm25"].append(("core BM25Index.search", lambda q: bm25.search(q, 10), t_bm25, False))
    systems["dense"].append(("core VectorIndex.search", lambda q: vec.search(q, 10), t_vec, False))
    systems["hybrid"].append(
        ("core FusionSearcher.search", lambda q: fusion.search(q, 10), t_bm25 + t_vec, False)
    )

    lc_bm25, t = _timed_build(lambda: lc.BM25Retriever.from_texts(texts, ids=ids, k=10))
    systems["bm25"].append(("ours LangChain BM25Retriever.invoke", lc_bm25.invoke, t, False))
    lc_dense, t = _timed_build(lambda: lc.DenseRetriever.from_texts(texts, embedder, ids=ids, k=10))
    systems["dense"].append(("ours LangChain DenseRetriever.invoke", lc_dense.invoke, t, False))
    lc_hybrid, t = _timed_build(
        lambda: lc.HybridRetriever.from_texts(texts, embedder, ids=ids, k=10)
    )
    systems["hybrid"].append(("ours LangChain HybridRetriever.invoke", lc_hybrid.invoke, t, False))

    nodes = [TextNode(text=text, id_=doc_id) for doc_id, text in zip(ids, texts)]
    li_bm25, t = _timed_build(lambda: li.BM25Retriever.from_defaults(nodes, similarity_top_k=10))
    systems["bm25"].append(("ours LlamaIndex BM25Retriever.retrieve", li_bm25.retrieve, t, False))
    li_dense, t = _timed_build(
        lambda: li.DenseRetriever.from_defaults(nodes, embed_model=embedder, similarity_top_k=10)
    )
    systems["dense"].append(
        ("ours LlamaIndex DenseRetriever.retrieve", li_dense.retrieve, t, False)
    )
    li_hybrid, t = _timed_build(
        lambda: li.HybridRetriever.from_defaults(nodes, embed_model=embedder, similarity_top_k=10)
    )
    systems["hybrid"].append(
        ("ours LlamaIndex HybridRetriever.retrieve", li_hybrid.retrieve, t, False)
    )

    if not stock:
        return systems
    docs = [Document(page_content=text, id=doc_id) for doc_id, text in zip(ids, texts)]
    try:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever as StockLCBM25
        from langchain_core.vectorstores import InMemoryVectorStore

        s_bm25, t_sb = _timed_build(lambda: StockLCBM25.from_documents(docs, k=10))
        systems["bm25"].append(("LangChain community BM25Retriever", s_bm25.invoke, t_sb, True))
        store, t_sd = _timed_build(
            lambda: InMemoryVectorStore.from_documents(docs, _lc_embeddings(embedder))
        )
        s_dense = store.as_retriever(search_kwargs={"k": 10})
        systems["dense"].append(
            ("LangChain InMemoryVectorStore retriever", s_dense.invoke, t_sd, True)
        )
        ensemble = EnsembleRetriever(retrievers=[s_bm25, s_dense])
        systems["hybrid"].append(
            ("LangChain EnsembleRetriever", ensemble.invoke, t_sb + t_sd, True)
        )
    except ImportError as exc:
        print(f"skipped stock LangChain: {exc}", file=sys.stderr)
    try:
        from llama_index.core import Settings, VectorStoreIndex
        from llama_index.core.llms import MockLLM
        from llama_index.core.retrievers import QueryFusionRetriever
        from llama_index.retrievers.bm25 import BM25Retriever as StockLIBM25

        s_bm25, t_sb = _timed_build(
            lambda: StockLIBM25.from_defaults(nodes=nodes, similarity_top_k=10)
        )
        systems["bm25"].append(("LlamaIndex retrievers-bm25 (bm25s)", s_bm25.retrieve, t_sb, False))
        Settings.embed_model = _li_embedding(embedder)
        index, t_sd = _timed_build(
            lambda: VectorStoreIndex(nodes, embed_model=Settings.embed_model)
        )
        s_dense = index.as_retriever(similarity_top_k=10)
        systems["dense"].append(
            ("LlamaIndex VectorStoreIndex retriever", s_dense.retrieve, t_sd, True)
        )
        qfr = QueryFusionRetriever(
            [s_bm25, s_dense],
            mode="reciprocal_rerank",
            num_queries=1,
            use_async=False,
            similarity_top_k=10,
            llm=MockLLM(),  # one query: the LLM is never called
        )
        systems["hybrid"].append(
            ("LlamaIndex QueryFusionRetriever", qfr.retrieve, t_sb + t_sd, True)
        )
    except ImportError as exc:
        print(f"skipped stock LlamaIndex: {exc}", file=sys.stderr)
    return systems


def measure(
    systems: list[tuple[str, Query, float, bool]],
    queries: list[str],
    slow_queries: int,
    rounds: int,
) -> list[list[str]]:
    """One row per system: queries timed, build s, median / p95 / mean ms."""
    times: dict[str, list[list[float]]] = {}
    for name, fn, _, slow in systems:
        n = min(len(queries), slow_queries) if slow else len(queries)
        times[name] = [[] for _ in range(n)]
        for q in queries[:3]:  # warm-up: JIT-free code, but caches and lazy score tables
            fn(q)
    for _ in range(rounds):
        for i, q in enumerate(queries):
            for name, fn, _, _ in systems:
                if i < len(times[name]):
                    start = time.perf_counter()
                    fn(q)
                    times[name][i].append((time.perf_counter() - start) * 1e3)
    rows = []
    for name, _, build_s, _ in systems:
        per_query = [statistics.median(t) for t in times[name]]
        rows.append(
            [
                name,
                str(len(per_query)),
                f"{build_s:.2f}",
                f"{statistics.median(per_query):.3f}",
                f"{percentile(per_query, 95):.3f}",
                f"{statistics.fmean(per_query):.3f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--copies", type=int, default=20, help="Cranfield copies in the corpus")
    parser.add_argument("--queries", type=int, default=400, help="queries timed (cycled)")
    parser.add_argument(
        "--slow-queries", type=int, default=40, help="queries for slow stock systems"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--no-stock", action="store_true", help="only our systems")
    parser.add_argument("--kinds", default="bm25,dense,hybrid")
    args = parser.parse_args()
    quiet_third_party()

    ids, texts, base_queries = _corpus(args.copies, args.data_dir)
    queries = [base_queries[i % len(base_queries)] for i in range(args.queries)]
    systems = build_systems(ids, texts, args.dim, stock=not args.no_stock)
    out = [f"# Adapter latency ({len(texts):,} docs, top 10, {args.rounds} rounds)", ""]
    out += environment_lines() + [""]
    headers = ["system", "queries", "build s", "median ms", "p95 ms", "mean ms"]
    for kind in args.kinds.split(","):
        out += [
            f"## {kind}",
            "",
            markdown_table(
                headers, measure(systems[kind], queries, args.slow_queries, args.rounds)
            ),
            "",
        ]
        print("\n".join(out[-4:]), flush=True)
    path = write_results("adapter_latency", "\n".join(out))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
