"""Fine-tune a bi-encoder on the user's corpus, and measure it before and after.

`fine_tune_embedder` is the whole loop: training pairs (the user's, a qrels split, or
mined from the corpus: `hybrid_retrievers.training.pairs`), BM25 hard negatives
(`hybrid_retrievers.training.negatives`), sentence-transformers' `SentenceTransformerTrainer`
with MultipleNegativesRankingLoss (van den Oord et al. 2018's InfoNCE over in-batch and
hard negatives, as in Henderson et al. 2017, "Efficient Natural Language Response
Suggestion for Smart Reply"), then `evaluate` of the base and the tuned model on the same
held-out queries (dense and hybrid rows) with the paired significance of each difference.

The folder written is a normal sentence-transformers model (``SentenceTransformer(path)``
and `SentenceTransformerEmbedder` load it) plus ``model_card.json``: the base model, the
data source and size, the hyper-parameters, the metrics before and after, this package's
version and the SHA-256 of every file (the embedding cache keys on the weights' hash, so
a model retrained into another folder never reuses stale vectors). It is written into a
temporary sibling folder and renamed into place, so ``output_dir`` either holds a whole
model or does not exist.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models.card import CARD_FILE
from ..models.hub import prepare_hub_load
from ..optional import require
from ..types import Doc
from ..validation import check_k, check_number
from .evaluate_tuned import EVAL_METRICS, eval_backend, eval_embedder, evaluate_before_after
from .negatives import add_hard_negatives
from .pairs import (MINING_METHODS, TrainingPair, mine_pairs, normalize_text, pairs_from_qrels,
                    pairs_from_user)

__all__ = ["EVAL_METRICS", "FineTuneResult", "fine_tune_embedder"]

logger = logging.getLogger("hybrid_retrievers.models")


@dataclass(frozen=True)
class FineTuneResult:
    """What `fine_tune_embedder` produced.

    Attributes:
        model_path: the saved sentence-transformers folder.
        card: the model card (also ``model_path / "model_card.json"``).
        report: the before/after `EvaluationReport` (rows ``"dense (base)"``,
            ``"dense (tuned)"``, ``"hybrid (base)"``, ``"hybrid (tuned)"``), or ``None``
            without ``eval_dataset``.
        significance: ``{"dense ndcg@10": Significance, ...}``: tuned against base,
            paired randomization test over the held-out queries.
    """

    model_path: Path
    card: dict[str, Any]
    report: Any
    significance: dict[str, Any]


def fine_tune_embedder(
    base: str | os.PathLike[str],
    *,
    output_dir: str | os.PathLike[str],
    pairs: Iterable[Any] | Any = None,
    corpus: Iterable[Doc] | Mapping[str, Doc] | None = None,
    mine: str | None = None,
    negatives: int = 1,
    epochs: float = 1,
    max_steps: int | None = None,
    batch_size: int = 32,
    max_seq_length: int = 128,
    learning_rate: float = 2e-5,
    eval_dataset: Any = None,
    seed: int = 0,
    max_pairs: int | None = None,
    generate: Callable[[str], str] | None = None,
    cached_loss: bool = False,
    show_progress: bool = False,
    log: Callable[[str], None] | None = None,
    eval_cache: Any = None,
    bf16: bool = False,
) -> FineTuneResult:
    """Fine-tune ``base`` with MultipleNegativesRankingLoss; save it; measure before/after.

    Args:
        base: the base bi-encoder: a sentence-transformers name or local folder.
        output_dir: where to write the tuned model; must not exist yet.
        pairs: the training pairs: ``(query, passage)`` tuples (a passage is a corpus
            document's id or exact text) or `TrainingPair` objects; or a `BeirDataset`
            whose judged queries all become pairs (pass the *training* split: see
            `split_queries`). Give ``pairs`` or ``mine``, not both.
        corpus: the documents (`Doc` objects or ``{id: Doc}``): negatives come from
            them and pairs are mined from them. Defaults to ``eval_dataset``'s or
            ``pairs``' corpus.
        mine: mine pairs from the corpus: ``"titles"``, ``"sentences"`` or ``"llm"``
            (with ``generate``); see `mine_pairs`.
        negatives: BM25 hard negatives per pair (0: in-batch negatives only).
        epochs: passes over the pairs.
        max_steps: stop after this many optimizer steps (overrides ``epochs``).
        batch_size: pairs per step (MNRL's in-batch negatives: larger is better).
        max_seq_length: longest training input in tokens (truncated beyond; the model's own
            limit if smaller).
        learning_rate: AdamW's peak rate, with 10% linear warm-up.
        eval_dataset: a `BeirDataset` of held-out queries (and the corpus they search):
            base and tuned are evaluated on it. Training pairs whose anchor is one of its
            queries are refused (``pairs``) or dropped (mined): no query is both.
        seed: seeds the trainer, the data order and the mining (same seed, same model).
        max_pairs: keep at most this many mined pairs (a seeded sample).
        generate: the LLM for ``mine="llm"``.
        cached_loss: use CachedMultipleNegativesRankingLoss (Gao et al. 2021, GradCache):
            large batches in small memory, the same gradients.
        show_progress: progress bars (training steps, encoding, evaluation).
        log: called with one line per stage (the CLI prints them).
        eval_cache: an `EmbeddingCache` for the base model's evaluation vectors (runs
            over one corpus then encode it with the base model once; the CLI passes the
            one ``demo`` / ``eval`` / ``index`` fill).
        bf16: train under bfloat16 autocast (float32 master weights, the usual mixed
            precision). Off by default: on this project's AVX512-BF16 CPU a step of
            all-MiniLM-L6-v2 took about twice as long under autocast as in float32
            (146 s against 67 s, 2 busy cores), although bfloat16 encoding is faster.

    Returns:
        A `FineTuneResult`.

    Raises:
        FileExistsError: ``output_dir`` exists.
        ValueError: no pairs (none given, or none left after filtering), a passage that
            is not in the corpus, an evaluation query among the training pairs, a base
            that is not a bi-encoder, or both/neither of ``pairs`` and ``mine``.
        ImportError: the ``train`` extra (datasets, accelerate) is missing.

    Example:
        >>> from hybrid_retrievers.datasets import load_dataset
        >>> ds = load_dataset("cranfield")
        >>> result = fine_tune_embedder(  # doctest: +SKIP
        ...     local_minilm_path(), corpus=ds.corpus, mine="titles", max_steps=20,
        ...     output_dir="minilm-cranfield")
        >>> result.card["pairs"]["count"] > 0  # doctest: +SKIP
        True
    """
    say = log or (lambda line: logger.info("%s", line))
    out = Path(output_dir)
    if out.exists():
        raise FileExistsError(f"output_dir {str(out)!r} exists; choose a new folder (the tuned "
                              "model is never written over another)")
    base = os.fspath(base)
    _refuse_non_bi_encoder(base)
    epochs = check_number(epochs, "epochs", low=0.0)
    if epochs <= 0 and max_steps is None:
        raise ValueError(f"epochs must be > 0, got {epochs}")
    if max_steps is not None:
        max_steps = check_k(max_steps, "max_steps")
    batch_size = check_k(batch_size, "batch_size")
    max_seq_length = check_k(max_seq_length, "max_seq_length")
    learning_rate = check_number(learning_rate, "learning_rate", low=0.0)
    st = require("sentence_transformers", extra="train", feature="fine_tune_embedder")
    require("datasets", extra="train", feature="fine_tune_embedder")
    require("accelerate", extra="train", feature="fine_tune_embedder")

    docs = _corpus(corpus, pairs, eval_dataset)
    training, source = _training_pairs(pairs, mine, docs, eval_dataset, max_pairs, generate,
                                       seed)
    say(f"Training pairs: {len(training)}, {source}")
    t0 = time.perf_counter()
    training = add_hard_negatives(training, docs, negatives)
    if not training:
        raise ValueError("no training pair has enough hard negatives; pass fewer negatives")
    say(f"Hard negatives: {negatives} per pair (BM25), {len(training)} pairs kept, "
        f"{time.perf_counter() - t0:.1f} s")

    import torch
    from transformers import set_seed

    set_seed(seed)
    load_options: dict[str, Any] = {}
    prepare_hub_load(base, load_options, what="fine_tune_embedder")
    model = st.SentenceTransformer(base, **load_options)
    # Training truncates to max_seq_length (the cost of a step grows with it); the saved
    # model keeps the base's own limit, so base and tuned read documents alike.
    inference_length = model.max_seq_length
    model.max_seq_length = min(max_seq_length, inference_length or max_seq_length)
    train_length = model.max_seq_length
    steps = max_steps or math.ceil(epochs * math.ceil(len(training) / batch_size))
    per_text = _seconds_per_text(model, [p.positive for p in training[:batch_size]], bf16)
    train_seconds = steps * batch_size * _forwards_per_pair(training) * per_text
    say(f"Estimated training time: {train_seconds:.0f} s ({steps} steps of {batch_size} pairs, "
        f"{'bfloat16' if bf16 else 'float32'}, {torch.get_num_threads()} threads)"
        + _evaluation_estimate(model, base, eval_dataset, eval_cache, inference_length))
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        started = time.perf_counter()
        trained = _train(st, model, training, tmp, steps, epochs=epochs, max_steps=max_steps,
                         batch_size=batch_size, learning_rate=learning_rate, seed=seed,
                         cached_loss=cached_loss, show_progress=show_progress, bf16=bf16)
        seconds = time.perf_counter() - started
        say(f"Trained {trained} steps in {seconds:.1f} s "
            f"({trained * batch_size / max(seconds, 1e-9):.1f} pairs/s)")
        model.max_seq_length = inference_length
        model.save(str(tmp))
        report, significance = None, {}
        if eval_dataset is not None:
            started = time.perf_counter()
            report, significance = evaluate_before_after(base, str(tmp), eval_dataset,
                                                         show_progress=show_progress,
                                                         cache=eval_cache)
            say(f"Evaluated base and tuned in {time.perf_counter() - started:.1f} s")
        card = _card(base, source, training, negatives, epochs, max_steps, trained,
                     batch_size, train_length, learning_rate, seed, cached_loss,
                     seconds, report, significance, eval_dataset, bf16)
        card["files"] = _checksums(tmp)
        (tmp / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
        _fsync_tree(tmp)
        os.rename(tmp, out)  # out does not exist: an atomic rename of a whole folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return FineTuneResult(out, card, report, significance)


def _refuse_non_bi_encoder(base: str) -> None:
    folder = Path(base).expanduser()
    if not folder.is_dir():
        if base.startswith(("/", ".", "~")) or base.count("/") > 1:
            raise ValueError(f"base {base!r} is not a model folder (no such directory)")
        return  # a hub name: sentence-transformers checks it when it loads
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    archs = config.get("architectures") if isinstance(config, dict) else None
    if isinstance(archs, list) and any(str(a).endswith("ForSequenceClassification")
                                       for a in archs):
        raise ValueError(
            f"base {base!r} is a cross-encoder (architectures {archs}), not a bi-encoder: "
            "fine_tune_embedder trains an embedding model; pass a sentence-transformers "
            "bi-encoder such as local_minilm_path()")
    if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
        raise ValueError(f"base {base!r} is not a model folder: it has neither a "
                         "sentence-transformers modules.json nor a config.json")


def _corpus(corpus: Any, pairs: Any, eval_dataset: Any) -> list[Doc]:
    if corpus is None:
        for holder in (eval_dataset, pairs):
            if holder is not None and hasattr(holder, "corpus"):
                corpus = holder.corpus
                break
    if corpus is None:
        raise ValueError("corpus is required: the documents negatives are drawn from and "
                         "passages are found in (or an eval_dataset / BeirDataset pairs)")
    docs = list(corpus.values()) if isinstance(corpus, Mapping) else list(corpus)
    if not docs:
        raise ValueError("corpus is empty")
    bad = next((d for d in docs if not isinstance(d, Doc)), None)
    if bad is not None:
        raise TypeError(f"corpus must hold Doc objects, got {type(bad).__name__}")
    return docs


def _training_pairs(
    pairs: Any, mine: str | None, docs: list[Doc], eval_dataset: Any,
    max_pairs: int | None, generate: Any, seed: int,
) -> tuple[list[TrainingPair], str]:
    if (pairs is None) == (mine is None):
        raise ValueError("give exactly one of pairs= (your pairs or a BeirDataset training "
                         f"split) and mine= (one of {MINING_METHODS})")
    held_out = ({normalize_text(q) for q in eval_dataset.queries.values()}
                if eval_dataset is not None else set())
    if mine is not None:
        mined = mine_pairs(docs, mine, max_pairs=max_pairs, generate=generate, seed=seed)
        kept = [p for p in mined if normalize_text(p.anchor) not in held_out]
        if len(kept) < len(mined):
            logger.warning("%d mined pairs equal an evaluation query and were dropped",
                           len(mined) - len(kept))
        if not kept:
            raise ValueError(f"mining {mine!r} found no training pairs in the corpus (titles "
                             "in metadata['title'], markdown headings, sentences)")
        return kept, f"mined from the corpus ({mine})"
    if hasattr(pairs, "qrels") and hasattr(pairs, "queries"):
        if eval_dataset is not None:
            shared = set(pairs.qrels) & set(eval_dataset.qrels)
            if shared:
                raise ValueError(f"{len(shared)} training queries are evaluation queries "
                                 f"(e.g. {sorted(shared)[:3]}); split them with "
                                 "split_queries so no query is both")
        by_id = {d.id: d for d in docs}
        found = pairs_from_qrels(pairs.queries, pairs.qrels, by_id)
        source = f"qrels of {getattr(pairs, 'name', 'a dataset')} ({len(pairs.qrels)} queries)"
    else:
        found = pairs_from_user(pairs, docs)
        source = "user pairs"
    leaked = [p.anchor for p in found if normalize_text(p.anchor) in held_out]
    if leaked:
        raise ValueError(f"{len(leaked)} training pairs are evaluation queries (e.g. "
                         f"{leaked[0][:60]!r}): never train on the queries you evaluate on")
    if not found:
        raise ValueError("pairs is empty: no (query, relevant passage) pair to train on")
    return found, source


def _forwards_per_pair(pairs: list[TrainingPair]) -> float:
    """Forward-pass equivalents per training pair: its texts (anchor, positive, negatives),
    the short anchors (titles, questions) counted as a third of a long passage, each
    forward plus a backward of about twice the forward, plus about one more for what a
    step adds around them (tokenizing, the optimizer, the data loader): 4x. Measured
    here (all-MiniLM-L6-v2, 2 busy cores) a step took 7 to 16 timed forward passes of a
    batch; this says 9.3."""
    return 4 * (1 / 3 + 1 + len(pairs[0].negatives))


def _seconds_per_text(model: Any, sample: list[str], bf16: bool) -> float:
    """One timed forward pass over ``sample`` (bfloat16 autocast or not), per text: the
    unit of the time estimates."""
    import torch

    with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
        model.encode(sample[:2], show_progress_bar=False)  # warm-up: first-call overheads
        t0 = time.perf_counter()
        model.encode(sample, batch_size=len(sample), show_progress_bar=False)
    return (time.perf_counter() - t0) / len(sample)


def _evaluation_estimate(model: Any, base: str, eval_dataset: Any, cache: Any,
                         inference_length: int | None) -> str:
    """``"; evaluation about N s (...)"``: the corpus encodings the before/after needs (the
    tuned model's always, the base model's unless ``cache`` holds them), timed by one
    forward pass over a batch of its documents as the evaluation runs it (full length, the
    evaluation's backend)."""
    if eval_dataset is None:
        return ""
    backend = eval_backend(base)
    texts = [d.text for d in eval_dataset.corpus.values()]
    cached = 0
    if cache is not None:
        cached = int(cache.get_many(eval_embedder(base, backend).model_id, texts)[1].sum())
    encode = len(texts) - cached + len(texts)
    train_length, model.max_seq_length = model.max_seq_length, inference_length
    try:
        per_text = _seconds_per_text(model, texts[:32], backend == "torch-bf16")
    finally:
        model.max_seq_length = train_length
    return (f"; evaluation about {encode * per_text:.0f} s (encoding {encode} documents: "
            f"{len(texts) - cached} base, {len(texts)} tuned; {cached} base vectors cached)")


def _train(st: Any, model: Any, pairs: list[TrainingPair], folder: Path, steps: int, *,
           epochs: float,
           max_steps: int | None, batch_size: int, learning_rate: float, seed: int,
           cached_loss: bool, show_progress: bool, bf16: bool) -> int:
    """Run the trainer; return the optimizer steps taken.

    Its console output is ours: one bar of steps (`_step_bar`), not the trainer's bar and
    the raw metrics dict it prints at the end; no "Computing widget examples" pass (the
    widget is a Hub page feature); no pinned memory on a CPU (torch warns that it is
    unused)."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer import losses
    from transformers import PrinterCallback

    columns: dict[str, list[str]] = {"anchor": [p.anchor for p in pairs],
                                     "positive": [p.positive for p in pairs]}
    for i in range(len(pairs[0].negatives)):
        columns[f"negative_{i + 1}"] = [p.negatives[i] for p in pairs]
    loss = (losses.CachedMultipleNegativesRankingLoss(model, mini_batch_size=16) if cached_loss
            else losses.MultipleNegativesRankingLoss(model))
    args = st.SentenceTransformerTrainingArguments(
        output_dir=str(folder / "checkpoints"), num_train_epochs=epochs,
        max_steps=max_steps if max_steps is not None else -1,
        per_device_train_batch_size=batch_size, learning_rate=learning_rate,
        warmup_steps=math.ceil(0.1 * steps), seed=seed, data_seed=seed, report_to="none", save_strategy="no",
        logging_strategy="no", disable_tqdm=True,
        # A duplicate text in a batch would be its own in-batch "negative".
        batch_sampler="no_duplicates", dataloader_drop_last=False,
        dataloader_pin_memory=model.device.type == "cuda",
        bf16=bf16, use_cpu=bf16 and model.device.type == "cpu",
    )
    model.model_card_data.set_widget_examples = lambda dataset: None
    trainer = st.SentenceTransformerTrainer(model=model, args=args,
                                            train_dataset=Dataset.from_dict(columns), loss=loss)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(_step_bar(steps, show_progress))
    output = trainer.train()
    shutil.rmtree(folder / "checkpoints", ignore_errors=True)
    return int(output.global_step)


def _step_bar(steps: int, show: bool) -> Any:
    """A `transformers.TrainerCallback` drawing one bar of training steps through
    `hybrid_retrievers.progress` (defined here: transformers is imported lazily)."""
    from transformers import TrainerCallback

    from ..progress import progress

    class StepBar(TrainerCallback):
        bar: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar = progress(show=show, desc="Training", unit="step", total=steps)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.update(1)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return StepBar()


def _card(base: str, source: str, pairs: list[TrainingPair], negatives: int, epochs: float,
          max_steps: int | None, steps: int, batch_size: int, max_seq_length: int,
          learning_rate: float, seed: int, cached_loss: bool, seconds: float, report: Any,
          significance: Mapping[str, Any], eval_dataset: Any, bf16: bool) -> dict[str, Any]:
    from .._version import __version__

    sources: dict[str, int] = {}
    for p in pairs:
        sources[p.source] = sources.get(p.source, 0) + 1
    card: dict[str, Any] = {
        "format": "hybrid-retrievers fine-tuned bi-encoder",
        "hybrid_retrievers_version": __version__,
        "base_model": base,
        "pairs": {"source": source, "count": len(pairs), "by_kind": sources,
                  "negatives_per_pair": negatives, "negatives_from": "bm25"},
        "hyperparameters": {
            "loss": ("CachedMultipleNegativesRankingLoss" if cached_loss
                     else "MultipleNegativesRankingLoss"),
            "epochs": epochs, "max_steps": max_steps, "steps": steps,
            "batch_size": batch_size, "max_seq_length": max_seq_length,
            "learning_rate": learning_rate, "warmup_ratio": 0.1, "seed": seed,
            "bf16": bf16},
        "training_seconds": round(seconds, 2),
        "pairs_per_second": round(steps * batch_size / max(seconds, 1e-9), 2),
    }
    if report is not None:
        card["evaluation"] = {
            "dataset": eval_dataset.name, "queries": len(report.queries),
            "metrics": report.means,
            "significance": {key: {"mean_difference": s.mean_difference, "p_value": s.p_value,
                                   "queries": s.queries, "test": s.test,
                                   "permutations": s.permutations}
                             for key, s in significance.items()},
        }
    return card


def _checksums(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        out[path.relative_to(folder).as_posix()] = digest.hexdigest()
    return out


def _fsync_tree(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
