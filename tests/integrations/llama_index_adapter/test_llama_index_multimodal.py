"""LlamaIndex `MultimodalRetriever`: `QueryBundle` text + ``image_path`` queries, image results
as `ImageNode`, LlamaIndex's multimodal retriever interface, the multimodal query engine,
callbacks and async; fusion by visual intent through `FusionRetriever`.

The CLIP routes run on the stand-in image index of tests/image_corpus.py (routing and
conversion, not a model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL.Image")

from llama_index.core.base.base_multi_modal_retriever import MultiModalRetriever  # noqa: E402
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler  # noqa: E402
from llama_index.core.llms import ImageBlock, MockLLM  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import ImageNode, NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters  # noqa: E402

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
from llama_index.retrievers.hybrid import MultimodalRetriever as FromNamespace  # noqa: E402
from llama_index_hybrid_retrievers import (  # noqa: E402
    BM25Retriever,
    FusionRetriever,
    HybridRetriever,
    MultimodalRetriever,
    SearcherRetriever,
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> ImageCorpus:
    return build_corpus(tmp_path_factory.mktemp("images"))


def _full(corpus: ImageCorpus, **kwargs: Any) -> MultimodalRetriever:
    return MultimodalRetriever.from_index(corpus.index, images=CaptionImageIndex(corpus),
                                          describer=describer_for(corpus.paths), **kwargs)


def _ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


def _routes(result: NodeWithScore) -> list[str]:
    return [s["source"] for s in result.node.metadata["fusion"]["sources"]]


# ------------------------------------------------------------------ text queries


def test_text_leads_until_the_query_has_visual_words(corpus) -> None:
    retriever = MultimodalRetriever.from_index(corpus.index, similarity_top_k=2)
    diagram = corpus.ids["architecture.png"]
    plain = retriever.retrieve("how do the services connect")
    visual = retriever.retrieve(QueryBundle(query_str="diagram: how do the services connect"))
    assert _ids(plain) == ["t-queue", diagram] and _ids(visual) == [diagram, "t-queue"]
    image, text = visual[0].node, visual[1].node
    assert isinstance(image, ImageNode) and type(text) is TextNode
    assert image.image_path == str(corpus.paths["architecture.png"])
    assert image.image_mimetype == "image/png"
    assert image.text == DESCRIPTIONS["architecture.png"]
    assert image.metadata["type"] == "image" and image.metadata["image"] == image.image_path
    assert visual[0].score is not None and visual[0].score > visual[1].score
    assert _routes(visual[0]) == ["descriptions"] and _routes(visual[1]) == ["text"]
    assert image.metadata["multimodal"]["visual_words"] == ["diagram"]
    # provenance never reaches the LLM's text
    assert "fusion" not in image.get_content(metadata_mode="llm")
    assert "multimodal" in image.excluded_llm_metadata_keys


def test_the_namespace_path_gives_the_same_class() -> None:
    assert FromNamespace is MultimodalRetriever


# ------------------------------------------------------------------ image queries


def test_query_bundle_image_path_and_data_uri(corpus) -> None:
    retriever = _full(corpus, similarity_top_k=3)
    path = corpus.paths["sales_chart.png"]
    for image in (str(path), load_image(path).data_uri()):
        results = retriever.retrieve(QueryBundle(query_str="", image_path=image))
        assert _ids(results)[0] == corpus.ids["sales_chart.png"]
        assert isinstance(results[0].node, ImageNode)
        # found by its CLIP vector and by its own description (the query image is it)
        assert _routes(results[0]) == ["image", "described_image"]
        info = results[0].node.metadata["multimodal"]
        assert info["routes"] == ["image", "described_image"]
        assert info["query_image_description"] == DESCRIPTIONS["sales_chart.png"]
    both = retriever.retrieve(QueryBundle(query_str="message queue retries",
                                          image_path=str(corpus.paths["sunset.jpg"])))
    assert both[0].node.metadata["multimodal"]["routes"] == [
        "text", "descriptions", "images", "image", "described_image"]


def test_filters_as_metadata_filters_and_mappings(corpus) -> None:
    only_images = MetadataFilters(filters=[MetadataFilter(key="type", value="image")])
    retriever = _full(corpus, similarity_top_k=5, filters=only_images)
    results = retriever.retrieve("the services and the queue")
    assert results and all(isinstance(r.node, ImageNode) for r in results)
    texts = _full(corpus, similarity_top_k=5, filters={"source": "architecture.md"})
    assert set(_ids(texts.retrieve("the services and the queue"))) == {"t-queue", "t-retry"}


def test_async_matches_sync(corpus) -> None:
    retriever = _full(corpus, similarity_top_k=3)
    bundle = QueryBundle(query_str="diagram of the services",
                         image_path=str(corpus.paths["architecture.png"]))
    results = asyncio.run(retriever.aretrieve(bundle))
    assert [(r.node.node_id, r.score) for r in results] == [
        (r.node.node_id, r.score) for r in retriever.retrieve(bundle)]


def test_callback_manager_sees_one_retrieve_event(corpus) -> None:
    debug = LlamaDebugHandler()
    retriever = _full(corpus, callback_manager=CallbackManager([debug]))
    results = retriever.retrieve(QueryBundle(query_str="",
                                             image_path=str(corpus.paths["sunset.jpg"])))
    pairs = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert len(pairs) == 1
    assert [n.node.node_id for n in pairs[0][1].payload["nodes"]] == _ids(results)


# ------------------------------------------- LlamaIndex's multimodal interface


def test_it_is_a_llama_index_multimodal_retriever(corpus) -> None:
    retriever = _full(corpus, similarity_top_k=3)
    assert isinstance(retriever, MultiModalRetriever)
    texts = retriever.text_retrieve("how do the services connect")
    assert texts and all(type(r.node) is TextNode for r in texts)
    assert {_routes(r)[0] for r in texts} == {"text"}
    images = retriever.text_to_image_retrieve("services connected by a queue")
    assert images[0].node.node_id == corpus.ids["architecture.png"]
    assert all(isinstance(r.node, ImageNode) for r in images)
    assert _routes(images[0]) == ["descriptions", "images"]
    similar = retriever.image_to_image_retrieve(str(corpus.paths["sunset.jpg"]))
    assert similar[0].node.node_id == corpus.ids["sunset.jpg"]
    assert {_routes(r)[0] for r in similar} == {"image"}

    async def run() -> list[list[NodeWithScore]]:
        return [await retriever.atext_retrieve("how do the services connect"),
                await retriever.atext_to_image_retrieve("services connected by a queue"),
                await retriever.aimage_to_image_retrieve(str(corpus.paths["sunset.jpg"]))]

    assert [_ids(r) for r in asyncio.run(run())] == [_ids(texts), _ids(images), _ids(similar)]


def test_interface_methods_name_what_is_missing(corpus) -> None:
    no_clip = MultimodalRetriever.from_index(corpus.index)
    with pytest.raises(ValueError, match="image_to_image_retrieve needs a CLIP image index"):
        no_clip.image_to_image_retrieve(str(corpus.paths["sunset.jpg"]))
    with pytest.raises(ValueError, match="text_retrieve needs a text searcher"):
        MultimodalRetriever.from_components(
            descriptions=FilteredSource(corpus.index, {"type": "image"})).text_retrieve("x")
    with pytest.raises(ValueError, match="needs an image"):
        no_clip.image_to_image_retrieve(QueryBundle(query_str="sunset"))


def test_inside_the_multimodal_query_engine(corpus) -> None:
    class RecordingLLM(MockLLM):  # a chat model that keeps what it was sent
        def chat(self, messages: Any, **kwargs: Any) -> Any:
            sent.extend(messages)
            return super().chat(messages, **kwargs)

    sent: list[Any] = []
    retriever = _full(corpus, similarity_top_k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=RecordingLLM(is_chat_model=True),
                                            multimodal=True)
    response = engine.query("show me the diagram of the services and the queue")
    sources = response.source_nodes
    blocks = [b for m in sent for b in m.blocks]
    images = [b for b in blocks if isinstance(b, ImageBlock)]
    # the vision LLM receives the diagram's own bytes (read from ImageNode.image_path)
    assert [str(b.url) for b in images][:1] == [
        load_image(corpus.paths["architecture.png"]).data_uri()]
    assert isinstance(sources[0].node, ImageNode)
    assert sources[0].node.image_path == str(corpus.paths["architecture.png"])
    assert "t-queue" in _ids(sources)
    assert format_context(sources).startswith(
        f"[IMAGE] (source: {corpus.paths['architecture.png']})\n"
        f"{DESCRIPTIONS['architecture.png']}")
    assert isinstance(str(response), str)


# ------------------------------------------------------------------ bad input


def test_bad_images_are_errors_naming_the_file(corpus, tmp_path: Path) -> None:
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    retriever = _full(corpus)
    with pytest.raises(ImageError, match="notes.png: not an image"):
        retriever.retrieve(QueryBundle(query_str="services", image_path=str(bad)))
    with pytest.raises(ImageError, match="notes.png: not an image"):
        retriever.image_to_image_retrieve(str(bad))
    with pytest.raises(ImageError, match="not found"):
        retriever.retrieve(QueryBundle(query_str="", image_path=str(tmp_path / "gone.png")))
    with pytest.raises(ValueError, match="needs text .* or an image"):
        retriever.retrieve("   ")
    with pytest.raises(TypeError, match="QueryBundle"):
        retriever.retrieve(None)  # type: ignore[arg-type]


def test_bad_setups_are_clear(corpus) -> None:
    with pytest.raises(TypeError, match="must be a hybrid_retrievers.MultimodalSearcher"):
        MultimodalRetriever(corpus.index)
    with pytest.raises(TypeError, match="describer must be"):
        MultimodalRetriever.from_index(corpus.index, describer="gpt")
    with pytest.raises(TypeError, match="text must have a search"):
        MultimodalRetriever.from_components(text=object())
    with pytest.raises(TypeError, match="'filter'"):
        MultimodalRetriever(MultimodalSearcher.from_index(corpus.index), filter={"a": 1})


def test_from_components_takes_this_package_retrievers_and_the_callers_nodes(corpus) -> None:
    text_nodes = [TextNode(id_=d.id, text=d.text, metadata=dict(d.metadata))
                  for d in corpus.index.docs if d.metadata["type"] == "text"]
    image_nodes = [ImageNode(id_=d.id, text=d.text, metadata=dict(d.metadata),
                             image_path=d.metadata["image"])
                   for d in corpus.index.docs if d.metadata["type"] == "image"]
    retriever = MultimodalRetriever.from_components(
        text=BM25Retriever.from_defaults(nodes=text_nodes),
        descriptions=BM25Retriever.from_defaults(nodes=image_nodes),
        nodes=text_nodes + image_nodes, similarity_top_k=1)
    top = retriever.retrieve("photo of the sunset")[0].node
    assert top.node_id == corpus.ids["sunset.jpg"] and isinstance(top, ImageNode)
    assert top.image_path == str(corpus.paths["sunset.jpg"])
    assert image_nodes[2].metadata.get("fusion") is None  # the caller's node is not edited


# ------------------------------------------------------------------ fusion by intent


def test_fusion_retriever_takes_the_visual_intent_rule(corpus) -> None:
    text = SearcherRetriever(FilteredSource(corpus.index, {"type": "text"}))
    images = SearcherRetriever(FilteredSource(corpus.index, {"type": "image"}))
    fused = FusionRetriever([text, images], names=["text", "images"], similarity_top_k=2,
                            weights=visual_intent_rule(image_sources=[1],
                                                       base_weights=(1.0, 0.5)))
    plain = fused.retrieve("how do the services connect")
    visual = fused.retrieve("la foto: how do the services connect")
    assert plain[0].node.node_id == "t-queue"
    assert visual[0].node.node_id == corpus.ids["architecture.png"]
    sources = visual[0].node.metadata["fusion"]["sources"]
    assert [(s["source"], s["weight"]) for s in sources] == [("images", 2.0)]


def test_hybrid_retriever_over_text_and_image_sources_takes_the_rule(corpus) -> None:
    searcher = FusionSearcher(
        [FilteredSource(corpus.index, {"type": "text"}, name="text"),
         FilteredSource(corpus.index, {"type": "image"}, name="images")],
        weights=visual_intent_rule(image_sources=[1], base_weights=(1.0, 0.5)))
    retriever = HybridRetriever(searcher, similarity_top_k=2)
    diagram = corpus.ids["architecture.png"]
    assert _ids(retriever.retrieve("how do the services connect")) == ["t-queue", diagram]
    visual = retriever.retrieve("das Diagramm: how do the services connect")
    assert _ids(visual) == [diagram, "t-queue"]
    assert [(s["source"], s["weight"]) for s in visual[0].node.metadata["fusion"]["sources"]] == [
        ("images", 2.0)]


def test_a_multimodal_retriever_is_a_fusion_child_and_keeps_image_nodes(corpus) -> None:
    other = SearcherRetriever(FilteredSource(corpus.index, {"type": "text"}))
    fused = FusionRetriever([_full(corpus, similarity_top_k=3), other],
                            names=["multimodal", "text"], similarity_top_k=3)
    results = fused.retrieve(QueryBundle(query_str="the queue",
                                         image_path=str(corpus.paths["architecture.png"])))
    image = next(r for r in results if r.node.node_id == corpus.ids["architecture.png"])
    assert isinstance(image.node, ImageNode)
    assert [s["source"] for s in image.node.metadata["fusion"]["sources"]] == ["multimodal"]


# ------------------------------------------------------------------ a real multimodal LLM


def test_a_llama_index_llm_describes_the_query_image(corpus) -> None:
    from llama_index.core.llms import ChatMessage, ChatResponse

    sent: list[Any] = []

    class VisionLLM(MockLLM):  # answers every image with the same description
        def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            sent.extend(messages)
            return ChatResponse(message=ChatMessage(
                role="assistant", content="a bar chart of sales per quarter"))

    retriever = MultimodalRetriever.from_index(corpus.index, describer=VisionLLM(),
                                               similarity_top_k=3)
    results = retriever.retrieve(QueryBundle(query_str="",
                                             image_path=str(corpus.paths["sales_chart.png"])))
    assert results[0].node.metadata["multimodal"]["query_image_description"] == (
        "a bar chart of sales per quarter")
    assert "t-sales" in _ids(results)
    assert [type(b).__name__ for b in sent[0].blocks] == ["TextBlock", "ImageBlock"]
