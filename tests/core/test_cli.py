"""The hybrid-retrievers command: demo, index, search, eval and its quality gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_retrievers.persistence import current_files
from index_tamper import rebind_pointer, rehash
from hybrid_retrievers.cli import main
from hybrid_retrievers.ingest import folder_models

WHOLE = ["--bm25-only", "--whole-files"]
"""Today's fast path: one BM25 document per file, no model."""


def test_demo_bm25_only(capsys) -> None:
    assert main(["demo", "--bm25-only", "--examples", "1"]) == 0
    out = capsys.readouterr().out
    assert "| bm25 |" in out and "ndcg@10" in out and "score=" in out


def test_index_then_search_with_explanations(tmp_path: Path, capsys, passages) -> None:
    src = tmp_path / "docs"
    src.mkdir()
    for i, text in enumerate(passages):
        (src / f"p{i}.md").write_text(text, encoding="utf-8")
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE]) == 0
    assert main(["search", str(tmp_path / "idx"), "okapi weighting", "-k", "2", "--json",
                 "--explain"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert lines[0]["id"] == "p4.md" and lines[0]["explanation"]["terms"]


def test_index_jsonl_and_bad_inputs(tmp_path: Path, capsys) -> None:
    good = tmp_path / "docs.jsonl"
    good.write_text('{"id": "a", "text": "alpha beta"}\n{"text": "beta gamma"}\n')
    assert main(["index", str(good), "--out", str(tmp_path / "idx"), *WHOLE]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n')
    assert main(["index", str(bad), "--out", str(tmp_path / "idx2"), *WHOLE]) == 1
    assert "line 1" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "nothing"), "q"]) == 1
    assert main(["search", str(tmp_path / "idx"), "   "]) == 1


def test_eval_quality_gate_exit_codes(capsys) -> None:
    assert main(["eval", "cranfield", "--max-queries", "30", "--min", "ndcg@10=0.1"]) == 0
    assert "| bm25 |" in capsys.readouterr().out
    assert main(["eval", "cranfield", "--max-queries", "30", "--min", "ndcg@10=0.99"]) == 1
    captured = capsys.readouterr()
    assert "FAIL bm25: ndcg@10" in captured.out and "quality gate failed" in captured.err
    assert main(["eval", "cranfield", "--min", "ndcg@10"]) == 1
    assert "METRIC=VALUE" in capsys.readouterr().err


def test_eval_several_bm25_variants_and_plot(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "eval.png"
    code = main(["eval", "cranfield", "--retriever", "bm25", "--retriever", "bm25-bm25l",
                 "--max-queries", "20", "--plot", str(out)])
    assert code == 0 and out.stat().st_size > 10_000
    assert "bm25-bm25l" in capsys.readouterr().out


def test_demo_with_a_reranker_adds_a_row(monkeypatch, capsys) -> None:
    """--rerank (as on `search`; --reranker still accepted) wraps the hybrid searcher; a
    stand-in scorer keeps the test fast."""
    pytest.importorskip("sentence_transformers")
    from hybrid_retrievers import rerank
    from hybrid_retrievers.models import HashingEmbedder

    class Overlap:
        model_id = "overlap"

        def score(self, pairs):
            return [len(set(q.split()) & set(p.split())) for q, p in pairs]

    from hybrid_retrievers.cli import _build

    def fake_dense(docs, model, hybrid=False, **kwargs):
        from hybrid_retrievers import FusionSearcher, VectorIndex

        if hybrid:
            return FusionSearcher.hybrid([d.text for d in docs], HashingEmbedder(64),
                                         [d.id for d in docs], [d.metadata for d in docs])
        return VectorIndex.from_docs(docs, embedder=HashingEmbedder(64))

    monkeypatch.setattr(_build, "dense_index", fake_dense)
    monkeypatch.setattr(folder_models, "dense_available", lambda model: None)
    monkeypatch.setattr(folder_models, "sparse_available", lambda model: "not under test here")
    monkeypatch.setattr(rerank.Reranker, "cross_encoder",
                        classmethod(lambda c, model, **kw: c(Overlap())))
    for flag in ("--rerank", "--reranker"):
        assert main(["demo", flag, "any", "--examples", "0"]) == 0
        out = capsys.readouterr().out
        assert "| hybrid+rerank |" in out and "| hybrid |" in out


def test_demo_and_eval_show_the_three_way_row(monkeypatch, capsys, tmp_path) -> None:
    from hybrid_retrievers.cli import _build
    from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder

    def fake_dense(docs, model, hybrid=False, sparse=None, **kwargs):
        from hybrid_retrievers import FusionSearcher, VectorIndex

        if hybrid:
            return FusionSearcher.hybrid([d.text for d in docs], HashingEmbedder(64),
                                         [d.id for d in docs], [d.metadata for d in docs],
                                         sparse=sparse)
        return VectorIndex.from_docs(docs, embedder=HashingEmbedder(64))

    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_build, "dense_index", fake_dense)
    monkeypatch.setattr(folder_models, "dense_available", lambda model: None)
    monkeypatch.setattr(folder_models, "sparse_available", lambda model: None)
    monkeypatch.setattr(_build, "sparse_encoder",
                        lambda model, **kw: (HashingSparseEmbedder(), tmp_path / "sparse"))
    assert main(["demo", "--examples", "0"]) == 0  # the slow SPLADE leg is opt-in
    out = capsys.readouterr().out
    assert "| hybrid |" in out and "| sparse |" not in out and "| hybrid3 |" not in out
    assert "add --sparse for them" in out
    assert main(["demo", "--sparse", "--examples", "1"]) == 0
    out = capsys.readouterr().out
    assert "| sparse |" in out and "| hybrid3 |" in out and "| hybrid |" in out
    assert "hybrid3 fuses BM25, dense and sparse" in out
    args = ["eval", "cranfield", "--retriever", "hybrid", "--retriever", "hybrid3",
            "--retriever", "sparse", "--max-queries", "20"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "| hybrid3 |" in out and "| sparse |" in out
    monkeypatch.setattr(folder_models, "sparse_available",
                        lambda model: "splade-tiny is not installed")
    assert main(["demo", "--sparse", "--examples", "0"]) == 0
    out = capsys.readouterr().out
    assert "three-way retrieval skipped: splade-tiny is not installed" in out
    assert "| hybrid3 |" not in out


def test_gate_bounds_per_retriever_print_pass_and_fail(capsys) -> None:
    args = ["eval", "cranfield", "--retriever", "bm25", "--retriever", "bm25-bm25l",
            "--max-queries", "30"]
    assert main([*args, "--min", "bm25:ndcg@10=0.1", "--min", "recall@100=0.2"]) == 0
    out = capsys.readouterr().out
    assert "PASS bm25: ndcg@10 = " in out and "PASS bm25-bm25l: recall@100" in out
    assert "bm25-bm25l: ndcg@10" not in out and "quality gate passed: 3 of 3" in out
    assert main([*args, "--min", "bm25-bm25l:ndcg@10=0.99", "--min", "bm25:ndcg@10=0.1"]) == 1
    captured = capsys.readouterr()
    assert "FAIL bm25-bm25l: ndcg@10" in captured.out and "PASS bm25: ndcg@10" in captured.out
    assert "1 of 2 bounds not met" in captured.err
    assert main([*args, "--min", "hybrid:ndcg@10=0.4"]) == 1
    assert "not evaluated" in capsys.readouterr().err


def test_every_option_has_help_and_every_subcommand_an_example() -> None:
    from hybrid_retrievers.cli import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    for name, command in sub.choices.items():
        assert "examples:" in command.format_help() and f"hybrid-retrievers {name}" in command.epilog
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_index_help_names_every_suffix_the_cli_reads() -> None:
    from hybrid_retrievers.cli import _parser
    from hybrid_retrievers.ingest.sources import SUFFIXES

    sub = next(a for a in _parser()._actions
               if getattr(a, "choices", None) and "index" in a.choices)
    text = sub.choices["index"].format_help()
    assert [s for s in SUFFIXES if s not in text] == []


def _messy_folder(root: Path) -> Path:
    """Every kind of file a real folder holds, and the odd ones that broke the CLI."""
    import os

    src = root / "src"
    (src / "sub").mkdir(parents=True)
    (src / "notes.md").write_text("# Proxies\n\n" + "filler words here. " * 60
                                  + "Set the https proxy with HTTPS_PROXY.\n", encoding="utf-8")
    (src / "sub" / "guide.rst").write_text("Guide\n=====\n\nA proxy server relays requests.\n")
    (src / "page.html").write_text(
        "<html><head><title>Proxy page</title><style>p {color: red}</style></head><body>"
        "<p>Route <b>secure</b> traffic &amp; more.</p><script>var proxy = 1;</script></body></html>")
    (src / "records.jsonl").write_text('{"id": null, "text": "null id one"}\n'
                                       '{"id": null, "text": "null id two"}\n'
                                       '{"_id": 5, "title": "Five", "text": "numbered"}\n')
    (src / "list.json").write_text('[{"id": "j", "text": "from a json list"}]')
    (src / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (src / "dir.txt").mkdir()
    (src / "image.png").write_bytes(b"\x89PNG")
    if hasattr(os, "mkfifo"):
        os.mkfifo(src / "pipe.txt")
    outside = root / "outside.txt"
    outside.write_text("secret outside text")
    (src / "link.txt").symlink_to(outside)
    return src


def test_index_a_real_folder_skips_and_names_bad_files(tmp_path: Path, capsys) -> None:
    src = _messy_folder(tmp_path)
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE]) == 0
    captured = capsys.readouterr()
    assert "skipped latin1.txt: not UTF-8" in captured.err
    assert "skipped link.txt: symbolic link" in captured.err
    summary = captured.out.strip().splitlines()[-1]
    assert summary.startswith("indexed 5 files (0 unchanged, 0 changed, 5 new") \
        and ": 7 chunks, bm25;" in summary and "skipped 4 files" in summary
    # An image file is not silently ignored: the flags that index it are named.
    assert "skipped image.png: an image, not indexed: pass --describer" in captured.err
    from hybrid_retrievers import FusionSearcher

    index = FusionSearcher.load(tmp_path / "idx").searchers[0]
    ids = {d.id for d in index.docs} if hasattr(index, "docs") else set()
    texts = [h.doc.text for h in index.search("null id", k=5)]
    assert sorted(texts) == ["null id one", "null id two"]  # null ids became content ids
    page = index.search("route traffic", k=1)[0]
    assert page.id == "page.html" and page.doc.metadata["title"] == "Proxy page"
    assert "<b>" not in page.doc.text and "var proxy" not in page.doc.text
    assert not index.search("secret", k=1) and "None" not in ids
    assert index.search("numbered", k=1)[0].id == "5"


def test_index_a_single_bad_file_is_an_error_naming_it(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "menu.txt"
    bad.write_bytes(b"caf\xe9")
    assert main(["index", str(bad), "--out", str(tmp_path / "i")]) == 1
    assert "menu.txt: not UTF-8" in capsys.readouterr().err
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"id": ["x"], "text": "t"}\n')
    assert main(["index", str(ids), "--out", str(tmp_path / "i")]) == 1
    assert "line 1: 'id' must be" in capsys.readouterr().err


def test_search_shows_the_matching_passage_highlighted(tmp_path: Path, capsys) -> None:
    src = _messy_folder(tmp_path)
    main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE])
    capsys.readouterr()
    assert main(["search", str(tmp_path / "idx"), "https proxy", "-k", "2", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "1. sub/guide.rst  chars " in out and "2. notes.md  chars " in out
    assert "score " in out and "(rrf: bm25 #1)" in out
    passage = out.split("2. notes.md")[1].splitlines()[1]
    # The long file's passage is where the terms are, not its first characters.
    assert "Set the **https** **proxy** with" in passage and "# Proxies" not in passage
    assert "contrib" in out and "proxi" in out  # the per-term table


def test_search_refuses_a_tampered_index_without_a_traceback(tmp_path: Path, capsys) -> None:
    import numpy as np

    src = _messy_folder(tmp_path)
    main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE])
    child = current_files(tmp_path / "idx") / "child_0"
    manifest = current_files(child) / "manifest.json"
    data = json.loads(manifest.read_text())
    data["vocabulary_size"] = {"nested": 1}
    manifest.write_text(json.dumps(data))
    rebind_pointer(child)  # a consistent forgery of the child: the fusion's binding refuses it
    assert main(["search", str(tmp_path / "idx"), "proxy"]) == 1
    assert "not the child saved with this fusion" in capsys.readouterr().err
    main(["index", str(src), "--out", str(tmp_path / "idx2"), *WHOLE])
    child = current_files(tmp_path / "idx2") / "child_0"
    target = current_files(child) / "doc_lengths.npy"
    with target.open("wb") as fh:
        np.savez(fh, a=np.arange(3))
    rehash(child)
    assert main(["search", str(tmp_path / "idx2"), "proxy"]) == 1
    assert "error:" in capsys.readouterr().err


def test_search_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    src = tmp_path / "many"
    src.mkdir()
    for i in range(300):
        (src / f"d{i}.txt").write_text(f"proxy document number {i} " * 20)
    main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE])
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "integrations")])}
    result = subprocess.run(
        f'"{sys.executable}" -m hybrid_retrievers search "{tmp_path / "idx"}" proxy -k 300 '
        "--json | head -1", shell=True, capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.startswith("{") and "Traceback" not in result.stderr, result.stderr


def test_dense_index_caches_embeddings_on_disk_and_keeps_inner_bars_off(
    tmp_path: Path, monkeypatch
) -> None:
    """The second build reads every vector from the on-disk EmbeddingCache, and says so."""
    from hybrid_retrievers import models
    from hybrid_retrievers.cli import _build
    from hybrid_retrievers.datasets import load_dataset
    from hybrid_retrievers.models import HashingEmbedder

    made = []

    class Stand(HashingEmbedder):
        def __init__(self, model, show_progress=False):
            super().__init__(dimension=32)
            made.append(show_progress)

        def warm_up(self):
            pass

    monkeypatch.setattr(models, "SentenceTransformerEmbedder", Stand)
    # It would set torch to one thread for the rest of this test process.
    monkeypatch.setattr(_build, "_one_torch_thread_for_queries", lambda embedder: None)
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    docs = list(load_dataset("cranfield").corpus.values())[:50]
    logged: list[str] = []
    first = _build.dense_index(docs, "any-model", progress=False, log=logged.append)
    second = _build.dense_index(docs, "any-model", progress=False, log=logged.append)
    assert made == [False, False]  # sentence-transformers' own bars stay off
    assert "0 distinct texts read from the EmbeddingCache" in logged[0] and "50 encoded" in logged[0]
    assert "50 distinct texts read" in logged[1] and ", 0 encoded" in logged[1]
    assert str(tmp_path / "cache" / "embeddings") in logged[1]
    assert first.search("flow", k=3) == second.search("flow", k=3)
    # The hybrid row is the hybrid recipe over the same cached vectors.
    hybrid = _build.dense_index(docs, "any-model", progress=False, log=logged.append, hybrid=True)
    assert "50 distinct texts read" in logged[2] and hybrid.names == ("bm25", "dense")
    assert hybrid.searchers[1].search("flow", k=3) == first.search("flow", k=3)


def test_demo_prints_a_next_command_that_runs_from_the_users_shell(monkeypatch, capsys,
                                                                    tmp_path) -> None:
    """`make demo` runs the CLI from .venv/bin without activating it: the printed command
    names the program by a path that runs, unless `hybrid-retrievers` on PATH is this one."""
    import os
    import sys

    from hybrid_retrievers.cli import _commands

    monkeypatch.setenv("PATH", str(tmp_path))  # nothing called hybrid-retrievers on PATH
    assert main(["demo", "--bm25-only", "--examples", "0"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1].strip()
    program = _commands.command_name()
    assert last == f"{program} {_commands.NEXT_COMMAND}"
    assert program != "hybrid-retrievers"
    here = os.path.join(os.path.dirname(sys.executable), "hybrid-retrievers")
    if os.path.exists(here):
        assert os.path.samefile(program, here)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    if os.path.exists(here):
        assert _commands.command_name() == "hybrid-retrievers"


def test_a_symlink_loop_is_skipped_and_named_not_the_end_of_the_folder(
    tmp_path: Path, capsys
) -> None:
    """Path.resolve raises RuntimeError for a loop on Python 3.10-3.12; one stray link
    must cost only itself (reliability-r4 F1)."""
    src = tmp_path / "n"
    src.mkdir()
    (src / "a.md").write_text("a proxy note", encoding="utf-8")
    (src / "l1.md").symlink_to("l2.md")
    (src / "l2.md").symlink_to("l1.md")
    (src / "sub").mkdir()
    (src / "sub" / "deep.txt").symlink_to(src / "sub" / "deep.txt")  # a loop on itself
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE]) == 0
    captured = capsys.readouterr()
    for name in ("l1.md", "l2.md", "sub/deep.txt"):
        assert f"skipped {name}: Too many levels of symbolic links" in captured.err
    assert "indexed 1 files" in captured.out and "skipped 3 files" in captured.out


def _indexed(folder: Path) -> set[tuple[str, str, str]]:
    from hybrid_retrievers import FusionSearcher

    docs = FusionSearcher.load(folder).searchers[0].docs
    return {(d.id, d.text, d.metadata["file"]) for d in docs}


def test_a_duplicate_record_id_skips_that_record_and_names_both_places(
    tmp_path: Path, capsys
) -> None:
    """The first claim on an id wins (document files, then record files by name, records
    by line); a later record is skipped and named, the rest is indexed (reliability-r4 F2)."""
    src = tmp_path / "d"
    src.mkdir()
    (src / "a.jsonl").write_text('{"id": "r1", "text": "one"}\n{"id": "r2", "text": "two"}\n'
                                 '{"id": "r2", "text": "two again"}\n')
    (src / "b.jsonl").write_text('{"id": "r1", "text": "other one"}\n{"id": "r3", "text": "3"}\n')
    (src / "ok.md").write_text("a note")
    (src / "c.json").write_text('[{"id": "ok.md", "text": "squatter"}, {"text": "same"}, '
                                '{"text": "same"}]')
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--bm25-only"]) == 0
    captured = capsys.readouterr()
    assert "skipped a.jsonl: line 3: id 'r2' is already used by a.jsonl (line 2); " \
           "record skipped" in captured.err
    assert "skipped b.jsonl: line 1: id 'r1' is already used by a.jsonl (line 1)" in captured.err
    assert "skipped c.json: record 0: id 'ok.md' is already used by ok.md" in captured.err
    assert "skipped c.json: record 2: id" in captured.err  # the same text, no id: one record
    assert "skipped 0 files and 4 records (listed above)" in captured.out
    texts = {text for _, text, _ in _indexed(tmp_path / "idx")}
    assert texts == {"one", "two", "3", "a note", "same"}
    # Whole files: the record ids are the chunk ids; the same rule.
    assert main(["index", str(src), "--out", str(tmp_path / "whole"), *WHOLE]) == 0
    assert {t for _, t, _ in _indexed(tmp_path / "whole")} == texts
    # A single file given directly: its duplicate is skipped, not the file.
    assert main(["index", str(src / "a.jsonl"), "--out", str(tmp_path / "one"),
                 "--bm25-only"]) == 0
    assert {t for _, t, _ in _indexed(tmp_path / "one")} == {"one", "two"}


def test_an_update_settles_duplicate_ids_as_a_clean_build_does(tmp_path: Path, capsys) -> None:
    """Whatever changes, the updated index holds what a clean build of the folder holds:
    an id freed by a deleted file goes to the record that waited for it, and a new file
    earlier in the order takes an id from a file that was not changed."""
    src = tmp_path / "d"
    src.mkdir()
    (src / "a.jsonl").write_text('{"id": "r1", "text": "from a"}\n')
    (src / "b.jsonl").write_text('{"id": "r1", "text": "from b"}\n{"id": "r2", "text": "b2"}\n')
    (src / "k.md").write_text("kept note")
    idx = tmp_path / "idx"

    def check(step: str) -> None:
        clean = tmp_path / f"clean-{step}"
        assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
        assert main(["index", str(src), "--out", str(clean), "--bm25-only"]) == 0
        capsys.readouterr()
        assert _indexed(idx) == _indexed(clean), step

    check("first")
    assert ("r1:0", "from a", "a.jsonl") in _indexed(idx)
    (src / "a.jsonl").unlink()  # b.jsonl is unchanged, but its r1 is free now
    check("a deleted")
    assert ("r1:0", "from b", "b.jsonl") in _indexed(idx)
    (src / "0.jsonl").write_text('{"id": "r2", "text": "from 0"}\n')  # earlier than b
    check("0 added")
    assert ("r2:0", "from 0", "0.jsonl") in _indexed(idx)
    (src / "b.jsonl").rename(src / "0a.jsonl")  # a rename that moves b before... 0 still wins
    check("b renamed")
    (src / "z.md").write_text("a note named like a record")
    (src / "0.jsonl").write_text('{"id": "z.md", "text": "squatter"}\n{"id": "r2", "text": "x"}\n')
    check("a record squats a document's name")
    assert ("z.md:0", "a note named like a record", "z.md") in _indexed(idx)
    (src / "0.jsonl").unlink()
    check("no duplicates left")
    assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
    assert "0 changed" in capsys.readouterr().out  # settled: nothing is read again


def test_a_folder_that_cannot_be_listed_is_named_not_silently_left_out(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """os.walk drops a folder it cannot list without a word (a permission error; root
    reads everything, so the error is made here)."""
    import os

    src = tmp_path / "n"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "inside.md").write_text("hidden from the walk")
    (src / "a.md").write_text("a proxy note")
    scandir = os.scandir

    def refusing(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), *WHOLE]) == 0
    captured = capsys.readouterr()
    assert "skipped locked/: folder not read: Permission denied" in captured.err
    assert "indexed 1 files" in captured.out
