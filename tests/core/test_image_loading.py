"""`load_image`: every source kind, and every bad input refused with the file's name.

Real images are drawn here with Pillow (never fetched): PNG, JPEG, GIF, WebP; CMYK,
16-bit greyscale, palette with transparency; truncated files, non-images, a
100-megapixel header, data URIs.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

import pytest

Image = pytest.importorskip("PIL.Image")

from hybrid_retrievers.images import (  # noqa: E402
    DEFAULT_MAX_PIXELS,
    ImageError,
    LoadedImage,
    find_image_files,
    image_id,
    image_metadata,
    load_image,
    load_images,
)


def _encoded(image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def _gradient(size=(64, 48)):
    image = Image.new("RGB", size)
    image.putdata([(x * 4 % 256, y * 5 % 256, 128) for y in range(size[1])
                   for x in range(size[0])])
    return image


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_every_supported_format_loads_as_rgb(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"g.{fmt.lower()}"
    path.write_bytes(_encoded(_gradient(), fmt))
    loaded = load_image(path)
    assert isinstance(loaded, LoadedImage)
    assert (loaded.image.mode, loaded.size, loaded.format) == ("RGB", (64, 48), fmt)
    assert loaded.source == str(path) and loaded.name == path.name
    assert loaded.data == path.read_bytes()
    assert loaded.mime_type == f"image/{fmt.lower()}"


def test_the_same_bytes_from_every_source_have_one_identity(tmp_path: Path) -> None:
    data = _encoded(_gradient(), "PNG")
    path = tmp_path / "g.png"
    path.write_bytes(data)
    uri = "data:image/png;base64," + base64.b64encode(data).decode()
    loaded = [load_image(path), load_image(str(path)), load_image(data), load_image(uri)]
    assert len({x.sha256 for x in loaded}) == 1
    assert len({image_id(x) for x in loaded}) == 1
    assert [x.source for x in loaded[2:]] == ["<bytes>", "<data URI>"]
    assert load_image(loaded[0]) is loaded[0]
    assert load_image(uri).data_uri() == uri


def test_a_pil_image_is_encoded_once_and_identified_by_its_pixels() -> None:
    first, second = load_image(_gradient()), load_image(_gradient())
    assert first.sha256 == second.sha256 and first.format == "PNG"
    assert load_image(first.data).sha256 == first.sha256
    assert load_image(Image.new("RGB", (64, 48))).sha256 != first.sha256


def test_cmyk_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "cmyk.jpg"
    path.write_bytes(_encoded(Image.new("CMYK", (16, 16), (0, 255, 255, 0)), "JPEG"))
    pixel = load_image(path).image.getpixel((8, 8))
    assert pixel[0] > 200 and pixel[1] < 60 and pixel[2] < 60  # red stays red


def test_sixteen_bit_greyscale_is_scaled_not_clipped(tmp_path: Path) -> None:
    image = Image.new("I;16", (4, 4))
    image.putdata([0, 256, 32768, 65535] * 4)
    path = tmp_path / "deep.png"
    path.write_bytes(_encoded(image, "PNG"))
    loaded = load_image(path)
    assert [loaded.image.getpixel((x, 0))[0] for x in range(4)] == [0, 1, 128, 255]


def test_palette_with_transparency_is_composited_on_white(tmp_path: Path) -> None:
    image = Image.new("P", (4, 4), 0)
    image.putpalette([10, 20, 30, 200, 0, 0] + [0] * 762)
    image.putpixel((0, 0), 1)
    image.info["transparency"] = 0
    path = tmp_path / "pal.png"
    path.write_bytes(_encoded(image, "PNG", transparency=0))
    loaded = load_image(path)
    assert loaded.image.getpixel((0, 0)) == (200, 0, 0)
    assert loaded.image.getpixel((3, 3)) == (255, 255, 255)


def test_rgba_and_la_are_composited_on_white() -> None:
    half = load_image(Image.new("RGBA", (2, 2), (0, 0, 0, 128))).image.getpixel((0, 0))
    assert all(126 <= v <= 128 for v in half)
    assert load_image(Image.new("LA", (2, 2), (0, 0))).image.getpixel((0, 0)) == (255,) * 3


def test_animated_gif_gives_its_first_frame(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (8, 8), c) for c in ((255, 0, 0), (0, 0, 255))]
    path = tmp_path / "anim.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    assert load_image(path).image.getpixel((4, 4))[0] > 200


def test_a_phone_jpeg_with_multi_picture_data_loads_its_first_picture() -> None:
    """Phone cameras write JPEGs with MPF data, which Pillow opens as "MPO": a JPEG to
    the user, whose first picture is the photo (and is checked like any JPEG)."""
    first, second = _gradient(), Image.new("RGB", (64, 48), (0, 0, 255))
    data = _encoded(first, "MPO", save_all=True, append_images=[second])
    assert Image.open(io.BytesIO(data)).format == "MPO"
    loaded = load_image(data, name="IMG_0001.jpg")
    plain = load_image(_encoded(first, "JPEG"), name="plain.jpg")
    assert loaded.size == (64, 48) and loaded.image.tobytes() == plain.image.tobytes()
    eoi = data.index(b"\xff\xd9")
    with pytest.raises(ImageError, match=r"cut\.jpg: truncated or corrupt JPEG data"):
        load_image(data[: eoi // 2] + data[eoi:], name="cut.jpg")


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="not found.*nope.png"):
        load_image(tmp_path / "nope.png")
    with pytest.raises(ImageError, match="is a directory"):
        load_image(tmp_path)


def test_a_non_image_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.png"
    path.write_text("# not an image, a markdown note\n")
    with pytest.raises(ImageError, match="notes.png: not an image"):
        load_image(path)
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ImageError, match="empty.png: the image is empty"):
        load_image(tmp_path / "empty.png")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_a_truncated_image_is_refused_naming_the_file(tmp_path: Path, fmt: str) -> None:
    data = _encoded(_gradient((128, 96)), fmt)
    path = tmp_path / f"cut.{fmt.lower()}"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageError, match=f"cut.{fmt.lower()}"):
        load_image(path)


def test_an_unsupported_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.bmp"
    path.write_bytes(_encoded(_gradient(), "BMP"))
    with pytest.raises(ImageError, match="old.bmp: unsupported image format BMP"):
        load_image(path)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares width x height but holds one tiny (wrong) data chunk."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b""))


def test_a_100_megapixel_png_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    path.write_bytes(_png_header_only(10_000, 10_000))
    with pytest.raises(ImageError, match=r"huge.png: 10000x10000 = 100,000,000 pixels "
                                         r"exceeds max_pixels"):
        load_image(path)


def test_a_large_jpeg_is_decoded_reduced_within_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.jpg"
    path.write_bytes(_encoded(_gradient((800, 600)), "JPEG"))
    loaded = load_image(path, max_pixels=100_000)
    assert loaded.size == (800, 600)
    assert loaded.image.size[0] * loaded.image.size[1] <= 100_000
    assert loaded.image.size == (400, 300) or loaded.image.size == (200, 150)
    with pytest.raises(ImageError, match="exceeds max_pixels"):
        load_image(path, max_pixels=1_000)


def test_bad_data_uris_and_kinds_are_clear() -> None:
    with pytest.raises(ImageError, match="data URI image must look like"):
        load_image("data:text/plain;base64,aGVsbG8=")
    with pytest.raises(ImageError, match="invalid base64"):
        load_image("data:image/png;base64,@@@")
    with pytest.raises(TypeError, match="got int"):
        load_image(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="single str; wrap it in a list"):
        load_images("a.png")
    with pytest.raises(ValueError, match="max_pixels must be >= 1"):
        load_image(b"x", max_pixels=0)


def test_image_metadata_keeps_the_identity_keys() -> None:
    loaded = load_image(_gradient())
    meta = image_metadata(loaded, {"caption": "a gradient", "type": "text",
                                   "image_sha256": "forged"})
    assert meta["type"] == "image" and meta["image_sha256"] == loaded.sha256
    assert meta["caption"] == "a gradient" and meta["image_size"] == [64, 48]


def test_find_image_files_is_sorted_and_recursive(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("b.PNG", "a.jpg", "sub/c.webp", "notes.md"):
        (tmp_path / name).write_bytes(b"x")
    assert [p.relative_to(tmp_path).as_posix() for p in find_image_files(tmp_path)] == \
        ["a.jpg", "b.PNG", "sub/c.webp"]
    with pytest.raises(ImageError, match="not a directory"):
        find_image_files(tmp_path / "notes.md")
    assert DEFAULT_MAX_PIXELS >= 10_000_000
