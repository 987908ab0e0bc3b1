"""Cutting a `ParsedDocument` into chunks counted in the embedding model's tokens.

`StructuredChunker` cuts each leaf section on its own (a chunk never spans two
sections, so it has one section path and one parent), packs whole sentences into
chunks of at most ``chunk_size`` tokens, repeats up to ``chunk_overlap`` tokens of
trailing sentences at the start of the next chunk, and keeps every atomic block (a
code block, a table) whole: a block is a unit of its own, and one larger than
``chunk_size`` becomes a chunk of its own, over size, rather than being cut in half.
A sentence longer than ``chunk_size`` is cut at line breaks, then words, then (a "word"
of more than ``chunk_size`` tokens: a base64 blob, a run of CJK characters) into
pieces of characters. That cut counts bounded batches and packs them as they come, so
its time is linear and its memory bounded whatever the sentence's length (one 10 MB
line with no sentence end is chunked in the memory of ordinary prose); a span of more
than `MAX_CHARS_PER_TOKEN` x ``chunk_size`` characters is cut without being counted
whole, and no chunk is longer than that (but an atomic block): a million ``x`` are 157
WordPiece tokens (``[UNK]`` per 100 characters), not one chunk.

Token counts. `token_counter` loads the model's own tokenizer (its ``tokenizer.json``,
read by the light ``tokenizers`` package, no torch) and counts tokens without the
special tokens; the chunker counts each sentence once and adds the counts, which is
exact for tokenizers that split at whitespace first (WordPiece: MiniLM, BERT, BGE,
E5) and within a token or so per sentence for others. Without a model folder (a hub
name, or ``tokenizers`` missing) the fallback counts words and punctuation marks
times 1.3 (`approximate_tokens`): on this repository's Markdown, WordPiece gives 1.1
to 1.4 tokens per such piece, so chunks stay near the requested size.

Why ours and not a library: semchunk (token-counted, recursive, fast) and
langchain-text-splitters (``MarkdownHeaderTextSplitter``,
``RecursiveCharacterTextSplitter``) were evaluated. Neither keeps a fenced code block
or a table whole while packing sentences around it, and ``MarkdownHeaderTextSplitter``
drops the heading lines and the character offsets that the index keeps for every
chunk (``start_index``/``end_index``); semchunk cuts by the longest run of newlines or
whitespace, not by sentence ends, and knows no sections. Sections and blocks come
from the parsers (`.structure`), so what is left is packing sentences by tokens,
which `text.splitting`'s sentence finder and a few lines here do exactly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..text.splitting import check_chunk_sizes, sentence_spans
from .structure import ParsedDocument

__all__ = ["DEFAULT_CHUNK_OVERLAP", "DEFAULT_CHUNK_SIZE", "MAX_CHARS_PER_TOKEN", "Chunk",
           "StructuredChunker", "TokenCounter", "approximate_tokens", "token_counter"]

DEFAULT_CHUNK_SIZE = 200
"""Tokens per chunk: inside MiniLM's 256-token window with room for the special tokens,
and small enough that one chunk is about one idea (the model was trained on 128-token
inputs; longer passages are embedded less sharply)."""
DEFAULT_CHUNK_OVERLAP = 32
"""Tokens of trailing sentences repeated at the start of the next chunk."""

TokenCounter = Callable[[Sequence[str]], list[int]]
"""Counts the tokens of each text of a batch."""

MAX_CHARS_PER_TOKEN = 32
"""A span longer than this many characters per token of ``chunk_size`` cannot be one
unit (English runs 4 to 6 characters per WordPiece token, a URL or a hash ~3): it is cut
without asking the tokenizer to count it whole, which for a 10 MB line would hold the
whole line's tokens in memory at once."""
_BATCH = 256
"""Texts counted per call of the token counter (bounds the tokenizer's memory)."""
_RUN = 8
"""Words counted together when a line is cut (a chunk then ends between two runs)."""

_T = TypeVar("_T")
_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\S+")
_LINE = re.compile(r"[^\n]+")


def approximate_tokens(texts: Sequence[str]) -> list[int]:
    """The fallback count: 1.3 per word or punctuation mark, rounded up.

    Example:
        >>> approximate_tokens(["Hello, world!"])
        [6]
    """
    return [math.ceil(1.3 * len(_PIECE.findall(t))) for t in texts]


def token_counter(model: str | Path | None) -> tuple[TokenCounter, str]:
    """``(counter, description)`` for the model folder ``model`` (see the module doc).

    The description says which tokenizer counts (for the index's settings and the
    summary line): ``"tokenizer.json of <folder>"`` or ``"approximate (...)"``.
    """
    folder = Path(model) if model is not None else None
    file = folder / "tokenizer.json" if folder is not None else None
    if file is not None and file.is_file():
        try:
            from tokenizers import Tokenizer
        except ImportError:
            pass
        else:
            tokenizer = Tokenizer.from_file(str(file))
            tokenizer.no_truncation()
            tokenizer.no_padding()

            def count(texts: Sequence[str]) -> list[int]:
                encoded = tokenizer.encode_batch(list(texts), add_special_tokens=False)
                return [len(e.ids) for e in encoded]

            return count, f"tokenizer.json of {folder}"
    why = "no model folder" if file is None or not file.is_file() else "tokenizers not installed"
    return approximate_tokens, f"approximate: 1.3 x words and punctuation ({why})"


@dataclass(frozen=True, slots=True)
class Chunk:
    """``text[start:end]`` of a document, inside its leaf section ``section``
    (an index into `ParsedDocument.sections`); ``tokens`` as counted."""

    start: int
    end: int
    section: int
    tokens: int


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    tokens: int
    atomic: bool


class StructuredChunker:
    """Section-bounded, sentence-packed, token-counted chunks with overlap.

    Args:
        chunk_size: the most tokens in a chunk (an atomic block may exceed it).
        chunk_overlap: at most this many tokens of whole trailing sentences repeated.
        count_tokens: a `TokenCounter` (default `approximate_tokens`).

    Example:
        >>> from hybrid_retrievers.ingest import markdown_structure
        >>> doc = markdown_structure("# A\\nOne. Two. Three.\\n\\n```\\ncode\\n```\\n")
        >>> chunker = StructuredChunker(chunk_size=8, chunk_overlap=0)
        >>> [doc.text[c.start:c.end] for c in chunker.chunk(doc)]
        ['# A\\nOne.', 'Two. Three.', '```\\ncode\\n```']
    """

    def __init__(
        self,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        *,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.chunk_size, self.chunk_overlap = check_chunk_sizes(chunk_size, chunk_overlap)
        if count_tokens is not None and not callable(count_tokens):
            raise TypeError(f"count_tokens must be a callable, got {type(count_tokens).__name__}")
        self.count_tokens = count_tokens or approximate_tokens

    def __repr__(self) -> str:
        return (f"StructuredChunker(chunk_size={self.chunk_size}, "
                f"chunk_overlap={self.chunk_overlap})")

    def chunk(self, doc: ParsedDocument) -> list[Chunk]:
        """The chunks of ``doc``, in text order."""
        out: list[Chunk] = []
        for number, section in enumerate(doc.sections):
            units = self._units(doc, section.start, section.end)
            out.extend(Chunk(a, b, number, n) for a, b, n in self._pack(units))
        return out

    # ---------------------------------------------------------------- units

    def _units(self, doc: ParsedDocument, start: int, end: int) -> list[_Unit]:
        """Sentences and atomic blocks of ``text[start:end]``; long sentences cut."""
        text = doc.text
        spans: list[tuple[int, int, bool]] = []
        cursor = start
        for a, b in doc.blocks:
            if b <= start or a >= end:
                continue
            a, b = max(a, start), min(b, end)
            spans.extend((x, y, False) for x, y in _prose(text, cursor, a))
            spans.append((a, b, True))
            cursor = b
        spans.extend((x, y, False) for x, y in _prose(text, cursor, end))
        longest = MAX_CHARS_PER_TOKEN * self.chunk_size
        units = []
        for batch in _batches(spans):
            counted = [(a, b, atomic) for a, b, atomic in batch if atomic or b - a <= longest]
            counts = iter(self.count_tokens([text[a:b] for a, b, _ in counted]))
            for a, b, atomic in batch:
                n = next(counts) if atomic or b - a <= longest else self.chunk_size + 1
                if atomic or n <= self.chunk_size:
                    units.append(_Unit(a, b, n, atomic))
                else:
                    units.extend(self._cut(text, a, b))
        return units

    def _cut(self, text: str, a: int, b: int) -> list[_Unit]:
        """A sentence over ``chunk_size``: lines, then words, then characters, packed
        back up to size as they are counted (linear time, memory of one batch)."""
        merged: list[_Unit] = []
        for x, y, n in self._fitting(text, ((m.start(), m.end())
                                            for m in _LINE.finditer(text, a, b)), 0):
            last = merged[-1] if merged else None
            if last is not None and last.tokens + n <= self.chunk_size \
                    and y - last.start <= MAX_CHARS_PER_TOKEN * self.chunk_size:
                merged[-1] = _Unit(last.start, y, last.tokens + n, False)
            else:
                merged.append(_Unit(x, y, n, False))
        return merged

    def _fitting(self, text: str, spans: Iterable[tuple[int, int]],
                 level: int) -> Iterator[tuple[int, int, int]]:
        """``(start, end, tokens)`` of ``spans`` (lines at level 0, runs of `_RUN` words
        at 1, words at 2, character pieces at 3), each one over ``chunk_size`` cut at the
        next level, in text order. Runs of words, not words: the tokenizer costs ~40 us
        a call per text, so counting a million words one by one would take 40 s."""
        longest = MAX_CHARS_PER_TOKEN * self.chunk_size
        for batch in _batches(spans):
            counted = [(x, y) for x, y in batch if y - x <= longest]
            counts = iter(self.count_tokens([text[x:y] for x, y in counted]))
            for x, y in batch:
                n = next(counts) if y - x <= longest else self.chunk_size + 1
                if n <= self.chunk_size or y - x == 1:  # one character cannot be cut
                    yield x, y, n
                elif level < 2:
                    words = ((m.start(), m.end()) for m in _WORD.finditer(text, x, y))
                    yield from self._fitting(text, _runs(words) if level == 0 else words,
                                             level + 1)
                else:  # a "word" over size: pieces of at most `longest`, else halves
                    step = min(longest, (y - x + 1) // 2)
                    yield from self._fitting(
                        text, ((p, min(p + step, y)) for p in range(x, y, step)), 3)

    # ---------------------------------------------------------------- packing

    def _pack(self, units: list[_Unit]) -> list[tuple[int, int, int]]:
        """``(start, end, tokens)`` per chunk: greedy packing with sentence overlap; a
        chunk also stays within `MAX_CHARS_PER_TOKEN` x ``chunk_size`` characters (only
        a run of text the tokenizer reads as a few tokens comes near it), unless one
        atomic block alone is longer."""
        chunks = []
        size, overlap = self.chunk_size, self.chunk_overlap
        longest = MAX_CHARS_PER_TOKEN * size
        i = 0
        while i < len(units):
            total, j = units[i].tokens, i + 1
            while j < len(units) and total + units[j].tokens <= size \
                    and units[j].end - units[i].start <= longest:
                total += units[j].tokens
                j += 1
            chunks.append((units[i].start, units[j - 1].end, total))
            if j >= len(units):
                break
            # Back up over trailing prose units that fit the overlap budget and leave
            # room for the next unit; never back up to i (each chunk must advance).
            nxt, carried = j, 0
            while (overlap and nxt - 1 > i and not units[nxt - 1].atomic
                   and carried + units[nxt - 1].tokens <= overlap
                   and carried + units[nxt - 1].tokens + units[j].tokens <= size):
                carried += units[nxt - 1].tokens
                nxt -= 1
            i = nxt
        return chunks


def _runs(words: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Spans of `_RUN` consecutive words (the last run may be shorter)."""
    for run in _batches(words, _RUN):
        yield run[0][0], run[-1][1]


def _batches(items: Iterable[_T], size: int = _BATCH) -> Iterator[list[_T]]:
    """``items`` in lists of at most ``size``, lazily."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _prose(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` in absolute offsets."""
    if end <= start or not text[start:end].strip():
        return []
    return [(start + a, start + b) for a, b in sentence_spans(text[start:end])]
