"""`load_image` against hostile files: JPEGs cut short but closed, non-regular files and
oversized reads, memory for large RGBA and 16-bit images, and ``max_pixels`` as the one
pixel limit above Pillow's own decompression-bomb check.

Every large image here is a crafted header or a stream that costs little to build: no
test decodes more than a few megapixels in this process; the memory test measures a
child process's peak RSS.
"""

from __future__ import annotations

import base64
import io
import os
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

Image = pytest.importorskip("PIL.Image")

from hybrid_retrievers.images import DEFAULT_MAX_BYTES, ImageError, load_image  # noqa: E402
from hybrid_retrievers.images.jpeg_scans import (  # noqa: E402
    jpeg_scans,
    padded_scans,
    scan_problem,
)


def _jpeg(image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", **options)
    return buffer.getvalue()


def _noise(size=(64, 48), mode="RGB"):
    """Seeded noise: a JPEG whose every block carries data."""
    import numpy as np

    pixels = np.random.default_rng(43).integers(0, 256, (size[1], size[0], 3), np.uint8)
    return Image.fromarray(pixels).convert(mode)


def _cut_and_closed(data: bytes, fraction: float) -> bytes:
    """``data`` cut at ``fraction`` of its scan data, with an EOI marker appended."""
    return data[: int(data.rindex(b"\xff\xd9") * fraction)] + b"\xff\xd9"


def _with_frame_size(data: bytes, width: int, height: int) -> bytes:
    patched = bytearray(data)
    sof = patched.index(b"\xff\xc0")
    patched[sof + 5:sof + 9] = struct.pack(">HH", height, width)
    return bytes(patched)


def _segment(marker: int, body: bytes) -> bytes:
    return b"\xff" + bytes([marker]) + struct.pack(">H", len(body) + 2) + body


def _flat_grey_level_jpeg(width: int, height: int, dc: int = 1000) -> bytes:
    """A complete baseline greyscale JPEG of one flat level (128 + dc / 8), built from
    its bits: quantiser 1, a DC table {0: '0', 10: '10'}, an AC table {EOB: '0'}; the
    first block codes DC ``dc`` and every other block 'DC diff 0, EOB' in 2 bits, so a
    14000x14000 frame is 766 KB."""
    blocks = -(-width // 8) * -(-height // 8)
    head = "10" + format(dc, "010b") + "0"
    total = len(head) + 2 * (blocks - 1)
    size = -(-total // 8)
    scan = bytearray(int(head.ljust(16, "0"), 2).to_bytes(2, "big")) + bytes(size - 2)
    scan[-1] |= (1 << (size * 8 - total)) - 1  # pad the last byte with 1-bits
    return (b"\xff\xd8" + _segment(0xDB, b"\x00" + b"\x01" * 64)
            + _segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
            + _segment(0xC4, b"\x00" + bytes([1, 1] + [0] * 14) + bytes([0, 10]))
            + _segment(0xC4, b"\x10" + bytes([1] + [0] * 15) + b"\x00")
            + _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00") + bytes(scan) + b"\xff\xd9")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def _png_header_only(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
            + _png_chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + _png_chunk(b"IEND", b""))


def _png_streamed(path: Path, width: int, height: int, colour_type: int, depth: int) -> None:
    """A real PNG written a row at a time (never a full-size buffer in this process)."""
    channels = {0: 1, 6: 4}[colour_type]
    row = bytes((i * 7) % 251 for i in range(width * channels * depth // 8))
    packer = zlib.compressobj(1)
    idat = b"".join(packer.compress(b"\x00" + row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
                     + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b""))


# ------------------------------------------------- JPEG scan data that stops short (F5)


def test_a_jpeg_whose_frame_outgrows_its_scan_data_is_refused_before_decoding(
        tmp_path: Path) -> None:
    path = tmp_path / "patched.jpg"
    path.write_bytes(_with_frame_size(_jpeg(_noise()), 7000, 7000))  # 2 KB, "49 Mpx"
    with pytest.raises(ImageError, match=r"patched.jpg: truncated or corrupt JPEG data "
                                         r"\(scan 1 holds [\d,]+ bytes .* 7000x7000 frame "
                                         r"needs at least"):
        load_image(path)


@pytest.mark.parametrize("options", [{}, {"optimize": True}, {"subsampling": 0},
                                     {"progressive": True}])
@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.85])
def test_a_jpeg_cut_short_and_closed_with_eoi_is_refused(tmp_path: Path, options, fraction
                                                          ) -> None:
    path = tmp_path / "cut.jpg"
    path.write_bytes(_cut_and_closed(_jpeg(_noise((96, 64)), **options), fraction))
    with pytest.raises(ImageError, match="cut.jpg: truncated or corrupt JPEG data"):
        load_image(path)


def test_the_probes_cut_jpeg_is_refused() -> None:
    data = _jpeg(_noise())
    with pytest.raises(ImageError, match="cut.jpg: truncated or corrupt JPEG"):
        load_image(_cut_and_closed(data, 0.5), name="cut.jpg")


@pytest.mark.parametrize("options", [{}, {"optimize": True}, {"progressive": True},
                                     {"quality": 100}])
@pytest.mark.parametrize("mode", ["RGB", "L", "CMYK"])
def test_complete_jpegs_with_a_flat_grey_corner_still_load(options, mode: str) -> None:
    image = Image.new(mode, (67, 45), 128 if mode == "L" else (128,) * len(mode))
    image.paste(_noise((30, 20), mode), (0, 0))
    data = _jpeg(image, **options)
    expected = Image.open(io.BytesIO(data)).convert("RGB").tobytes()
    assert load_image(data).image.tobytes() == expected
    assert load_image(data + b"trailing bytes after EOI").image.tobytes() == expected


def test_padded_scans_decode_like_the_file_and_the_bound_is_a_floor() -> None:
    for options in ({}, {"progressive": True}, {"optimize": True, "subsampling": 0}):
        data = _jpeg(_noise((120, 90)), **options)
        decoded = Image.open(io.BytesIO(data))
        padded = Image.open(io.BytesIO(padded_scans(data)))
        assert decoded.tobytes() == padded.tobytes()
        assert scan_problem(data) is None
        frame, scans = jpeg_scans(data)
        assert (frame.width, frame.height) == (120, 90)
        assert all(s.min_bits is None or s.min_bits <= 8 * (s.end - s.start) for s in scans)
    assert scan_problem(b"not a jpeg") is None and padded_scans(b"\xff\xd8") is None


# ---------------------------------------------------- non-regular files, read bounds (F6)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def load() -> None:
        try:
            load_image(fifo)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # the unfixed reader blocks in open(): release it, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
        pytest.fail("load_image blocked on a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], ImageError)
    assert "pipe.png' is a FIFO (named pipe), not an image file" in str(outcome[0])


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_from_its_stat_not_read() -> None:
    with pytest.raises(ImageError, match="'/dev/zero' is a character device, not an image"):
        load_image("/dev/zero")


def test_a_file_above_max_bytes_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    with open(huge, "wb") as handle:  # sparse: no disk, no memory
        handle.truncate(DEFAULT_MAX_BYTES + 1)
    with pytest.raises(ImageError, match=rf"huge.png: {DEFAULT_MAX_BYTES + 1:,} bytes "
                                         rf"exceeds max_bytes={DEFAULT_MAX_BYTES:,}; load it "
                                         r"with load_image\(..., max_bytes="):
        load_image(huge)
    data = _jpeg(_noise())
    small = tmp_path / "small.jpg"
    small.write_bytes(data)
    with pytest.raises(ImageError, match="small.jpg: .* exceeds max_bytes=100"):
        load_image(small, max_bytes=100)
    with pytest.raises(ImageError, match="<bytes>: .* exceeds max_bytes=100"):
        load_image(data, max_bytes=100)
    uri = "data:image/jpeg;base64," + base64.b64encode(data).decode()
    with pytest.raises(ImageError, match="<data URI>: .* exceeds max_bytes=100"):
        load_image(uri, max_bytes=100)
    assert load_image(small, max_bytes=len(data)).size == (64, 48)
    with pytest.raises(ValueError, match="max_bytes must be >= 1"):
        load_image(small, max_bytes=0)
    with pytest.raises(TypeError, match="max_bytes must be an int"):
        load_image(small, max_bytes=True)


# ------------------------------------------------------------ bounded conversions (F7)

_PEAK_CHILD = """
import sys
from hybrid_retrievers.images import load_image
import numpy, PIL.Image

def rss(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # reset the peak (VmHWM) to the current RSS, after the imports
before = rss("VmRSS:")
image = load_image(sys.argv[1]).image
assert image.mode == "RGB" and image.size == (2000, 2000), image
print((rss("VmHWM:") - before) * 1024)
"""


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak RSS (/proc/self/clear_refs)")
@pytest.mark.parametrize("colour_type, depth", [(6, 8), (0, 16)], ids=["RGBA", "16-bit"])
def test_rgba_and_16_bit_conversions_hold_two_full_size_images_at_most(
        tmp_path: Path, colour_type: int, depth: int) -> None:
    path = tmp_path / "big.png"
    _png_streamed(path, 2000, 2000, colour_type, depth)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(path)], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    full_size = 2000 * 2000 * 4  # one RGB or RGBA image in Pillow (4 bytes a pixel)
    # decoded + RGB result: 2.2 full sizes measured (2.6 at 16 bits, with the strips);
    # the old full-size composite (white RGBA, composite, RGB) and int64 copies made 5
    assert int(done.stdout) < 3.5 * full_size, done.stdout


# --------------------------------------------- max_pixels is the one pixel limit (F8)


def test_max_pixels_above_pillows_bomb_limit_is_the_limit_applied() -> None:
    before = Image.MAX_IMAGE_PIXELS
    with pytest.raises(ImageError, match=r"wide.png: 15000x15000 = 225,000,000 pixels "
                                         r"exceeds max_pixels=200,000,000"):
        load_image(_png_header_only(15000, 15000), name="wide.png", max_pixels=200_000_000)
    assert Image.MAX_IMAGE_PIXELS == before  # no process-wide setting touched


def test_a_jpeg_above_pillows_bomb_limit_is_decoded_at_reduced_scale() -> None:
    data = _flat_grey_level_jpeg(14000, 14000)  # 196 Mpx > Pillow's 179 Mpx refusal
    loaded = load_image(data, name="big.jpg", max_pixels=4_000_000)
    assert loaded.size == (14000, 14000) and loaded.format == "JPEG"
    assert loaded.image.size == (1750, 1750)  # 1/8 scale: 3.06 Mpx
    assert loaded.image.getpixel((0, 0)) == loaded.image.getpixel((1749, 1749)) \
        == (253, 253, 253)


def test_a_gif_frame_beyond_its_screen_and_pillows_limit_is_refused_naming_the_file() -> None:
    screen = b"GIF89a" + struct.pack("<HHBBB", 10, 10, 0, 0, 0)
    frame = b"," + struct.pack("<HHHHB", 0, 0, 60000, 60000, 0) + b"\x02\x02\x4c\x01\x00;"
    with pytest.raises(ImageError, match="bomb.gif: "):
        load_image(screen + frame, name="bomb.gif")
