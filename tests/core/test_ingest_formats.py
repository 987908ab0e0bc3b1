"""Real-world files: HTML in its declared (or sniffed) encoding, navigation that is not
content, Markdown comments, and gzip-compressed documents."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from hybrid_retrievers.ingest import (
    MAX_DECOMPRESSED_BYTES,
    SourceError,
    decode_html,
    html_structure,
    markdown_structure,
    read_document,
)

LATIN1_PAGE = ('<html><head><meta http-equiv="Content-Type" content="text/html; '
               'charset=ISO-8859-1"><title>Café</title></head><body><p>Señor Muñoz '
               'paid 5 € for café.</p></body></html>')


def test_a_declared_latin1_page_is_read_not_refused(tmp_path: Path) -> None:
    """ISO-8859-1 is read as windows-1252 (its superset, as browsers do): 0x80 is the euro."""
    path = tmp_path / "news.html"
    path.write_bytes(LATIN1_PAGE.encode("cp1252"))
    parsed = read_document(path)
    assert parsed.title == "Café" and "Señor Muñoz paid 5 € for café." in parsed.text


@pytest.mark.parametrize("declaration,encoding", [
    ('<meta charset="windows-1251">', "cp1251"),
    ("<meta charset=koi8-r>", "koi8_r"),
    ('<?xml version="1.0" encoding="ISO-8859-15"?>', "iso8859_15"),
])
def test_declared_encodings_are_honoured(declaration: str, encoding: str) -> None:
    text = "Привет" if encoding != "iso8859_15" else "Œuvre €"
    data = f"{declaration}<p>{text}</p>".encode(encoding)
    assert text in decode_html(Path("x.html"), data)


def test_undeclared_pages_are_utf8_else_windows_1252() -> None:
    assert decode_html(Path("a.html"), "<p>naïve ☃</p>".encode()) == "<p>naïve ☃</p>"
    assert decode_html(Path("b.html"), "<p>naïve</p>".encode("cp1252")) == "<p>naïve</p>"
    bom = "<p>π</p>".encode("utf-16")  # with its BOM
    assert decode_html(Path("c.html"), bom) == "<p>π</p>"


def test_bytes_invalid_in_the_declared_encoding_or_binary_are_named() -> None:
    with pytest.raises(SourceError, match=r"bad\.html: not UTF-8 text \(byte 0xff"):
        decode_html(Path("bad.html"), b'<meta charset="utf-8"><p>\xff\xfe</p>')
    with pytest.raises(SourceError, match="NUL"):
        decode_html(Path("nul.html"), b"<p>a\x00b</p>")


TEXINFO = """<html><head><title>Closure Example (libffi)</title></head><body>
<div class="header"><p>
Next: <a href="Thread-Safety.html" rel="next">Thread Safety</a>, Previous: <a
href="The-Closure-API.html" rel="prev">The Closure API</a>, Up: <a href="Using-libffi.html"
rel="up">Using libffi</a> &nbsp; [<a href="Index.html" rel="index">Index</a>]</p>
</div><hr>
<h4 class="subsection">2.6 Closure Example</h4>
<p>A trivial example that creates a new puts by binding fputs with stdout.</p>
</body></html>"""


def test_navigation_panels_are_not_content() -> None:
    parsed = html_structure(TEXINFO)
    assert "Next:" not in parsed.text and "Previous" not in parsed.text
    assert "binding fputs" in parsed.text
    assert [s.path for s in parsed.sections] == [("2.6 Closure Example",)]
    for markup in ('<nav><a href="/">Home</a> › <a href="/docs">Docs</a></nav><p>Body.</p>',
                   '<div role="navigation"><a href="a">A</a></div><p>Body.</p>',
                   '<div class="related"><ul><li><a href="i">index</a></li></ul></div>'
                   '<p>Body.</p>',
                   '<div class="navheader"><table><tr><td>Prev</td></tr></table></div>'
                   '<p>Body.</p>',
                   '<ol aria-label="Breadcrumb"><li>Docs</li></ol><p>Body.</p>'):
        assert html_structure(markup).text.strip() == "Body.", markup


def test_a_header_with_the_title_is_content_and_a_menu_only_page_is_kept() -> None:
    """`class="header"` is navigation only when it links next/previous/up and opens no
    heading; a page that would lose all its text keeps its navigation."""
    page = html_structure('<div class="header"><h1>Guide</h1><p>Intro.</p></div><p>Body.</p>')
    assert [s.path for s in page.sections] == [("Guide",)] and "Intro." in page.text
    assert html_structure("<nav><p>Only a menu</p>").text.strip() == "Only a menu"


def test_markdown_comments_are_blanked_outside_code_keeping_offsets() -> None:
    source = ("# Setup\n<!-- readme-test: skip (a set-up command) -->\nRun it.\n\n"
              "```html\n<!-- kept: this is code -->\n```\nEnd <!-- two\nlines --> here.\n")
    parsed = markdown_structure(source)
    assert len(parsed.text) == len(source) and parsed.text.count("\n") == source.count("\n")
    assert "readme-test" not in parsed.text and "two" not in parsed.text
    assert "<!-- kept: this is code -->" in parsed.text
    start = parsed.text.index("Run it.")
    assert source[start:start + 7] == "Run it."
    assert parsed.text[slice(*parsed.blocks[0])] == source[slice(*parsed.blocks[0])]


def test_gzip_documents_are_read_by_their_inner_name(tmp_path: Path) -> None:
    (tmp_path / "notes.md.gz").write_bytes(gzip.compress(b"# Proxy\nSet HTTPS_PROXY.\n"))
    (tmp_path / "changelog.Debian.gz").write_bytes(gzip.compress(b"pkg (1.0) unstable\n"))
    parsed = read_document(tmp_path / "notes.md.gz")
    assert [s.path for s in parsed.sections] == [("Proxy",)]
    assert read_document(tmp_path / "changelog.Debian.gz").text.startswith("pkg (1.0)")


def test_broken_or_bomb_gzip_files_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "broken.txt.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(SourceError, match=r"broken\.txt\.gz: not a readable gzip file"):
        read_document(tmp_path / "broken.txt.gz")
    bomb = gzip.compress(b" " * (MAX_DECOMPRESSED_BYTES + 1024), compresslevel=9)
    assert len(bomb) < 200_000
    (tmp_path / "bomb.txt.gz").write_bytes(bomb)
    with pytest.raises(SourceError, match=r"bomb\.txt\.gz: inflates to more than 64 MiB"):
        read_document(tmp_path / "bomb.txt.gz")


def test_index_reads_real_folders_as_a_user_has_them(tmp_path: Path, capsys) -> None:
    """Through `hybrid-retrievers index`: a Latin-1 page is indexed, its navigation panel
    is not a passage, a Markdown comment is not indexed, a `.gz` document is read, and the
    files of other kinds are counted in one line instead of being left out unsaid."""
    import json

    from hybrid_retrievers.cli import main

    src = tmp_path / "docs"
    (src / "html").mkdir(parents=True)
    (src / "html" / "news.html").write_bytes(LATIN1_PAGE.encode("cp1252"))
    (src / "html" / "closure.html").write_text(TEXINFO, encoding="utf-8")
    (src / "guide.md").write_text("# Guide\n<!-- readme-test: skip (setup) -->\nRun the "
                                  "proxy check.\n", encoding="utf-8")
    (src / "changelog.gz").write_bytes(gzip.compress(b"Fixed the zeppelin mooring bug.\n"))
    (src / "tool.py").write_text("print('hi')\n")
    (src / "LICENSE").write_text("MIT\n")
    out = tmp_path / "idx"
    assert main(["index", str(src), "--out", str(out), "--bm25-only"]) == 0
    err = capsys.readouterr().err
    assert "left out 2 files of kinds index does not read (" in err
    assert ".py x 1" in err and "no suffix x 1" in err
    assert "not UTF-8" not in err
    for query, file in (("Muñoz café", "html/news.html"), ("zeppelin mooring", "changelog.gz"),
                        ("fputs stdout", "html/closure.html")):
        assert main(["search", str(out), query, "-k", "1", "--json"]) == 0
        hit = json.loads(capsys.readouterr().out.splitlines()[0])
        assert hit["file"] == file, (query, hit)
        assert "Previous" not in hit["text"]
    for query in ("Thread Safety Previous", "readme-test skip"):
        assert main(["search", str(out), query, "-k", "3", "--json"]) == 0
        texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()
                 if line.startswith("{")]
        assert not any("Previous:" in t or "readme-test" in t for t in texts), texts
