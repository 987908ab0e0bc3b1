"""Streamed tokenisation for index builds: documents in chunks, in this process or in workers.

A build never holds every document's token list at once: `token_chunks` tokenises
`CHUNK_DOCS` documents at a time and turns each chunk into a `TokenChunk`, which
`postings.written` folds into the index and drops. In this process a chunk's tokens are
numbered straight into the vocabulary being built (`numbering.TermNumbering`: a token
met in an earlier chunk costs one dict lookup); a worker numbers into a vocabulary of its
own, which `numbering.WorkerNumbers` maps back. Chunks come back in document order, so
the index's term ids (assigned in first-occurrence order over the corpus) are the same
whichever way they were tokenised.

With ``n_jobs > 1`` the chunks are tokenised in worker processes
(`concurrent.futures.ProcessPoolExecutor`, the platform's default start method). Each
worker rebuilds the analyzer from its config (`Analyzer.to_config`), so an analyzer with
a custom callable stemmer or an unregistered tokenizer cannot be sent: the build then
runs in this process, with a warning. A registered tokenizer callable is sent along
(pickled by reference) and registered in the worker, for start methods that do not fork.
"""

from __future__ import annotations

import os
import warnings
from collections import deque
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..gcpause import paused_gc
from ..progress import progress
from ..text import Analyzer
from .numbering import TermNumbering, WorkerChunk, WorkerNumbers

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CHUNK_DOCS", "TokenChunk", "token_chunks", "tokenize_chunk", "resolve_n_jobs"]

# Documents per chunk: large enough that per-chunk overheads (a batched stem call, one
# sort, one worker round trip) vanish, small enough that a chunk's token lists and sort
# buffers (~25 MiB at 80 tokens/doc) stay far below the index itself.
CHUNK_DOCS = 4096


class TokenChunk(NamedTuple):
    """One chunk's tokens, documents one after another; ``lengths[j]``: tokens of its j-th.

    ``vocab_ids[i]`` is the term id of its i-th token in the vocabulary being built (the
    dict its `TermNumbering` grows; stopwords are already dropped). ``weights``, when
    given (float32, one per token), makes the chunk a batch of sparse vectors: a
    posting's stored value is then the sum of its tokens' weights instead of their
    count (the impact postings of `hybrid_retrievers.sparse`).
    """

    lengths: NDArray[np.int32]
    vocab_ids: NDArray[np.int32]
    weights: NDArray[np.float32] | None = None


def tokenize_chunk(
    analyzer: Analyzer, texts: Sequence[str], numbering: TermNumbering
) -> TokenChunk:
    """Tokenise ``texts`` in this process, numbered by ``numbering``.

    The same tokens as ``analyzer.tokenize_many(texts)``, but each distinct raw token is
    resolved (stopword, stem, term number) once per build and the per-token work is C
    loops (``chain``, ``map``): no list of terms per document is built.
    """
    with paused_gc():
        raw = analyzer._split_all(texts)
        lengths = np.fromiter(map(len, raw), dtype=np.int32, count=len(raw))
        flat = list(chain.from_iterable(raw))
        del raw
        ids = numbering.numbered(analyzer, flat)
    dropped = ids < 0  # stopwords
    if dropped.any():
        doc_of = np.repeat(np.arange(lengths.size), lengths)
        lengths = np.bincount(doc_of[~dropped], minlength=lengths.size).astype(np.int32)
        ids = ids[~dropped]
    return TokenChunk(lengths, ids)


def resolve_n_jobs(n_jobs: Any) -> int:
    """The number of processes for ``n_jobs``: a positive count, or -1 for all cores.

    Like joblib, ``-2`` means all cores but one, and so on (at least one).

    Raises:
        TypeError: ``n_jobs`` is not an int.
        ValueError: ``n_jobs`` is 0.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(f"n_jobs must be an int (-1 for all cores), got "
                        f"{type(n_jobs).__name__}: {n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a positive number of processes or -1 for all cores, "
                         "got 0")
    if n_jobs > 0:
        return n_jobs
    return max(1, _cpu_count() + 1 + n_jobs)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def token_chunks(
    analyzer: Analyzer,
    texts: Sequence[str],
    *,
    vocab: dict[str, int],
    n_jobs: int = 1,
    show_progress: bool = False,
) -> Iterator[TokenChunk]:
    """`TokenChunk` after `TokenChunk` over ``texts``, in order, `CHUNK_DOCS` texts each.

    Each chunk is numbered into ``vocab``, the vocabulary being built (a copy of the
    index's, which `postings.written` then completes). ``n_jobs`` is a count from
    `resolve_n_jobs`; more than one tokenises in worker processes, with at most two
    chunks per worker in flight (memory stays bounded).
    """
    spans = [(s, min(s + CHUNK_DOCS, len(texts))) for s in range(0, len(texts), CHUNK_DOCS)]
    spec = _worker_spec(analyzer) if n_jobs > 1 and len(spans) > 1 else None
    bar = progress(None, show=show_progress, desc="Tokenizing", unit="doc", total=len(texts))
    try:
        if spec is None:
            numbering = TermNumbering(vocab)
            with analyzer._building():
                for s, e in spans:
                    chunk = tokenize_chunk(analyzer, texts[s:e], numbering)
                    bar.update(e - s)
                    yield chunk
            return
        workers = min(n_jobs, len(spans))
        from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for n_jobs > 1

        numbers = WorkerNumbers(vocab)
        with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=spec) as pool:
            pending: deque[tuple[int, Future[WorkerChunk]]] = deque()
            todo = iter(spans)
            try:
                for s, e in todo:
                    pending.append((e - s, pool.submit(_tokenize_in_worker, texts[s:e])))
                    if len(pending) >= 2 * workers:
                        break
                while pending:
                    size, future = pending.popleft()
                    part = future.result()
                    chunk = TokenChunk(part.lengths, numbers.numbered(part))
                    for s, e in todo:
                        pending.append((e - s, pool.submit(_tokenize_in_worker, texts[s:e])))
                        break
                    bar.update(size)
                    yield chunk
            finally:
                for _, future in pending:
                    future.cancel()
    finally:
        bar.close()


def _worker_spec(analyzer: Analyzer) -> tuple[dict[str, Any], Any] | None:
    """What a worker needs to rebuild ``analyzer``, or None (with a warning) if it cannot."""
    from multiprocessing.reduction import ForkingPickler  # what the pool sends with

    try:
        config = analyzer.to_config()
        tokenizer = analyzer.tokenizer
        extra = (config["tokenizer"], tokenizer) if callable(tokenizer) else None
        if extra is not None:
            try:  # only checks that it can be sent; nothing is ever loaded this way
                ForkingPickler.dumps(tokenizer)
            except Exception as exc:  # PicklingError, AttributeError, TypeError, ...
                raise TypeError(f"its tokenizer cannot be pickled: {exc}") from exc
    except (ValueError, AttributeError, TypeError) as exc:
        warnings.warn(
            f"n_jobs > 1 needs an analyzer that worker processes can rebuild from its "
            f"config; this one cannot be sent ({exc}). Tokenising in this process instead "
            "(as n_jobs=1); the index is the same.",
            UserWarning,
            stacklevel=4,
        )
        return None
    return config, extra


_WORKER: tuple[Analyzer, TermNumbering] | None = None  # this worker's analyzer and vocabulary


def _init_worker(config: dict[str, Any], extra: Any) -> None:
    global _WORKER
    if extra is not None:
        from ..text import register_tokenizer

        name, tokenizer = extra
        register_tokenizer(name, tokenizer, replace=True)
    _WORKER = Analyzer.from_config(config), TermNumbering({}, track_added=True)


def _tokenize_in_worker(texts: Sequence[str]) -> WorkerChunk:
    assert _WORKER is not None, "worker not initialised"
    return worker_chunk(*_WORKER, texts, os.getpid())


def worker_chunk(
    analyzer: Analyzer, numbering: TermNumbering, texts: Sequence[str], worker: int
) -> WorkerChunk:
    """What worker ``worker`` sends for ``texts``: numbered in its own vocabulary."""
    assert numbering.added is not None, "a worker's numbering tracks the terms it adds"
    first_new = len(numbering.vocab)  # ids of this chunk's new terms start here
    numbering.added.clear()
    with analyzer._building():
        chunk = tokenize_chunk(analyzer, texts, numbering)
    return WorkerChunk(chunk.lengths, chunk.vocab_ids, list(numbering.added), first_new,
                       worker)
