"""``index`` hybrid and incremental, ``search`` showing its work, ``serve`` over MCP.

The dense leg uses a deterministic hashing embedder in place of MiniLM, and the learned
sparse leg `HashingSparseEmbedder` in place of SPLADE (patched where the CLI makes them;
the sparse leg is off unless a test asks for it) so these tests take seconds; one test
runs the real splade-tiny when it is installed. The MCP test runs a real server process
over stdio with the SDK's own client.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hybrid_retrievers.cli import main
from hybrid_retrievers.ingest import FolderIndex, folder_models
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder

ROOT = Path(__file__).resolve().parents[2]


class CountingEmbedder(HashingEmbedder):
    """Counts the texts it encodes (documents), so a test can see what was re-encoded."""

    encoded: list[str] = []

    def embed_documents(self, texts):  # type: ignore[override]
        CountingEmbedder.encoded.extend(texts)
        return super().embed_documents(texts)


class CountingSparseEmbedder(HashingSparseEmbedder):
    """`HashingSparseEmbedder` that records the documents it encodes."""

    encoded: list[str] = []

    def embed_documents(self, texts):  # type: ignore[override]
        CountingSparseEmbedder.encoded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture
def hashing(monkeypatch, tmp_path):
    CountingEmbedder.encoded = []
    monkeypatch.setattr(folder_models, "make_embedder",
                        lambda model: CountingEmbedder(dimension=64))
    monkeypatch.setattr(folder_models, "dense_available", lambda model: None)
    monkeypatch.setattr(folder_models, "sparse_available", lambda model: "off in this test")
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    return CountingEmbedder


@pytest.fixture
def hashing_sparse(monkeypatch, hashing):
    CountingSparseEmbedder.encoded = []
    monkeypatch.setattr(folder_models, "make_sparse_embedder",
                        lambda model, model_id, **options: CountingSparseEmbedder())
    monkeypatch.setattr(folder_models, "sparse_available", lambda model: None)
    return CountingSparseEmbedder


def _folder(root: Path) -> Path:
    src = root / "notes"
    (src / "sub").mkdir(parents=True)
    (src / "proxy.md").write_text(
        "# Network\n\nGeneral words about networks.\n\n## Proxy\n\nSet the HTTPS proxy with "
        "the HTTPS_PROXY variable. Restart the shell afterwards.\n\n```sh\nexport "
        "HTTPS_PROXY=http://proxy:3128\n```\n", encoding="utf-8")
    (src / "sub" / "wings.rst").write_text(
        "Wings\n=====\n\nWings generate lift at low speed.\n\nFlaps\n-----\n\nFlaps add lift "
        "during landing.\n", encoding="utf-8")
    (src / "bread.txt").write_text("Yeast makes bread rise. Steam gives a crust.\n")
    return src


def _load(idx: Path) -> tuple:
    """``(fused searcher, ingest settings)`` of the index folder ``idx``."""
    index = FolderIndex.open(idx)
    return index.fused, index.ingest


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_index_is_hybrid_and_search_shows_file_section_span_and_legs(
    tmp_path: Path, capsys, hashing
) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--chunk-size", "40"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert "indexed 3 files (0 unchanged, 0 changed, 3 new" in summary and "bm25 + dense" in summary
    assert main(["search", str(idx), "https proxy variable", "-k", "3", "--json"]) == 0
    top = _json_lines(capsys.readouterr().out)[0]
    assert top["file"] == "proxy.md" and top["section"] == "Network > Proxy"
    assert set(top["legs"]) == {"bm25", "dense"} and top["legs"]["bm25"]["rank"] == 1
    assert top["mode"] == "rrf" and "**HTTPS_PROXY**" in top["passage"]
    text = (src / "proxy.md").read_text(encoding="utf-8")
    assert text[top["start"]:top["end"]] == top["text"]
    # Parents: the whole section; weights switch the dense leg off; a filter narrows.
    assert main(["search", str(idx), "flaps landing", "-k", "1", "--parents", "--json",
                 "--weights", "dense=0", "--filter", "file=sub/wings.rst"]) == 0
    hit = _json_lines(capsys.readouterr().out)[0]
    assert hit["id"] == "sub/wings.rst#s1" and hit["legs"]["dense"] is None
    assert hit["text"].startswith("Flaps\n-----") and hit["parent"]["n_chunks"] == 1
    assert main(["search", str(idx), "lift", "--weights", "sparse=1"]) == 1
    assert "LEG one of ['bm25', 'dense']" in capsys.readouterr().err
    # Human output: one headline per hit with file, section, span and each leg's rank.
    assert main(["search", str(idx), "https proxy", "-k", "1", "--color", "never"]) == 0
    assert "1. proxy.md › Network > Proxy  chars " in capsys.readouterr().out


def test_both_frameworks_hybrid_retrievers_load_the_index_folder(tmp_path: Path, hashing) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx)]) == 0
    embedder = CountingEmbedder(dimension=64)
    pytest.importorskip("langchain_core")
    from langchain_hybrid_retrievers import HybridRetriever as LangChainHybrid

    docs = LangChainHybrid.load_local(idx, embedder, k=2).invoke("yeast bread")
    assert docs[0].metadata["file"] == "bread.txt"
    pytest.importorskip("llama_index.core")
    from llama_index_hybrid_retrievers import HybridRetriever as LlamaHybrid

    nodes = LlamaHybrid.from_persist_dir(idx, embed_model=embedder).retrieve("yeast bread")
    assert nodes[0].node.metadata["file"] == "bread.txt"


def test_reindex_touches_only_the_changed_file_and_renames_keep_vectors(
    tmp_path: Path, capsys, hashing
) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--no-cache"]) == 0
    assert hashing.encoded
    hashing.encoded = []
    (src / "bread.txt").write_text("Yeast makes bread rise. Sourdough needs a starter.\n")
    capsys.readouterr()
    assert main(["index", str(src), "--out", str(idx), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "(2 unchanged, 1 changed, 0 new, 0 renamed, 0 deleted)" in out
    assert hashing.encoded == ["Yeast makes bread rise. Sourdough needs a starter."]
    # A rename moves the chunks (new ids, same vectors: nothing is encoded); a deleted
    # file leaves the index.
    hashing.encoded = []
    (src / "sub" / "wings.rst").rename(src / "aero.rst")
    (src / "proxy.md").unlink()
    assert main(["index", str(src), "--out", str(idx), "--no-cache"]) == 0
    assert "(1 unchanged, 0 changed, 0 new, 1 renamed, 1 deleted)" in capsys.readouterr().out
    assert hashing.encoded == []
    assert main(["search", str(idx), "flaps", "-k", "5", "--json"]) == 0
    hits = _json_lines(capsys.readouterr().out)
    assert {h["file"] for h in hits} <= {"aero.rst", "bread.txt"}
    assert hits[0]["id"].startswith("aero.rst#") and hits[0]["file"] == "aero.rst"
    assert main(["search", str(idx), "https proxy", "--json", "--weights", "dense=0"]) == 0
    assert not _json_lines(capsys.readouterr().out)
    # Other chunking settings rebuild everything, and say why.
    assert main(["index", str(src), "--out", str(idx), "--no-cache", "--chunk-size", "50"]) == 0
    assert "settings changed (chunk_size 200 -> 50" in capsys.readouterr().out


def test_reindex_and_per_call_mode_and_weights_keep_the_saved_fusion_settings(
    tmp_path: Path, capsys, hashing
) -> None:
    # Issue 44: an update rebuilt the fusion from 5 of its 7 settings (dedup and
    # max_workers were lost), and a per-call mode or weights dropped k_rrf, fetch_k, dedup.
    from hybrid_retrievers.fusion import FusionSearcher

    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--no-cache"]) == 0
    fused, ingest = _load(idx)
    tuned = FusionSearcher(fused.searchers, names=fused.names, weights=[2, 1], k_rrf=7,
                           fetch_k=9, dedup="content", max_workers=1)
    tuned.save(idx, extra_settings={"ingest": ingest})
    (src / "bread.txt").write_text("Yeast makes bread rise. Sourdough needs a starter.\n")
    assert main(["index", str(src), "--out", str(idx), "--no-cache"]) == 0
    assert "1 changed" in capsys.readouterr().out
    loaded = FolderIndex.open(idx)
    plan = loaded.fused.plan
    assert (plan.weights, plan.k_rrf, plan.fetch_k, plan.dedup.value) == \
        ((2.0, 1.0), 7, 9, "content")
    assert loaded.fused._max_workers == 1
    for mode, weights in (("relative_score", None), (None, [1.0, 3.0])):
        per_call = loaded.searcher(mode, weights).plan
        assert (per_call.k_rrf, per_call.fetch_k, per_call.dedup.value) == (7, 9, "content")
        assert per_call.mode.value == (mode or "rrf")
        assert per_call.weights == (tuple(weights) if weights else (2.0, 1.0))


def test_mcp_server_round_trip_with_the_sdk_client(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}
    server = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "hybrid_retrievers", "serve", str(idx)])

    async def session() -> None:
        async with Client(server, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search", "explain"}
            assert tools["search"].annotations.read_only_hint
            found = await client.call_tool("search", {"query": "https proxy", "k": 2})
            results = found.structured_content["results"]
            assert results[0]["file"] == "proxy.md" and results[0]["legs"]["bm25"]["rank"] == 1
            why = await client.call_tool("explain", {"query": "https proxy",
                                                     "id": results[0]["id"]})
            assert why.structured_content["bm25"]["terms"]
            too_many = await client.call_tool("search", {"query": "proxy", "k": 10_000})
            assert too_many.is_error and "k must be an integer from 1 to 50" in str(too_many)
            long = await client.call_tool("search", {"query": "x" * 5000})
            assert long.is_error and "at most 2000 characters" in str(long)
            outside = await client.call_tool("explain", {"query": "x", "id": "/etc/passwd"})
            assert outside.is_error and "no chunk '/etc/passwd'" in str(outside)

    anyio.run(session)


SPARSE = ["--sparse-model", "hashing-sparse"]


def test_the_sparse_leg_is_built_shown_weighted_and_explained(
    tmp_path: Path, capsys, hashing_sparse
) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--chunk-size", "40", *SPARSE]) == 0
    assert "bm25 + dense + sparse" in capsys.readouterr().out.strip().splitlines()[-1]
    fused, ingest = _load(idx)
    assert fused.names == ("bm25", "dense", "sparse") and fused.plan.weights == (0.5, 1.0, 0.5)
    assert ingest["sparse_model"] == "hashing-sparse"
    assert ingest["sparse_model_id"] == HashingSparseEmbedder().model_id
    assert main(["search", str(idx), "https proxy variable", "-k", "3", "--json"]) == 0
    top = _json_lines(capsys.readouterr().out)[0]
    assert top["file"] == "proxy.md" and set(top["legs"]) == {"bm25", "dense", "sparse"}
    assert top["legs"]["sparse"]["rank"] == 1 and top["legs"]["sparse"]["score"] > 0
    # sparse=0 switches the leg off for one query.
    assert main(["search", str(idx), "wing", "-k", "1", "--json", "--weights", "sparse=0"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["legs"]["sparse"] is None
    assert main(["search", str(idx), "https proxy", "-k", "1", "--color", "never"]) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert "(relative_score: bm25 #1, dense #" in headline and headline.endswith(", sparse #1)")
    why = FolderIndex.open(idx).explain("https proxy", top["id"])
    assert {t["token"] for t in why["sparse"]["terms"]} >= {"https", "proxy"}
    assert why["legs"]["sparse"]["rank"] == 1
    # Both frameworks' HybridRetriever load the three-leg folder, given both models.
    embedder, sparse = CountingEmbedder(dimension=64), CountingSparseEmbedder()
    pytest.importorskip("langchain_core")
    from langchain_hybrid_retrievers import HybridRetriever as LangChainHybrid

    docs = LangChainHybrid.load_local(idx, embedder, sparse_embedding=sparse, k=1).invoke(
        "https proxy")
    assert docs[0].metadata["file"] == "proxy.md"
    pytest.importorskip("llama_index.core")
    from llama_index_hybrid_retrievers import HybridRetriever as LlamaHybrid

    nodes = LlamaHybrid.from_persist_dir(idx, embed_model=embedder,
                                         sparse_embed_model=sparse).retrieve("https proxy")
    assert nodes[0].node.metadata["file"] == "proxy.md"


def test_reindex_reuses_sparse_vectors_by_text_and_keeps_the_weights(
    tmp_path: Path, capsys, hashing_sparse
) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--no-cache", *SPARSE]) == 0
    assert hashing_sparse.encoded
    before = _load(idx)[0].leg("sparse")
    vectors = dict(zip(before.ids, before.get_vectors(before.ids)))
    hashing_sparse.encoded = []
    (src / "bread.txt").write_text("Yeast makes bread rise. Sourdough needs a starter.\n")
    (src / "sub" / "wings.rst").rename(src / "aero.rst")
    assert main(["index", str(src), "--out", str(idx), "--no-cache", *SPARSE]) == 0
    assert "(1 unchanged, 1 changed, 0 new, 1 renamed, 0 deleted)" in capsys.readouterr().out
    assert hashing_sparse.encoded == ["Yeast makes bread rise. Sourdough needs a starter."]
    fused = _load(idx)[0]
    assert fused.plan.weights == (0.5, 1.0, 0.5)  # the update keeps the three-way weights
    lexical, dense, sparse = map(fused.leg, ("bm25", "dense", "sparse"))
    assert sorted(sparse.ids) == sorted(lexical.ids) == sorted(dense.ids)
    moved = [i for i in sparse.ids if i.startswith("aero.rst#")]
    assert moved and all(sparse.get_vectors([i])[0]
                         == vectors[i.replace("aero.rst", "sub/wings.rst")] for i in moved)
    assert main(["search", str(idx), "sourdough starter", "-k", "1", "--json"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["legs"]["sparse"]["rank"] == 1
    # --no-sparse is another setting: the index is rebuilt without the leg, and says why.
    assert main(["index", str(src), "--out", str(idx), "--no-cache", "--no-sparse"]) == 0
    assert "settings changed (sparse_model 'hashing-sparse' -> None" in capsys.readouterr().out
    assert _load(idx)[0].names == ("bm25", "dense")


def test_mcp_search_and_explain_show_the_sparse_leg(tmp_path: Path, hashing_sparse) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from hybrid_retrievers.cli._serve import build_server

    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), *SPARSE]) == 0
    server = build_server(FolderIndex.open(idx))

    async def session() -> None:
        async with Client(server) as client:  # the SDK's in-process transport
            found = await client.call_tool("search", {"query": "yeast bread", "k": 2})
            top = found.structured_content["results"][0]
            assert top["file"] == "bread.txt" and top["legs"]["sparse"]["rank"] == 1
            why = await client.call_tool("explain", {"query": "yeast bread", "id": top["id"]})
            assert "yeast" in why.structured_content["sparse_text"]

    anyio.run(session)


def test_index_and_search_with_the_real_splade_tiny(tmp_path: Path, capsys, hashing,
                                                    monkeypatch) -> None:
    """The installed splade-tiny end to end (dense stays the hashing stand-in)."""
    from hybrid_retrievers.models import local_splade_path

    try:
        model = local_splade_path()
    except ImportError as exc:
        pytest.skip(f"{exc}")
    monkeypatch.undo()  # the real sparse_available and model loading, but keep dense fake
    monkeypatch.setattr(folder_models, "make_embedder",
                        lambda model: CountingEmbedder(dimension=64))
    monkeypatch.setattr(folder_models, "dense_available", lambda model: None)
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HYBRID_RETRIEVERS_ONNX_CACHE", str(tmp_path / "onnx"))
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "bm25 + dense + sparse" in out and "Sparse vectors: 0 distinct texts read" in out
    assert _load(idx)[1]["sparse_model"] == model
    assert main(["search", str(idx), "how do I configure a proxy server", "-k", "1",
                 "--json"]) == 0
    captured = capsys.readouterr()
    top = _json_lines(captured.out)[0]
    assert top["file"] == "proxy.md" and top["legs"]["sparse"]["rank"] == 1
    # The model loaded for this query: stderr says so and points to serve.
    assert "loading the query models took sparse" in captured.err
    assert f"hybrid-retrievers serve {idx}` keeps them loaded" in captured.err
    # index exported the sparse query encoder: the query ran on ONNX Runtime
    assert "runs on torch" not in captured.err
    assert (tmp_path / "onnx").is_dir()


def _hostile_folder(root: Path) -> Path:
    """What a real folder throws at the dense and sparse legs too."""
    src = root / "hostile"
    src.mkdir()
    (src / "ok.md").write_text("Set the HTTPS proxy with the HTTPS_PROXY variable.\n")
    (src / "empty.md").write_text("")
    (src / "scripts.html").write_text("<html><body><script>var a = 1;</script></body></html>")
    (src / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (src / "huge.txt").write_text(" ".join(["relayword"] * 30_000))  # no sentence end
    (src / "blob.md").write_text("Q" * 60_000)  # one giant "word"
    (src / "records.jsonl").write_text(
        '{"id": "e", "text": ""}\n{"text": "   "}\n{"id": "r1", "text": "first record"}\n'
        '{"id": "r1", "text": "same id again"}\n{"text": "\\u0000\\u0001 control bytes"}\n'
        '{"text": "\\ud83d\\ude00 an emoji pair"}\n')
    (src / "surrogate.jsonl").write_text('{"text": "a lone \\ud800 surrogate"}\n'
                                         '{"text": "fine"}\n')
    return src


@pytest.mark.parametrize("whole", [False, True], ids=["chunks", "whole-files"])
def test_a_hostile_folder_with_the_dense_and_sparse_legs(
    tmp_path: Path, capsys, hashing_sparse, whole: bool
) -> None:
    """Every bad file or record is skipped and named, none reaches a model as an empty
    or invalid text, and the rest is indexed in all three legs: a lone surrogate in a
    JSON record ended the run ('utf-8' codec can't encode...), and a record with no text
    became an empty document with --whole-files (and vanished unnamed without)."""
    src = _hostile_folder(tmp_path)
    idx = tmp_path / "idx"
    flags = [*SPARSE, *(["--whole-files"] if whole else [])]
    assert main(["index", str(src), "--out", str(idx), *flags]) == 0
    captured = capsys.readouterr()
    for line in ["skipped empty.md: no text", "skipped scripts.html: no text",
                 "skipped binary.txt: looks binary",
                 "skipped records.jsonl: line 1: no text; record skipped",
                 "skipped records.jsonl: line 2: no text; record skipped",
                 "skipped records.jsonl: line 4: id 'r1' is already used by records.jsonl",
                 "skipped surrogate.jsonl: line 1: the text of the record holds a lone "
                 "surrogate '\\ud800'"]:
        assert line in captured.err, line
    assert "skipped 4 files and 3 records (listed above)" in captured.out
    encoded = CountingEmbedder.encoded + CountingSparseEmbedder.encoded
    assert encoded and all(text.strip() for text in encoded)
    fused, _ = _load(idx)
    assert fused.names == ("bm25", "dense", "sparse")
    assert {len(leg) for leg in fused.searchers} == {len(fused.searchers[0])}
    files = {d.metadata["file"] for d in fused.searchers[0].docs}
    assert files == {"ok.md", "huge.txt", "blob.md", "records.jsonl"}
    assert main(["search", str(idx), "control bytes", "-k", "1", "--json"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["text"] == "\x00\x01 control bytes"
    # A re-run keeps the same index (the record file is read again: it had a duplicate).
    before = {d.id: d.text for d in fused.searchers[0].docs}
    assert main(["index", str(src), "--out", str(idx), *flags]) == 0
    assert "(4 unchanged, 0 changed, 0 new" in capsys.readouterr().out
    assert {d.id: d.text for d in _load(idx)[0].searchers[0].docs} == before
