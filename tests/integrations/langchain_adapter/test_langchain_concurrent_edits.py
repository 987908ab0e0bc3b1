"""LangChain ``batch`` / ``abatch`` over a BM25Index that another thread edits."""

from __future__ import annotations

import asyncio
import random

from concurrency import N_WORDS, SlidingCorpusWriter, bm25_corpus, editing_in_background, number
from langchain_hybrid_retrievers import BM25Retriever

START = 1500


def test_batch_and_abatch_stay_correct_during_edits() -> None:
    index = bm25_corpus(START)
    retriever = BM25Retriever(index=index, k=10, filter={"g": 1})
    writer = SlidingCorpusWriter([index], START)
    wrong, calls = [], 0
    with editing_in_background(writer):
        rng = random.Random(1)
        for _ in range(6):
            # Odd documents (g=1) hold only odd words: ask for those, so every query has hits.
            terms = [f"w{2 * rng.randrange(N_WORDS // 2) + 1}" for _ in range(32)]
            lo = writer.window.lo
            batches = [retriever.batch(terms, config={"max_concurrency": 8}),
                       asyncio.run(retriever.abatch(terms))]
            hi = writer.window.hi
            calls += 2
            for results in batches:
                for term, docs in zip(terms, results):
                    assert docs, term
                    for d in docs:
                        n, words = number(d.id), d.page_content.split()
                        if not (lo <= n < hi and d.metadata["g"] == 1 and term in words
                                and words[0] == f"u{n}"):
                            wrong.append((term, d.id, d.page_content, d.metadata))
    assert calls == 12 and writer.window.lo > 0
    assert wrong == []
