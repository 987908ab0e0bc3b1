"""`MultimodalSearcher`: routes per query part, weights by visual intent, provenance.

The CLIP routes here run on a stand-in image index (a BM25 index over captions whose
``search_image`` finds the image with the same content hash): it checks the routing and
fusion, not a model. The real CLIP model runs in tests/models/test_clip.py and the end to
end tests (tests/core/test_multimodal_end_to_end.py).
"""

from __future__ import annotations

import threading

import pytest

PIL = pytest.importorskip("PIL.Image")

from hybrid_retrievers import BM25Index, Hit  # noqa: E402
from hybrid_retrievers.fusion import (  # noqa: E402
    MULTIMODAL_ROUTES,
    ImageQuery,
    MultimodalSearcher,
)
from hybrid_retrievers.images import ImageError, image_id, load_image  # noqa: E402

RED = PIL.new("RGB", (16, 16), (220, 20, 20))
BLUE = PIL.new("RGB", (16, 16), (20, 20, 220))
RED_ID, BLUE_ID = image_id(load_image(RED)), image_id(load_image(BLUE))


class CaptionImageIndex:
    """A stand-in CLIP index: text search over captions; image search by content hash."""

    def __init__(self) -> None:
        self.index = BM25Index.from_texts(
            ["red square diagram", "blue square photo"], ids=[RED_ID, BLUE_ID],
            metadatas=[{"type": "image", "image_sha256": load_image(RED).sha256},
                       {"type": "image", "image_sha256": load_image(BLUE).sha256}])
        self.image_queries: list[str] = []

    def search(self, query, k=10, *, filter=None):
        return self.index.search(query, k, filter=filter)

    def search_image(self, image, k=10, *, filter=None):
        loaded = load_image(image)
        self.image_queries.append(loaded.sha256)
        docs = sorted(self.index.docs, key=lambda d: d.metadata["image_sha256"] != loaded.sha256)
        return [Hit(d, 1.0 / (i + 1), i + 1) for i, d in enumerate(docs[:k])]


@pytest.fixture()
def index() -> BM25Index:
    return BM25Index.from_texts(
        ["the services connect through a message queue",
         "the queue retries failed messages after a delay",
         "a diagram of red boxes: the services and the queue between them"],
        ids=["t1", "t2", RED_ID],
        metadatas=[{"type": "text", "lang": "en"}, {"type": "text", "lang": "en"},
                   {"type": "image", "lang": "en"}])


def _routes(hit: Hit) -> list[str]:
    return [s["source"] for s in hit.explanation["fusion"]["sources"]]


def test_text_leads_until_the_query_has_visual_words(index) -> None:
    searcher = MultimodalSearcher.from_index(index)
    plain = searcher.search("how do the services connect to the queue", k=3)
    visual = searcher.search("diagram: how do the services connect to the queue", k=3)
    assert plain[0].id == "t1" and visual[0].id == RED_ID
    info = visual[0].explanation["multimodal"]
    assert info["visual_words"] == ["diagram"]
    assert info["weights"] == {"text": 1.0, "descriptions": 2.0}
    assert plain[0].explanation["multimodal"]["weights"] == {"text": 1.0, "descriptions": 0.5}


def test_text_route_excludes_descriptions_and_the_filter_applies_to_every_route(index) -> None:
    searcher = MultimodalSearcher.from_index(index)
    hits = searcher.search("the services and the queue", k=5)
    by_id = {h.id: _routes(h) for h in hits}
    assert by_id[RED_ID] == ["descriptions"] and by_id["t1"] == ["text"]
    assert searcher.search("services", k=5, filter={"lang": "fr"}) == []


def test_an_image_found_by_description_and_by_clip_is_one_result(index) -> None:
    images = CaptionImageIndex()
    searcher = MultimodalSearcher.from_index(index, images=images)
    hits = searcher.search("red diagram of the services", k=5)
    red = next(h for h in hits if h.id == RED_ID)
    assert _routes(red) == ["descriptions", "images"]
    assert len([h for h in hits if h.id == RED_ID]) == 1


def test_an_image_query_runs_the_clip_and_the_description_routes(index) -> None:
    images = CaptionImageIndex()
    seen: list[str] = []

    def describer(image, prompt):
        seen.append(image.sha256)
        return "a diagram of red boxes for the services"

    searcher = MultimodalSearcher.from_index(index, images=images, describer=describer)
    hits = searcher.search_image(RED, k=3)
    assert hits[0].id == RED_ID
    assert _routes(hits[0]) == ["image", "described_image"]
    info = hits[0].explanation["multimodal"]
    assert info["routes"] == ["image", "described_image"]
    assert info["query_image_description"].startswith("a diagram of red boxes")
    assert seen == [load_image(RED).sha256] and images.image_queries == seen
    # a source's index is its route's place in MULTIMODAL_ROUTES, as a FusionSearcher
    # child's is its place among the children, whichever routes ran
    sources = hits[0].explanation["fusion"]["sources"]
    assert [s["index"] for s in sources] == [MULTIMODAL_ROUTES.index(s["source"]) for s in sources] \
        == [3, 4]


def test_each_image_query_gets_its_own_description_across_threads(index) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = {load_image(RED).sha256: "red boxes", load_image(BLUE).sha256: "queue retries"}
    searcher = MultimodalSearcher.from_index(
        index, describer=lambda image, prompt: names[image.sha256])
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda img: searcher.search_image(img, k=1), [RED, BLUE] * 16))
    described = [hits[0].explanation["multimodal"]["query_image_description"] for hits in answers]
    assert described == ["red boxes", "queue retries"] * 16


def test_text_and_image_together_use_every_route(index) -> None:
    searcher = MultimodalSearcher.from_index(index, images=CaptionImageIndex(),
                                             describer=lambda image, prompt: "red boxes")
    hits = searcher.search(ImageQuery(text="the message queue", image=BLUE), k=4)
    assert hits[0].explanation["multimodal"]["routes"] == list(MULTIMODAL_ROUTES)


def test_weights_as_a_mapping_switch_routes_off(index) -> None:
    images = CaptionImageIndex()
    searcher = MultimodalSearcher.from_index(index, images=images,
                                             weights={"text": 1.0, "image": 1.0})
    hits = searcher.search("diagram of the queue", k=3)
    assert hits[0].explanation["multimodal"]["routes"] == ["text"]
    assert RED_ID not in [h.id for h in hits]
    with pytest.raises(ValueError, match="unknown routes"):
        MultimodalSearcher(index, weights={"pictures": 1.0})


def test_bad_queries_and_setups_are_clear(index, tmp_path) -> None:
    searcher = MultimodalSearcher.from_index(index)
    with pytest.raises(ValueError, match="an image query needs a CLIP image index"):
        searcher.search_image(RED)
    with pytest.raises(ValueError, match="needs text, an image, or both"):
        ImageQuery(text="  ")
    with pytest.raises(TypeError, match="str or a hybrid_retrievers.fusion.ImageQuery"):
        searcher.search(42)  # type: ignore[arg-type]
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    images = MultimodalSearcher.from_index(index, images=CaptionImageIndex())
    with pytest.raises(ImageError, match="the query image: notes.png: not an image"):
        images.search_image(bad)
    with pytest.raises(ValueError, match="needs a text searcher"):
        MultimodalSearcher()
    with pytest.raises(TypeError, match="search_image"):
        MultimodalSearcher(index, images=index)
    with pytest.raises(ValueError, match="mode"):
        MultimodalSearcher(index, mode="average")
    with pytest.raises(ValueError, match="k_rrf"):
        MultimodalSearcher(index, k_rrf=-1)


def test_a_failing_route_names_itself(index) -> None:
    def broken(image, prompt):
        raise RuntimeError("vision model down")

    searcher = MultimodalSearcher.from_index(index, images=CaptionImageIndex(),
                                             describer=broken)
    with pytest.raises(RuntimeError, match="vision model down") as caught:
        searcher.search_image(RED)
    assert any("described_image" in note for note in caught.value.__notes__)


async def test_asearch_matches_search_and_threads_agree(index) -> None:
    searcher = MultimodalSearcher.from_index(index, images=CaptionImageIndex())
    expected = [h.id for h in searcher.search("red diagram of the queue", k=3)]
    assert [h.id for h in await searcher.asearch("red diagram of the queue", k=3)] == expected
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(
        [h.id for h in searcher.search("red diagram of the queue", k=3)])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_format_context_marks_image_results(index) -> None:
    from hybrid_retrievers.images import format_context

    searcher = MultimodalSearcher.from_index(index)
    context = format_context(searcher.search("diagram of the services and the queue", k=2))
    first, second = context.split("\n\n---\n\n")
    assert first.startswith("[IMAGE]\na diagram of red boxes")
    assert second.startswith("[TEXT]\n")
    with pytest.raises(TypeError, match=r"results\[0\] has no text"):
        format_context([42])


def test_the_searcher_and_context_examples_run() -> None:
    import doctest

    from hybrid_retrievers.fusion import multimodal
    from hybrid_retrievers.images import context

    assert sum(doctest.testmod(m).failed for m in (context, multimodal)) == 0


def test_an_image_found_by_both_routes_carries_its_description(index) -> None:
    images = CaptionImageIndex()  # its documents' texts are short captions
    hits = MultimodalSearcher.from_index(index, images=images).search("red diagram", k=3)
    red = next(h for h in hits if h.id == RED_ID)
    assert red.doc.text.startswith("a diagram of red boxes")
    only_clip = MultimodalSearcher(images=images).search("blue photo", k=1)
    assert only_clip[0].doc.text == "blue square photo"
