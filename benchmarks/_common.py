"""Helpers shared by the BM25 benchmark scripts: data loading, tables, timing, environment.

The benchmarks never download anything. Test collections are read from a data folder
(``<repo>/../shared/data`` by default, holding BEIR folders such as ``cranfield/`` and
``cisi/``); when a collection is absent, Cranfield falls back to the copy bundled with
the package and any other collection is skipped with a note.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"
RESULTS_DIR = Path(__file__).resolve().parent / "results"

if str(REPO) not in sys.path:  # run as `python benchmarks/x.py` from a source checkout
    sys.path.insert(0, str(REPO))

__all__ = [
    "DEFAULT_DATA_DIR",
    "RESULTS_DIR",
    "Collection",
    "collections",
    "environment_lines",
    "fmt_bytes",
    "fmt_float",
    "load_collection",
    "markdown_table",
    "median",
    "percentile",
    "quiet_third_party",
    "timed",
    "write_results",
]


@dataclass(frozen=True)
class Collection:
    """A loaded test collection and where it came from (for the report)."""

    name: str
    dataset: Any  # hybrid_retrievers.evaluation.BeirDataset
    source: str


def quiet_third_party() -> None:
    """Silence deprecation chatter and progress bars of the competitors (they pollute tables)."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*langchain-community.*")
    os.environ.setdefault("TQDM_DISABLE", "1")
    import logging

    for name in ("bm25s", "llama_index", "numba"):
        logging.getLogger(name).setLevel(logging.ERROR)


def load_collection(name: str, data_dir: Path) -> Collection | None:
    """Load BEIR folder ``data_dir/name``; bundled Cranfield when absent; ``None`` otherwise."""
    from hybrid_retrievers.datasets import load_dataset

    folder = Path(data_dir) / name
    if folder.is_dir():
        return Collection(name, load_dataset(folder), str(folder))
    if name == "cranfield":
        return Collection(name, load_dataset("cranfield"), "bundled copy (hybrid_retrievers.datasets)")
    return None


def collections(names: str, data_dir: Path) -> Iterator[Collection]:
    """The loadable collections of a comma-separated list, noting each one skipped."""
    for name in names.split(","):
        coll = load_collection(name, data_dir)
        if coll is None:
            print(f"skipping {name}: not found under {data_dir}")
            continue
        yield coll


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    """Call ``func`` once; return its result and the wall time in seconds."""
    start = time.perf_counter()
    result = func()
    return result, time.perf_counter() - start


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation, like ``numpy.percentile``."""
    data = sorted(values)
    if not data:
        return float("nan")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_float(value: float | None, digits: int = 4) -> str:
    if value is None or value != value:  # None or NaN
        return "n/a"
    return f"{value:.{digits}f}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table; the first column left-aligned, the rest right."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        out = [values[0].ljust(widths[0])]
        out += [v.rjust(w) for v, w in zip(values[1:], widths[1:])]
        return "| " + " | ".join(out) + " |"

    sep = ["-" * widths[0]] + ["-" * (w - 1) + ":" for w in widths[1:]]
    return "\n".join([line(headers), "| " + " | ".join(sep) + " |", *map(line, cells)])


def environment_lines() -> list[str]:
    """Versions and machine facts a reader needs to interpret the numbers."""
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    import hybrid_retrievers

    packages = ["numpy", "scipy", "bm25s", "numba", "rank-bm25", "langchain-community",
                "llama-index-retrievers-bm25", "PyStemmer"]
    return [
        f"- python {platform.python_version()} on {platform.platform()}; "
        f"{os.cpu_count()} CPUs visible ({_cpu_model()})",
        f"- hybrid-retrievers {hybrid_retrievers.__version__}; "
        + ", ".join(f"{p} {version(p)}" for p in packages),
    ]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    match = re.search(r"model name\s*:\s*(.+)", text)
    return match.group(1).strip() if match else "unknown CPU"


def write_results(name: str, text: str) -> Path:
    """Write ``text`` to ``benchmarks/results/<name>.md`` (the folder is gitignored)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.md"
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path
