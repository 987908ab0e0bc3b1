"""Images through the command line: ``index --describer / --clip-model``, ``search`` over them.

Pictures are drawn with Pillow into a temp folder next to markdown notes. Describers come
from ``tests/image_describers.py`` by ``--describer image_describers:NAME`` (the CLI imports
it as it would a user's module); they describe the pixels (the dominant colour), so the
searches below find images by what is in them. Most tests build BM25 only (seconds); one
adds the hashing dense embedder to show that descriptions are documents of every text
leg. The CLIP tests use the tiny CLIP trained on coloured squares (`tiny_clip`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import image_describers
from hybrid_retrievers.cli import main
from hybrid_retrievers.ingest import FolderIndex, folder_models
from hybrid_retrievers.cli._images import load_describer
from hybrid_retrievers.models import HashingEmbedder

pytest.importorskip("PIL")

RED, BLUE, YELLOW = (220, 30, 30), (30, 50, 220), (235, 215, 30)


def _square(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> Path:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (250, 250, 250))
    w, h = size
    ImageDraw.Draw(image).rectangle([w // 5, h // 5, w * 4 // 5, h * 4 // 5], fill=colour)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def _folder(root: Path) -> Path:
    src = root / "notes"
    (src / "pics").mkdir(parents=True)
    (src / "proxy.md").write_text("# Proxy\n\nSet the HTTPS proxy with the HTTPS_PROXY "
                                  "variable.\n", encoding="utf-8")
    (src / "bread.md").write_text("# Bread\n\nYeast makes bread rise.\n", encoding="utf-8")
    _square(src / "pics" / "red.png", RED)
    _square(src / "pics" / "blue.png", BLUE)
    _square(src / "yellow.jpg", YELLOW)
    return src


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    image_describers.CALLS.clear()
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))


def _index_docs(idx: Path) -> list:
    return FolderIndex.open(idx).lexical.docs


def test_without_describer_or_clip_images_are_skipped_with_a_hint(tmp_path, capsys) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
    captured = capsys.readouterr()
    for name in ("pics/red.png", "pics/blue.png", "yellow.jpg"):
        assert f"skipped {name}: an image, not indexed: pass --describer MODULE:ATTR" in captured.err
    assert "--clip-model PATH_OR_NAME" in captured.err
    assert "indexed 2 files" in captured.out and "skipped 3 files" in captured.out
    assert {d.metadata["file"] for d in _index_docs(idx)} == {"proxy.md", "bread.md"}


def test_descriptions_are_documents_of_every_text_leg_and_never_asked_twice(
    tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setattr(folder_models, "make_embedder",
                        lambda model: HashingEmbedder(dimension=64))
    monkeypatch.setattr(folder_models, "dense_available", lambda model: None)
    monkeypatch.setattr(folder_models, "sparse_available", lambda model: "off in this test")
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    args = ["index", str(src), "--out", str(idx), "--describer", "image_describers:counting"]
    assert main(args) == 0
    assert sorted(image_describers.CALLS) == ["blue.png", "red.png", "yellow.jpg"]
    assert "3 images described by counting, 0 from the description cache" in capsys.readouterr().out
    red = next(d for d in _index_docs(idx) if d.metadata.get("image") == "pics/red.png")
    assert red.text == "A 64x48 picture, mostly red."
    assert red.id.startswith("image-") and red.metadata["type"] == "image"
    assert red.metadata["file"] == "pics/red.png" and len(red.metadata["file_sha256"]) == 64
    assert red.metadata["describer"] == "counting"
    # Search: the image is found by BM25 and dense alike, marked as an image.
    assert main(["search", str(idx), "a mostly red picture", "-k", "3", "--json"]) == 0
    top = _json_lines(capsys.readouterr().out)[0]
    assert top["type"] == "image" and top["image"] == "pics/red.png" and top["id"] == red.id
    assert top["legs"]["bm25"]["rank"] == 1 and top["legs"]["dense"] is not None
    assert "descriptions" in top["routes"] and top["visual_words"] == ["picture"]
    assert main(["search", str(idx), "red picture", "-k", "2", "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "1. [image] pics/red.png  score " in out and "(routes: descriptions #1" in out
    assert "routes asked: text x1, descriptions x2" in out
    # Unchanged, rebuilt, renamed: the describer is never asked again.
    image_describers.CALLS.clear()
    assert main(args) == 0
    assert main([*args, "--rebuild"]) == 0
    (src / "pics" / "red.png").rename(src / "pics" / "scarlet.png")
    assert main(args) == 0
    assert image_describers.CALLS == []
    moved = [d for d in _index_docs(idx) if d.id == red.id]
    assert [d.metadata["image"] for d in moved] == ["pics/scarlet.png"]
    # Without --describer, a re-run keeps the descriptions of unchanged images.
    assert main(["index", str(src), "--out", str(idx)]) == 0
    assert sum(d.metadata.get("type") == "image" for d in _index_docs(idx)) == 3
    # Text files are searched as before, as the text route.
    assert main(["search", str(idx), "https proxy variable", "-k", "1", "--json"]) == 0
    hit = _json_lines(capsys.readouterr().out)[-1]
    assert hit["file"] == "proxy.md" and "type" not in hit and "text" in hit["routes"]


def test_a_failing_or_hanging_describer_skips_that_image_and_keeps_the_rest(
    tmp_path, capsys
) -> None:
    src = _folder(tmp_path)
    _square(src / "broken.png", RED, size=(30, 30))
    _square(src / "slow.png", BLUE, size=(40, 40))
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only",
                 "--describer", "image_describers:picky"]) == 0
    err = capsys.readouterr().err
    assert "skipped broken.png: picky gave no description (RuntimeError: the vision model " \
           "refused this image)" in err
    assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--describe-timeout",
                 "0.5", "--describer", "image_describers:hanging"]) == 0
    captured = capsys.readouterr()
    assert "skipped slow.png: hanging gave no description" in captured.err
    assert "timed out" in captured.err or "0.5" in captured.err
    files = {d.metadata["file"] for d in _index_docs(idx)}
    assert files == {"proxy.md", "bread.md", "pics/red.png", "pics/blue.png", "yellow.jpg",
                     "broken.png"}
    # An image that failed is asked again next time; the others come from the cache
    # (picky described slow.png in the first run: the cache is per describer).
    image_describers.CALLS.clear()
    assert main(["index", str(src), "--out", str(idx), "--bm25-only",
                 "--describer", "image_describers:picky"]) == 0
    assert image_describers.CALLS == ["broken.png"]
    assert "slow.png" in {d.metadata["file"] for d in _index_docs(idx)}


def test_describe_workers_overlap_the_calls_and_index_the_same(tmp_path, capsys) -> None:
    from hybrid_retrievers.images import DescriptionCache

    src = _folder(tmp_path)
    _square(src / "slow.png", BLUE, size=(40, 40))
    for i in range(4):
        _square(src / "more" / f"square{i}.png", RED, size=(20 + i, 20))
    built = []
    for workers in ("1", "3"):
        idx = tmp_path / f"idx-{workers}"
        assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--describe-timeout",
                     "0.5", "--describer", "image_describers:hanging",
                     "--describe-workers", workers]) == 0
        err = capsys.readouterr().err
        docs = [(d.id, d.text, dict(d.metadata)) for d in _index_docs(idx)]
        cache = DescriptionCache(idx / "images" / "descriptions")
        built.append((docs, [line for line in err.splitlines() if "skipped" in line],
                      len(cache)))
    assert built[0] == built[1]
    docs, skipped, cached = built[0]
    assert len(docs) == 2 + 7 and cached == 7  # notes; images but slow.png
    assert len(skipped) == 1 and "skipped slow.png: hanging gave no description" in skipped[0]
    assert main(["index", str(src), "--out", str(tmp_path / "x"), "--bm25-only",
                 "--describer", "image_describers:counting", "--describe-workers", "0"]) == 1
    assert "--describe-workers must be >= 1, got 0" in capsys.readouterr().err


def test_bad_image_files_are_skipped_and_named(tmp_path, capsys) -> None:
    src = _folder(tmp_path)
    data = (src / "pics" / "red.png").read_bytes()
    (src / "truncated.png").write_bytes(data[: len(data) // 2])
    (src / "fake.jpg").write_text("not an image at all", encoding="utf-8")
    _square(src / "huge.png", YELLOW, size=(300, 200))
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--max-image-pixels",
                 "20000", "--describer", "image_describers:counting"]) == 0
    err = capsys.readouterr().err
    assert "skipped truncated.png: " in err and "skipped fake.jpg: " in err
    assert "skipped huge.png: " in err
    files = {d.metadata["file"] for d in _index_docs(idx)}
    assert files == {"proxy.md", "bread.md", "pics/red.png", "pics/blue.png", "yellow.jpg"}


def test_copies_of_one_image_are_one_document(tmp_path, capsys) -> None:
    src = _folder(tmp_path)
    (src / "pics" / "red-copy.png").write_bytes((src / "pics" / "red.png").read_bytes())
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only",
                 "--describer", "image_describers:counting"]) == 0
    assert "skipped pics/red.png: the same image as pics/red-copy.png" in capsys.readouterr().err
    assert main(["index", str(src), "--out", str(idx), "--bm25-only",
                 "--describer", "image_describers:counting"]) == 0
    assert sorted(image_describers.CALLS) == ["blue.png", "red-copy.png", "yellow.jpg"]


def test_describer_spec_classes_factories_and_errors(tmp_path, capsys) -> None:
    assert load_describer("image_describers:counting") is image_describers.counting
    assert type(load_describer("image_describers:Captioner")).__name__ == "Captioner"
    assert load_describer("image_describers:make_describer").name == "captioner-v2"
    src = _folder(tmp_path)
    for spec, message in (("image_describers", "expects MODULE:ATTR"),
                          ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
                          ("image_describers:nope", "has no attribute 'nope'"),
                          ("image_describers:PALETTE", "is a dict, not a describer")):
        assert main(["index", str(src), "--out", str(tmp_path / "x"), "--bm25-only",
                     "--describer", spec]) == 1
        err = capsys.readouterr().err
        assert "--describer" in err and spec in err and message in err
    # Another describer describes again (its name is part of the cache key).
    idx = tmp_path / "idx"
    for spec in ("image_describers:counting", "image_describers:make_describer"):
        assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--describer", spec]) == 0
    assert len(image_describers.CALLS) == 6
    assert {d.metadata.get("describer") for d in _index_docs(idx)} == {None, "captioner-v2"}


def test_search_by_image_needs_clip_or_a_describer(tmp_path, capsys) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only",
                 "--describer", "image_describers:counting"]) == 0
    query = _square(tmp_path / "query.png", RED, size=(50, 50))
    assert main(["search", str(idx), "--image", str(query)]) == 1
    assert "no CLIP image vectors (index with --clip-model)" in capsys.readouterr().err
    assert main(["search", str(idx)]) == 1
    assert "needs a QUERY, an --image PATH, or both" in capsys.readouterr().err
    # With a describer, the query image is described and its description searches the
    # text route (MultimodalSearcher's described_image route).
    (src / "hall.md").write_text("# Hall\n\nA mostly red picture hangs in the hall.\n")
    assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
    capsys.readouterr()
    assert main(["search", str(idx), "--image", str(query), "--describer",
                 "image_describers:counting", "-k", "1", "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "1. hall.md › Hall  chars " in out and "(routes: described_image #1" in out
    assert "query image described as: A 50x50 picture, mostly red." in out


# ---------------------------------------------------------------------- CLIP


def test_clip_vectors_are_built_incrementally_and_searched(tmp_path, capsys,
                                                          tiny_clip_path) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    args = ["index", str(src), "--out", str(idx), "--bm25-only", "--clip-model", tiny_clip_path]
    assert main(args) == 0
    assert "3 CLIP vectors (3 new, 0 removed)" in capsys.readouterr().out
    assert (idx / "images" / "clip" / "manifest.json").is_file()
    # Text -> image: the colour's name finds its square.
    assert main(["search", str(idx), "red", "-k", "3", "--json"]) == 0
    hits = _json_lines(capsys.readouterr().out)
    assert hits[0]["image"] == "pics/red.png" and "images" in hits[0]["routes"]
    # Image -> image.
    query = _square(tmp_path / "query.png", BLUE, size=(60, 60))
    assert main(["search", str(idx), "--image", str(query), "-k", "1", "--color", "never"]) == 0
    assert "1. [image] pics/blue.png  score " in capsys.readouterr().out
    # Unchanged: nothing embedded; a removed image leaves; a renamed one keeps its vector.
    (src / "yellow.jpg").unlink()
    (src / "pics" / "red.png").rename(src / "pics" / "crimson.png")
    assert main(args[:-2]) == 0  # the recorded model is used again
    out = capsys.readouterr().out
    assert "updating with the recorded model" in out and "2 CLIP vectors (0 new, 1 removed)" in out
    assert main(["search", str(idx), "red", "-k", "1", "--json"]) == 0
    assert _json_lines(capsys.readouterr().out)[0]["image"] == "pics/crimson.png"


def test_clip_and_descriptions_merge_into_one_result(tmp_path, capsys, tiny_clip_path) -> None:
    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--clip-model",
                 tiny_clip_path, "--describer", "image_describers:counting"]) == 0
    assert main(["search", str(idx), "picture of red", "-k", "2", "--json"]) == 0
    top = _json_lines(capsys.readouterr().out)[0]
    assert top["image"] == "pics/red.png"
    assert {"descriptions", "images"} <= set(top["routes"])
    assert top["text"] == "A 64x48 picture, mostly red."


def test_mcp_search_takes_a_query_image_as_data_and_marks_image_results(
    tmp_path, tiny_clip_path
) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from hybrid_retrievers.cli._serve import build_server
    from hybrid_retrievers.images import load_image

    src = _folder(tmp_path)
    idx = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only", "--clip-model",
                 tiny_clip_path]) == 0
    server = build_server(FolderIndex.open(idx))
    query = load_image(_square(tmp_path / "query.png", YELLOW, size=(60, 60))).data_uri()

    async def session() -> None:
        async with Client(server) as client:
            found = await client.call_tool("search", {"image": query, "k": 1})
            top = found.structured_content["results"][0]
            assert top["type"] == "image" and top["image"] == "yellow.jpg"
            assert "image" in top["routes"]
            words = await client.call_tool("search", {"query": "https proxy", "k": 1})
            assert words.structured_content["results"][0]["file"] == "proxy.md"
            path = await client.call_tool("search", {"image": str(src / "yellow.jpg")})
            assert path.is_error and "data:image/" in path.content[0].text

    anyio.run(session)
