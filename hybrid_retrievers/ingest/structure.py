"""The structure of a document's text: sections with their heading path, and blocks never cut.

`ParsedDocument` is what every reader returns (`markdown_structure`, `rst_structure`,
`html_structure`, the PDF and DOCX readers in `.formats`) and what `StructuredChunker`
cuts: the plain text, the *leaf sections* that cover it in order (each with the path of
headings above it, e.g. ``("Install", "From source")``), the *atomic blocks* inside it
(fenced or literal code, tables) that a chunk boundary must not fall into, and, for a
PDF, the character offset where each page starts.

The parsers are line scanners for the common forms, not full Markdown/RST
implementations (those would add a dependency and still not report character spans):

* Markdown: ATX headings (``## Title``), setext headings (a line underlined with
  ``===`` or ``---``), fenced code (```` ``` ```` or ``~~~``, closed by the same fence),
  pipe tables (a header line, a ``|---|`` delimiter line, then the rows).
* reStructuredText: titles underlined (optionally overlined) with one punctuation
  character; a level is given to each style in the order styles first appear, as
  docutils does. Literal blocks (a paragraph ending in ``::``, and ``code``,
  ``code-block`` and ``sourcecode`` directives) up to the first line indented less;
  grid tables (``+---+``) and simple tables (``===  ===`` borders).
* HTML: ``<h1>``...``<h6>`` open sections; ``<pre>`` and ``<table>`` are atomic; scripts,
  styles and ``<head>`` are dropped; the ``<title>`` is kept as the title. Navigation is
  not content: ``<nav>``, ``role="navigation"`` / ``"search"``, breadcrumb landmarks and
  the navigation panels documentation generators write (texinfo's ``header`` /
  ``nav-panel``, DocBook's ``navheader`` / ``navfooter``, Sphinx's ``related`` and
  ``sphinxsidebar``) are dropped, so "Next: ..., Previous: ..., Up: ..." never ranks as a
  passage. A page that would be left with no text that way keeps them.
* Markdown HTML comments (``<!-- ... -->``, outside code) are blanked: not indexed, not
  shown, and every offset still points at the same character of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

__all__ = ["ParsedDocument", "Section", "html_structure", "is_navigation",
           "markdown_structure", "plain_structure", "rst_structure", "sections_from_headings"]


@dataclass(frozen=True, slots=True)
class Section:
    """A leaf section: ``text[start:end]`` (its heading line included) under ``path``."""

    path: tuple[str, ...]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A document's text and structure (see the module doc).

    Example:
        >>> doc = markdown_structure("# Setup\\nRun it.\\n\\n## Proxy\\nSet HTTPS_PROXY.\\n")
        >>> [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
        [(('Setup',), '# Setup\\nRun it.'), (('Setup', 'Proxy'), '## Proxy\\nSet HTTPS_PROXY.')]
    """

    text: str
    sections: tuple[Section, ...]
    blocks: tuple[tuple[int, int], ...] = ()
    pages: tuple[int, ...] = ()
    """Character offset where page 1, 2, ... starts (PDF only; empty otherwise)."""
    title: str | None = None

    def page_at(self, offset: int) -> int | None:
        """The 1-based page holding character ``offset`` (``None`` without pages)."""
        if not self.pages:
            return None
        lo, hi = 0, len(self.pages)
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            if self.pages[mid] <= offset:
                lo = mid
            else:
                hi = mid
        return lo + 1


def sections_from_headings(text: str, headings: list[tuple[int, int, str]]) -> tuple[Section, ...]:
    """Leaf sections from ``(offset, level, title)`` headings in text order."""
    out: list[Section] = []
    path: list[tuple[int, str]] = []
    starts = [(0, ())] if not headings or headings[0][0] > 0 else []
    for offset, level, title in headings:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        starts.append((offset, tuple(t for _, t in path)))
    for i, (start, names) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        if text[start:end].strip():
            out.append(Section(names, start, end))
    return tuple(out)


def plain_structure(text: str, title: str | None = None) -> ParsedDocument:
    """A text without structure: one section (path ``()``), no blocks."""
    return ParsedDocument(text, sections_from_headings(text, []), title=title)


# ------------------------------------------------------------------------ Markdown

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_TABLE_DELIMITER = re.compile(r"\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$|\s*\|\s*:?-+:?\s*\|\s*$")


def _lines(text: str) -> list[tuple[int, str]]:
    """``(offset, line without its newline)`` for every line of ``text``."""
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, line.rstrip("\r\n")))
        pos += len(line)
    return out


_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)


def markdown_structure(text: str, title: str | None = None) -> ParsedDocument:
    """Sections, code fences and pipe tables of a Markdown text; HTML comments outside
    code are blanked (same length, newlines kept, so offsets stay the file's)."""
    if "<!--" in text:
        code = _markdown_scan(text)[1]
        text = _blank_comments(text, code)
    headings, blocks = _markdown_scan(text)
    title = title or next((t for _, level, t in headings if level == 1 and t), None)
    return ParsedDocument(text, sections_from_headings(text, headings), tuple(blocks), title=title)


def _blank_comments(text: str, code: list[tuple[int, int]]) -> str:
    """``text`` with every ``<!-- ... -->`` that starts outside ``code`` spans replaced by
    spaces (its newlines kept)."""
    pieces, last = [], 0
    for match in _HTML_COMMENT.finditer(text):
        start, end = match.span()
        if any(a <= start < b for a, b in code):
            continue
        pieces += [text[last:start], re.sub(r"[^\n]", " ", match.group())]
        last = end
    return "".join(pieces) + text[last:] if pieces else text


def _markdown_scan(text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]]:
    """``(headings, atomic blocks)`` of a Markdown text, by the line scanner."""
    lines = _lines(text)
    headings: list[tuple[int, int, str]] = []
    blocks: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        offset, line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            j = i + 1
            while j < len(lines) and not lines[j][1].strip().startswith(mark[0] * len(mark)):
                j += 1
            end = lines[j][0] + len(lines[j][1]) if j < len(lines) else len(text)
            blocks.append((offset, end))
            i = j + 1
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((offset, len(atx.group(1)), (atx.group(2) or "").strip()))
            i += 1
            continue
        nxt = lines[i + 1][1] if i + 1 < len(lines) else ""
        if line.strip() and "|" in line and _TABLE_DELIMITER.match(nxt):
            j = i + 2
            while j < len(lines) and lines[j][1].strip() and "|" in lines[j][1]:
                j += 1
            blocks.append((offset, lines[j - 1][0] + len(lines[j - 1][1])))
            i = j
            continue
        setext = _SETEXT.match(nxt)
        if line.strip() and setext and not line.lstrip().startswith(("-", "*", "+", ">")):
            headings.append((offset, 1 if setext.group(1)[0] == "=" else 2, line.strip()))
            i += 2
            continue
        i += 1
    return headings, blocks


# ------------------------------------------------------------------------ reStructuredText

_RST_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_RST_DIRECTIVE = re.compile(r"\s*\.\. (code|code-block|sourcecode|literalinclude|math)::")
_RST_SIMPLE_TABLE = re.compile(r"=+( +=+)+[ \t]*$")
_RST_GRID = re.compile(r"\+[-=]+(\+[-=]+)*\+[ \t]*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_structure(text: str, title: str | None = None) -> ParsedDocument:
    """Sections, literal blocks and tables of a reStructuredText text."""
    lines = _lines(text)
    styles: list[tuple[str, bool]] = []
    headings: list[tuple[int, int, str]] = []
    blocks: list[tuple[int, int]] = []

    def literal_from(i: int, base: int) -> int:
        """Index after the indented block that starts after line ``i``."""
        j = i + 1
        while j < len(lines) and (not lines[j][1].strip() or _indent(lines[j][1]) > base):
            j += 1
        while j - 1 > i and not lines[j - 1][1].strip():
            j -= 1
        return j

    i = 0
    while i < len(lines):
        offset, line = lines[i]
        over = _RST_ADORNMENT.match(line)
        if over and i + 2 < len(lines) and lines[i + 1][1].strip() \
                and _RST_ADORNMENT.match(lines[i + 2][1]) and lines[i + 2][1][0] == line[0]:
            style = (line[0], True)
            name, consumed = lines[i + 1][1].strip(), 3
        elif line.strip() and not line[0].isspace() and i + 1 < len(lines) \
                and _RST_ADORNMENT.match(lines[i + 1][1]) \
                and len(lines[i + 1][1].rstrip()) >= len(line.rstrip()) \
                and not _RST_SIMPLE_TABLE.match(line):
            style = (lines[i + 1][1][0], False)
            name, consumed = line.strip(), 2
        else:
            style = None
        if style is not None:
            if style not in styles:
                styles.append(style)
            headings.append((offset, styles.index(style) + 1, name))
            i += consumed
            continue
        if _RST_GRID.match(line.strip()) or _RST_SIMPLE_TABLE.match(line.strip()):
            simple = _RST_SIMPLE_TABLE.match(line.strip()) is not None
            j, borders = i + 1, 1
            while j < len(lines) and lines[j][1].strip():
                borders += bool(_RST_SIMPLE_TABLE.match(lines[j][1].strip()))
                j += 1
                if simple and borders >= 3:
                    break
            blocks.append((offset, lines[j - 1][0] + len(lines[j - 1][1])))
            i = j
            continue
        if _RST_DIRECTIVE.match(line) or (line.rstrip().endswith("::") and line.strip()):
            j = literal_from(i, _indent(line))
            if j > i + 1:
                blocks.append((offset, lines[j - 1][0] + len(lines[j - 1][1])))
                i = j
                continue
        i += 1
    title = title or next((t for _, level, t in headings if level == 1 and t), None)
    return ParsedDocument(text, sections_from_headings(text, headings), tuple(blocks), title=title)


# ------------------------------------------------------------------------ HTML


@dataclass
class _HTMLState:
    parts: list[str] = field(default_factory=list)
    size: int = 0
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    blocks: list[tuple[int, int]] = field(default_factory=list)


class _StructureParser(HTMLParser):
    """Visible text of an HTML page with heading offsets and atomic ``pre``/``table`` spans."""

    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "section", "article", "blockquote",
                         "ul", "ol", "dd", "dt", "header", "footer", "main", "nav", "hr"})
    _HIDDEN = frozenset({"script", "style", "noscript", "template", "head", "svg"})
    _ATOMIC = frozenset({"pre", "table"})
    _VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                       "meta", "source", "track", "wbr"})

    def __init__(self, *, drop_navigation: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.state = _HTMLState()
        self.title: list[str] = []
        self.dropped_navigation = False
        self._drop_navigation = drop_navigation
        self._skip: list[Any] = []  # [tag, depth] of the navigation element being skipped
        # Elements that are navigation if they turn out to link next/previous/up:
        # [tag, depth, parts, size, headings, blocks, saw a navigation link].
        self._maybe: list[list[Any]] = []
        self._hidden = 0
        self._in_title = False
        self._pre = 0
        self._atomic: list[tuple[str, int]] = []
        self._heading: tuple[int, int, list[str]] | None = None

    def _emit(self, piece: str) -> None:
        if piece:
            self.state.parts.append(piece)
            self.state.size += len(piece)

    def _newline(self) -> None:
        parts = self.state.parts
        if parts and not parts[-1].endswith("\n"):
            self._emit("\n")

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if self._skip:
            self._skip[1] += tag == self._skip[0]
            return
        if self._drop_navigation and tag not in self._VOID:
            if is_navigation(tag, attrs):
                self._skip = [tag, 1]
                self.dropped_navigation = True
                self._newline()
                return
            for mark in self._maybe:
                mark[1] += tag == mark[0]
            if tag == "a" and self._maybe and \
                    _NAVIGATION_RELS & set(dict(attrs).get("rel", "") .lower().split()):
                self._maybe[-1][6] = True
            classes = (dict(attrs).get("class") or "").lower().split()
            if any(c in _MAYBE_NAVIGATION_CLASSES for c in classes):
                self._newline()
                state = self.state
                self._maybe.append([tag, 1, len(state.parts), state.size, len(state.headings),
                                    len(state.blocks), False])
        if tag == "title":
            self._in_title = True
        elif tag in self._HIDDEN:
            self._hidden += 1
        elif self._hidden:
            return
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456" and not self._atomic:
            self._newline()
            self._emit("\n")
            self._heading = (self.state.size, int(tag[1]), [])
        elif tag in self._ATOMIC:
            self._newline()
            self._atomic.append((tag, self.state.size))
            self._pre += tag == "pre"
        elif tag in ("td", "th"):
            parts = self.state.parts
            if parts and not parts[-1].endswith("\n"):
                self._emit(" | ")
        elif tag in self._BLOCKS:
            self._newline()

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[0]:
                self._skip[1] -= 1
                if not self._skip[1]:
                    self._skip = []
            return
        self._close_maybe(tag)
        if tag == "title":
            self._in_title = False
        elif tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif self._hidden:
            return
        elif self._heading is not None and tag == f"h{self._heading[1]}":
            start, level, words = self._heading
            self.state.headings.append((start, level, " ".join("".join(words).split())))
            self._heading = None
            self._newline()
        elif tag in self._ATOMIC and self._atomic and self._atomic[-1][0] == tag:
            _, start = self._atomic.pop()
            self._pre -= tag == "pre"
            if not self._atomic:  # a table inside a table is one block
                self.state.blocks.append((start, self.state.size))
            self._newline()
        elif tag in self._BLOCKS:
            self._newline()

    def _close_maybe(self, tag: str) -> None:
        """Close a possible navigation element; drop what it emitted when it linked to
        the next/previous/parent page and opened no heading."""
        for mark in self._maybe:
            mark[1] -= tag == mark[0]
        while self._maybe and self._maybe[-1][1] <= 0:
            _, _, parts, size, headings, blocks, linked = self._maybe.pop()
            state = self.state
            if linked and len(state.headings) == headings and self._heading is None:
                del state.parts[parts:], state.blocks[blocks:]
                state.size = size
                self.dropped_navigation = True
            elif linked and self._maybe:
                self._maybe[-1][6] = True

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title.append(data)
            return
        if self._hidden:
            return
        if self._heading is not None:
            self._heading[2].append(data)
        if self._pre:
            self._emit(data)
            return
        words = " ".join(data.split())
        if not words:
            return
        parts = self.state.parts
        if data[:1].isspace() and parts and not parts[-1][-1:].isspace():
            words = " " + words
        if data[-1:].isspace():
            words += " "
        self._emit(words)


_NAVIGATION_CLASSES = frozenset({
    "nav", "navbar", "navigation", "nav-panel", "navheader", "navfooter", "breadcrumb",
    "breadcrumbs", "related", "sphinxsidebar", "skip-link"})
"""``class`` tokens that mark navigation: generic names, texinfo's ``nav-panel``, DocBook's
``navheader`` / ``navfooter``, Sphinx's ``related`` and ``sphinxsidebar``."""
_NAVIGATION_ROLES = frozenset({"navigation", "search"})
_MAYBE_NAVIGATION_CLASSES = frozenset({"header", "footer"})
"""``class`` tokens that are navigation only when the element links to the next, previous
or parent page and holds no heading (texinfo's older ``<div class="header">``), since many
pages also put their title in a ``header``."""
_NAVIGATION_RELS = frozenset({"next", "prev", "previous", "up"})


def is_navigation(tag: str, attrs: Any) -> bool:
    """Whether an HTML element is navigation rather than content: ``<nav>``, an ARIA
    ``navigation`` / ``search`` role, a breadcrumb label or a navigation class (above).

    Example:
        >>> is_navigation("div", [("class", "nav-panel")]), is_navigation("p", [])
        (True, False)
    """
    if tag == "nav":
        return True
    values = {name: (value or "") for name, value in attrs}
    if values.get("role", "").strip().lower() in _NAVIGATION_ROLES:
        return True
    if "breadcrumb" in values.get("aria-label", "").lower():
        return True
    classes = values.get("class", "").lower().split()
    return any(c in _NAVIGATION_CLASSES for c in classes)


def _parse_html(markup: str, *, drop_navigation: bool) -> _StructureParser:
    parser = _StructureParser(drop_navigation=drop_navigation)
    parser.feed(markup)
    parser.close()
    return parser


def html_structure(markup: str) -> ParsedDocument:
    """Visible text, heading sections and ``pre``/``table`` blocks of an HTML page.

    Example:
        >>> doc = html_structure("<title>T</title><h1>Intro</h1><p>Hi.</p>"
        ...                      "<h2>Code</h2><pre>x = 1\\ny = 2</pre>")
        >>> doc.title, [s.path for s in doc.sections]
        ('T', [('Intro',), ('Intro', 'Code')])
        >>> doc.text[slice(*doc.blocks[0])]
        'x = 1\\ny = 2'
    """
    parser = _parse_html(markup, drop_navigation=True)
    if parser.dropped_navigation and not "".join(parser.state.parts).strip():
        # Everything was inside "navigation" (an unclosed nav element, or a page that is
        # only a menu): keep it rather than lose the page.
        parser = _parse_html(markup, drop_navigation=False)
    text = "".join(parser.state.parts)
    # Trim outer whitespace while keeping every offset valid: only the end may move.
    text = text.rstrip()
    headings = [(min(o, len(text)), lvl, t) for o, lvl, t in parser.state.headings]
    blocks = tuple((a, min(b, len(text))) for a, b in parser.state.blocks if a < len(text))
    title = " ".join("".join(parser.title).split()) or \
        next((t for _, level, t in headings if level == 1 and t), None)
    return ParsedDocument(text, sections_from_headings(text, headings), blocks, title=title)
