"""Load a BEIR-format test collection: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

The layout is the one of Thakur et al. 2021 (BEIR)::

    <folder>/corpus.jsonl        {"_id": "d1", "title": "...", "text": "..."} per line
    <folder>/queries.jsonl       {"_id": "q1", "text": "..."} per line
    <folder>/qrels/test.tsv      query-id <TAB> corpus-id <TAB> score, header row optional

Each file may also be gzip-compressed (``corpus.jsonl.gz`` ...); when both forms exist the
uncompressed one is read. Files are decoded as UTF-8 (a leading BOM is skipped) and blank
lines are ignored. Every problem is reported as a ``ValueError`` naming the file and the
1-based line, so a broken download is found in seconds rather than as a KeyError later.

Rules that are decisions rather than format facts:

* Document text is ``title + " " + text`` (just the non-empty one when the other is empty);
  the title is also kept in ``metadata["title"]``. Any other JSON keys of a corpus line
  (BEIR's ``"metadata"`` object, ``"url"``, ...) are copied into the doc's metadata as-is.
* ``_id`` may be a JSON string or integer (integers become strings); ``text`` is required,
  ``title`` is optional.
* The qrels header row is optional: the first line is a header when its score column is not
  an integer (BEIR's own reader always drops the first line, losing a row of headerless
  files). Grades must be integers (``"1.0"`` is an error, as in BEIR's ``int()``).
* A (query, doc) pair repeated with the same grade is kept once; with different grades it is
  an error. A qrels query missing from ``queries.jsonl`` is an error (it cannot be searched).
* A qrels doc missing from the corpus is a **warning** (``UserWarning``), and the judgment is
  kept: official BEIR numbers count it in the recall denominator, and dropping it would
  silently inflate scores. Some published BEIR qrels do reference absent docs.
* ``queries`` keeps only the queries that have judgments in the chosen split, in qrels order.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hybrid_retrievers.types import Doc

__all__ = ["BeirDataset", "load_beir"]


@dataclass(frozen=True)
class BeirDataset:
    """A loaded BEIR collection for one qrels split.

    Attributes:
        name: the folder name (or the bundled dataset's name).
        corpus: ``{doc_id: Doc}`` in file order; ``Doc.text`` is ``title + " " + text``.
        queries: ``{query_id: text}`` for the queries judged in this split.
        qrels: ``{query_id: {doc_id: grade}}``; grade >= 1 is relevant.
        split: the qrels split that was read (``"test"``, ``"dev"``, ...).

    Example:
        >>> from hybrid_retrievers.datasets import load_dataset
        >>> ds = load_dataset("cranfield")
        >>> len(ds.corpus), len(ds.queries)
        (1400, 225)
    """

    name: str
    corpus: dict[str, Doc] = field(repr=False)
    queries: dict[str, str] = field(repr=False)
    qrels: dict[str, dict[str, int]] = field(repr=False)
    split: str = "test"

    def fielded_corpus(self) -> dict[str, Doc]:
        """``corpus`` with the title apart, for BM25F fields: each `Doc`'s text is the
        line's ``text`` alone, its title staying in ``metadata["title"]``.

        `corpus` joins ``title + " " + text`` into `Doc.text` (one field); this is its exact
        inverse, so ``BM25Index.from_docs(ds.fielded_corpus().values(), fields={"title":
        2.0, "text": 1.0})`` indexes each word once, in its own field. A doc whose text
        does not start with its title (built by hand) is kept as it is.

        Example:
            >>> from hybrid_retrievers.datasets import load_dataset
            >>> ds = load_dataset("cranfield")
            >>> doc, apart = ds.corpus["1"], ds.fielded_corpus()["1"]
            >>> doc.text == apart.metadata["title"] + " " + apart.text
            True
        """
        out = {}
        for doc_id, doc in self.corpus.items():
            title = doc.metadata.get("title") or ""
            text = doc.text
            if title and text == title:
                text = ""
            elif title and text.startswith(title + " "):
                text = text[len(title) + 1:]
            out[doc_id] = Doc(doc.id, text, doc.metadata)
        return out

    def __repr__(self) -> str:
        pairs = sum(len(judged) for judged in self.qrels.values())
        return (
            f"BeirDataset(name={self.name!r}, split={self.split!r}, docs={len(self.corpus)}, "
            f"queries={len(self.queries)}, qrels={pairs})"
        )


class _Dir(Protocol):
    """What the loader needs of a folder: ``pathlib.Path`` and importlib ``Traversable``."""

    name: str

    def joinpath(self, *parts: str) -> Any: ...

    def is_dir(self) -> bool: ...

    def iterdir(self) -> Iterator[Any]: ...


def load_beir(path: str | os.PathLike[str] | _Dir, split: str = "test") -> BeirDataset:
    """Read a BEIR folder (plain or ``.gz`` files) into a :class:`BeirDataset`.

    Args:
        path: the folder holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/``. An
            ``importlib.resources`` ``Traversable`` works too (that is how bundled data is
            read from an installed wheel).
        split: the qrels file to read: ``qrels/<split>.tsv``.

    Returns:
        The dataset, named after the folder.

    Raises:
        TypeError: ``path`` or ``split`` has the wrong type.
        FileNotFoundError: the folder or one of its files is missing (the message lists the
            splits that do exist when the qrels file is missing).
        ValueError: a malformed line, naming file and line number.
    """
    if isinstance(path, (str, os.PathLike)):
        folder: Any = Path(path)
    elif hasattr(path, "joinpath") and hasattr(path, "is_dir"):
        folder = path
    else:
        raise TypeError(
            "path must be a folder path (str or os.PathLike), "
            f"got {type(path).__name__}: {path!r:.80}"
        )
    if not isinstance(split, str) or not split or "/" in split or "\\" in split:
        raise ValueError(
            "split must be a qrels file name without extension such as 'test' or 'dev', "
            f"got {split!r}"
        )
    if not folder.is_dir():
        raise FileNotFoundError(
            f"BEIR folder not found: {folder}; expected a folder with corpus.jsonl, "
            "queries.jsonl and qrels/<split>.tsv"
        )

    corpus_file = _find(folder, "corpus.jsonl")
    queries_file = _find(folder, "queries.jsonl")
    qrels_dir = folder.joinpath("qrels")
    qrels_file = _find(qrels_dir, f"{split}.tsv", splits_hint=True) if qrels_dir.is_dir() else None
    if qrels_file is None:
        raise FileNotFoundError(
            f"qrels file not found: {folder}/qrels/{split}.tsv (or .tsv.gz); "
            f"available splits: {_available_splits(qrels_dir)}"
        )

    corpus = _read_corpus(corpus_file)
    all_queries = _read_queries(queries_file)
    qrels, qrels_lines = _read_qrels(qrels_file)

    label = _label(qrels_file)
    missing_queries = [qid for qid in qrels if qid not in all_queries]
    if missing_queries:
        qid = missing_queries[0]
        raise ValueError(
            f"{label} line {qrels_lines[qid]}: query id {qid!r} is not in {_label(queries_file)} "
            f"({len(missing_queries)} judged queries missing in all, e.g. {missing_queries[:5]}); "
            "the qrels and queries files do not belong together"
        )
    unknown_docs = [
        (qid, did) for qid, judged in qrels.items() for did in judged if did not in corpus
    ]
    if unknown_docs:
        warnings.warn(
            f"{label}: {len(unknown_docs)} judgments reference doc ids missing from "
            f"{_label(corpus_file)} (e.g. {unknown_docs[:3]}); they are kept, so they count as "
            "relevant docs that no searcher can retrieve (as in official BEIR numbers)",
            UserWarning,
            stacklevel=2,
        )
    queries = {qid: all_queries[qid] for qid in qrels}
    return BeirDataset(name=folder.name, corpus=corpus, queries=queries, qrels=qrels, split=split)


# --------------------------------------------------------------------------------------
# files


def _find(folder: Any, name: str, splits_hint: bool = False) -> Any:
    for candidate in (name, name + ".gz"):
        entry = folder.joinpath(candidate)
        if entry.is_file():
            return entry
    if splits_hint:
        return None
    raise FileNotFoundError(f"BEIR file not found: {folder}/{name} (or {name}.gz)")


def _available_splits(qrels_dir: Any) -> list[str]:
    if not qrels_dir.is_dir():
        return []
    names = []
    for entry in qrels_dir.iterdir():
        for suffix in (".tsv", ".tsv.gz"):
            if entry.name.endswith(suffix):
                names.append(entry.name[: -len(suffix)])
                break
    return sorted(set(names))


def _label(entry: Any) -> str:
    return str(entry)


def _lines(entry: Any) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text without line ending) for non-blank lines."""
    label = _label(entry)
    with entry.open("rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if entry.name.endswith(".gz") else raw
        number = 0
        try:
            for number, data in enumerate(stream, start=1):
                try:
                    text = data.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"{label} line {number}: not valid UTF-8 ({exc.reason})"
                    ) from None
                text = text.rstrip("\r\n")
                if text.strip():
                    yield number, text
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(
                f"{label}: cannot read past line {number}: {exc}; the file is truncated or "
                "not gzip data (re-download or re-compress it)"
            ) from None


def _json_object(label: str, number: int, text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{label} line {number}: invalid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(obj, dict):
        raise ValueError(f"{label} line {number}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _id_of(label: str, number: int, obj: dict[str, Any]) -> str:
    if "_id" not in obj:
        raise ValueError(f'{label} line {number}: missing "_id" (keys: {sorted(obj)})')
    value = obj["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f'{label} line {number}: "_id" must be a string, got {value!r}')
    value = str(value)
    if not value:
        raise ValueError(f'{label} line {number}: "_id" must not be empty')
    return value


def _str_field(label: str, number: int, obj: dict[str, Any], key: str, required: bool) -> str:
    if key not in obj or obj[key] is None:
        if required:
            raise ValueError(f'{label} line {number}: missing "{key}" (keys: {sorted(obj)})')
        return ""
    value = obj[key]
    if not isinstance(value, str):
        raise ValueError(
            f'{label} line {number}: "{key}" must be a string, '
            f"got {type(value).__name__}: {value!r:.60}"
        )
    return value


def _records(entry: Any, what: str) -> Iterator[tuple[str, int, dict[str, Any], str]]:
    """``(label, line number, object, id)`` of each JSON line, refusing an id seen before.

    ``what`` names the record in the error (``"doc"``, ``"query"``).
    """
    label = _label(entry)
    first_line: dict[str, int] = {}
    for number, text in _lines(entry):
        obj = _json_object(label, number, text)
        record_id = _id_of(label, number, obj)
        if record_id in first_line:
            raise ValueError(
                f"{label} line {number}: duplicate {what} id {record_id!r} "
                f"(first on line {first_line[record_id]})"
            )
        first_line[record_id] = number
        yield label, number, obj, record_id


def _read_corpus(entry: Any) -> dict[str, Doc]:
    corpus: dict[str, Doc] = {}
    for label, number, obj, doc_id in _records(entry, "doc"):
        title = _str_field(label, number, obj, "title", required=False)
        body = _str_field(label, number, obj, "text", required=True)
        joined = f"{title} {body}" if title and body else (title or body)
        metadata = {key: value for key, value in obj.items() if key not in ("_id", "title", "text")}
        metadata["title"] = title
        corpus[doc_id] = Doc(doc_id, joined, metadata)
    return corpus


def _read_queries(entry: Any) -> dict[str, str]:
    return {
        qid: _str_field(label, number, obj, "text", required=True)
        for label, number, obj, qid in _records(entry, "query")
    }


def _read_qrels(entry: Any) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The qrels and, per query, the line of its first judgment (for error messages)."""
    label = _label(entry)
    qrels: dict[str, dict[str, int]] = {}
    seen_at: dict[tuple[str, str], int] = {}
    query_line: dict[str, int] = {}
    first = True
    for number, text in _lines(entry):
        columns = text.split("\t")
        if len(columns) != 3:
            hint = " (columns must be separated by tabs)" if len(text.split()) == 3 else ""
            raise ValueError(
                f"{label} line {number}: expected 3 tab-separated columns "
                f"(query-id, corpus-id, score), got {len(columns)}{hint}: {text!r:.80}"
            )
        qid, doc_id, raw_grade = (column.strip() for column in columns)
        try:
            grade = int(raw_grade)
        except ValueError:
            if first:  # a header row such as "query-id  corpus-id  score"
                first = False
                continue
            raise ValueError(
                f"{label} line {number}: score must be an integer grade, got {raw_grade!r}"
            ) from None
        first = False
        if not qid or not doc_id:
            raise ValueError(f"{label} line {number}: empty query id or corpus id: {text!r:.80}")
        judged = qrels.setdefault(qid, {})
        query_line.setdefault(qid, number)
        if doc_id in judged:
            if judged[doc_id] != grade:
                raise ValueError(
                    f"{label} line {number}: ({qid!r}, {doc_id!r}) judged {grade} here but "
                    f"{judged[doc_id]} on line {seen_at[qid, doc_id]}; keep one grade per pair"
                )
            continue
        judged[doc_id] = grade
        seen_at[qid, doc_id] = number
    if not qrels:
        raise ValueError(f"{label}: no judgments found (the file is empty or only a header)")
    return qrels, query_line
