"""`hybrid_retrievers.models.EmbedderAdapter`, the base of the framework embedding adapters.

Checked with a framework-free model (lists of floats), so the shared half is tested in
the core; the LangChain and LlamaIndex subclasses are tested with their adapters.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from hybrid_retrievers.models import EmbedderAdapter, HashingEmbedder, adapt_embedder


class ListModel:
    """A toy model: lists of floats, a declared size and a name."""

    def __init__(self, size: int = 4, name: str = "toy") -> None:
        self.size, self.name = size, name

    def encode(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t))] + [1.0] * (self.size - 1) for t in texts]

    def encode_one(self, text: str) -> list[float]:
        return self.encode([text])[0]

    async def aencode_one(self, text: str) -> list[float]:
        return self.encode_one(text)


class ListEmbedder(EmbedderAdapter):
    native_type = ListModel
    argument = "model"
    native_name = "ListModel"
    example = "ListModel()"
    document_method = "encode"
    query_method = "encode_one"
    async_query_method = "aencode_one"
    dimension_attribute = "size"

    @staticmethod
    def _derive_model_id(model: ListModel) -> str | None:
        return f"ListModel({model.name})"


def test_arrays_dimension_and_identity() -> None:
    emb = ListEmbedder(ListModel(size=3))
    assert emb.dimension == 3 and emb.model_id == "ListModel(toy)"
    docs = emb.embed_documents(["a", "bb"])
    assert docs.dtype == np.float32 and docs.shape == (2, 3) and docs.flags.c_contiguous
    assert emb.embed_query("ccc").tolist() == [3.0, 1.0, 1.0]
    np.testing.assert_array_equal(emb.embed_queries(["a", "bb"]), docs)
    assert asyncio.run(emb.aembed_query("a")).shape == (3,)
    assert asyncio.run(emb.aembed_queries(["a", "b"])).shape == (2, 3)
    assert emb.embed_documents([]).shape == (0, 3)
    assert repr(emb) == "ListEmbedder(ListModel, model_id='ListModel(toy)')"
    assert ListEmbedder(ListModel(), model_id="mine").model_id == "mine"


def test_errors_name_the_model_method() -> None:
    with pytest.raises(TypeError, match="model must be a ListModel instance"):
        ListEmbedder(object())
    with pytest.raises(TypeError, match="model_id"):
        ListEmbedder(ListModel(), model_id=" ")
    with pytest.raises(ValueError, match="dimension"):
        ListEmbedder(ListModel(), dimension=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ListModel\.encode_one\(\) returned 4-d vectors, "
                                         r"expected 6-d"):
        ListEmbedder(ListModel(), dimension=6).embed_query("a")
    with pytest.raises(TypeError, match="single str"):
        ListEmbedder(ListModel()).embed_documents("abc")  # type: ignore[arg-type]


def test_adapt_embedder() -> None:
    assert isinstance(adapt_embedder(ListModel(), ListModel, ListEmbedder, argument="m",
                                     native_name="a ListModel"), ListEmbedder)
    core = HashingEmbedder(dimension=8)
    assert adapt_embedder(core, ListModel, ListEmbedder, argument="m",
                          native_name="a ListModel") is core
    with pytest.raises(TypeError, match="m must be a ListModel or a hybrid_retrievers Embedder"):
        adapt_embedder(None, ListModel, ListEmbedder, argument="m", native_name="a ListModel")
