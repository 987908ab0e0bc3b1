"""Image descriptions for text search: the description route of multimodal retrieval.

A vision model (a *describer*) writes a sentence or two about each image; the sentence
becomes a document (``type="image"``) that BM25, dense and sparse retrieval rank like any
text, so "how do the services connect?" can find the architecture diagram by what its
description says. A describer is any callable ``(image: LoadedImage, prompt: str) -> str``
(the `Describer` protocol); the framework adapters wrap a LangChain chat model
(``langchain_hybrid_retrievers.ChatModelDescriber``) or a LlamaIndex multimodal LLM
(``llama_index_hybrid_retrievers.MultiModalLLMDescriber``) into one.

What `describe_images` guarantees:

* **Each distinct image is described once**: images are identified by the SHA-256 of
  their bytes, so copies of one image cost one call, and with a `DescriptionCache`
  (keyed by describer name, prompt and that hash) re-indexing never calls the model for
  an image it described before.
* **A model call is bounded**: each call waits at most ``timeout`` seconds
  (`hybrid_retrievers.timeout.call_with_timeout`, as HyDE and the LLM reranker do: the
  call runs in a daemon thread, so a hung model neither blocks the build nor keeps the
  process alive).
* **A failure loses only that image** (``on_error="skip"``, the default): a describer
  that raises, times out or answers blank text, and an image file that cannot be read
  (`ImageError`: missing, not an image, truncated, too large), skip that image with a
  warning naming the file and the reason; every other image is kept (and so are the
  text documents a caller indexes beside them). ``on_error="caption"`` uses the image's
  caption from its metadata instead (keys `CAPTION_KEYS`), and ``on_error="raise"``
  stops with an error naming the file (descriptions made before stay in the cache).
* **Calls can overlap** (``max_workers``): a vision model behind an API takes seconds per
  image and serves several requests at once, so up to ``max_workers`` distinct images are
  described at the same time (each call still bounded by ``timeout``, each in a copy of
  the caller's ``contextvars`` context, so LangChain/LlamaIndex callbacks nest under the
  caller's run). The documents, ids, skipped images, warnings and cache entries are the
  same for every ``max_workers``: images are read and reported in input order, only the
  model calls overlap (with ``on_error="raise"``, the first failure in input order
  raises; descriptions already made by then stay in the cache).

`describe_images` returns the documents; `describe_images_report` returns them with the
list of skipped images and why (a `DescriptionReport`), for callers that report a build
(the CLI). Two functions rather than a flag that changes the return type.
"""

from __future__ import annotations

import contextvars
import inspect
import os
import warnings
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..progress import progress
from ..timeout import DEFAULT_LLM_TIMEOUT, call_with_timeout, check_timeout
from ..types import Doc
from ..validation import check_number
from .description_cache import DescriptionCache
from .loading import (
    CAPTION_KEYS,
    DEFAULT_MAX_PIXELS,
    ImageError,
    ImageInput,
    LoadedImage,
    check_image_list,
    image_caption,
    image_id,
    image_metadata,
    load_image,
    per_image,
)

__all__ = [
    "DEFAULT_DESCRIPTION_PROMPT",
    "DescriptionError",
    "DescriptionReport",
    "Describer",
    "SkippedImage",
    "describe_image",
    "describe_images",
    "describe_images_report",
    "describer_name",
]

DEFAULT_DESCRIPTION_PROMPT = (
    "Describe this image in one or two sentences for a search index. Start by saying what "
    "kind of image it is (a diagram, chart, table, screenshot, photo, drawing...), then "
    "what it shows: its subject, the labels or text it contains, and what it explains."
)
"""The prompt a describer gets by default: short, factual, and naming the kind of image,
so that a query's visual words ("diagram", "chart", "photo") match the description."""

_ON_ERROR = ("skip", "caption", "raise")


@runtime_checkable
class Describer(Protocol):
    """Describes an image for search: ``describer(image, prompt) -> str``.

    Any callable of this shape works; its name (`describer_name`) is recorded in each
    document's metadata and keys the `DescriptionCache`.
    """

    def __call__(self, image: LoadedImage, prompt: str) -> str: ...


class DescriptionError(RuntimeError):
    """A describer gave no usable description (it raised, timed out or answered blank
    text); the message names the image and the reason, the cause is chained."""


@dataclass(frozen=True)
class SkippedImage:
    """An image that got no document, and why.

    Attributes:
        index: its position in the ``images`` argument.
        source: its file path (or ``"<bytes>"``, ``"<PIL image>"``...).
        reason: why it was skipped (the error, or that it repeats an earlier image).
    """

    index: int
    source: str
    reason: str


@dataclass(frozen=True)
class DescriptionReport:
    """What `describe_images_report` made: the documents, and the images left out."""

    docs: list[Doc]
    skipped: list[SkippedImage]


def describer_name(describer: Any) -> str:
    """The describer's name for provenance and the cache key: its ``name`` attribute
    (a non-empty str), else its ``__name__``, else its class name.

    Example:
        >>> def my_vlm(image, prompt):
        ...     return "a chart"
        >>> describer_name(my_vlm)
        'my_vlm'
    """
    name = getattr(describer, "name", None)
    if isinstance(name, str) and name.strip():
        return name
    name = getattr(describer, "__name__", None)
    if isinstance(name, str) and name.strip():
        return name
    return type(describer).__name__


def describe_image(
    image: ImageInput,
    describer: Describer,
    *,
    prompt: str = DEFAULT_DESCRIPTION_PROMPT,
    timeout: float | None = DEFAULT_LLM_TIMEOUT,
    cache: DescriptionCache | None = None,
    describer_name: str | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> str:
    """The description of one image (e.g. a query image), from ``cache`` when it has it.

    Raises:
        ImageError: the image cannot be read.
        DescriptionError: the describer raised, timed out or answered blank text.

    Example:
        >>> from PIL import Image
        >>> describe_image(Image.new("RGB", (4, 4)), lambda image, prompt: " A black square. ")
        'A black square.'
    """
    name, prompt, timeout = _check_call(describer, describer_name, prompt, timeout, cache)
    loaded = load_image(image, max_pixels=max_pixels)
    text, _, error = (_from_cache(cache, name, prompt, loaded.sha256)
                      or _ask(describer, name, loaded, prompt, timeout, cache))
    if error is not None:
        raise DescriptionError(f"{_where(loaded.source)}: {name} gave no description "
                               f"({_reason(error)})") from error
    return text  # type: ignore[return-value]


def describe_images(
    images: Iterable[ImageInput],
    describer: Describer,
    *,
    ids: Sequence[str | None] | None = None,
    metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    cache: DescriptionCache | None = None,
    prompt: str = DEFAULT_DESCRIPTION_PROMPT,
    timeout: float | None = DEFAULT_LLM_TIMEOUT,
    on_error: str = "skip",
    describer_name: str | None = None,
    max_workers: int = 1,
    show_progress: bool = False,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> list[Doc]:
    """One document per image whose description the describer (or the cache) gave.

    Each document has ``id`` = ``ids[i]`` or `image_id` (``"image-"`` + 16 hex digits of
    the image's SHA-256, the id the CLIP route gives the same image), ``text`` = the
    description (stripped), and ``metadata`` = `image_metadata` (``type="image"``, the
    image path, hash, format and size) with ``metadatas[i]`` merged in, plus
    ``describer`` (its name) and ``description_source`` (``"describer"``, ``"cache"`` or
    ``"caption"``; with a caption, ``description_error`` says why the describer failed).

    Args:
        images: paths, bytes, data URIs, PIL images or `LoadedImage` s.
        describer: a `Describer`: ``(LoadedImage, prompt) -> str``.
        ids: one id (or ``None``: the default id) per image.
        metadatas: one mapping (or ``None``) per image, merged into its metadata.
        cache: reuse and record descriptions here (a `DescriptionCache`).
        prompt: what the describer is asked (`DEFAULT_DESCRIPTION_PROMPT`).
        timeout: seconds to wait for each call, from its start (``None``: no limit).
        on_error: ``"skip"``, ``"caption"`` or ``"raise"`` (see the module doc). An
            unreadable image file is skipped under ``"caption"`` too: it has no content
            hash for its id and nothing the CLIP route could embed.
        describer_name: the name recorded and cached under (default `describer_name`).
        max_workers: describer calls in flight at once, at most (1: one after another).
            More for a model behind an API: with a describer taking 0.2 s, 40 images
            take 8.1 s with 1 worker, 2.0 s with 4 and 1.0 s with 8 (2 CPU cores;
            ``benchmarks/image_indexing.py``). The result is the same for any value.
        show_progress: a progress bar over the images (the ``progress`` extra).
        max_pixels: the bounded-decode limit of `load_image`.

    Images with the same content and no given id make one document (the first); the
    others are reported as skipped, without a warning. Images with given ids each get a
    document, their description asked once.

    Raises:
        TypeError / ValueError: bad arguments (checked before any model call), or a
            given id that another image already took.
        ImageError / DescriptionError: with ``on_error="raise"``, the first failure.

    Example:
        >>> from PIL import Image
        >>> def red_squares(image, prompt):
        ...     return f"A photo of a {image.size[0]}x{image.size[1]} red square."
        >>> doc, = describe_images([Image.new("RGB", (8, 8), "red")], red_squares)
        >>> doc.id.startswith("image-"), doc.text
        (True, 'A photo of a 8x8 red square.')
        >>> doc.metadata["type"], doc.metadata["describer"], doc.metadata["description_source"]
        ('image', 'red_squares', 'describer')
    """
    return _describe_all(images, describer, ids, metadatas, cache, prompt, timeout, on_error,
                         describer_name, max_workers, show_progress, max_pixels).docs


def describe_images_report(
    images: Iterable[ImageInput], describer: Describer, **options: Any
) -> DescriptionReport:
    """`describe_images` (the same arguments), also returning the images that got no
    document and why.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():  # the skip is also a warning
        ...     warnings.simplefilter("ignore")
        ...     report = describe_images_report([b"not an image"], lambda image, prompt: "x")
        >>> report.docs, report.skipped[0].reason
        ([], '<bytes>: not an image Pillow can identify (supported: PNG, JPEG, GIF, WEBP)')
    """
    # One signature (describe_images'): an unknown or misspelt option is a TypeError.
    call = inspect.signature(describe_images).bind(images, describer, **options)
    call.apply_defaults()
    return _describe_all(**call.arguments)


def _describe_all(
    images: Any, describer: Any, ids: Any, metadatas: Any, cache: Any, prompt: Any,
    timeout: Any, on_error: Any, describer_name: Any, max_workers: Any, show_progress: Any,
    max_pixels: Any,
) -> DescriptionReport:
    """Read the images in order, ask for their descriptions (overlapping up to
    ``max_workers`` calls), and report each image in input order once its call is done."""
    name, prompt, timeout = _check_call(describer, describer_name, prompt, timeout, cache)
    sources = check_image_list(images)
    given = _check_ids(ids, len(sources))
    metas = _check_metadatas(metadatas, len(sources))
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(map(repr, _ON_ERROR))}, got "
                         f"{on_error!r}")
    workers = check_number(max_workers, "max_workers", low=1, integer=True)
    calls = _DescriptionCalls(describer, name, prompt, timeout, cache, workers)
    report = _Report(name, on_error)
    waiting: deque[_Image] = deque()  # read, not yet reported (their calls may be running)
    bar = progress(total=len(sources), show=show_progress, desc="describing images",
                   unit="image")
    try:
        for i, source in enumerate(sources):
            image = _read(i, source, given[i], metas[i], max_pixels, calls)
            waiting.append(image)
            while waiting and waiting[0].ready:
                report.add(waiting.popleft())
                bar.update(1)
            if image.error is not None and on_error == "raise":
                break  # it raises once the images before it are reported; read no further
        while waiting:
            report.add(waiting.popleft())
            bar.update(1)
    finally:
        calls.close()  # after a raise: queued calls are cancelled, running ones abandoned
        bar.close()
    return DescriptionReport(report.docs, report.skipped)


# ---------------------------------------------------------------------- reading


_Outcome = tuple[str | None, str, BaseException | None]
"""(description, ``"cache"`` or ``"describer"``, None), or (None, ..., the failure)."""


@dataclass
class _Image:
    """One input image between reading and the report: what the report needs of it (not
    its pixels) and its description's call."""

    index: int
    source: str
    given_id: str | None
    error: ImageError | None = None
    doc_id: str = ""
    sha256: str = ""
    metadata: dict[str, Any] | None = None
    description: Future[_Outcome] | None = None

    @property
    def ready(self) -> bool:
        """Whether the report can take it without waiting."""
        return self.description is None or self.description.done()


def _read(i: int, source: Any, given_id: str | None, meta: Mapping[str, Any] | None,
          max_pixels: int, calls: _DescriptionCalls) -> _Image:
    """Image ``i`` loaded and its description asked for (or the `ImageError`)."""
    try:
        loaded = load_image(source, max_pixels=max_pixels)
    except ImageError as exc:
        return _Image(i, _source_label(source), given_id, error=exc)
    return _Image(i, loaded.source, given_id, doc_id=given_id or image_id(loaded),
                  sha256=loaded.sha256, metadata=image_metadata(loaded, meta),
                  description=calls.ask(loaded))


# ---------------------------------------------------------------------- the calls


class _DescriptionCalls:
    """The describer's calls: one per distinct image (by content hash), answered by the
    cache when it can, at most ``max_workers`` at once on a pool of that many threads
    (none for 1: each call is made when asked, in the caller's thread).

    Each pooled call runs in a copy of the asking thread's `contextvars` context, as
    `hybrid_retrievers.fusion.concurrency.CallRunner` does, so a LangChain chat model's
    run nests under the caller's. `ask` waits while ``2 * max_workers`` calls are
    unfinished: the workers always have the next image ready, and no more decoded images
    than that wait in memory. A call that hangs holds its worker only until ``timeout``
    (`call_with_timeout` leaves it in a daemon thread), so it blocks neither the others
    nor the end of the build.
    """

    def __init__(self, describer: Any, name: str, prompt: str, timeout: float | None,
                 cache: DescriptionCache | None, max_workers: int) -> None:
        self._call = (describer, name, prompt, timeout, cache)
        self._asked: dict[str, Future[_Outcome]] = {}  # by image SHA-256
        self._unfinished: set[Future[_Outcome]] = set()
        self._most_unfinished = 2 * max_workers
        self._pool = None if max_workers == 1 else ThreadPoolExecutor(
            max_workers, thread_name_prefix="describe_images")

    def ask(self, image: LoadedImage) -> Future[_Outcome]:
        """The future outcome of ``image``'s description (the same one for its copies)."""
        future = self._asked.get(image.sha256)
        if future is None:
            future = self._asked[image.sha256] = self._start(image)
        return future

    def _start(self, image: LoadedImage) -> Future[_Outcome]:
        describer, name, prompt, timeout, cache = self._call
        cached = _from_cache(cache, name, prompt, image.sha256)
        if cached is not None:
            return _finished(cached)
        if self._pool is None:  # one worker: the call is made now, in this thread
            return _finished(_ask(describer, name, image, prompt, timeout, cache))
        self._unfinished = {f for f in self._unfinished if not f.done()}
        if len(self._unfinished) >= self._most_unfinished:
            _, self._unfinished = wait(self._unfinished, return_when=FIRST_COMPLETED)
        future = self._pool.submit(contextvars.copy_context().run, _ask, describer, name,
                                   image, prompt, timeout, cache)
        self._unfinished.add(future)
        return future

    def close(self) -> None:
        """Cancel the calls not started; do not wait for running ones (each ends by its
        timeout; their descriptions still reach the cache)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _finished(outcome: _Outcome) -> Future[_Outcome]:
    future: Future[_Outcome] = Future()
    future.set_result(outcome)
    return future


def _from_cache(cache: DescriptionCache | None, name: str, prompt: str,
                sha256: str) -> _Outcome | None:
    """The cached outcome, or None (counted as a hit or a miss)."""
    if cache is None:
        return None
    cached = cache.get(name, prompt, sha256, count=True)
    return None if cached is None else (cached, "cache", None)


def _ask(describer: Any, name: str, image: LoadedImage, prompt: str, timeout: float | None,
         cache: DescriptionCache | None) -> _Outcome:
    """One model call, bounded by ``timeout``; its failure is returned, never raised."""
    try:
        answer = call_with_timeout(describer, image, prompt, timeout=timeout)
    except Exception as exc:  # any failure of the model is this image's failure
        return None, "describer", exc
    if not isinstance(answer, str):
        return None, "describer", TypeError(
            f"the describer returned a {type(answer).__name__}, not a str")
    text = answer.strip()
    if not text:
        return None, "describer", ValueError("the describer returned blank text")
    if cache is not None:
        cache.put(name, prompt, image.sha256, text)
    return text, "describer", None


# ---------------------------------------------------------------------- the report


class _Report:
    """The documents and skipped images, built from the images in input order."""

    def __init__(self, name: str, on_error: str) -> None:
        self.name, self.on_error = name, on_error
        self.docs: list[Doc] = []
        self.skipped: list[SkippedImage] = []
        self._taken: dict[str, tuple[int, str]] = {}  # id -> (position, sha256) of its doc

    def add(self, image: _Image) -> None:
        """Add ``image``'s document, or skip it, or raise (waits for its description);
        a skip or a caption is also a warning, pointing at the caller's line.

        Raises:
            ValueError: its id is another image's.
            ImageError / DescriptionError: with ``on_error="raise"``, its failure.
        """
        warning = self._take(image)
        if warning is not None:  # add <- _describe_all <- describe_images <- the caller
            warnings.warn("describe_images: " + warning, UserWarning, stacklevel=4)

    def _take(self, image: _Image) -> str | None:
        """`add`, returning the warning to give."""
        i, where = image.index, _where(image.source)
        if image.error is not None:
            if self.on_error == "raise":
                raise image.error
            return self._skip(image, str(image.error))
        if image.doc_id in self._taken:
            first, sha = self._taken[image.doc_id]
            if image.given_id is None and sha == image.sha256:
                return self._skip(image, f"the same image as images[{first}]", warn=False)
            raise ValueError(f"images[{i}] ({where}) would get the id {image.doc_id!r}, "
                             f"already the id of images[{first}]; pass distinct ids")
        assert image.description is not None and image.metadata is not None
        text, origin, error = image.description.result()
        metadata, warning = image.metadata, None
        if error is not None:
            reason = f"{self.name} gave no description ({_reason(error)})"
            if self.on_error == "raise":
                raise DescriptionError(f"{where}: {reason}") from error
            text = image_caption(metadata) if self.on_error == "caption" else None
            if text is None:
                return self._skip(image, reason + (
                    "; no caption in its metadata" if self.on_error == "caption" else ""))
            origin = "caption"
            metadata["description_error"] = _reason(error)
            warning = f"images[{i}] {where}: {reason}; using its caption"
        metadata["describer"] = self.name
        metadata["description_source"] = origin
        self.docs.append(Doc(image.doc_id, text, metadata))  # type: ignore[arg-type]
        self._taken[image.doc_id] = (i, image.sha256)
        return warning

    def _skip(self, image: _Image, reason: str, warn: bool = True) -> str | None:
        self.skipped.append(SkippedImage(image.index, image.source, reason))
        return f"skipped images[{image.index}] {_where(image.source)}: {reason}" if warn else None


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _where(source: str) -> str:
    return source if source.startswith("<") else repr(source)


# ---------------------------------------------------------------------- arguments


def _check_call(
    describer: Any, given_name: Any, prompt: Any, timeout: Any, cache: Any
) -> tuple[str, str, float | None]:
    """(the describer's name, the prompt, the timeout), checked."""
    if not callable(describer):
        raise TypeError(
            "describer must be a callable (image: LoadedImage, prompt: str) -> str; wrap a "
            "LangChain chat model in langchain_hybrid_retrievers.ChatModelDescriber or a "
            "LlamaIndex LLM in llama_index_hybrid_retrievers.MultiModalLLMDescriber; got "
            f"{type(describer).__name__}"
        )
    if given_name is not None and (not isinstance(given_name, str) or not given_name.strip()):
        raise TypeError(f"describer_name must be a non-empty str or None, got {given_name!r:.80}")
    name = given_name if given_name is not None else describer_name(describer)
    if not isinstance(prompt, str) or not prompt.strip():
        raise TypeError(f"prompt must be a non-empty str, got {prompt!r:.80}")
    if cache is not None:
        if not isinstance(cache, DescriptionCache):
            raise TypeError(f"cache must be a DescriptionCache or None, got "
                            f"{type(cache).__name__}")
        if name == "<lambda>":
            raise ValueError(
                "cannot cache the descriptions of a lambda: every lambda is named '<lambda>', "
                "so two different describers would share cached descriptions; pass "
                "describer_name='...' (the model's name) or drop the cache"
            )
    return name, prompt, check_timeout(timeout)


def _check_ids(ids: Any, n: int) -> list[str | None]:
    given = per_image(ids, n, "ids", "str (None for the default id)")
    seen: dict[str, int] = {}
    for i, doc_id in enumerate(given):
        if doc_id is None:
            continue
        if not isinstance(doc_id, str) or not doc_id:
            raise TypeError(f"ids[{i}] must be a non-empty str or None, got {doc_id!r:.80}")
        if doc_id in seen:
            raise ValueError(f"ids[{i}] = {doc_id!r} repeats ids[{seen[doc_id]}]; ids must "
                             "be unique")
        seen[doc_id] = i
    return given


def _check_metadatas(metadatas: Any, n: int) -> list[Mapping[str, Any] | None]:
    metas = per_image(metadatas, n, "metadatas", "mappings (or None)")
    for i, m in enumerate(metas):
        if m is not None and not isinstance(m, Mapping):
            raise TypeError(f"metadatas[{i}] must be a mapping or None, got {type(m).__name__}")
    return metas


def _source_label(source: Any) -> str:
    """How to name an image that could not be loaded."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<bytes>"
    if isinstance(source, str) and source.startswith("data:"):
        return "<data URI>"
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)  # type: ignore[return-value]
    return "<PIL image>"
