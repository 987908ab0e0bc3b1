"""The quality figures the documentation quotes are the code's figures, written once.

The table "Quality on real test collections" in ``docs/quality.md`` is the one source of
the headline nDCG@10 figures. Its BM25 rows on Cranfield (bundled with the package) are
recomputed here with ``benchmarks/bm25_quality.py``'s own systems and evaluation, so a
change of ranking that moves a figure fails this test until the table is updated. CISI is
not bundled (the benchmarks read it from ``../shared/data``), so its column is checked
only where it is quoted elsewhere: every other place that states a figure of the table
must state the same value.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUALITY = ROOT / "docs" / "quality.md"
HEADING = "## Quality on real test collections (nDCG@10)"

# Table row -> the system of benchmarks/bm25_quality.py that measures it, and the modules
# that system needs.
BM25_ROWS = {
    "LangChain `BM25Retriever` (default)":
        ("LangChain BM25Retriever (default: text.split())", ("langchain_community", "rank_bm25")),
    "bm25s (English stopwords + PyStemmer)":
        ("bm25s (stopwords='en', PyStemmer english)", ("bm25s", "Stemmer")),
    "ours, BM25 default": ("ours (default: lucene, stopwords + Snowball)", ()),
}

# Table row -> the system of benchmarks/fusion_quality.py (dense and hybrid rows): they
# encode Cranfield with MiniLM, minutes on a CPU, so they run with
# HYBRID_RETRIEVERS_SLOW_TESTS=1 only.
FUSION_ROWS = {
    "ours, dense all-MiniLM-L6-v2 (identical to `InMemoryVectorStore`)":
        "dense (VectorIndex, MiniLM-L6)",
    "ours, hybrid BM25 + dense, RRF": "fusion rrf (default)",
    "ours, hybrid, `dist_based_score` fusion": "fusion dist_based_score",
}

# Other places quoting a figure of the table: (file, pattern whose groups are figures,
# the table row and column (0 Cranfield, 1 CISI) of each group).
QUOTES = [
    ("docs/frameworks.md", r'\| text = title \+ body \| `"none"` \| (\S+) / \S+ \| (\S+) / ',
     [("ours, BM25 default", 0), ("ours, BM25 default", 1)]),
    ("docs/search.md", r"\| Cranfield \(225 queries\) \| (\S+) \|", [("ours, BM25 default", 0)]),
    ("docs/search.md", r"\| CISI \(76 queries\) \| (\S+) \|", [("ours, BM25 default", 1)]),
    ("docs/search.md", r"Cranfield default (\S+), in-sample", [("ours, BM25 default", 0)]),
    ("docs/search.md", r"CISI (\S+) / \S+ / \S+ \(p = ", [("ours, BM25 default", 1)]),
    ("docs/search.md", r"\| Cranfield nDCG@10 \| (\S+) \|", [("ours, hybrid BM25 + dense, RRF", 0)]),
    ("docs/search.md", r"\| CISI nDCG@10 \| (\S+) \|", [("ours, hybrid BM25 + dense, RRF", 1)]),
]


def quality_table(text: str) -> dict[str, tuple[str, str]]:
    """``{row label: (Cranfield, CISI)}`` of the table under HEADING, figures as written
    (bold marks removed)."""
    lines = text.split(HEADING, 1)[1].lstrip("\n").splitlines()
    rows = {}
    for line in lines[2:]:  # after the header and the |---| line
        if not line.startswith("|"):
            break
        label, cranfield, cisi = (c.strip().strip("*") for c in line.strip("|").split("|"))
        rows[label] = (cranfield, cisi)
    return rows


TABLE = quality_table(QUALITY.read_text(encoding="utf-8"))


def _bm25_benchmark() -> ModuleType:
    path = ROOT / "benchmarks" / "bm25_quality.py"
    spec = importlib.util.spec_from_file_location("_bm25_quality_benchmark", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_read() -> None:
    assert set(BM25_ROWS) | set(FUSION_ROWS) <= set(TABLE), sorted(TABLE)
    for label, figures in TABLE.items():
        for figure in figures:
            assert re.fullmatch(r"0\.\d{4}", figure), (label, figures)


@pytest.mark.parametrize("row", sorted(BM25_ROWS))
def test_cranfield_bm25_figures_are_what_the_code_computes(row: str) -> None:
    system, needs = BM25_ROWS[row]
    for module in needs:
        pytest.importorskip(module)
    from hybrid_retrievers.datasets import load_dataset

    benchmark = _bm25_benchmark()
    rank = dict(benchmark.SYSTEMS)[system]
    metrics, _, note = benchmark.evaluate(system, load_dataset("cranfield"), rank)
    assert metrics is not None, note
    assert f"{metrics['ndcg@10']:.4f}" == TABLE[row][0], (row, metrics["ndcg@10"])


@pytest.mark.skipif(os.environ.get("HYBRID_RETRIEVERS_SLOW_TESTS") != "1",
                    reason="encodes Cranfield with MiniLM (minutes on a CPU); "
                           "HYBRID_RETRIEVERS_SLOW_TESTS=1 runs it")
def test_cranfield_dense_and_hybrid_figures_are_what_the_code_computes(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("langchain_classic")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fusion_quality.py"), "--datasets",
         "cranfield", "--data-dir", str(tmp_path)],  # no BEIR folder: the bundled Cranfield
        capture_output=True, text=True, timeout=3600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for row, system in FUSION_ROWS.items():
        measured = re.search(rf"^\| {re.escape(system)}\s*\|\s*(\S+)\s*\|", result.stdout, re.M)
        assert measured, (system, result.stdout[-3000:])
        assert measured[1] == TABLE[row][0], (row, measured[1])


@pytest.mark.parametrize("file, pattern, cells", QUOTES, ids=[f"{q[0]}-{n}" for n, q in enumerate(QUOTES)])
def test_quoted_figures_equal_the_table(file: str, pattern: str,
                                        cells: list[tuple[str, int]]) -> None:
    text = (ROOT / file).read_text(encoding="utf-8")
    found = re.findall(pattern, text)
    assert len(found) == 1, f"{file}: {pattern!r} found {len(found)} times"
    values = found[0] if isinstance(found[0], tuple) else (found[0],)
    for value, (row, column) in zip(values, cells):
        assert value == TABLE[row][column], f"{file} says {value} for {row!r}, " \
                                            f"the quality table {TABLE[row][column]}"


def test_the_readme_quotes_no_table_figure() -> None:
    """The README links to the table rather than copying its figures."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    copied = sorted({f for figures in TABLE.values() for f in figures if f in readme})
    assert not copied, copied
