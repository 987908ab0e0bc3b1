"""LangChain `MultimodalRetriever` / `ImageRetriever`: text and image queries through
LangChain's own interfaces (invoke/ainvoke keyword arguments, chains, callbacks, the
standard retriever suite), and fusion by visual intent through `FusionRetriever`.

The CLIP routes run on the stand-in image index of tests/image_corpus.py (routing and
conversion, not a model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL.Image")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from hybrid_retrievers.fusion import FilteredSource, FusionSearcher  # noqa: E402
from hybrid_retrievers.fusion import MultimodalSearcher, visual_intent_rule  # noqa: E402
from hybrid_retrievers.images import ImageError, format_context, load_image  # noqa: E402
from image_corpus import (  # noqa: E402
    DESCRIPTIONS,
    CaptionImageIndex,
    ImageCorpus,
    build_corpus,
    describer_for,
)
from langchain_hybrid_retrievers import (  # noqa: E402
    BM25Retriever,
    FusionRetriever,
    HybridRetriever,
    ImageRetriever,
    MultimodalRetriever,
    SearcherRetriever,
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> ImageCorpus:
    return build_corpus(tmp_path_factory.mktemp("images"))


def _full(corpus: ImageCorpus, cls: type = MultimodalRetriever, **kwargs: Any) -> Any:
    return cls.from_index(corpus.index, images=CaptionImageIndex(corpus),
                          describer=describer_for(corpus.paths), **kwargs)


def _routes(document: Document) -> list[str]:
    return [s["source"] for s in document.metadata["fusion"]["sources"]]


# ------------------------------------------------------------------ text queries


def test_text_leads_until_the_query_has_visual_words(corpus) -> None:
    retriever = MultimodalRetriever.from_index(corpus.index, k=2)
    plain = retriever.invoke("how do the services connect")
    visual = retriever.invoke("diagram: how do the services connect")
    diagram = corpus.ids["architecture.png"]
    assert [d.id for d in plain] == ["t-queue", diagram]
    assert [d.id for d in visual] == [diagram, "t-queue"]
    image = visual[0]
    assert image.page_content == DESCRIPTIONS["architecture.png"]
    assert image.metadata["type"] == "image"
    assert image.metadata["image"] == str(corpus.paths["architecture.png"])
    assert image.metadata["rank"] == 1 and image.metadata["score"] > 0
    assert _routes(image) == ["descriptions"] and _routes(visual[1]) == ["text"]
    info = image.metadata["multimodal"]
    assert info["visual_words"] == ["diagram"]
    assert info["weights"] == {"text": 1.0, "descriptions": 2.0}
    assert plain[0].metadata["multimodal"]["visual_words"] == []


def test_spanish_visual_words_shift_the_weights_too(corpus) -> None:
    retriever = MultimodalRetriever.from_index(corpus.index, k=1)
    assert retriever.invoke("gráfico sales quarter")[0].id == corpus.ids["sales_chart.png"]
    assert retriever.invoke("sales quarter")[0].id == "t-sales"


def test_an_image_found_by_description_and_by_clip_is_one_document(corpus) -> None:
    docs = _full(corpus, k=7).invoke("a bar chart of sales per quarter")
    chart = [d for d in docs if d.id == corpus.ids["sales_chart.png"]]
    assert len(chart) == 1 and _routes(chart[0]) == ["descriptions", "images"]
    assert len({d.id for d in docs}) == len(docs)


def test_filter_as_field_and_per_call(corpus) -> None:
    retriever = MultimodalRetriever.from_index(corpus.index, k=5,
                                               filter={"source": "architecture.md"})
    assert {d.id for d in retriever.invoke("the queue and the services")} == {"t-queue",
                                                                              "t-retry"}
    only_images = retriever.invoke("the queue and the services", filter={"type": "image"})
    assert [d.id for d in only_images] == [corpus.ids["architecture.png"]]
    assert retriever.invoke("queue", k=1)[0].id in {"t-queue", "t-retry"}


# ------------------------------------------------------------------ image queries


def test_image_as_keyword_argument_path_and_data_uri(corpus) -> None:
    retriever = _full(corpus, k=3)
    path = corpus.paths["sales_chart.png"]
    for image in (path, str(path), load_image(path).data_uri(), path.read_bytes()):
        docs = retriever.invoke("", image=image)
        assert docs[0].id == corpus.ids["sales_chart.png"]
        # found by its CLIP vector and by its own description (the query image is it)
        assert _routes(docs[0]) == ["image", "described_image"]
        info = docs[0].metadata["multimodal"]
        assert info["routes"] == ["image", "described_image"]
        assert info["query_image_description"] == DESCRIPTIONS["sales_chart.png"]
    # the described image found the text about sales
    assert "t-sales" in [d.id for d in retriever.invoke("", image=path)]


def test_text_and_image_together_use_every_route(corpus) -> None:
    docs = _full(corpus, k=4).invoke("the message queue", image=corpus.paths["sunset.jpg"])
    assert docs[0].metadata["multimodal"]["routes"] == [
        "text", "descriptions", "images", "image", "described_image"]
    assert {"t-queue", corpus.ids["sunset.jpg"]} <= {d.id for d in docs}


def test_image_retriever_input_is_the_image(corpus) -> None:
    retriever = _full(corpus, ImageRetriever, k=2)
    path = corpus.paths["architecture.png"]
    for query in (str(path), load_image(path).data_uri()):
        docs = retriever.invoke(query)
        assert docs[0].id == corpus.ids["architecture.png"]
        assert docs[0].metadata["image"] == str(path)
    with_text = retriever.invoke(str(path), text="dead letter queue retries", k=5)
    assert with_text[0].metadata["multimodal"]["routes"][:3] == ["text", "descriptions",
                                                                  "images"]
    assert "t-retry" in [d.id for d in with_text]


def test_image_retriever_composes_in_a_chain(corpus) -> None:
    path = corpus.paths["sunset.jpg"]
    expected = f"[IMAGE] (source: {path})\n{DESCRIPTIONS['sunset.jpg']}"
    chain = _full(corpus, ImageRetriever, k=1) | RunnableLambda(format_context)
    assert chain.invoke(str(path)) == expected
    bound = _full(corpus, k=1).bind(image=path) | RunnableLambda(format_context)
    assert bound.invoke("") == expected


def test_async_matches_sync(corpus) -> None:
    retriever = _full(corpus, k=3)
    image = corpus.paths["architecture.png"]

    async def both() -> tuple[list[Document], list[Document]]:
        return (await retriever.ainvoke("diagram of the services", image=image),
                await _full(corpus, ImageRetriever, k=3).ainvoke(str(image), filter={
                    "type": "image"}))

    mixed, images_only = asyncio.run(both())
    assert mixed == retriever.invoke("diagram of the services", image=image)
    assert {d.metadata["type"] for d in images_only} == {"image"}


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.events.append(("start", query))

    def on_retriever_end(self, documents: Any, **kwargs: Any) -> None:
        self.events.append(("end", [d.id for d in documents]))


def test_callbacks_see_one_run_with_the_documents(corpus) -> None:
    recorder = _Recorder()
    path = str(corpus.paths["architecture.png"])
    docs = _full(corpus, ImageRetriever, k=2).invoke(path, config={"callbacks": [recorder]})
    assert recorder.events == [("start", path), ("end", [d.id for d in docs])]


def test_a_describer_runs_as_a_child_of_the_retrieval_context(corpus) -> None:
    from langchain_hybrid_retrievers._base import core_call_config

    seen: list[Any] = []

    def describer(image: Any, prompt: str) -> str:
        seen.append(core_call_config())
        return "boxes and arrows around a message queue"

    retriever = MultimodalRetriever.from_index(corpus.index, describer=describer)
    retriever.invoke("", image=corpus.paths["architecture.png"])
    assert seen and seen[0] is not None and seen[0]["callbacks"] is not None


# ------------------------------------------------------------------ bad input


def test_bad_images_are_errors_naming_the_file(corpus, tmp_path: Path) -> None:
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    retriever = _full(corpus)
    with pytest.raises(ImageError, match="notes.png: not an image"):
        retriever.invoke("services", image=bad)
    with pytest.raises(ImageError, match="notes.png: not an image"):
        _full(corpus, ImageRetriever).invoke(str(bad))
    with pytest.raises(ImageError, match="for a text query use MultimodalRetriever"):
        _full(corpus, ImageRetriever).invoke("how do the services connect?")
    with pytest.raises(ImageError, match="data URI"):
        _full(corpus, ImageRetriever).invoke("data:image/png;base64,!!")
    with pytest.raises(ValueError, match="an image query needs a CLIP image index"):
        MultimodalRetriever.from_index(corpus.index).invoke("", image=corpus.paths["sunset.jpg"])


def test_bad_setups_are_clear(corpus) -> None:
    with pytest.raises(TypeError, match="searcher must be a hybrid_retrievers.fusion"):
        MultimodalRetriever(searcher=corpus.index)
    with pytest.raises(ValueError, match="must differ from 'multimodal'"):
        MultimodalRetriever.from_index(corpus.index, score_key="multimodal")
    with pytest.raises(TypeError, match="describer must be"):
        MultimodalRetriever.from_index(corpus.index, describer=42)
    with pytest.raises(TypeError, match="text must have a search"):
        MultimodalRetriever.from_components(text=object())
    with pytest.raises(TypeError, match="unexpected argument"):
        MultimodalRetriever(searcher=MultimodalSearcher.from_index(corpus.index), top_k=3)


def test_from_components_takes_this_package_retrievers(corpus) -> None:
    texts = [d for d in corpus.index.docs if d.metadata["type"] == "text"]
    described = [d for d in corpus.index.docs if d.metadata["type"] == "image"]
    as_documents = [[Document(id=d.id, page_content=d.text, metadata=dict(d.metadata))
                     for d in part] for part in (texts, described)]
    retriever = MultimodalRetriever.from_components(
        text=BM25Retriever.from_documents(as_documents[0]),
        descriptions=BM25Retriever.from_documents(as_documents[1]), k=1)
    assert retriever.invoke("photo of the sunset")[0].id == corpus.ids["sunset.jpg"]
    assert retriever.invoke("sunset")[0].metadata["multimodal"]["routes"] == [
        "text", "descriptions"]


# ------------------------------------------------------------------ fusion by intent


def test_fusion_retriever_takes_the_visual_intent_rule(corpus) -> None:
    text = SearcherRetriever(searcher=FilteredSource(corpus.index, {"type": "text"}))
    images = SearcherRetriever(searcher=FilteredSource(corpus.index, {"type": "image"}))
    fused = FusionRetriever(retrievers=[text, images], names=["text", "images"], k=2,
                            weights=visual_intent_rule(image_sources=[1],
                                                       base_weights=(1.0, 0.5)))
    plain = fused.invoke("how do the services connect")
    visual = fused.invoke("show me the diagram of how the services connect")
    assert plain[0].id == "t-queue"
    assert visual[0].id == corpus.ids["architecture.png"]
    sources = visual[0].metadata["fusion"]["sources"]
    assert [(s["source"], s["weight"]) for s in sources] == [("images", 2.0)]
    assert [s["source"] for s in plain[0].metadata["fusion"]["sources"]] == ["text"]


def test_hybrid_retriever_over_text_and_image_sources_takes_the_rule(corpus) -> None:
    searcher = FusionSearcher(
        [FilteredSource(corpus.index, {"type": "text"}, name="text"),
         FilteredSource(corpus.index, {"type": "image"}, name="images")],
        weights=visual_intent_rule(image_sources=[1], base_weights=(1.0, 0.5)))
    retriever = HybridRetriever(searcher=searcher, k=2)
    diagram = corpus.ids["architecture.png"]
    assert [d.id for d in retriever.invoke("how do the services connect")] == ["t-queue",
                                                                               diagram]
    visual = retriever.invoke("el diagrama: how do the services connect")
    assert [d.id for d in visual] == [diagram, "t-queue"]
    assert [(s["source"], s["weight"]) for s in visual[0].metadata["fusion"]["sources"]] == [
        ("images", 2.0)]
    # a per-call weights= still wins over the rule
    assert retriever.invoke("el diagrama: how do the services connect",
                            weights=[1.0, 0.1])[0].id == "t-queue"


# ------------------------------------------------------------------ LangChain's suite


class _Standard(RetrieversIntegrationTests):
    corpus: ImageCorpus

    @pytest.fixture(autouse=True)
    def _corpus(self, corpus) -> None:
        type(self).corpus = corpus


class TestMultimodalRetrieverStandard(_Standard):
    @property
    def retriever_constructor(self) -> type[MultimodalRetriever]:
        return MultimodalRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"searcher": MultimodalSearcher.from_index(self.corpus.index)}

    @property
    def retriever_query_example(self) -> str:
        return "the services and the queue"


class TestImageRetrieverStandard(_Standard):
    @property
    def retriever_constructor(self) -> type[ImageRetriever]:
        return ImageRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"searcher": MultimodalSearcher.from_index(
            self.corpus.index, images=CaptionImageIndex(self.corpus))}

    @property
    def retriever_query_example(self) -> str:
        return load_image(self.corpus.paths["sunset.jpg"]).data_uri()


# ------------------------------------------------------------------ a real chat model


class _RunTree(BaseCallbackHandler):
    def __init__(self) -> None:
        self.retriever_runs: list[Any] = []
        self.chat_parents: list[Any] = []
        self.sent: list[Any] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any,
                           **kwargs: Any) -> None:
        self.retriever_runs.append(run_id)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any,
                            parent_run_id: Any = None, **kwargs: Any) -> None:
        self.chat_parents.append(parent_run_id)
        self.sent.extend(messages[0])


def test_a_chat_model_describes_the_query_image_as_a_child_run(corpus) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    model = FakeListChatModel(responses=["a bar chart of sales per quarter"])
    retriever = MultimodalRetriever.from_index(corpus.index, describer=model, k=3)
    runs = _RunTree()
    docs = retriever.invoke("", image=corpus.paths["sales_chart.png"],
                            config={"callbacks": [runs]})
    assert docs[0].metadata["multimodal"]["query_image_description"] == (
        "a bar chart of sales per quarter")
    assert "t-sales" in [d.id for d in docs]
    assert runs.chat_parents == runs.retriever_runs  # the model call is a child run
    text, image = runs.sent[0].content  # the prompt, then the query image's own bytes
    assert text["type"] == "text"
    assert load_image(corpus.paths["sales_chart.png"]).data_uri().split(",", 1)[1] in str(image)
    image_docs = asyncio.run(_full(corpus, ImageRetriever).ainvoke(
        str(corpus.paths["sales_chart.png"])))
    assert image_docs[0].id == corpus.ids["sales_chart.png"]
