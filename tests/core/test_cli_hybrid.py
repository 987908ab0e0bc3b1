"""``index`` hybrid and incremental, ``search`` showing its work, ``serve`` over MCP.

The dense leg uses a deterministic hashing embedder in place of MiniLM (patched where
the CLI makes its embedder) so these tests take seconds; the MCP test runs a real
server process over stdio with the SDK's own client.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hybrid_retrievers.cli import _build, _index, main
from hybrid_retrievers.models import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]


class CountingEmbedder(HashingEmbedder):
    """Counts the texts it encodes (documents), so a test can see what was re-encoded."""

    encoded: list[str] = []

    def embed_documents(self, texts):  # type: ignore[override]
        CountingEmbedder.encoded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture
def hashing(monkeypatch, tmp_path):
    CountingEmbedder.encoded = []
    monkeypatch.setattr(_index, "_make_embedder", lambda model: CountingEmbedder(dimension=64))
    monkeypatch.setattr(_build, "dense_available", lambda model: None)
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    return CountingEmbedder


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
