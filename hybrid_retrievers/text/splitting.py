"""Splitting parent documents into child chunks for parent/child retrieval.

`SentenceSplitter` is the default: it cuts a text at sentence ends (and blank lines),
packs whole sentences into chunks of at most ``chunk_size`` and starts each chunk with
up to ``chunk_overlap`` of the previous chunk's trailing sentences. A sentence longer
than ``chunk_size`` is cut at word boundaries, and a single word longer than that at
characters, so no chunk is ever longer than ``chunk_size``.

Units: ``chunk_size`` and ``chunk_overlap`` are measured by ``length_function``, which
is ``len`` (characters) by default, as in ``langchain-text-splitters``. Pass a token
counter (e.g. ``lambda s: len(tokenizer.encode(s))``) to measure in tokens.

Any splitter is accepted where a splitter is expected (`as_splitter`): a callable
``str -> list[str]``, or an object with a ``split_text(str) -> list[str]`` method, which
covers LangChain's text splitters and LlamaIndex's node parsers.

`split_parents` turns parents into children with deterministic ids
(``"<parent_id>:<position>"``, see `child_id`) and the parent's metadata plus
``parent_id``, ``child_index`` and (when it can be located) ``start_index``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..types import Doc
from ..validation import check_number

__all__ = [
    "CHILD_INDEX_KEY",
    "PARENT_ID_KEY",
    "START_INDEX_KEY",
    "SentenceSplitter",
    "Splitter",
    "as_splitter",
    "check_chunk_sizes",
    "child_id",
    "sentence_spans",
    "split_parents",
]

PARENT_ID_KEY = "parent_id"
"""Child metadata key holding the id of the parent the child was cut from."""
CHILD_INDEX_KEY = "child_index"
"""Child metadata key holding the child's 0-based position within its parent."""
START_INDEX_KEY = "start_index"
"""Child metadata key holding the child's character offset in the parent's text."""

Splitter = Callable[[str], list[str]]

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) followed by
# whitespace, or at a blank line. Abbreviations such as "e.g. x" split too: a cut inside
# a sentence costs little for retrieval, a missing cut costs chunk-size control.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n")
_WORD = re.compile(r"\S+\s*")


def child_id(parent_id: str, position: int) -> str:
    """The id of the ``position``-th (0-based) child of ``parent_id``.

    Example:
        >>> child_id("doc-7", 2)
        'doc-7:2'
    """
    return f"{parent_id}:{position}"


class SentenceSplitter:
    """Sentence-aware splitter with a size limit and an overlap, both in ``length_function`` units.

    Args:
        chunk_size: the largest chunk (characters by default), >= 1.
        chunk_overlap: at most this much of the end of one chunk (whole sentences)
            is repeated at the start of the next; 0 <= overlap < chunk_size.
        length_function: measures a piece of text (default ``len``: characters).

    Example:
        >>> splitter = SentenceSplitter(chunk_size=40, chunk_overlap=0)
        >>> splitter("Wings make lift. Flaps add more lift. Slats help at low speed.")
        ['Wings make lift. Flaps add more lift.', 'Slats help at low speed.']
    """

    def __init__(
        self,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        *,
        length_function: Callable[[str], int] = len,
    ) -> None:
        self.chunk_size, self.chunk_overlap = check_chunk_sizes(chunk_size, chunk_overlap)
        if not callable(length_function):
            raise TypeError(
                f"length_function must be a callable str -> int, got "
                f"{type(length_function).__name__}"
            )
        self.length_function = length_function

    def __repr__(self) -> str:
        return f"SentenceSplitter(chunk_size={self.chunk_size}, chunk_overlap={self.chunk_overlap})"

    def __call__(self, text: str) -> list[str]:
        """Split ``text``; chunks are substrings of it with outer whitespace stripped."""
        return [text[a:b] for a, b in self.spans(text)]

    def split_text(self, text: str) -> list[str]:
        """Same as calling the splitter (the name LangChain and LlamaIndex use)."""
        return self(text)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets of each chunk in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        pieces = [p for s in sentence_spans(text) for p in self._fit(text, s)]
        size, measure = self.chunk_size, self.length_function
        chunks: list[tuple[int, int]] = []
        i = 0
        while i < len(pieces):
            start = pieces[i][0]
            j = i + 1
            while j < len(pieces) and measure(text[start:pieces[j][1]]) <= size:
                j += 1
            chunks.append((start, pieces[j - 1][1]))
            if j >= len(pieces):
                break
            # Overlap: back up over whole trailing pieces of this chunk that fit into the
            # overlap budget and still leave room for at least the next piece.
            nxt = j
            while (
                self.chunk_overlap
                and nxt - 1 > i
                and measure(text[pieces[nxt - 1][0]:pieces[j - 1][1]]) <= self.chunk_overlap
                and measure(text[pieces[nxt - 1][0]:pieces[j][1]]) <= size
            ):
                nxt -= 1
            i = nxt
        return chunks

    def _fit(self, text: str, span: tuple[int, int]) -> list[tuple[int, int]]:
        """Cut one sentence that is too long at words, and a too-long word at characters."""
        a, b = span
        measure, size = self.length_function, self.chunk_size
        if measure(text[a:b]) <= size:
            return [span]
        out: list[tuple[int, int]] = []
        for m in _WORD.finditer(text, a, b):
            ws, we = m.start(), m.start() + len(m.group().rstrip())
            if out and measure(text[out[-1][0]:we]) <= size:
                out[-1] = (out[-1][0], we)
            elif measure(text[ws:we]) <= size:
                out.append((ws, we))
            else:
                out.extend(_hard_cut(text, ws, we, size, measure))
        return out


def check_chunk_sizes(chunk_size: Any, chunk_overlap: Any) -> tuple[int, int]:
    """``(chunk_size, chunk_overlap)`` checked: integers, size >= 1, 0 <= overlap < size."""
    size = check_number(chunk_size, "chunk_size", low=1, integer=True)
    overlap = check_number(chunk_overlap, "chunk_overlap", low=0, integer=True)
    if overlap >= size:
        raise ValueError(
            f"chunk_overlap must be smaller than chunk_size, got chunk_overlap="
            f"{chunk_overlap} and chunk_size={chunk_size}; lower the overlap"
        )
    return size, overlap


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (outer whitespace excluded): cut after
    ``.``/``!``/``?`` (and closing quotes or brackets) followed by whitespace, and at blank
    lines. `SentenceSplitter` packs these; `hybrid_retrievers.ingest` does too.

    Example:
        >>> sentence_spans("Wings lift. Flaps too.\\n\\nNext")
        [(0, 11), (12, 22), (24, 28)]
    """
    spans = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        group = m.group()
        # Closing quotes/brackets after the stop belong to the sentence.
        quotes = len(group) - len(group.lstrip("\"')]"))
        spans.append((pos, m.start() + quotes))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for a, b in spans:
        seg = text[a:b]
        lead = len(seg) - len(seg.lstrip())
        a, b = a + lead, a + len(seg.rstrip())
        if b > a:
            out.append((a, b))
    return out


def _hard_cut(
    text: str, a: int, b: int, size: int, measure: Callable[[str], int]
) -> list[tuple[int, int]]:
    out = []
    while a < b:
        end = min(b, a + size)
        while end > a + 1 and measure(text[a:end]) > size:
            end -= 1
        out.append((a, end))
        a = end
    return out


def as_splitter(splitter: Any) -> Splitter:
    """Return ``splitter`` as a callable ``str -> list[str]``.

    Accepts a callable, or an object with ``split_text`` (LangChain text splitters,
    LlamaIndex node parsers, `SentenceSplitter`).

    Raises:
        TypeError: for anything else.
    """
    method = getattr(splitter, "split_text", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(splitter):
        return splitter  # type: ignore[no-any-return]
    raise TypeError(
        "splitter must be a callable str -> list[str] or have a split_text(text) method "
        f"(e.g. a LangChain RecursiveCharacterTextSplitter), got {type(splitter).__name__}"
    )


def split_parents(parents: Iterable[Doc], splitter: Any = None) -> list[Doc]:
    """Cut each parent into children; see the module docstring for ids and metadata.

    A parent whose text yields no non-blank chunk gets no children (it can never be
    matched). The parent's own metadata is copied into each child (so filters on
    parent metadata work on children), then the three child keys are set.

    Raises:
        TypeError: a non-`Doc` parent, or a splitter that returns something other than
            a list of str.
    """
    split = as_splitter(SentenceSplitter() if splitter is None else splitter)
    children: list[Doc] = []
    for n, parent in enumerate(parents):
        if not isinstance(parent, Doc):
            raise TypeError(f"parents[{n}] must be a hybrid_retrievers.Doc, got {type(parent).__name__}")
        chunks = split(parent.text)
        if isinstance(chunks, str) or not isinstance(chunks, Sequence):
            raise TypeError(
                f"the splitter must return a list of str, got {type(chunks).__name__} "
                f"for parent {parent.id!r}"
            )
        cursor = 0
        position = 0
        for chunk in chunks:
            if not isinstance(chunk, str):
                raise TypeError(
                    f"the splitter returned a {type(chunk).__name__} for parent {parent.id!r}; "
                    "it must return a list of str"
                )
            if not chunk.strip():
                continue
            meta = dict(parent.metadata)
            meta[PARENT_ID_KEY] = parent.id
            meta[CHILD_INDEX_KEY] = position
            start = parent.text.find(chunk, cursor)
            if start < 0:
                start = parent.text.find(chunk)
            if start >= 0:
                meta[START_INDEX_KEY] = start
                cursor = start + 1
            children.append(Doc(child_id(parent.id, position), chunk, meta))
            position += 1
    return children
