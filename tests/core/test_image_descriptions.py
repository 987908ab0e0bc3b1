"""`describe_images` and the `DescriptionCache`: the description route of issue 31.

Images are drawn with Pillow (``drawn_images``: a bar chart, a flow diagram, a gradient);
the describers are plain callables that look at the pixels they get, so a test fails if
the wrong image, or none, reaches the model.
"""

from __future__ import annotations

import doctest
import json
import threading
import warnings
from pathlib import Path

import pytest

Image = pytest.importorskip("PIL.Image")

from hybrid_retrievers import BM25Index, Doc  # noqa: E402
from hybrid_retrievers.images import (  # noqa: E402
    DEFAULT_DESCRIPTION_PROMPT,
    DescriptionCache,
    DescriptionError,
    ImageError,
    LoadedImage,
    describe_image,
    describe_images,
    describe_images_report,
    describer_name,
    image_id,
    load_image,
)
from hybrid_retrievers.images import describe as describe_module  # noqa: E402
from hybrid_retrievers.images import description_cache as cache_module  # noqa: E402
from hybrid_retrievers.persistence import IndexFormatError  # noqa: E402

from drawn_images import ARROW_RED, BAR_BLUE, bar_chart, flow_diagram, gradient_photo, png  # noqa: E402

@pytest.fixture
def folder(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, draw in (("chart", bar_chart), ("diagram", flow_diagram),
                       ("photo", gradient_photo)):
        paths[name] = tmp_path / f"{name}.png"
        paths[name].write_bytes(png(draw()))
    return paths


class PixelDescriber:
    """Describes what it sees: blue bars, red arrows, or a gradient; counts its calls."""

    name = "pixel-vlm"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, image: LoadedImage, prompt: str) -> str:
        assert isinstance(image, LoadedImage) and image.image.mode == "RGB"
        with self._lock:
            self.calls.append(image.sha256)
            self.prompts.append(prompt)
        colours = {colour for _, colour in image.image.getcolors(1 << 20)}
        if BAR_BLUE in colours:
            return "  A bar chart with three blue bars of rising height.\n"
        if ARROW_RED in colours:
            return "A flow diagram: three boxes connected left to right by red arrows."
        return "A photo-like colour gradient from purple to green."


# ---------------------------------------------------------------------- documents


def test_one_document_per_image_with_ids_metadata_and_provenance(folder) -> None:
    describer = PixelDescriber()
    sources = [folder["chart"], str(folder["diagram"]), folder["photo"]]
    docs = describe_images(sources, describer, metadatas=[{"page": 3}, None, {"type": "x"}])
    assert [d.text for d in docs] == [
        "A bar chart with three blue bars of rising height.",
        "A flow diagram: three boxes connected left to right by red arrows.",
        "A photo-like colour gradient from purple to green.",
    ]
    assert [d.id for d in docs] == [image_id(load_image(p)) for p in sources]
    chart = docs[0].metadata
    assert chart["type"] == "image" and chart["image"] == str(folder["chart"])
    assert chart["image_sha256"] == load_image(folder["chart"]).sha256
    assert chart["image_format"] == "PNG" and chart["image_size"] == [120, 80]
    assert chart["page"] == 3 and chart["describer"] == "pixel-vlm"
    assert chart["description_source"] == "describer"
    assert docs[2].metadata["type"] == "image"  # a caller's "type" never wins
    assert describer.prompts == [DEFAULT_DESCRIPTION_PROMPT] * 3
    assert len(describer.calls) == 3


def test_given_ids_and_a_custom_prompt_and_name(folder) -> None:
    describer = PixelDescriber()
    docs = describe_images([folder["chart"], folder["photo"]], describer,
                           ids=["fig-1", None], prompt="What is it?",
                           describer_name="gpt-vision")
    assert docs[0].id == "fig-1" and docs[1].id.startswith("image-")
    assert {d.metadata["describer"] for d in docs} == {"gpt-vision"}
    assert describer.prompts == ["What is it?"] * 2


def test_each_distinct_image_is_described_once(folder, tmp_path) -> None:
    copy = tmp_path / "copy-of-chart.png"
    copy.write_bytes(folder["chart"].read_bytes())
    describer = PixelDescriber()
    report = describe_images_report([folder["chart"], folder["photo"], copy], describer)
    assert len(describer.calls) == 2  # the copy is the same image
    assert [d.metadata["image"] for d in report.docs] == [str(folder["chart"]),
                                                          str(folder["photo"])]
    assert [(s.index, s.source) for s in report.skipped] == [(2, str(copy))]
    assert "the same image as images[0]" in report.skipped[0].reason
    # With ids, each copy is its own document; the model is still asked once.
    describer = PixelDescriber()
    docs = describe_images([folder["chart"], copy], describer, ids=["a", "b"])
    assert [d.id for d in docs] == ["a", "b"] and len(describer.calls) == 1
    assert docs[0].text == docs[1].text


def test_description_documents_are_searchable_next_to_text(folder) -> None:
    text = [Doc("t1", "The payment service calls the ledger service over a queue."),
            Doc("t2", "Quarterly revenue rose in every region.")]
    images = describe_images(list(folder.values()), PixelDescriber())
    index = BM25Index.from_docs(text + images)
    hits = index.search("flow diagram of the boxes", 2)
    assert hits[0].doc.metadata["type"] == "image"
    assert hits[0].doc.metadata["image"] == str(folder["diagram"])


# ---------------------------------------------------------------------- the cache


def test_a_warm_cache_never_calls_the_describer(folder, tmp_path) -> None:
    cache = DescriptionCache()
    first = PixelDescriber()
    cold = describe_images(list(folder.values()), first, cache=cache)
    assert len(first.calls) == 3 and len(cache) == 3 and cache.misses == 3
    second = PixelDescriber()
    warm = describe_images(list(folder.values()), second, cache=cache)
    assert second.calls == [] and cache.hits == 3
    assert [d.text for d in warm] == [d.text for d in cold]
    assert {d.metadata["description_source"] for d in warm} == {"cache"}
    # Another prompt or another describer is another key.
    describe_images([folder["chart"]], second, cache=cache, prompt="Other prompt.")
    describe_images([folder["chart"]], second, cache=cache, describer_name="other-vlm")
    assert len(second.calls) == 2 and len(cache) == 5


def test_a_cache_saved_to_disk_stays_warm(folder, tmp_path) -> None:
    where = tmp_path / "descriptions"
    cache = DescriptionCache(where)
    assert cache.path == where and len(cache) == 0
    describe_images(list(folder.values()), PixelDescriber(), cache=cache)
    cache.save()
    for reloaded in (DescriptionCache(where), DescriptionCache.load(where)):
        describer = PixelDescriber()
        docs = describe_images(list(folder.values()), describer, cache=reloaded)
        assert describer.calls == [] and len(docs) == 3 and reloaded.path == where
        assert {d.metadata["description_source"] for d in docs} == {"cache"}
    # Saving elsewhere, and a second save over the first, work too.
    cache.save(tmp_path / "copy")
    cache.put("other", "p", "0" * 64, "A table.")
    cache.save()
    assert DescriptionCache.load(where).get("other", "p", "0" * 64) == "A table."


def test_a_corrupt_or_foreign_cache_is_refused_naming_the_file(folder, tmp_path) -> None:
    where = tmp_path / "descriptions"
    cache = DescriptionCache(where)
    describe_images([folder["chart"]], PixelDescriber(), cache=cache)
    cache.save()
    (saved,) = where.glob("v*/descriptions.json")
    data = json.loads(saved.read_bytes())
    data["entries"][0][3] = "A photo of a cat."  # an edit the checksum catches
    saved.write_text(json.dumps(data))
    for load in (DescriptionCache, DescriptionCache.load):
        with pytest.raises(IndexFormatError, match="descriptions.json"):
            load(where)
    plain = tmp_path / "notes.txt"
    plain.write_text("not a cache")
    with pytest.raises(IndexFormatError, match="notes.txt"):
        DescriptionCache(plain)
    with pytest.raises(IndexFormatError, match="no index directory"):
        DescriptionCache.load(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(DescriptionCache(empty)) == 0  # an empty directory starts an empty cache


def test_a_well_checksummed_but_invalid_cache_is_refused(tmp_path) -> None:
    """What a checksum cannot catch (a bug in another writer): the structure is checked."""
    from hybrid_retrievers.persistence import IndexWriter, atomic_index_dir

    bad_rows = [
        [[0, 0, "zz", "text"]],                    # not a SHA-256
        [[0, 5, "a" * 64, "text"]],                # no such prompt
        [[-1, 0, "a" * 64, "text"]],               # negative position
        [[0, 0, "a" * 64, "  "]],                  # blank description
        [[0, 0, "a" * 64, "x"], [0, 0, "a" * 64, "y"]],  # a key twice
    ]
    for i, rows in enumerate(bad_rows):
        where = tmp_path / f"bad{i}"
        with atomic_index_dir(where) as tmp:
            w = IndexWriter(tmp)
            w.json("descriptions", {"describers": ["d"], "prompts": ["p"], "entries": rows})
            w.manifest("description-cache", 1, {"size": len(rows)})
        with pytest.raises(IndexFormatError, match="descriptions.json: entry"):
            DescriptionCache.load(where)


def test_the_cache_is_thread_safe(tmp_path) -> None:
    images = [png(Image.new("RGB", (8, 8), (i, 255 - i, 7))) for i in range(40)]
    cache = DescriptionCache()
    describer = PixelDescriber()
    threads = [threading.Thread(target=describe_images, args=(images[k::4], describer),
                                kwargs={"cache": cache, "timeout": None}) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 40 and cache.misses == 40
    describe_images(images, describer, cache=cache)
    assert cache.hits == 40 and len(describer.calls) == 40


def test_cache_arguments_are_checked() -> None:
    cache = DescriptionCache()
    with pytest.raises(ValueError, match="64 lowercase hex"):
        cache.put("d", "p", "ABC", "text")
    with pytest.raises(ValueError, match="non-empty str"):
        cache.put("d", "p", "a" * 64, " ")
    with pytest.raises(ValueError, match="not bound to a directory"):
        cache.save()
    with pytest.raises(ValueError, match="lambda"):
        describe_images([png(bar_chart())], lambda image, prompt: "x", cache=cache)
    with pytest.raises(TypeError, match="DescriptionCache"):
        describe_images([png(bar_chart())], PixelDescriber(), cache={})


# ---------------------------------------------------------------------- failures


class Hangs:
    """A describer that never answers (until the test releases it)."""

    name = "hung-vlm"

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, image: LoadedImage, prompt: str) -> str:
        self.release.wait(30)
        return "too late"


def failing(kind: str):
    pixels = PixelDescriber()

    def describer(image: LoadedImage, prompt: str) -> object:
        if image.size != (120, 80):  # only the bar chart fails
            return pixels(image, prompt)
        if kind == "raises":
            raise ConnectionError("the vision API is down")
        return {"blank": " \n ", "not-str": 42}[kind]

    describer.name = f"flaky-{kind}"  # type: ignore[attr-defined]
    return describer


@pytest.mark.parametrize("kind, reason", [
    ("raises", "ConnectionError: the vision API is down"),
    ("blank", "ValueError: the describer returned blank text"),
    ("not-str", "TypeError: the describer returned a int, not a str"),
])
def test_a_failing_describer_skips_that_image_with_a_warning(folder, kind, reason) -> None:
    with pytest.warns(UserWarning) as caught:
        report = describe_images_report(list(folder.values()), failing(kind))
    assert [d.metadata["image"] for d in report.docs] == [str(folder["diagram"]),
                                                          str(folder["photo"])]
    (message,) = [str(w.message) for w in caught]
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert str(folder["chart"]) in message and reason in message
    assert report.skipped[0].source == str(folder["chart"]) and reason in report.skipped[0].reason


def test_a_hung_describer_times_out_and_the_others_are_kept(folder) -> None:
    hung = Hangs()
    calls = []

    def describer(image: LoadedImage, prompt: str) -> str:
        calls.append(image.source)
        if image.source == str(folder["diagram"]):
            return hung(image, prompt)
        return PixelDescriber()(image, prompt)

    try:
        with pytest.warns(UserWarning, match="diagram.png.*LLMTimeoutError: no answer within 1 s"):
            docs = describe_images(list(folder.values()), describer, timeout=1.0)
    finally:
        hung.release.set()
    assert [d.metadata["image"] for d in docs] == [str(folder["chart"]), str(folder["photo"])]
    assert len(calls) == 3
    with pytest.raises(DescriptionError, match="no answer within 0.2 s"):
        hung.release.clear()
        try:
            describe_image(folder["photo"], hung, timeout=0.2)
        finally:
            hung.release.set()


def test_on_error_caption_uses_the_metadata_caption(folder) -> None:
    metadatas = [{"alt": "Sales by quarter (bar chart)"}, None, None]
    with pytest.warns(UserWarning, match="using its caption") as caught:
        docs = describe_images(list(folder.values()), failing("raises"), metadatas=metadatas,
                               on_error="caption")
    assert caught[0].filename == __file__
    chart = docs[0]
    assert chart.text == "Sales by quarter (bar chart)"
    assert chart.metadata["description_source"] == "caption"
    assert "ConnectionError" in chart.metadata["description_error"]
    assert chart.metadata["alt"] == "Sales by quarter (bar chart)"
    # Without a caption the image is skipped, saying so.
    with pytest.warns(UserWarning, match="no caption in its metadata"):
        docs = describe_images(list(folder.values()), failing("raises"), on_error="caption")
    assert len(docs) == 2


def test_on_error_raise_names_the_file_and_keeps_earlier_results(folder) -> None:
    cache = DescriptionCache()
    order = [folder["photo"], folder["chart"], folder["diagram"]]
    with pytest.raises(DescriptionError, match=r"chart\.png.*flaky-raises gave no description"
                       r" \(ConnectionError") as caught:
        describe_images(order, failing("raises"), cache=cache, on_error="raise")
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert len(cache) == 1  # the photo, described before the failure
    describer = PixelDescriber()
    describe_images(order, describer, cache=cache, describer_name="flaky-raises")
    assert len(describer.calls) == 2


def test_bad_image_files_follow_on_error(folder, tmp_path) -> None:
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("# meeting notes, not a picture")
    truncated = tmp_path / "truncated.png"
    data = png(flow_diagram())
    truncated.write_bytes(data[: len(data) // 2])
    sources = [not_an_image, folder["chart"], truncated]
    describer = PixelDescriber()
    with pytest.warns(UserWarning) as caught:
        report = describe_images_report(sources, describer)
    assert [d.metadata["image"] for d in report.docs] == [str(folder["chart"])]
    assert len(describer.calls) == 1
    messages = [str(w.message) for w in caught]
    assert "notes.png" in messages[0] and "not an image" in messages[0]
    assert "truncated.png" in messages[1] and "truncated or corrupt" in messages[1]
    assert [s.source for s in report.skipped] == [str(not_an_image), str(truncated)]
    with pytest.warns(UserWarning) as caught:  # a caption cannot stand in for a bad file
        docs = describe_images(sources, describer, on_error="caption",
                               metadatas=[{"caption": "notes"}, None, None])
    assert len(docs) == 1 and "notes.png" in str(caught[0].message)
    with pytest.raises(ImageError, match="truncated.png"):
        describe_images([folder["chart"], truncated], describer, on_error="raise")
    with pytest.warns(UserWarning, match="not found"):
        assert describe_images([tmp_path / "gone.png"], describer) == []


# ---------------------------------------------------------------------- one image


def test_describe_image_for_a_query_image(folder) -> None:
    cache = DescriptionCache()
    describer = PixelDescriber()
    text = describe_image(png(flow_diagram()), describer, cache=cache)
    assert text.startswith("A flow diagram") and len(describer.calls) == 1
    assert describe_image(flow_diagram(), describer, cache=cache) == text
    assert len(describer.calls) == 1  # the same pixels, PNG-encoded: the same image
    with pytest.raises(DescriptionError, match="blank text"):
        describe_image(folder["chart"], failing("blank"))
    with pytest.raises(ImageError, match="not an image"):
        describe_image(b"plain text", describer)


# ---------------------------------------------------------------------- arguments


def test_arguments_are_checked_before_any_model_call(folder) -> None:
    describer = PixelDescriber()
    chart = [folder["chart"]]
    cases = [
        (dict(on_error="ignore"), ValueError, "on_error must be one of"),
        (dict(ids=["a", "b"]), ValueError, "1 images but 2 ids"),
        (dict(ids="a"), TypeError, "ids must be a list"),
        (dict(ids=[3]), TypeError, r"ids\[0\] must be a non-empty str"),
        (dict(metadatas=[{}, {}]), ValueError, "1 images but 2 metadatas"),
        (dict(metadatas=["x"]), TypeError, r"metadatas\[0\] must be a mapping"),
        (dict(prompt=" "), TypeError, "prompt must be a non-empty str"),
        (dict(timeout=0), ValueError, "timeout must be > 0"),
        (dict(describer_name=""), TypeError, "describer_name must be"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            describe_images(chart, describer, **kwargs)
    with pytest.raises(ValueError, match=r"ids\[1\] = 'a' repeats ids\[0\]"):
        describe_images([folder["chart"], folder["photo"]], describer, ids=["a", "a"])
    with pytest.raises(TypeError, match="single str; wrap it in a list"):
        describe_images(str(folder["chart"]), describer)
    with pytest.raises(TypeError, match="ChatModelDescriber"):
        describe_images(chart, "gpt-4o")
    with pytest.raises(TypeError, match="an image must be a file path"):
        describe_images([42], describer)
    with pytest.raises(TypeError, match="on_eror"):  # the report takes the same options
        describe_images_report(chart, describer, on_eror="raise")
    assert describer.calls == []


def test_a_given_id_cannot_take_another_images_default_id(folder) -> None:
    chart_id = image_id(load_image(folder["chart"]))
    with pytest.raises(ValueError, match="already the id of images"):
        describe_images([folder["chart"], folder["photo"]], PixelDescriber(),
                        ids=[None, chart_id])


def test_names_progress_and_doctests(folder) -> None:
    class Unnamed:
        def __call__(self, image: LoadedImage, prompt: str) -> str:
            return "x"

    def my_vlm(image: LoadedImage, prompt: str) -> str:
        return "x"

    assert describer_name(PixelDescriber()) == "pixel-vlm"
    assert describer_name(my_vlm) == "my_vlm" and describer_name(Unnamed()) == "Unnamed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tqdm may be missing: a warning, not a failure
        docs = describe_images(list(folder.values()), PixelDescriber(), show_progress=True)
    assert len(docs) == 3
    for module in (describe_module, cache_module):
        assert doctest.testmod(module).failed == 0
