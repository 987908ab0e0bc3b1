"""Compare retrieval stacks on a judged dataset: table, per-query diagnostics, plot.

Run: python examples/compare_stacks.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _stand_in_models import MINILM

from hybrid_retrievers import BM25Index, FusionSearcher, VectorIndex
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import evaluate
from hybrid_retrievers.datasets import BeirDataset
from hybrid_retrievers.models import SentenceTransformerEmbedder

full = load_dataset("cranfield")
# A 200-document subset (CPU encoding is slow) and the queries judged against it.
corpus = dict(list(full.corpus.items())[:200])
qrels = {q: {d: g for d, g in rel.items() if d in corpus} for q, rel in full.qrels.items()}
qrels = {q: rel for q, rel in qrels.items() if any(g > 0 for g in rel.values())}
subset = BeirDataset(name="cranfield[:200]", corpus=corpus,
                     queries={q: full.queries[q] for q in qrels}, qrels=qrels)

docs = list(corpus.values())
bm25 = BM25Index.from_docs(docs)
dense = VectorIndex.from_docs(docs, embedder=SentenceTransformerEmbedder(MINILM))
stacks = {
    "bm25": bm25,
    "dense": dense,
    "hybrid rrf": FusionSearcher([bm25, dense], names=["bm25", "dense"]),
}
report = evaluate(stacks, subset, k=100, max_queries=40)
print(report)

print("\nQueries where BM25 beats dense on recall@10 (largest gap first):")
for diff in report.compare("bm25", "dense", "recall@10", limit=3):
    print(f"  Q{diff.query_id} {diff.a:.2f} vs {diff.b:.2f}: {diff.query[:70]}")

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
report.plot(out / "compare_stacks.png")
print(f"\nplot: {out / 'compare_stacks.png'}")
