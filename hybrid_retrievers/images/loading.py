"""Image loading and validation: one checked, decoded RGB image from whatever a user holds.

Every route that takes an image (descriptions by a vision model, CLIP vectors, a query
image) goes through `load_image`, so every route refuses the same bad input the same way,
with an `ImageError` that names the file (or the argument) and the problem:

* **Sources**: a file path (``str`` or ``os.PathLike``), the file's ``bytes``, a
  ``data:image/...;base64,`` URI, a ``PIL.Image.Image`` or an already `LoadedImage`.
* **Formats**: PNG, JPEG, GIF and WebP (`SUPPORTED_FORMATS`); anything else, a file that
  is not an image, or one whose data is truncated or corrupt is refused. Pillow's
  ``LOAD_TRUNCATED_IMAGES`` is never switched on: a truncated file is an error, not a
  half-grey picture silently indexed.
* **Bounded decode**: the pixel count is read from the header before anything is decoded.
  Above ``max_pixels`` (`DEFAULT_MAX_PIXELS`), a JPEG is decoded at a reduced scale
  (1/2, 1/4 or 1/8: libjpeg's DCT scaling, Pillow's ``draft``), so a 100-megapixel photo
  costs a fraction of its full size; any other format is refused before decoding, so a
  decompression bomb never allocates its pixels.
* **Modes**: the result is always 8-bit RGB, what every image model expects. CMYK,
  YCbCr and greyscale are converted; 16-bit greyscale is scaled to 8 bits (the top byte,
  not a clip that would turn most of the image white); transparency (RGBA, LA, a
  palette with a transparent index) is composited on white, so a transparent
  background becomes white rather than the arbitrary colour stored under alpha 0.
  Animated GIF/WebP: the first frame.

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
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..optional import require

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "CAPTION_KEYS",
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
"""Pixels decoded at most per image (50 megapixels, ~150 MB as RGB); see the module doc."""

_MIME_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
               "WEBP": "image/webp"}
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
_SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})
_CONVERTIBLE_MODES = frozenset({"RGB", "L", "1", "CMYK", "YCbCr", "LAB", "HSV", "RGBX"})


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
    source: ImageInput, *, max_pixels: int = DEFAULT_MAX_PIXELS, name: str | None = None
) -> LoadedImage:
    """Read, check and decode one image to 8-bit RGB (see the module doc for the rules).

    Args:
        source: a path, the file's bytes, a ``data:image/...;base64,`` URI, a PIL image
            or a `LoadedImage` (returned as it is).
        max_pixels: the bounded-decode limit (`DEFAULT_MAX_PIXELS`).
        name: how errors and ``LoadedImage.name`` call the image (default: the file name
            or the kind of source).

    Raises:
        ImageError: the file is missing or unreadable, not an image, truncated or
            corrupt, too large, or of an unsupported format or mode.
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
    max_pixels = _check_max_pixels(max_pixels)
    pil = require("PIL.Image", extra="images", feature="Loading images")
    if isinstance(source, pil.Image):
        return _from_pil(source, name or "<PIL image>", max_pixels)
    data, origin = _read_source(source)
    label = name or (Path(origin).name if origin[:1] != "<" else origin)
    image, fmt, size = _decode(pil, data, label, max_pixels)
    return LoadedImage(image=image, sha256=hashlib.sha256(data).hexdigest(), source=origin,
                       format=fmt, size=size, data=data, name=label)


def load_images(
    sources: Iterable[ImageInput], *, max_pixels: int = DEFAULT_MAX_PIXELS
) -> list[LoadedImage]:
    """`load_image` for each source, in order (the first bad one raises)."""
    return [load_image(s, max_pixels=max_pixels) for s in check_image_list(sources)]


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


def _check_max_pixels(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_pixels must be an int, got {type(value).__name__}: {value!r}")
    if value < 1:
        raise ValueError(f"max_pixels must be >= 1, got {value}")
    return value


def _read_source(source: Any) -> tuple[bytes, str]:
    """(the encoded bytes, where they came from)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<bytes>"
    if isinstance(source, str) and source.startswith("data:"):
        return _data_uri_bytes(source), "<data URI>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not isinstance(path, str) or not path:
            raise TypeError(f"an image path must be a non-empty str, got {source!r}")
        try:
            with open(path, "rb") as handle:
                return handle.read(), path
        except FileNotFoundError:
            raise ImageError(f"image file not found: {path!r}") from None
        except IsADirectoryError:
            raise ImageError(f"{path!r} is a directory, not an image file") from None
        except OSError as exc:
            raise ImageError(f"cannot read image file {path!r}: {exc.strerror or exc}") from None
    raise TypeError(
        "an image must be a file path, bytes, a data:image/...;base64 URI, a PIL image or a "
        f"LoadedImage, got {type(source).__name__}"
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
    try:
        with warnings.catch_warnings():  # our own bound replaces Pillow's bomb warning
            warnings.simplefilter("ignore", pil.DecompressionBombWarning)
            image = pil.open(io.BytesIO(data))
    except pil.UnidentifiedImageError:
        raise ImageError(
            f"{label}: not an image Pillow can identify (supported: "
            f"{', '.join(SUPPORTED_FORMATS)})"
        ) from None
    except pil.DecompressionBombError as exc:
        raise ImageError(f"{label}: refused as a decompression bomb ({exc})") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageError(f"{label}: unreadable image header ({exc})") from None
    fmt = image.format or "?"
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
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pil.DecompressionBombWarning)
            image.load()
        rgb = _to_rgb(image, label)
    except ImageError:
        raise
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageError(f"{label}: truncated or corrupt {fmt} data ({exc})") from None
    return rgb, fmt, size


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
        pil = require("PIL.Image", extra="images", feature="Loading images")
        rgba = image.convert("RGBA")
        white = pil.new("RGBA", rgba.size, (255, 255, 255, 255))
        return pil.alpha_composite(white, rgba).convert("RGB")
    if mode in _SIXTEEN_BIT_MODES:
        return _sixteen_bit_to_rgb(image)
    if mode in _CONVERTIBLE_MODES:
        return image if mode == "RGB" else image.convert("RGB")
    raise ImageError(f"{label}: unsupported image mode {mode!r}")


def _sixteen_bit_to_rgb(image: Any) -> Any:
    """A 16-bit greyscale image as 8-bit RGB: each value's top byte (value >> 8)."""
    import numpy as np

    pil = require("PIL.Image", extra="images", feature="Loading images")
    values = np.asarray(image).astype(np.int64)
    eight = (np.clip(values, 0, 65535) >> 8).astype(np.uint8)
    return pil.fromarray(eight).convert("RGB")
