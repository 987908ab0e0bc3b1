"""The BEIR loader on crafted folders (good and broken) and the bundled Cranfield copy."""

from __future__ import annotations

import collections
import gzip
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

import hybrid_retrievers
from hybrid_retrievers.datasets import available_datasets, load_dataset
from hybrid_retrievers.evaluation import BeirDataset, evaluate_run, load_beir
from hybrid_retrievers.types import Doc

CORPUS = [
    {"_id": "d1", "title": "Okapi", "text": "BM25 ranking"},
    {"_id": "d2", "title": "", "text": "dense vectors"},
    {"_id": 3, "text": "integer id, no title", "url": "http://x"},
    {"_id": "d4", "title": "only a title", "text": ""},
]
QUERIES = [
    {"_id": "q1", "text": "what is bm25"},
    {"_id": "q2", "text": "dense retrieval"},
    {"_id": "q3", "text": "not judged in test"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td2\t1\n"


def jsonl(rows: list) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def make(
    root: Path,
    corpus: str | None = None,
    queries: str | None = None,
    qrels: str | None = None,
    *,
    split: str = "test",
    gz: bool = False,
) -> Path:
    """Write a BEIR folder; ``None`` means the good default content."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "qrels").mkdir(exist_ok=True)
    files = {
        "corpus.jsonl": jsonl(CORPUS) if corpus is None else corpus,
        "queries.jsonl": jsonl(QUERIES) if queries is None else queries,
        f"qrels/{split}.tsv": QRELS if qrels is None else qrels,
    }
    for name, text in files.items():
        if gz:
            (root / (name + ".gz")).write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        else:
            (root / name).write_text(text, encoding="utf-8")
    return root


def test_loads_a_good_folder(tmp_path: Path) -> None:
    ds = load_beir(make(tmp_path / "toy"))
    assert isinstance(ds, BeirDataset)
    assert ds.name == "toy" and ds.split == "test"
    assert list(ds.corpus) == ["d1", "d2", "3", "d4"]
    assert ds.corpus["d1"] == Doc("d1", "Okapi BM25 ranking", {"title": "Okapi"})
    assert ds.corpus["d2"].text == "dense vectors"  # empty title: no leading space
    assert ds.corpus["3"].text == "integer id, no title"
    assert dict(ds.corpus["3"].metadata) == {"title": "", "url": "http://x"}
    assert ds.corpus["d4"].text == "only a title"
    assert ds.queries == {"q1": "what is bm25", "q2": "dense retrieval"}  # q3 not judged
    assert ds.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}
    assert repr(ds) == "BeirDataset(name='toy', split='test', docs=4, queries=2, qrels=3)"


def test_gzip_files_load_the_same(tmp_path: Path) -> None:
    plain = load_beir(make(tmp_path / "toy"))
    packed = load_beir(make(tmp_path / "packed" / "toy", gz=True))
    assert packed.corpus == plain.corpus
    assert (packed.queries, packed.qrels) == (plain.queries, plain.qrels)


def test_other_split_and_missing_split_lists_available(tmp_path: Path) -> None:
    root = make(tmp_path / "toy", split="dev")
    assert load_beir(root, split="dev").split == "dev"
    with pytest.raises(FileNotFoundError, match=r"test\.tsv.*available splits: \['dev'\]"):
        load_beir(root)


@pytest.mark.parametrize("missing", ["corpus.jsonl", "queries.jsonl"])
def test_missing_files_are_named(tmp_path: Path, missing: str) -> None:
    root = make(tmp_path / "toy")
    (root / missing).unlink()
    with pytest.raises(FileNotFoundError, match=missing.replace(".", r"\.")):
        load_beir(root)


def test_missing_folder_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="BEIR folder not found"):
        load_beir(tmp_path / "nope")
    with pytest.raises(TypeError, match="path must be a folder path"):
        load_beir(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="split must be"):
        load_beir(make(tmp_path / "toy"), split="../test")


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    corpus = jsonl(CORPUS[:1]) + '{"_id": "d2", "text": \n'
    with pytest.raises(ValueError, match=r"corpus\.jsonl line 2: invalid JSON"):
        load_beir(make(tmp_path / "toy", corpus=corpus))


def test_non_object_json_line(tmp_path: Path) -> None:
    message = r"queries\.jsonl line 1: expected a JSON object, got list"
    with pytest.raises(ValueError, match=message):
        load_beir(make(tmp_path / "toy", queries='["q1", "text"]\n'))


def test_missing_id(tmp_path: Path) -> None:
    corpus = jsonl(CORPUS[:2]) + jsonl([{"title": "t", "text": "x"}])
    with pytest.raises(ValueError, match=r'corpus\.jsonl line 3: missing "_id"'):
        load_beir(make(tmp_path / "toy", corpus=corpus))


def test_bad_id_type_and_missing_text(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r'line 1: "_id" must be a string'):
        load_beir(make(tmp_path / "a", corpus=jsonl([{"_id": ["x"], "text": "t"}])))
    with pytest.raises(ValueError, match=r'queries\.jsonl line 2: missing "text"'):
        load_beir(make(tmp_path / "b", queries=jsonl([QUERIES[0], {"_id": "q2"}])))
    with pytest.raises(ValueError, match=r'corpus\.jsonl line 1: "title" must be a string'):
        load_beir(make(tmp_path / "c", corpus=jsonl([{"_id": "d1", "title": 5, "text": "t"}])))


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    corpus = jsonl(CORPUS + [{"_id": "d2", "text": "again"}])
    with pytest.raises(ValueError, match=r"line 5: duplicate doc id 'd2' \(first on line 2\)"):
        load_beir(make(tmp_path / "a", corpus=corpus))
    queries = jsonl(QUERIES + [QUERIES[0]])
    with pytest.raises(ValueError, match=r"line 4: duplicate query id 'q1' \(first on line 1\)"):
        load_beir(make(tmp_path / "b", queries=queries))


def test_non_integer_grade(tmp_path: Path) -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1.0\n"
    message = r"test\.tsv line 3: score must be an integer grade, got '1\.0'"
    with pytest.raises(ValueError, match=message):
        load_beir(make(tmp_path / "toy", qrels=qrels))


def test_wrong_column_count(tmp_path: Path) -> None:
    qrels = "q1\td1\t2\nq1\td2\n"
    with pytest.raises(ValueError, match=r"line 2: expected 3 tab-separated columns .* got 2"):
        load_beir(make(tmp_path / "a", qrels=qrels))
    # TREC's four-column format is not BEIR's.
    with pytest.raises(ValueError, match="got 4"):
        load_beir(make(tmp_path / "b", qrels="q1\t0\td1\t2\n"))
    with pytest.raises(ValueError, match="separated by tabs"):
        load_beir(make(tmp_path / "c", qrels="q1 d1 2\n"))


def test_header_row_is_optional(tmp_path: Path) -> None:
    without = load_beir(make(tmp_path / "a", qrels="q1\td1\t2\nq2\td2\t1\n"))
    assert without.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}  # first row is data, kept
    custom = load_beir(make(tmp_path / "b", qrels="qid\tdocid\trel\nq1\td1\t2\n"))
    assert custom.qrels == {"q1": {"d1": 2}}
    # Only the first line may be a header.
    with pytest.raises(ValueError, match="line 2: score must be an integer"):
        load_beir(make(tmp_path / "c", qrels="q1\td1\t2\nquery-id\tcorpus-id\tscore\n"))


def test_blank_lines_crlf_and_bom_are_tolerated(tmp_path: Path) -> None:
    root = make(tmp_path / "toy", qrels="\ufeffq1\td1\t2\r\n\r\nq2\td2\t1\r\n")
    corpus = "\ufeff" + jsonl(CORPUS).replace("\n", "\r\n") + "\n\n"
    (root / "corpus.jsonl").write_text(corpus, encoding="utf-8", newline="")
    ds = load_beir(root)
    assert ds.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}
    assert len(ds.corpus) == 4


def test_empty_qrels_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no judgments found"):
        load_beir(make(tmp_path / "toy", qrels="query-id\tcorpus-id\tscore\n"))


def test_duplicate_judgments(tmp_path: Path) -> None:
    same = load_beir(make(tmp_path / "a", qrels="q1\td1\t2\nq1\td1\t2\n"))
    assert same.qrels == {"q1": {"d1": 2}}
    with pytest.raises(ValueError, match=r"line 2: \('q1', 'd1'\) judged 1 here but 2 on line 1"):
        load_beir(make(tmp_path / "b", qrels="q1\td1\t2\nq1\td1\t1\n"))


def test_qrels_query_missing_from_queries_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"line 2: query id 'q9' is not in .*queries\.jsonl"):
        load_beir(make(tmp_path / "toy", qrels="q1\td1\t2\nq9\td1\t1\n"))


def test_qrels_doc_missing_from_corpus_warns_and_is_kept(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"1 judgments reference doc ids missing .*'q1', 'ghost'"):
        ds = load_beir(make(tmp_path / "toy", qrels="q1\td1\t2\nq1\tghost\t1\n"))
    assert ds.qrels == {"q1": {"d1": 2, "ghost": 1}}
    # The unreachable doc still counts in recall's denominator, as in official BEIR numbers.
    assert evaluate_run({"q1": {"d1": 1.0}}, ds.qrels, ["recall@10"]) == {"recall@10": 0.5}


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    root = make(tmp_path / "toy")
    bad = b'{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": "\xff"}\n'
    (root / "queries.jsonl").write_bytes(bad)
    with pytest.raises(ValueError, match=r"queries\.jsonl line 2: not valid UTF-8"):
        load_beir(root)


def test_truncated_gzip_is_a_clear_error(tmp_path: Path) -> None:
    root = make(tmp_path / "toy", gz=True)
    data = (root / "corpus.jsonl.gz").read_bytes()
    (root / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"corpus\.jsonl\.gz: cannot read past line"):
        load_beir(root)
    (root / "corpus.jsonl.gz").write_bytes(b"not gzip at all\n")
    with pytest.raises(ValueError, match="not gzip data"):
        load_beir(root)


def test_plain_file_wins_over_gz(tmp_path: Path) -> None:
    root = make(tmp_path / "toy", gz=True)
    (root / "queries.jsonl").write_text(jsonl([{"_id": "q1", "text": "plain"}, QUERIES[1]]))
    assert load_beir(root).queries["q1"] == "plain"


# --------------------------------------------------------------------------------------
# bundled data


def test_available_datasets() -> None:
    assert available_datasets() == ["cranfield"]


def test_bundled_cranfield_counts_and_text() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every judged doc exists in the corpus
        ds = load_dataset("cranfield")
    assert ds.name == "cranfield"
    assert len(ds.corpus) == 1400
    assert len(ds.queries) == 225
    assert sum(len(judged) for judged in ds.qrels.values()) == 1612
    grades = collections.Counter(g for judged in ds.qrels.values() for g in judged.values())
    assert grades == {1: 363, 2: 734, 3: 387, 4: 128}
    doc = ds.corpus["1"]
    title = "experimental investigation of the aerodynamics of a wing in a slipstream ."
    assert doc.metadata["title"] == title
    assert doc.text.startswith(doc.metadata["title"] + " ")
    assert ds.corpus["471"].text == ""  # empty in the original collection
    assert ds.queries["1"].startswith("what similarity laws must be obeyed")
    assert all(1 <= len(judged) <= 39 for judged in ds.qrels.values())
    assert load_dataset("Cranfield").qrels == ds.qrels


def test_bundled_files_are_deterministic_gzip() -> None:
    folder = Path(hybrid_retrievers.__file__).parent / "datasets" / "cranfield"
    for name in ("corpus.jsonl.gz", "queries.jsonl.gz", "qrels/test.tsv.gz"):
        header = (folder / name).read_bytes()[:10]
        assert header[:2] == b"\x1f\x8b" and header[4:8] == b"\0\0\0\0", name  # mtime=0
    assert "gzip-compressed" in (folder / "SOURCE.md").read_text(encoding="utf-8")


def test_load_dataset_by_path(tmp_path: Path) -> None:
    root = make(tmp_path / "toy")
    assert load_dataset(root).name == "toy"
    assert load_dataset(str(root)).qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}


def test_load_dataset_unknown_name_lists_bundled() -> None:
    with pytest.raises(ValueError, match=r"unknown dataset 'msmarco'.*\['cranfield'\]"):
        load_dataset("msmarco")
    with pytest.raises(TypeError, match="name_or_path"):
        load_dataset(3)  # type: ignore[arg-type]


def test_bundled_data_loads_from_a_zipped_package(tmp_path: Path) -> None:
    # importlib.resources, not __file__ paths: the data must load from a zip / wheel install.
    package = Path(hybrid_retrievers.__file__).parent
    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for folder, dirs, files in os.walk(package, followlinks=True):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = Path(folder, name)
                zf.write(path, path.relative_to(package.parent).as_posix())
    code = (
        "import hybrid_retrievers.datasets as d; ds = d.load_dataset('cranfield'); "
        "assert 'pkg.zip' in d.__file__, d.__file__; "
        "print(len(ds.corpus), len(ds.queries), sum(map(len, ds.qrels.values())))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(archive)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1400", "225", "1612"]
