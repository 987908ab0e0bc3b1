"""`describe_images(..., max_workers=N)`: overlapping describer calls, the same result.

The describer here sleeps a pseudo-random time per image (seeded by the image's hash, so
every run sleeps the same), fails on some images, answers blank on others and outlasts
its timeout on one; a test fails if any worker count changes the documents, the skipped
list, the warnings or the cache, or if the calls did not actually overlap.
"""

from __future__ import annotations

import contextvars
import hashlib
import random
import threading
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("PIL.Image")

from image_series import varied_image

from hybrid_retrievers.images import (
    DEFAULT_DESCRIPTION_PROMPT,
    DescriptionCache,
    DescriptionError,
    ImageError,
    LoadedImage,
    describe_images,
    describe_images_report,
)

N = 14


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """``N`` distinct small PNG files."""
    folder = tmp_path_factory.mktemp("pictures")
    paths = []
    for i in range(N):
        paths.append(folder / f"picture_{i:02d}.png")
        picture = varied_image(i, size=(48, 36))
        picture.putpixel((0, 0), (i, i, i))  # the series repeats its flow diagrams
        picture.save(paths[-1])
    return paths


class Sleepy:
    """Sleeps 0-30 ms (seeded by the image), then describes it by its size and hash;
    raises for the names in ``fails`` (after ``fail_after_s``), answers blank for
    ``blank``, sleeps ``slow_s`` for ``slow`` (then raises if it is in ``fails``). Records its calls and the most calls it saw
    in flight at once (a ``slow`` call is not counted: it outlasts its timeout and runs
    on, abandoned, beside the next calls)."""

    name = "sleepy-vlm"

    def __init__(self, fails=(), blank=(), slow=(), slow_s: float = 0.0,
                 fail_after_s: float = 0.0) -> None:
        self.fails, self.blank, self.slow = set(fails), set(blank), set(slow)
        self.slow_s, self.fail_after_s = slow_s, fail_after_s
        self.calls: list[str] = []
        self.in_flight = self.most_in_flight = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, image: LoadedImage, prompt: str) -> str:
        with self._lock:
            self.calls.append(image.name)
            self.threads.add(threading.current_thread().name)
        if image.name in self.slow:
            time.sleep(self.slow_s)
            if image.name in self.fails:
                raise ConnectionError(f"the vision API refused {image.name}, slowly")
            return "too late"
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(random.Random(image.sha256).uniform(0.0, 0.03))
            if image.name in self.fails:
                time.sleep(self.fail_after_s)
                raise ConnectionError(f"the vision API refused {image.name}")
            if image.name in self.blank:
                return "  "
            return f"A {image.size[0]}x{image.size[1]} picture, {image.sha256[:8]}."
        finally:
            with self._lock:
                self.in_flight -= 1


def _run(sources, describer, *, max_workers, **options):
    """(the report, the warnings (message, file), the cache's descriptions by image hash)."""
    cache = DescriptionCache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = describe_images_report(sources, describer, cache=cache,
                                        max_workers=max_workers, **options)
    warned = [(str(w.message), w.filename) for w in caught]
    hashes = {hashlib.sha256(Path(s).read_bytes()).hexdigest() for s in sources}
    cached = {sha: cache.get(describer.name, DEFAULT_DESCRIPTION_PROMPT, sha) for sha in hashes}
    assert len(cache) == sum(text is not None for text in cached.values())
    return report, warned, cached


@pytest.mark.parametrize("on_error", ["skip", "caption"])
def test_any_number_of_workers_gives_the_same_result(pictures, tmp_path, on_error) -> None:
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("meeting notes, not a picture")
    # Copies, a bad file, a given id, captions on a failing and a blank image.
    sources = [*pictures[:7], pictures[3], not_an_image, *pictures[7:], pictures[0]]
    ids = [None] * len(sources)
    ids[9] = "given-id"
    metadatas = [None] * len(sources)
    metadatas[2] = {"caption": "a caption for picture 2"}
    metadatas[5] = {"alt": "alt text of picture 5"}
    names = [p.name for p in pictures]
    results = []
    for workers in (1, 4, 8):
        # The timeout is far above a normal call (<= 0.03 s) even on a loaded machine, so
        # only the slow image times out (at 0.2 s a normal call timed out under load, and
        # its abandoned thread overlapped the next call).
        describer = Sleepy(fails=[names[2], names[11]], blank=[names[5]], slow=[names[8]],
                           slow_s=3.0)
        results.append((workers, describer, _run(
            sources, describer, max_workers=workers, ids=ids, metadatas=metadatas,
            on_error=on_error, timeout=1.5)))
    (_, one, (report, warned, cached)), *others = results
    # The reference run itself is right: every distinct image asked once, in order; the
    # copies, the bad file, the failed, blank and timed-out images skipped (or captioned).
    assert one.calls == names and one.most_in_flight == 1
    failed = {2, 5, 10, 13} if on_error == "skip" else {10, 13}
    assert {s.index for s in report.skipped} == {7, 8, 16} | failed
    assert len(report.docs) == len(sources) - len(report.skipped)
    given = next(d for d in report.docs if d.id == "given-id")
    assert given.metadata["image"] == str(pictures[7])
    assert sum(text is not None for text in cached.values()) == N - 4
    assert len(warned) == len(report.skipped) - 2 + (on_error == "caption") * 2
    assert all(filename == __file__ for _, filename in warned)
    for workers, describer, (other, other_warned, other_cached) in others:
        assert other.docs == report.docs, workers
        assert other.skipped == report.skipped, workers
        assert other_warned == warned, workers
        assert other_cached == cached, workers
        assert sorted(describer.calls) == sorted(one.calls), workers  # each image once
        assert 2 <= describer.most_in_flight <= workers, workers  # the calls overlapped


def test_on_error_raise_raises_the_first_failure_in_input_order(pictures, tmp_path) -> None:
    names = [p.name for p in pictures]
    # picture 3 fails late; picture 6 fails at once (and so first in time).
    describer = Sleepy(fails=[names[3], names[6]], slow=[names[3]], slow_s=0.15)
    cache = DescriptionCache()
    with pytest.raises(DescriptionError, match=names[3]) as caught:
        describe_images(pictures, describer, cache=cache, on_error="raise", max_workers=4)
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert names[3] in str(caught.value.__cause__)
    # The images before it were described and stay in the cache (later ones may be too).
    for path in pictures[:3]:
        sha = describe_images([path], Sleepy(), cache=cache, describer_name="sleepy-vlm")
        assert sha[0].metadata["description_source"] == "cache"
    # A bad file raises only after the images before it: here a failing one comes first.
    bad = tmp_path / "notes.png"
    bad.write_text("not a picture")
    with pytest.raises(DescriptionError, match=names[6]):
        describe_images([pictures[6], bad], Sleepy(fails=[names[6]], fail_after_s=0.1),
                        on_error="raise", max_workers=2)
    with pytest.raises(ImageError, match="notes.png"):
        describe_images([pictures[0], bad, pictures[1]], Sleepy(), on_error="raise",
                        max_workers=2)


def test_a_hung_call_holds_up_neither_the_others_nor_the_build(pictures) -> None:
    release = threading.Event()

    class Hangs(Sleepy):
        def __call__(self, image: LoadedImage, prompt: str) -> str:
            if image.name == pictures[1].name:
                release.wait(30)
            return super().__call__(image, prompt)

    describer = Hangs()
    start = time.perf_counter()
    try:
        with pytest.warns(UserWarning, match=f"{pictures[1].name}.*no answer within 2 s"):
            docs = describe_images(pictures[:8], describer, timeout=2.0, max_workers=4)
        elapsed = time.perf_counter() - start
    finally:
        release.set()
    assert len(docs) == 7 and pictures[1].name not in {Path(d.metadata["image"]).name
                                                       for d in docs}
    # One timeout, not one per image behind it: waiting twice would take >= 4 s; the 7
    # other calls sleep <= 0.03 s each, so the margin holds on a loaded machine too.
    assert elapsed < 2 * 2.0, elapsed


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_the_calls_run_in_the_callers_context(pictures, timeout) -> None:
    request = contextvars.ContextVar("request", default="none")
    seen: list[tuple[str, str]] = []

    def describer(image: LoadedImage, prompt: str) -> str:
        time.sleep(0.01)
        seen.append((request.get(), threading.current_thread().name))
        return "a picture"

    token = request.set("caller's request")
    try:
        describe_images(pictures[:6], describer, max_workers=3, timeout=timeout)
    finally:
        request.reset(token)
    assert [value for value, _ in seen] == ["caller's request"] * 6
    assert threading.current_thread().name not in {thread for _, thread in seen}


def test_max_workers_is_checked_before_any_call(pictures) -> None:
    describer = Sleepy()
    for value, error, match in ((0, ValueError, "max_workers must be >= 1, got 0"),
                                (-2, ValueError, "max_workers must be >= 1"),
                                (1.5, TypeError, "max_workers"),
                                (True, TypeError, "max_workers"),
                                ("4", TypeError, "max_workers")):
        with pytest.raises(error, match=match):
            describe_images(pictures[:2], describer, max_workers=value)
    assert describer.calls == []
