"""JPEG scan data that stops short of its frame: found from the markers, before decoding.

libjpeg, meeting a marker (typically the closing EOI) before a scan's entropy-coded data
is complete, only warns ("Corrupt JPEG data: premature end of data segment") and decodes
the rest of the image from zero coefficients: flat mid-grey. Pillow silences libjpeg's
warnings and exposes none (python-pillow/Pillow#9106), so a JPEG cut short and closed with
an EOI, or one whose SOF was patched to a larger frame, decodes "successfully" as a partly
or wholly grey picture. The file's marker structure (ITU-T T.81, Annex B), read here
without decoding a pixel, shows it in two ways:

* **Too few bits**: each block of a sequential Huffman scan costs at least its DC table's
  shortest code plus its AC table's shortest code (a block ends with an EOB or its 63rd
  coefficient, so it holds at least one AC code), and each block of a progressive DC
  scan its DC table's shortest code (T.81 F.1.2, G.1.2); a progressive AC scan codes at
  most 32767 blocks with one end-of-band run, so it holds at least one AC code per 32767
  blocks (an empty scan is short). A scan holding fewer bits than its blocks need is
  short: a 2 KB file whose SOF says 7000x7000 needs >= 280 KB. Arithmetic-coded scans
  have no such floor and are not bounded.
* **A band never completed**: a progressive JPEG whose scans never bring some coefficient
  of some component down to its last bit (``Al = 0``): the scans after a cut are gone.
  Every common encoder (libjpeg, mozjpeg) ends each coefficient's progression at bit 0.

A scan cut but still above the bound (a real photo cut in half and closed with an EOI)
looks complete from the markers; `padded_scans` gives the file with filler bytes at the
end of every scan's data, which libjpeg skips after a complete scan but decodes as data
in a short one, so the two decodes differ when a scan is short
(`hybrid_retrievers.images.loading` compares them). The filler is a copy of the image's
own first scan bytes, then zeros: it decodes like the blocks it replaces only when those
would be flat mid-grey anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JpegScan", "jpeg_scans", "padded_scans", "scan_problem"]

_SOF_HUFFMAN_SEQUENTIAL = frozenset({0xC0, 0xC1})
_SOF_HUFFMAN_PROGRESSIVE = frozenset({0xC2})
_SOF_PROGRESSIVE = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
_SOF_ANY = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset(range(0xD0, 0xDA)) | {0x01}  # RSTn, SOI, EOI, TEM
_RESTARTS = frozenset(range(0xD0, 0xD8))
_FILLER_BYTES = 64


@dataclass(frozen=True)
class JpegScan:
    """One scan: where its entropy-coded data lies and the fewest bits it can hold.

    Attributes:
        components: the frame component ids the scan codes.
        band: ``(Ss, Se)``, the first and last coefficient (0..63).
        approximation: ``(Ah, Al)``, the successive-approximation bit positions.
        start, end: the offsets of its entropy-coded data (``end`` is where the next
            marker, or the file, starts; restart markers are inside).
        min_bits: the fewest bits a complete scan holds (``None``: no floor is known).
    """

    components: tuple[int, ...]
    band: tuple[int, int]
    approximation: tuple[int, int]
    start: int
    end: int
    min_bits: int | None


@dataclass
class _Frame:
    marker: int
    width: int
    height: int
    sampling: dict[int, tuple[int, int]]  # component id -> (H, V)


def jpeg_scans(data: bytes) -> tuple[_Frame | None, list[JpegScan]]:
    """The frame header and the scans of a JPEG, up to its first EOI (or the end of
    ``data``). A structure this reader cannot follow gives what was read so far: Pillow
    judges such a file when it decodes it."""
    frame: _Frame | None = None
    shortest: dict[tuple[int, int], int] = {}  # (class, id) -> shortest code length
    scans: list[JpegScan] = []
    if data[:2] != b"\xff\xd8":
        return None, scans
    pos, size = 2, len(data)
    while pos + 1 < size:
        if data[pos] != 0xFF:
            return frame, scans
        while pos + 1 < size and data[pos + 1] == 0xFF:  # fill bytes before a marker
            pos += 1
        marker = data[pos + 1]
        pos += 2
        if marker == 0xD9:
            break
        if marker in _STANDALONE:
            continue
        if pos + 2 > size:
            break
        length = int.from_bytes(data[pos:pos + 2], "big")
        body = data[pos + 2:pos + length]
        if length < 2 or len(body) < length - 2:
            break
        pos += length
        if marker in _SOF_ANY and frame is None and len(body) >= 6:
            frame = _read_frame(marker, body)
        elif marker == 0xC4:
            _read_tables(body, shortest)
        elif marker == 0xDA and frame is not None:
            end = _entropy_end(data, pos)
            scan = _read_scan(body, pos, end, frame, shortest)
            if scan is None:
                break
            scans.append(scan)
            pos = end
    return frame, scans


def scan_problem(data: bytes) -> str | None:
    """What shows from the markers that a JPEG's scan data stops short, or ``None``."""
    frame, scans = jpeg_scans(data)
    if frame is None:
        return None
    for number, scan in enumerate(scans, 1):
        have = (scan.end - scan.start) * 8
        if scan.min_bits is not None and have < scan.min_bits:
            return (f"scan {number} holds {scan.end - scan.start:,} bytes of data but a "
                    f"{frame.width}x{frame.height} frame needs at least "
                    f"{-(-scan.min_bits // 8):,}: the scan data ends early (a truncated "
                    "or altered file)")
    if frame.marker in _SOF_PROGRESSIVE and scans:
        for component in frame.sampling:
            lowest = [16] * 64  # the lowest bit sent of each coefficient (0: all bits)
            for scan in scans:
                if component in scan.components:
                    for k in range(scan.band[0], scan.band[1] + 1):
                        lowest[k] = min(lowest[k], scan.approximation[1])
            missing = [k for k in range(64) if lowest[k]]
            if missing:
                return (f"its progressive scans never complete coefficients {missing[0]}.."
                        f"{missing[-1]} of component {component}: scans are missing (a "
                        "truncated file)")
    return None


def padded_scans(data: bytes, scans: list[JpegScan] | None = None) -> bytes | None:
    """``data`` with filler bytes at the end of every scan's entropy-coded data, or
    ``None`` when it has no scan. The filler is a copy of the first scan's first data
    bytes and zeros (never an 0xFF, so never a marker): libjpeg skips it after a complete
    scan, so the decode is unchanged, but decodes it as data in a short scan. ``scans``:
    `jpeg_scans` of ``data`` when the caller has them."""
    if scans is None:
        scans = jpeg_scans(data)[1]
    if not scans:
        return None
    first = scans[0]
    filler = bytes(b for b in data[first.start:first.start + 4 * _FILLER_BYTES] if b != 0xFF)
    filler = filler[:_FILLER_BYTES] + bytes(_FILLER_BYTES)
    pieces, last = [], 0
    for scan in scans:
        pieces += [data[last:scan.end], filler]
        last = scan.end
    pieces.append(data[last:])
    return b"".join(pieces)


def _read_frame(marker: int, body: bytes) -> _Frame:
    height = int.from_bytes(body[1:3], "big")
    width = int.from_bytes(body[3:5], "big")
    sampling = {}
    for i in range(body[5]):
        item = body[6 + 3 * i:9 + 3 * i]
        if len(item) < 3:
            break
        sampling[item[0]] = (max(1, item[1] >> 4), max(1, item[1] & 15))
    return _Frame(marker, width, height, sampling)


def _read_tables(body: bytes, shortest: dict[tuple[int, int], int]) -> None:
    pos = 0
    while pos + 17 <= len(body):
        kind, counts = body[pos], body[pos + 1:pos + 17]
        lengths = [i + 1 for i, count in enumerate(counts) if count]
        if lengths:
            shortest[(kind >> 4, kind & 15)] = lengths[0]
        pos += 17 + sum(counts)


def _entropy_end(data: bytes, pos: int) -> int:
    """Where the entropy-coded data starting at ``pos`` ends: at the next 0xFF that starts
    a marker other than a stuffed 0xFF00 or a restart marker (or at the end of ``data``)."""
    size = len(data)
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= size:
            return size
        follow = data[pos + 1]
        if follow == 0 or follow in _RESTARTS:
            pos += 2
        elif follow == 0xFF:
            pos += 1
        else:
            return pos


def _read_scan(body: bytes, start: int, end: int, frame: _Frame,
               shortest: dict[tuple[int, int], int]) -> JpegScan | None:
    count = body[0] if body else 0
    if count < 1 or len(body) < 4 + 2 * count:
        return None
    selectors = [(body[1 + 2 * i], body[2 + 2 * i]) for i in range(count)]
    ss, se, approx = body[1 + 2 * count], body[2 + 2 * count], body[3 + 2 * count]
    ah, al = approx >> 4, approx & 15
    components = tuple(c for c, _ in selectors)
    return JpegScan(components, (ss, min(se, 63)), (ah, al), start, end,
                    _min_bits(frame, selectors, ss, ah, shortest))


def _min_bits(frame: _Frame, selectors: list[tuple[int, int]], ss: int, ah: int,
              shortest: dict[tuple[int, int], int]) -> int | None:
    """The fewest bits a complete Huffman scan of these components holds (module doc)."""
    sequential = frame.marker in _SOF_HUFFMAN_SEQUENTIAL
    if not (sequential or frame.marker in _SOF_HUFFMAN_PROGRESSIVE):
        return None
    if frame.width < 1 or frame.height < 1 or not frame.sampling:
        return None  # height 0: defined later by a DNL marker
    if any(c not in frame.sampling for c, _ in selectors):
        return None
    h_max = max(h for h, _ in frame.sampling.values())
    v_max = max(v for _, v in frame.sampling.values())
    mcus = _ceil(frame.width, 8 * h_max) * _ceil(frame.height, 8 * v_max)
    bits = 0
    for component, tables in selectors:
        h, v = frame.sampling[component]
        if len(selectors) > 1:  # interleaved: every MCU holds h x v blocks
            blocks = mcus * h * v
        else:
            blocks = (_ceil(_ceil(frame.width * h, h_max), 8)
                      * _ceil(_ceil(frame.height * v, v_max), 8))
        if sequential:
            bits += blocks * (shortest.get((0, tables >> 4), 1)
                              + shortest.get((1, tables & 15), 1))
        elif ss == 0:  # progressive DC scan: a DC code each, or one correction bit each
            bits += blocks * (1 if ah else shortest.get((0, tables >> 4), 1))
        else:  # progressive AC scan: one end-of-band run codes at most 32767 blocks
            bits += _ceil(blocks, 32767) * shortest.get((1, tables & 15), 1)
    return bits


def _ceil(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)
