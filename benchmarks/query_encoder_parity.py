"""The torch-free query encoders rank as the torch ones do (issue 45), on Cranfield.

The command-line ``search`` encodes its query with `OnnxQueryEncoder` (ONNX Runtime +
tokenizers, `hybrid_retrievers.models.onnx_query`) when ``index`` exported one. This
benchmark builds the three-leg index the command line builds (BM25, all-MiniLM-L6-v2
dense, splade-tiny sparse; `build_retrievers` with the CLI's own encoders and embedding
caches, ``HYBRID_RETRIEVERS_CACHE_DIR``), saves it, and loads it twice with
`FusionSearcher.load`: once with the torch encoders the command line used before
(`SentenceTransformerEmbedder` with its ``"auto"`` backend, which is ``torch-bf16`` on a
CPU with native bfloat16, and `SpladeEncoder`), once with the same encoders behind
`OnnxQueryPath`. For every one of the 225 queries it compares:

* the query vectors: max abs difference, dense and sparse (for the dense leg also
  against torch float32, ``backend="torch"``, the arithmetic the export reproduces);
* the top 10 of the dense leg, of the sparse leg and of the fused list (the index's
  saved fusion: relative score, 0.5 : 1 : 0.5): how many queries have the identical
  top 10 (ids and order), and the nDCG@10 of both.

Run: ``python benchmarks/query_encoder_parity.py [--out /tmp/cranfield-idx]``. The first
run encodes Cranfield's 1,400 documents with both models (minutes on a CPU; the caches
keep them for the next run). Exports go to ``$HYBRID_RETRIEVERS_ONNX_CACHE``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def top_ids(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


def ndcg10(ranked: list[str], judged: dict[str, int]) -> float:
    """nDCG@10 with graded gains (trec_eval's ``ndcg_cut_10``: gain = grade, log2 discount)."""
    gains = [judged.get(d, 0) for d in ranked[:10]]
    dcg = sum(g / np.log2(i + 2) for i, g in enumerate(gains) if g > 0)
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def sparse_diff(a: dict[str, float], b: dict[str, float]) -> float:
    return max((abs(a.get(t, 0.0) - b.get(t, 0.0)) for t in a.keys() | b.keys()), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="where to save the index (default: a temp dir)")
    args = parser.parse_args()

    from hybrid_retrievers.cli._build import _quiet_transformers, build_retrievers
    from hybrid_retrievers.datasets import load_dataset
    from hybrid_retrievers.fusion import FusionSearcher
    from hybrid_retrievers.models import (
        SentenceTransformerEmbedder,
        SpladeEncoder,
        local_minilm_path,
        local_splade_path,
    )
    from hybrid_retrievers.models.onnx_query import OnnxQueryPath, export_query_encoder

    _quiet_transformers()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    data = load_dataset("cranfield")
    docs = list(data.corpus.values())
    queries = dict(data.queries)
    qrels = data.qrels
    start = time.perf_counter()
    fused = build_retrievers(["hybrid3"], docs, None, progress=True)["hybrid3"]
    print(f"built the three-leg index of {len(docs)} documents in "
          f"{time.perf_counter() - start:.0f} s")
    folder = args.out or Path(tempfile.mkdtemp(prefix="parity-"))
    fused.save(folder)

    dense_torch = SentenceTransformerEmbedder(local_minilm_path())  # the CLI's: "auto"
    sparse_torch = SpladeEncoder(local_splade_path())
    start = time.perf_counter()
    dense_export = export_query_encoder(dense_torch)
    sparse_export = export_query_encoder(sparse_torch)
    print(f"exported the query encoders in {time.perf_counter() - start:.0f} s: "
          f"{dense_export}, {sparse_export}")
    torch_side = FusionSearcher.load(folder, dense_torch, sparse_embedder=sparse_torch)
    onnx_side = FusionSearcher.load(
        folder, OnnxQueryPath(SentenceTransformerEmbedder(local_minilm_path()), dense_export),
        sparse_embedder=OnnxQueryPath(SpladeEncoder(local_splade_path()), sparse_export))

    qids = [q for q in queries if q in qrels]
    texts = [queries[q] for q in qids]
    onnx_dense = onnx_side.leg("dense").embedder
    onnx_sparse = onnx_side.leg("sparse").embedder
    assert onnx_dense.load_onnx() and onnx_sparse.load_onnx()
    fp32 = SentenceTransformerEmbedder(local_minilm_path(), backend="torch")
    vectors = {"onnx": onnx_dense.embed_queries(texts), "torch": dense_torch.embed_queries(texts),
               "fp32": fp32.embed_queries(texts)}
    sparse_vectors = {"onnx": onnx_sparse.embed_queries(texts),
                      "torch": sparse_torch.embed_queries(texts)}
    print(f"\n{len(qids)} queries; dense backend of the index and its torch queries: "
          f"{dense_torch.backend} ({dense_torch.backend_reason})\n")
    print("| query vectors | max abs difference | mean abs(1 - cos) |\n|---|---:|---:|")
    for label, other in (("dense: ONNX vs torch (the CLI's backend)", "torch"),
                         ("dense: ONNX vs torch float32", "fp32")):
        a, b = vectors["onnx"], vectors[other]
        cos_gap = np.mean(np.abs(1 - (a * b).sum(1)))  # float32 rounding makes some < 0
        print(f"| {label} | {np.abs(a - b).max():.2e} | {cos_gap:.2e} |")
    worst = max(sparse_diff(a, b) for a, b in zip(*sparse_vectors.values()))
    same_tokens = sum(a.keys() == b.keys() for a, b in zip(*sparse_vectors.values()))
    print(f"| sparse: ONNX vs torch | {worst:.2e} | (same tokens: {same_tokens} of "
          f"{len(qids)} queries) |")

    dense_leg, sparse_leg = torch_side.leg("dense"), torch_side.leg("sparse")
    rows: dict[str, list[tuple[list[str], list[str]]]] = {
        "dense leg (vs torch, the CLI's backend)": [], "dense leg (vs torch float32)": [],
        "sparse leg": [], "fused (bm25 + dense + sparse)": []}
    for i, (qid, text) in enumerate(zip(qids, texts)):
        onnx_dense_top = top_ids(dense_leg.search_vector(vectors["onnx"][i], 10))
        rows["dense leg (vs torch, the CLI's backend)"].append(
            (top_ids(dense_leg.search_vector(vectors["torch"][i], 10)), onnx_dense_top))
        rows["dense leg (vs torch float32)"].append(
            (top_ids(dense_leg.search_vector(vectors["fp32"][i], 10)), onnx_dense_top))
        rows["sparse leg"].append(
            (top_ids(sparse_leg.search_vector(sparse_vectors["torch"][i], 10)),
             top_ids(sparse_leg.search_vector(sparse_vectors["onnx"][i], 10))))
        rows["fused (bm25 + dense + sparse)"].append(
            (top_ids(torch_side.search(text, 10)), top_ids(onnx_side.search(text, 10))))
    print("\n| top 10 | identical (ids and order) | same ids, any order | nDCG@10 torch "
          "| nDCG@10 ONNX |\n|---|---:|---:|---:|---:|")
    for label, pairs in rows.items():
        same = sum(a == b for a, b in pairs)
        as_set = sum(set(a) == set(b) for a, b in pairs)
        n_t = np.mean([ndcg10(a, dict(qrels[q])) for q, (a, _) in zip(qids, pairs)])
        n_o = np.mean([ndcg10(b, dict(qrels[q])) for q, (_, b) in zip(qids, pairs)])
        print(f"| {label} | {same} of {len(pairs)} | {as_set} of {len(pairs)} | {n_t:.4f} "
              f"| {n_o:.4f} |")


if __name__ == "__main__":
    main()
