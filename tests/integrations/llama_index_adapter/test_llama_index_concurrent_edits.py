"""LlamaIndex concurrent ``aretrieve`` over a BM25Index that another thread edits."""

from __future__ import annotations

import asyncio
import random

from concurrency import N_WORDS, SlidingCorpusWriter, bm25_corpus, editing_in_background, number
from llama_index_hybrid_retrievers import BM25Retriever

START = 1500


async def test_concurrent_aretrieve_stays_correct_during_edits() -> None:
    index = bm25_corpus(START)
    retriever = BM25Retriever(index, similarity_top_k=10)
    writer = SlidingCorpusWriter([index], START)
    wrong, answered = [], 0
    with editing_in_background(writer):
        rng = random.Random(2)
        for _ in range(5):
            terms = [f"w{rng.randrange(N_WORDS)}" for _ in range(32)]
            lo = writer.window.lo
            results = await asyncio.gather(*(retriever.aretrieve(t) for t in terms))
            hi = writer.window.hi
            for term, nodes in zip(terms, results):
                answered += 1
                assert nodes, term
                for nws in nodes:
                    n = number(nws.node.node_id)
                    words = nws.node.get_content().split()
                    if not (lo <= n < hi and term in words and words[0] == f"u{n}"):
                        wrong.append((term, nws.node.node_id, words))
    assert answered == 160 and writer.window.lo > 0
    assert wrong == []
