"""The before/after measurement of a fine-tuned bi-encoder: dense and hybrid, with significance.

The base and the tuned model each encode the evaluation corpus into a `VectorIndex` on one
backend: the one ``backend="auto"`` picks for the base (bfloat16 autocast for
all-MiniLM-L6-v2 on a CPU with native bfloat16, else float32), so the comparison is of the
models, not of two backends, and the base model's vectors are the ones ``demo``, ``eval``
and ``index`` already put in the CLI's `EmbeddingCache` (same model, same backend: the same
cache key). Each is fused with one shared
`BM25Index` by the hybrid recipe's RRF; `evaluate` runs all four rows on the same
held-out queries, and every tuned row is tested against its base row with the paired
randomization test (`EvaluationReport.significance`).
"""

from __future__ import annotations

from typing import Any

from ..bm25 import BM25Index
from ..evaluation import evaluate
from ..fusion import FusionSearcher
from ..models.backends import resolve_backend
from ..models.sentence_transformers import SentenceTransformerEmbedder
from ..vector import VectorIndex

__all__ = ["EVAL_METRICS", "eval_backend", "eval_embedder", "evaluate_before_after"]

EVAL_METRICS = ("ndcg@10", "recall@10", "recall@100")
"""The metrics of the before/after report."""


def evaluate_before_after(
    base: str, tuned: str, dataset: Any, *, show_progress: bool = False, cache: Any = None,
    backend: str | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``(report, {"dense ndcg@10": Significance, ...})`` of ``base`` and ``tuned`` on ``dataset``.

    ``cache``: an `EmbeddingCache` for the base model's document vectors (several tuning
    runs over one corpus then encode it with the base model once).
    ``backend``: the `SentenceTransformerEmbedder` backend of both models (default: what
    `eval_backend` picks for ``base``).

    Example:
        >>> report, sig = evaluate_before_after(base, tuned, ds)  # doctest: +SKIP
        >>> sig["dense ndcg@10"].p_value < 0.05  # doctest: +SKIP
        True
    """
    backend = backend or eval_backend(base)
    docs = list(dataset.corpus.values())
    bm25 = BM25Index.from_docs(docs)
    rows: dict[str, Any] = {}
    for label, path in (("base", base), ("tuned", tuned)):
        embedder = eval_embedder(path, backend)
        dense = VectorIndex.from_docs(docs, embedder=embedder, show_progress=show_progress,
                                      cache=cache if label == "base" else None)
        rows[f"dense ({label})"] = dense
        rows[f"hybrid ({label})"] = FusionSearcher([bm25, dense], names=["bm25", "dense"],
                                                   mode="rrf")
    order = ["dense (base)", "dense (tuned)", "hybrid (base)", "hybrid (tuned)"]
    report = evaluate({name: rows[name] for name in order}, dataset, k=100,
                      metrics=EVAL_METRICS, show_progress=show_progress)
    significance = {f"{kind} {metric}": report.significance(f"{kind} (tuned)", f"{kind} (base)",
                                                             metric)
                    for kind in ("dense", "hybrid") for metric in EVAL_METRICS}
    return report, significance


def eval_backend(base: str) -> str:
    """The backend both models of the before/after evaluation run on: ``"auto"``'s choice
    for ``base`` (the CLI's default for it, so its cached vectors are reused).

    Example:
        >>> eval_backend("some/unchecked-model")
        'torch'
    """
    return resolve_backend("auto", base, None)[0]


def eval_embedder(model: str, backend: str) -> Any:
    """The `SentenceTransformerEmbedder` of ``model`` in the evaluation (not loaded yet: its
    ``model_id`` is the key of its vectors in an `EmbeddingCache`).

    Example:
        >>> eval_embedder("some/model", "torch").model_id
        'some/model'
    """
    return SentenceTransformerEmbedder(model, backend=backend, batch_size=64)
