"""Fine-tuning a bi-encoder on a corpus, measured before and after.

Training sits beside the models, not inside them (as sentence-transformers keeps its
trainers apart from its model classes): it uses `hybrid_retrievers.models` (the
sentence-transformers embedder, its backends, the card reader), `bm25` (hard negatives),
and `vector`, `fusion` and `evaluation` (the before/after report), while `models` imports
none of it. Its modules, one job each:

* `finetune`: `fine_tune_embedder`, the whole loop, and its `FineTuneResult`
  (needs the ``train`` extra);
* `pairs`: `TrainingPair`s from the user, from judgments, or mined from the corpus
  (`mine_pairs`), and leak-free query folds (`split_queries`);
* `negatives`: BM25 hard negatives for the pairs;
* `evaluate_tuned`: the before/after measurement (dense and hybrid, with significance).

The card a tuned model folder carries (``model_card.json``) is read by the embedder, so
its reader stays in `hybrid_retrievers.models.card`.

Example:
    >>> from hybrid_retrievers.training import split_queries
    >>> train, held = split_queries(["q1", "q2", "q3", "q4"], 2, seed=0)[0]
    >>> sorted(train + held)
    ['q1', 'q2', 'q3', 'q4']
"""

from __future__ import annotations

from .finetune import FineTuneResult, fine_tune_embedder
from .pairs import TrainingPair, mine_pairs, split_queries

__all__ = ["FineTuneResult", "TrainingPair", "fine_tune_embedder", "mine_pairs", "split_queries"]
