"""Image loading and validation: one checked, decoded RGB image from whatever a user holds.

Every route that takes an image (descriptions by a vision model, CLIP vectors, a query
image) goes through `load_image`, so every route refuses the same bad input the same way,
with an `ImageError` that names the file (or the argument) and the problem:

* **Sources**: a file path (``str`` or ``os.PathLike``), the file's ``bytes``, a
  ``data:image/...;base64,`` URI, a ``PIL.Image.Image`` or an already `LoadedImage`.
  A path must name a regular file (a FIFO, a device such as ``/dev/zero``, a socket or
  a directory is refused from its ``stat``, never read), and encoded data above
  ``max_bytes`` (`DEFAULT_MAX_BYTES`, 256 MiB) is refused before it is read or decoded.
* **Formats**: PNG, JPEG, GIF and WebP (`SUPPORTED_FORMATS`); anything else, a file that
  is not an image, or one whose data is truncated or corrupt is refused. Pillow's
  ``LOAD_TRUNCATED_IMAGES`` is never switched on: a truncated file is an error, not a
  half-grey picture silently indexed. A JPEG cut short but closed with an EOI marker
  (which libjpeg decodes with only a warning, the rest grey) is refused too: from its
  markers, before decoding, when its scan data is too small for its frame or a
  progressive scan is missing (`hybrid_retrievers.images.jpeg_scans`); otherwise by
  decoding it again with filler after each scan's data, which changes the picture only
  if a scan was short (always for a progressive JPEG; for a baseline one when its
  bottom-right corner is flat, as a block decoded without data is). A baseline JPEG cut
  inside its last few blocks, after their DC values, can still pass.
* **Bounded decode**: the pixel count is read from the header before anything is decoded,
  and ``max_pixels`` (`DEFAULT_MAX_PIXELS`) is the one limit: Pillow's own
  decompression-bomb check (``PIL.Image.MAX_IMAGE_PIXELS``) is not run on the files
  opened here, so a ``max_pixels`` above it is honoured (Pillow's check still applies
  inside a GIF whose frame is larger than its screen). Above ``max_pixels``, a JPEG is
  decoded at a reduced scale (1/2, 1/4 or 1/8: libjpeg's DCT scaling, Pillow's
  ``draft``), so a 20000x20000 photo costs 1/64 of its full size; any other format is
  refused before decoding, so a decompression bomb never allocates its pixels.
* **Modes**: the result is always 8-bit RGB, what every image model expects. CMYK,
  YCbCr and greyscale are converted; 16-bit greyscale is scaled to 8 bits (the top byte,
  not a clip that would turn most of the image white); transparency (RGBA, LA, a
  palette with a transparent index) is composited on white, so a transparent
  background becomes white rather than the arbitrary colour stored under alpha 0.
  Animated GIF/WebP: the first frame.
* **Memory**: at most about two full-size images at once (Pillow keeps RGB and RGBA at 4
  bytes a pixel): the decoded one and the RGB result; 16-bit greyscale is converted in
  strips. A 7000x7000 (49-megapixel) PNG peaks at about 240 MB of RSS as RGB, 390 MB
  as 16-bit greyscale and 420 MB as RGBA (measured; the interpreter's ~50 MB included).
  A progressive JPEG is decoded twice for its scan check (below the two-image bound).

The content hash (`LoadedImage.sha256`, of the file's bytes) is what identifies an image
across routes and runs: `image_id` makes the default document id from it, and the
description cache keys on it.

Pillow is imported when an image is loaded, never when this module is imported.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import stat
import struct
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..optional import require
from ..validation import check_number
from .jpeg_scans import jpeg_scans, padded_scans, scan_problem

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "CAPTION_KEYS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "IMAGE_SUFFIXES",
    "SUPPORTED_FORMATS",
    "ImageError",
    "ImageInput",
    "LoadedImage",
    "check_image_list",
    "find_image_files",
    "image_caption",
    "image_id",
    "image_id_of_hash",
    "image_metadata",
    "load_image",
    "load_images",
    "per_image",
]

SUPPORTED_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
"""The image formats `load_image` decodes (Pillow's format names)."""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""File suffixes `find_image_files` picks up (case-insensitive)."""

CAPTION_KEYS = ("caption", "alt", "alt_text", "title")
"""Metadata keys an image's caption is read from, in this order (`image_caption`): the
CLIP route's document text and the description route's ``on_error="caption"`` fallback."""

DEFAULT_MAX_PIXELS = 50_000_000
"""Pixels decoded at most per image (50 megapixels: 200 MB as RGB in Pillow, about 420 MB
of peak memory for an RGBA image); see the module doc."""

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Encoded bytes read at most per image (256 MiB): more than any 8-bit image under
`DEFAULT_MAX_PIXELS` needs even uncompressed; see the module doc."""

_MIME_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
               "WEBP": "image/webp"}
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
_SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})
_CONVERTIBLE_MODES = frozenset({"RGB", "L", "1", "CMYK", "YCbCr", "LAB", "HSV", "RGBX"})
_STRIP_PIXELS = 1 << 20  # pixels converted or compared at a time (2 MB at 16 bits)
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))


class ImageError(ValueError):
    """An image that cannot be used: missing, unreadable, not an image, truncated,
    too large, or of an unsupported format or mode. The message names the file."""


@dataclass(frozen=True)
class LoadedImage:
    """A checked image: its decoded 8-bit RGB pixels, its bytes, and where it came from.

    Attributes:
        image: the decoded image, mode ``"RGB"``.
        sha256: hex SHA-256 of ``data``: the image's identity across routes and runs.
        source: the file path, or ``"<bytes>"``, ``"<data URI>"``, ``"<PIL image>"``.
        format: Pillow's format name (``"PNG"``, ``"JPEG"``...).
        size: ``(width, height)`` as stored in the file (before any reduced decode).
        data: the encoded file (PNG-encoded pixels for a PIL input): what a vision model
            receives.
        name: the file name, or ``source`` when there is no file.

    Example:
        >>> from PIL import Image
        >>> loaded = load_image(Image.new("RGBA", (4, 3), (255, 0, 0, 0)))
        >>> loaded.image.mode, loaded.size, loaded.mime_type
        ('RGB', (4, 3), 'image/png')
        >>> loaded.image.getpixel((0, 0))  # transparent pixels become white
        (255, 255, 255)
    """

    image: PILImage = field(repr=False)
    sha256: str
    source: str
    format: str
    size: tuple[int, int]
    data: bytes = field(repr=False)
    name: str

    @property
    def mime_type(self) -> str:
        """The MIME type of ``data`` (``"image/png"``...)."""
        return _MIME_TYPES[self.format]

    def data_uri(self) -> str:
        """``data`` as a ``data:<mime>;base64,...`` URI (what chat-model image blocks take)."""
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"


ImageInput = Union[str, "os.PathLike[str]", bytes, "PILImage", LoadedImage]
"""What `load_image` accepts: a path, the file's bytes, a data URI, a PIL image, a `LoadedImage`."""


def load_image(
    source: ImageInput,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> LoadedImage:
    """Read, check and decode one image to 8-bit RGB (see the module doc for the rules).

    Args:
        source: a path, the file's bytes, a ``data:image/...;base64,`` URI, a PIL image
            or a `LoadedImage` (returned as it is).
        max_pixels: the bounded-decode limit (`DEFAULT_MAX_PIXELS`).
        name: how errors and ``LoadedImage.name`` call the image (default: the file name
            or the kind of source).
        max_bytes: the most encoded bytes read (`DEFAULT_MAX_BYTES`); a larger file is
            refused before it is read. Routes that load images themselves
            (`describe_images`, `ClipEmbedder`...) use the default: to pass them a larger
            file, load it here with a larger ``max_bytes`` and pass the `LoadedImage`.

    Raises:
        ImageError: the file is missing, unreadable or not a regular file, not an image,
            truncated or corrupt, too large, or of an unsupported format or mode.
        TypeError: ``source`` is none of the accepted kinds.

    Example:
        >>> import io
        >>> from PIL import Image
        >>> buffer = io.BytesIO()
        >>> Image.new("L", (8, 8), 128).save(buffer, format="PNG")
        >>> load_image(buffer.getvalue()).image.getpixel((0, 0))
        (128, 128, 128)
    """
    if isinstance(source, LoadedImage):
        return source
    max_pixels = _check_limit(max_pixels, "max_pixels")
    max_bytes = _check_limit(max_bytes, "max_bytes")
    pil = require("PIL.Image", extra="images", feature="Loading images")
    if isinstance(source, pil.Image):
        return _from_pil(source, name or "<PIL image>", max_pixels)
    data, origin = _read_source(source, max_bytes)
    label = name or (Path(origin).name if origin[:1] != "<" else origin)
    image, fmt, size = _decode(pil, data, label, max_pixels)
    return LoadedImage(image=image, sha256=hashlib.sha256(data).hexdigest(), source=origin,
                       format=fmt, size=size, data=data, name=label)


def load_images(
    sources: Iterable[ImageInput],
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[LoadedImage]:
    """`load_image` for each source, in order (the first bad one raises)."""
    return [load_image(s, max_pixels=max_pixels, max_bytes=max_bytes)
            for s in check_image_list(sources)]


def check_image_list(images: Any, name: str = "images") -> list[Any]:
    """``images`` as a list; a `TypeError` naming ``name`` when it is one image (a path,
    bytes, a data URI, a PIL image, a `LoadedImage`) or not a collection at all, where
    every image-taking function expects a list. Items are checked when loaded."""
    if isinstance(images, (str, bytes, bytearray, os.PathLike, LoadedImage)) \
            or hasattr(images, "getpixel"):
        raise TypeError(
            f"{name} must be a list of images (paths, bytes, data URIs, PIL images), got a "
            f"single {type(images).__name__}; wrap it in a list"
        )
    if isinstance(images, Mapping) or not isinstance(images, Iterable):
        raise TypeError(f"{name} must be a list of images, got {type(images).__name__}")
    return list(images)


def per_image(values: Any, n: int, name: str, what: str = "items") -> list[Any]:
    """``values`` (``ids``, ``metadatas``, ``texts``...) as ``n`` items, one per image;
    ``None`` gives ``n`` Nones. A clear error for a str, a mapping or a wrong length."""
    if values is None:
        return [None] * n
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of {what}, one per image, got "
                        f"{type(values).__name__}: {values!r:.80}")
    out = list(values)
    if len(out) != n:
        raise ValueError(f"got {n} images but {len(out)} {name}; pass one per image")
    return out


def image_id(image: LoadedImage) -> str:
    """The default document id of an image: ``"image-"`` + the first 16 hex digits of its
    SHA-256. The same in every route, so fusion by id merges one image found by its
    description and by its CLIP vector.

    Example:
        >>> from PIL import Image
        >>> image_id(load_image(Image.new("RGB", (2, 2)))).startswith("image-")
        True
    """
    return image_id_of_hash(image.sha256)


def image_id_of_hash(sha256: str) -> str:
    """`image_id` of an image whose content hash is known (a file hashed, not decoded)."""
    return "image-" + sha256[:16]


def image_metadata(
    image: LoadedImage, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The metadata every image document carries, with ``extra`` (the caller's) merged in.

    Keys: ``type`` (``"image"``), ``image`` (the path or source), ``image_sha256``,
    ``image_format`` and ``image_size`` (``[width, height]``). The caller's keys win
    except ``type`` and ``image_sha256``, which identify the document as this image.
    """
    if extra is not None and not isinstance(extra, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(extra).__name__}")
    out: dict[str, Any] = {"image": image.source, "image_format": image.format,
                           "image_size": [image.size[0], image.size[1]]}
    out.update(extra or {})
    out["type"] = "image"
    out["image_sha256"] = image.sha256
    return out


def image_caption(metadata: Mapping[str, Any]) -> str | None:
    """The first non-blank str among ``metadata``'s `CAPTION_KEYS`, stripped, or ``None``."""
    for key in CAPTION_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def find_image_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The image files under ``folder`` (recursively, by `IMAGE_SUFFIXES`), sorted.

    Raises:
        ImageError: ``folder`` is not a directory.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ImageError(f"{str(root)!r} is not a directory")
    return sorted(p for p in root.rglob("*")
                  if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


# ---------------------------------------------------------------------- reading


def _check_limit(value: Any, name: str) -> int:
    return check_number(value, name, low=1, integer=True)


def _read_source(source: Any, max_bytes: int) -> tuple[bytes, str]:
    """(the encoded bytes, where they came from), at most ``max_bytes`` of them."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        _check_size(len(source), max_bytes, "<bytes>")
        return bytes(source), "<bytes>"
    if isinstance(source, str) and source.startswith("data:"):
        _check_size(len(source) // 4 * 3, max_bytes, "<data URI>")
        return _data_uri_bytes(source), "<data URI>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not isinstance(path, str) or not path:
            raise TypeError(f"an image path must be a non-empty str, got {source!r}")
        try:
            return _read_file(path, max_bytes), path
        except FileNotFoundError:
            raise ImageError(f"image file not found: {path!r}") from None
        except OSError as exc:
            raise ImageError(f"cannot read image file {path!r}: {exc.strerror or exc}") from None
    raise TypeError(
        "an image must be a file path, bytes, a data:image/...;base64 URI, a PIL image or a "
        f"LoadedImage, got {type(source).__name__}"
    )


def _read_file(path: str, max_bytes: int) -> bytes:
    """A regular file's bytes, at most ``max_bytes``. The path's ``stat`` refuses a FIFO
    or a device before it is opened (opening a FIFO would wait for a writer); the file is
    opened non-blocking and its descriptor's ``fstat`` checked again, so a file swapped
    between the two is caught too; the read stops at ``max_bytes`` + 1 bytes whatever the
    size said."""
    _check_regular(os.stat(path).st_mode, path)
    descriptor = os.open(path, _OPEN_FLAGS)
    with open(descriptor, "rb", closefd=True) as handle:
        info = os.fstat(descriptor)
        _check_regular(info.st_mode, path)
        _check_size(info.st_size, max_bytes, Path(path).name)
        data = handle.read(max_bytes + 1)
    _check_size(len(data), max_bytes, Path(path).name)
    return data


def _check_regular(mode: int, path: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    raise ImageError(f"{path!r} is {kind}, not an image file")


def _check_size(size: int, max_bytes: int, label: str) -> None:
    if size > max_bytes:
        raise ImageError(
            f"{label}: {size:,} bytes exceeds max_bytes={max_bytes:,}; load it with "
            "load_image(..., max_bytes=<a larger limit>) and pass the LoadedImage on"
        )


def _data_uri_bytes(uri: str) -> bytes:
    header, sep, payload = uri.partition(",")
    if not sep or not header.startswith("data:image/") or not header.endswith(";base64"):
        raise ImageError(
            f"a data URI image must look like 'data:image/<type>;base64,<data>', got "
            f"{uri[:40]!r}..."
        )
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"the data URI {header!r} holds invalid base64 data") from None


def _from_pil(image: Any, label: str, max_pixels: int) -> LoadedImage:
    width, height = image.size
    if width * height > max_pixels:
        raise ImageError(_too_large(label, width, height, max_pixels))
    try:
        image.load()
        rgb = _to_rgb(image, label)
        buffer = io.BytesIO()
        (image if image.mode in ("RGB", "RGBA", "L", "LA", "P", "1") else rgb).save(
            buffer, format="PNG")
    except ImageError:
        raise
    except (OSError, ValueError) as exc:
        raise ImageError(f"{label}: the image cannot be read or encoded ({exc})") from None
    data = buffer.getvalue()
    return LoadedImage(image=rgb, sha256=hashlib.sha256(data).hexdigest(), source=label,
                       format="PNG", size=(width, height), data=data, name=label)


def _decode(pil: Any, data: bytes, label: str, max_pixels: int) -> tuple[Any, str, tuple[int, int]]:
    if not data:
        raise ImageError(f"{label}: the image is empty (0 bytes)")
    image = _open(pil, data, label)
    fmt = image.format or "?"
    if fmt == "MPO":  # a JPEG with Multi-Picture data (phone cameras): its first picture
        fmt = "JPEG"
    if fmt not in SUPPORTED_FORMATS:
        raise ImageError(
            f"{label}: unsupported image format {fmt}; supported: {', '.join(SUPPORTED_FORMATS)}"
        )
    size = image.size
    if size[0] * size[1] > max_pixels:
        if fmt != "JPEG":
            raise ImageError(_too_large(label, *size, max_pixels))
        _reduce_jpeg(image, max_pixels)
        if image.size[0] * image.size[1] > max_pixels:
            raise ImageError(_too_large(label, *size, max_pixels))
    problem = scan_problem(data) if fmt == "JPEG" else None
    if problem:
        raise ImageError(f"{label}: truncated or corrupt JPEG data ({problem})")
    try:
        with warnings.catch_warnings():  # Pillow's check inside GIF frames; ours is the bound
            warnings.simplefilter("ignore", pil.DecompressionBombWarning)
            image.load()
        if fmt == "JPEG" and not _scans_complete(pil, image, data, max_pixels):
            raise ImageError(
                f"{label}: truncated or corrupt JPEG data (a scan's data ends before the "
                "frame's last block, which libjpeg fills with grey)"
            )
        rgb = _to_rgb(image, label)
    except ImageError:
        raise
    except pil.DecompressionBombError as exc:
        raise ImageError(f"{label}: refused as a decompression bomb by Pillow ({exc})") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageError(f"{label}: truncated or corrupt {fmt} data ({exc})") from None
    return rgb, fmt, size


def _open(pil: Any, data: bytes, label: str) -> Any:
    """The image, opened lazily by the Pillow plugin of the supported format its first
    bytes show. The plugin is called directly, as ``PIL.Image.open`` calls it but without
    the decompression-bomb check ``open`` adds, so ``max_pixels`` is the one pixel limit
    whatever ``PIL.Image.MAX_IMAGE_PIXELS`` is, and no process-wide setting is touched."""
    if any(fmt not in pil.OPEN for fmt in SUPPORTED_FORMATS):
        pil.init()
    prefix = data[:16]
    for fmt in SUPPORTED_FORMATS:
        factory, accept = pil.OPEN.get(fmt, (None, None))
        accepted = factory is not None and (accept is None or accept(prefix))
        if not accepted or isinstance(accepted, str):  # a str: Pillow's "maybe" warning
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pil.DecompressionBombWarning)
                return factory(io.BytesIO(data), "")
        except pil.DecompressionBombError as exc:  # a GIF frame larger than its screen
            raise ImageError(f"{label}: refused as a decompression bomb by Pillow ({exc})"
                             ) from None
        except (OSError, ValueError, SyntaxError, EOFError, IndexError, TypeError,
                struct.error) as exc:
            raise ImageError(f"{label}: unreadable image header ({exc})") from None
    try:  # not a supported format: which one, for the message
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pil.DecompressionBombWarning)
            other = pil.open(io.BytesIO(data)).format
    except Exception:  # noqa: BLE001 - any failure means Pillow cannot identify it
        other = None
    if other:
        raise ImageError(f"{label}: unsupported image format {other}; supported: "
                         f"{', '.join(SUPPORTED_FORMATS)}")
    raise ImageError(
        f"{label}: not an image Pillow can identify (supported: "
        f"{', '.join(SUPPORTED_FORMATS)})"
    )


def _scans_complete(pil: Any, image: Any, data: bytes, max_pixels: int) -> bool:
    """False when a JPEG's scan data stopped short and libjpeg decoded the rest from zero
    coefficients. The file is decoded again, at the same scale, with filler after each
    scan's data (`jpeg_scans.padded_scans`): libjpeg skips bytes after a finished scan,
    so the two decodes match exactly when every scan was complete. A multi-scan
    (progressive) JPEG cut in a later scan keeps its earlier scans' picture, so it is
    always checked; a one-scan (baseline) JPEG cut short ends in blocks with no AC
    coefficients (flat; mid-grey when their DC is missing too), so it is checked only
    when its bottom-right corner is flat."""
    scans = jpeg_scans(data)[1]
    if len(scans) == 1 and not _flat_corner(image):
        return True
    padded = padded_scans(data, scans)
    if padded is None:
        return True
    try:
        return _same_pixels(image, _decode_like(pil, padded, max_pixels))
    except (ImageError, OSError, ValueError, SyntaxError, EOFError):
        return False  # the padded copy does not even decode: its scans were not sound


def _flat_corner(image: Any) -> bool:
    """Whether a decoded JPEG's bottom-right corner looks like a block decoded without
    its data: its last pixel near mid-grey in every channel (no DC either), or the
    corner's pixels within the last 8x8 block (at most 4x4) all alike."""
    width, height = image.size
    last = image.getpixel((width - 1, height - 1))
    if all(120 <= value <= 136 for value in (last if isinstance(last, tuple) else (last,))):
        return True
    box = (max(width - 4, (width - 1) // 8 * 8), max(height - 4, (height - 1) // 8 * 8),
           width, height)
    extrema = image.crop(box).getextrema()
    bands = extrema if isinstance(extrema[0], tuple) else (extrema,)
    return all(low == high for low, high in bands)


def _decode_like(pil: Any, data: bytes, max_pixels: int) -> Any:
    """A JPEG decoded as `_decode` decodes it under ``max_pixels`` (the same scale)."""
    image = _open(pil, data, "<JPEG check>")
    if image.size[0] * image.size[1] > max_pixels:
        _reduce_jpeg(image, max_pixels)
    image.load()
    return image


def _same_pixels(first: Any, second: Any) -> bool:
    """Whether two images hold the same pixels, compared a strip of rows at a time (no
    full-size copy of either)."""
    if first.size != second.size or first.mode != second.mode:
        return False
    width, height = first.size
    rows = max(1, _STRIP_PIXELS // max(1, width))
    return all(first.crop(box).tobytes() == second.crop(box).tobytes()
               for box in ((0, top, width, min(height, top + rows))
                           for top in range(0, height, rows)))


def _reduce_jpeg(image: Any, max_pixels: int) -> None:
    """Ask libjpeg to decode at 1/2, 1/4 or 1/8 scale, the largest that fits ``max_pixels``."""
    width, height = image.size
    for scale in (2, 4, 8):
        if (width // scale) * (height // scale) <= max_pixels:
            break
    image.draft("RGB", (max(1, width // scale), max(1, height // scale)))


def _too_large(label: str, width: int, height: int, max_pixels: int) -> str:
    return (
        f"{label}: {width}x{height} = {width * height:,} pixels exceeds max_pixels="
        f"{max_pixels:,}; pass a larger max_pixels to decode it"
    )


def _to_rgb(image: Any, label: str) -> Any:
    """8-bit RGB: transparency composited on white, 16-bit scaled, other modes converted."""
    mode = image.mode
    if mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
        mode = image.mode
    if mode in _ALPHA_MODES:
        return _on_white(image if mode == "RGBA" else image.convert("RGBA"))
    if mode in _SIXTEEN_BIT_MODES:
        return _sixteen_bit_to_rgb(image)
    if mode in _CONVERTIBLE_MODES:
        return image if mode == "RGB" else image.convert("RGB")
    raise ImageError(f"{label}: unsupported image mode {mode!r}")


def _on_white(rgba: Any) -> Any:
    """An RGBA image composited on white, as RGB: a white RGB image with ``rgba`` pasted
    through its own alpha (out = a * colour + (1 - a) * white, per channel), so one image
    is allocated beside the decoded one (not a white RGBA, a composite and a conversion)."""
    pil = require("PIL.Image", extra="images", feature="Loading images")
    out = pil.new("RGB", rgba.size, (255, 255, 255))
    out.paste(rgba, (0, 0), rgba)
    return out


def _sixteen_bit_to_rgb(image: Any) -> Any:
    """A 16-bit greyscale image as 8-bit RGB: each value's top byte (value >> 8, values
    of a 32-bit ``I`` image clipped to 0..65535 first), a strip of rows at a time so no
    full-size wide-integer copy is made."""
    import numpy as np

    pil = require("PIL.Image", extra="images", feature="Loading images")
    width, height = image.size
    eight = np.empty((height, width), dtype=np.uint8)
    rows = max(1, _STRIP_PIXELS // max(1, width))
    for top in range(0, height, rows):
        bottom = min(height, top + rows)
        strip = np.asarray(image.crop((0, top, width, bottom)))
        if strip.dtype != np.uint16:  # mode "I": 32-bit signed
            strip = np.clip(strip, 0, 65535)
        eight[top:bottom] = strip >> 8
    return pil.fromarray(eight).convert("RGB")
