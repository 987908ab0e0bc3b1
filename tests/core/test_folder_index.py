"""`FolderIndex`: a folder index built, updated, reopened and searched from Python (issue 44).

The dense leg is `HashingEmbedder` and the learned sparse leg `HashingSparseEmbedder`,
passed as objects (no model is named, loaded or patched), so every test takes seconds.
The counting test goes through the command line as well, where the old code read the
fusion manifest twice per ``search`` and computed each BM25 explanation twice per hit.
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from hybrid_retrievers import BM25Index
from hybrid_retrievers.cli import main
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.ingest import FolderIndex, FolderResult, IndexReport
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.persistence import IndexFormatError, current_files
from hybrid_retrievers.vector import VectorIndex


NOTES = {
    "proxy.md": "# Network\n\nGeneral words about networks.\n\n## Proxy\n\nSet the HTTPS "
                "proxy with the HTTPS_PROXY variable. Restart the shell afterwards.\n",
    "sub/wings.rst": "Wings\n=====\n\nWings generate lift at low speed.\n\nFlaps\n-----\n\n"
                     "Flaps add lift during landing.\n",
    "bread.txt": "Yeast makes bread rise. Steam gives a crust.\n",
}

DATA = Path(__file__).parent / "data"


def _notes(root: Path) -> Path:
    src = root / "notes"
    for name, text in NOTES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    return src


def _build(root: Path, **options) -> tuple[Path, FolderIndex]:
    src = _notes(root)
    index = FolderIndex.build(src, root / "idx", model=HashingEmbedder(64),
                              sparse_model=HashingSparseEmbedder(), chunk_size=40,
                              cache=False, **options)
    return src, index


def test_build_search_update_reopen_search_and_explain(tmp_path: Path) -> None:
    src, index = _build(tmp_path)
    assert isinstance(index.report, IndexReport)
    assert index.report.legs == ("bm25", "dense", "sparse") and index.report.files == 3
    assert index.report.plan.summary() == "0 unchanged, 0 changed, 3 new, 0 renamed, 0 deleted"
    top = index.search("https proxy variable", k=2)[0]
    assert isinstance(top, FolderResult)
    assert (top.file, top.section, top.legs["bm25"]["rank"]) == ("proxy.md", "Network > Proxy", 1)
    assert set(top.legs) == {"bm25", "dense", "sparse"} and top.mode == "relative_score"
    assert "**HTTPS_PROXY**" in top.passage
    assert (src / "proxy.md").read_text()[top.start:top.end] == top.text
    assert top.explanation is None and top.as_dict()["legs"] == top.legs

    # Edit one file, delete one, add one; update with the recorded source and settings.
    (src / "bread.txt").write_text("Yeast makes bread rise. Sourdough needs a starter.\n")
    (src / "sub" / "wings.rst").unlink()
    (src / "piano.md").write_text("# Piano\n\nTune a piano with a tuning fork.\n")
    report = index.update()
    assert report.plan.summary() == "1 unchanged, 1 changed, 1 new, 0 renamed, 1 deleted"
    assert report.rebuilt is None and index.report is report
    assert index.search("sourdough starter", k=1)[0].file == "bread.txt"
    assert {d.metadata["file"] for d in index.lexical.docs} == {"proxy.md", "bread.txt",
                                                                "piano.md"}

    # A new object over the same folder sees the update, with the same legs and weights.
    again = FolderIndex.open(tmp_path / "idx", model=HashingEmbedder(64),
                             sparse_model=HashingSparseEmbedder())
    assert again.names == ("bm25", "dense", "sparse") and len(again) == len(index)
    assert again.fused.plan.weights == (0.5, 1.0, 0.5)
    assert again.source == src.resolve()
    hits = again.search("tuning fork", k=1, explain=True, weights={"dense": 0})
    assert hits[0].file == "piano.md" and hits[0].legs["dense"] is None
    assert hits[0].explanation.score > 0
    assert {t["term"] for t in hits[0].as_dict()["explanation"]["terms"]} >= {"fork"}
    why = again.explain("tuning fork", hits[0].id)
    assert why["fused_rank"] == 1 and why["legs"]["bm25"]["rank"] == 1
    assert "fork" in why["bm25_text"] and "sparse" in why
    # Nothing changed since: the next update only hashes.
    assert again.update().plan.summary().startswith("3 unchanged, 0 changed, 0 new")


def test_errors_name_the_folder_or_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no index at .*nowhere.*does not exist"):
        FolderIndex.open(tmp_path / "nowhere")
    _, index = _build(tmp_path)
    with pytest.raises(KeyError, match="no chunk 'nope' in .*idx"):
        index.explain("x", "nope")
    with pytest.raises(ValueError, match=r"weights name legs \['colbert'\].*'bm25', 'dense'"):
        index.search("x", weights={"colbert": 1})
    # A dense leg whose model is neither recorded nor given: the error names the option.
    index.fused.save(tmp_path / "unnamed", extra_settings={"ingest": {**index.ingest,
                                                                     "model": None}})
    with pytest.raises(ValueError, match="unnamed holds a dense leg but records no model; "
                                         "pass model="):
        FolderIndex.open(tmp_path / "unnamed")
    (tmp_path / "idx" / "manifest.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match=r"idx.*manifest\.json"):
        FolderIndex.open(tmp_path / "idx")
    with pytest.raises(ValueError, match="nothing to index under .*empty: every file was skipped "
                                         r"\(blank\.md: no text"):
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "blank.md").write_text("  \n")
        FolderIndex.build(tmp_path / "empty", tmp_path / "idx2", bm25_only=True)


def test_an_index_in_the_format_the_old_cli_wrote_opens_and_updates(tmp_path: Path) -> None:
    """The format is unchanged: a fusion saved with an ``"ingest"`` block that records no
    source folder (as ``index`` wrote it before `FolderIndex`) opens and searches; its
    update asks for the folder, then applies the plan."""
    src = _notes(tmp_path)
    built = FolderIndex.build(src, tmp_path / "idx", bm25_only=True, whole_files=True)
    ingest = {k: v for k, v in built.ingest.items() if k != "source"}
    built.fused.save(tmp_path / "old", extra_settings={"ingest": ingest})
    old = FolderIndex.open(tmp_path / "old")
    assert old.source is None and old.search("yeast", k=1)[0].file == "bread.txt"
    with pytest.raises(ValueError, match="records no source folder.*update\\(source=FOLDER\\)"):
        old.update()
    (src / "bread.txt").unlink()
    assert old.update(src).plan.summary() == "2 unchanged, 0 changed, 0 new, 0 renamed, 1 deleted"
    # A bare BM25Index folder (the oldest format) opens as a one-leg index.
    BM25Index.from_texts(["yeast bread"], ["b"], [{"file": "b.txt"}]).save(tmp_path / "bare")
    assert FolderIndex.open(tmp_path / "bare").search("bread", k=1)[0].file == "b.txt"
    # ... and so does one in the first layout (format 1: no version directories).
    shutil.copytree(DATA / "bm25_analyzer_v1", tmp_path / "bare_v1")
    assert FolderIndex.open(tmp_path / "bare_v1").search("wing lift", k=1)[0].id == "wing"


def test_a_folder_holding_another_kind_of_index_is_refused_naming_it(tmp_path: Path) -> None:
    """Which loader opens a folder is read from its manifest's kind, never guessed from
    an error's words: a vector index (in a folder whose name says bm25) is refused as
    such, not loaded as BM25; a broken fusion in such a folder reports its own fault."""
    vectors = tmp_path / "bm25-vectors"
    VectorIndex.from_vectors(np.eye(2, dtype=np.float32), ids=["a", "b"]).save(vectors)
    with pytest.raises(IndexFormatError, match=rf"^{re.escape(str(vectors))} holds a 'vector' "
                                                r"index, not a folder index \(a fusion"):
        FolderIndex.open(vectors)
    with pytest.raises(IndexFormatError, match=r"^shelf holds a 'vector' index"):
        FolderIndex.open(vectors, label="shelf")
    foreign = tmp_path / "bm25-foreign"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"format": "someone-else", "kind": "bm25"}')
    with pytest.raises(IndexFormatError, match="bm25-foreign.*is not a hybrid-retrievers "
                                               "manifest"):
        FolderIndex.open(foreign)
    _, built = _build(tmp_path)
    fusion = tmp_path / "bm25-fusion"
    built.fused.save(fusion, extra_settings={"ingest": built.ingest})
    child = current_files(fusion) / "child_0" / "manifest.json"
    child.write_text(child.read_text() + "\n")  # swapped: its checksum differs
    with pytest.raises(IndexFormatError, match="child_0.*is not the child saved with this "
                                               "fusion"):
        FolderIndex.open(fusion)


def test_search_reads_the_manifest_once_and_explains_each_hit_once(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """``search --explain`` read the fusion manifest twice (once for the ingest settings,
    again in FusionSearcher.load) and ran BM25's explain twice per hit (once for the
    JSON record, once for the printed table)."""
    from hybrid_retrievers.fusion import saving

    src = _notes(tmp_path)
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--bm25-only"]) == 0
    reads: list[str] = []
    explained: list[str] = []
    real_read, real_explain = saving.read_index, BM25Index.explain

    def counting_read(path, *args, **kwargs):
        if kwargs.get("kind") == "fusion":
            reads.append(str(path))
        return real_read(path, *args, **kwargs)

    def counting_explain(self, query, doc_id, *args, **kwargs):
        explained.append(doc_id)
        return real_explain(self, query, doc_id, *args, **kwargs)

    monkeypatch.setattr(saving, "read_index", counting_read)
    monkeypatch.setattr(BM25Index, "explain", counting_explain)
    capsys.readouterr()
    for extra in ([], ["--json"]):
        reads.clear(), explained.clear()
        assert main(["search", str(tmp_path / "idx"), "lift wings", "-k", "2", "--explain",
                     *extra]) == 0
        out = capsys.readouterr().out
        assert len(reads) == 1, reads
        assert len(explained) == 2 and len(set(explained)) == 2, explained
        assert ("idf" in out) if not extra else ('"explanation"' in out)


def test_concurrent_first_searches_load_each_query_encoder_once(tmp_path: Path) -> None:
    """The MCP server's threads share one index: the lazy encoder loads once."""

    class Lazy(HashingEmbedder):
        warmed = 0

        def __init__(self) -> None:
            super().__init__(dimension=64)
            self.is_loaded = False

        def warm_up(self) -> None:
            Lazy.warmed += 1
            threading.Event().wait(0.05)  # a slow model load, so the threads overlap
            self.is_loaded = True

    _build(tmp_path)
    index = FolderIndex.open(tmp_path / "idx", model=Lazy(), sparse_model=HashingSparseEmbedder())
    results: list[str] = []

    def ask() -> None:
        results.append(index.search("yeast bread", k=1)[0].file)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["bread.txt"] * 6
    assert Lazy.warmed == 1 and [leg for leg, _ in index.loads] == ["dense"]


def test_the_cli_index_and_the_class_write_the_same_folder(tmp_path: Path, monkeypatch) -> None:
    """``index`` is a shell over `FolderIndex.build`: same chunks, same settings."""
    src = _notes(tmp_path)
    assert main(["index", str(src), "--out", str(tmp_path / "cli"), "--bm25-only",
                 "--chunk-size", "40"]) == 0
    built = FolderIndex.build(src, tmp_path / "py", bm25_only=True, chunk_size=40)
    cli = FolderIndex.open(tmp_path / "cli")
    assert [(d.id, d.text) for d in cli.lexical.docs] == \
        [(d.id, d.text) for d in built.lexical.docs]
    assert cli.ingest == built.ingest
    assert isinstance(cli.fused, FusionSearcher) and cli.names == ("bm25",)


def test_an_update_keeps_the_exported_query_encoders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build exports each model's query side (`hybrid_retrievers.models.onnx_query`);
    an index opened with those exports, updated with its own models, records them again
    (its models are the ONNX-fronted ones: the update must see through them) and still
    searches on ONNX Runtime."""
    for module in ("sentence_transformers", "onnxruntime", "onnx", "tokenizers"):
        pytest.importorskip(module)
    from tiny_bi_encoder import build_tiny_bi_encoder

    monkeypatch.setenv("HYBRID_RETRIEVERS_ONNX_CACHE", str(tmp_path / "onnx"))
    src = _notes(tmp_path)
    FolderIndex.build(src, tmp_path / "idx", model=str(build_tiny_bi_encoder(tmp_path / "bi")),
                      sparse=False, chunk_size=40, cache=False)
    index = FolderIndex.open(tmp_path / "idx")
    recorded = index.ingest["query_encoders"]
    assert set(recorded) == {"dense"} and recorded["dense"]["folder"]
    (src / "bread.txt").write_text("Sourdough bread needs a starter.\n", encoding="utf-8")
    index.update()
    again = FolderIndex.open(tmp_path / "idx")
    assert again.ingest["query_encoders"] == recorded
    assert again.search("sourdough starter", k=1)[0].file == "bread.txt"
    assert again.fused.leg("dense").embedder.runtime == "onnx" and not again.notes
