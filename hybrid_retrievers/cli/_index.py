"""``hybrid-retrievers index``: the arguments to `FolderIndex.build`, and what it did, printed.

The folder format, the incremental update and the image routes are
`hybrid_retrievers.ingest.FolderIndex`'s (``ingest/folder_sync.py``,
``ingest/folder_images.py``); this module turns the command's flags into its options
and prints its progress (stdout), its warnings and the files it skipped (stderr) and the
summary line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..ingest import FolderIndex, IndexReport
from ..ingest.sources import SUFFIXES


def _err(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def _say(*parts: Any) -> None:
    print(*parts, flush=True)


def index_command(args: argparse.Namespace) -> int:
    """Build or update the index folder ``args.out`` from ``args.source``."""
    from ..timeout import check_timeout
    from ..validation import check_number
    from ._images import load_describer

    check_timeout(args.describe_timeout, "--describe-timeout")
    check_number(args.describe_workers, "--describe-workers", low=1, integer=True)
    if args.max_image_pixels is not None:
        check_number(args.max_image_pixels, "--max-image-pixels", low=1, integer=True)
    index = FolderIndex.build(
        args.source, args.out, model=args.model, sparse_model=args.sparse_model,
        bm25_only=args.bm25_only, sparse=not args.no_sparse, chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap, whole_files=args.whole_files,
        language=args.language, method=args.method, rebuild=args.rebuild,
        cache=not args.no_cache,
        describer=load_describer(args.describer) if args.describer else None,
        describe_timeout=args.describe_timeout, describe_workers=args.describe_workers,
        clip_model=args.clip_model, max_image_pixels=args.max_image_pixels,
        log=_say, warn=_err, progress=True)
    report = index.report
    assert report is not None
    _report_skipped(report.skipped)
    _report_other_kinds(report.other_kinds)
    _say(summary(report))
    return 0


def summary(report: IndexReport) -> str:
    """The last line of ``index``: files, chunks, legs, what was remade and skipped, time."""
    dropped = report.dropped_records
    return (f"indexed {report.files} files ({report.plan.summary()}) into "
            f"{report.index_dir}: {report.chunks} chunks, {' + '.join(report.legs)}; "
            f"{report.remade} chunks (re)made; "
            + (f"{report.images}; " if report.images else "") + "skipped "
            f"{len(report.skipped) - dropped} files"
            + (f" and {dropped} record{'s' * (dropped > 1)}" if dropped else "")
            + (" (listed above)" if report.skipped else "")
            + f"; {report.seconds:.1f} s "
              f"({report.hashed / max(report.seconds, 1e-9):.1f} files/s)")


def _report_other_kinds(other_kinds: dict[str, int]) -> None:
    """One line for the files of kinds `index` does not read, so none is left out
    without a word (``.py`` x 8, no suffix x 3...)."""
    if not other_kinds:
        return
    kinds = ", ".join(f"{suffix} x {n}" for suffix, n in list(other_kinds.items())[:8])
    more = len(other_kinds) - 8
    _err(f"left out {sum(other_kinds.values())} files of kinds index does not read "
         f"({kinds}{f', {more} more kinds' if more > 0 else ''}); it reads "
         f"{' '.join(SUFFIXES)}")


def _report_skipped(skipped: list[tuple[str, str]]) -> None:
    for name, why in skipped[:20]:
        _err(f"skipped {name}: {why}")
    if len(skipped) > 20:
        _err(f"... and {len(skipped) - 20} more skipped files")
