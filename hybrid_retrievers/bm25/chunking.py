"""Streamed tokenisation for index builds: documents in chunks, in this process or in workers.

A build never holds every document's token list at once: `token_chunks` tokenises
`CHUNK_DOCS` documents at a time and turns each chunk into a `TokenChunk` (its distinct
tokens in first-occurrence order plus one int32 id per token), which `postings.written`
folds into the index and drops. Chunks come back in document order, so the index's term
ids (assigned in first-occurrence order over the corpus) are the same whichever way they
were tokenised.

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

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CHUNK_DOCS", "TokenChunk", "token_chunks", "tokenize_chunk", "encode_chunk",
           "resolve_n_jobs"]

# Documents per chunk: large enough that per-chunk overheads (a batched stem call, one
# sort, one worker round trip) vanish, small enough that a chunk's token lists and sort
# buffers (~25 MiB at 80 tokens/doc) stay far below the index itself.
CHUNK_DOCS = 4096


class TokenChunk(NamedTuple):
    """One chunk's tokens, documents one after another; ``lengths[j]``: tokens of its j-th.

    ``terms`` (the chunk's distinct tokens in first-occurrence order) and ``ids``
    (``terms[ids[i]]`` is its i-th token): cheap to build and to send from a worker.
    ``token_lists`` (the lists themselves) is the plain form `encode_chunk` converts.
    """

    lengths: NDArray[np.int32]
    token_lists: list[list[str]] | None = None
    terms: list[str] | None = None
    ids: NDArray[np.int32] | None = None


def tokenize_chunk(analyzer: Analyzer, texts: Sequence[str]) -> TokenChunk:
    """Tokenise ``texts`` in this process, straight into the compact form.

    The same tokens as ``analyzer.tokenize_many(texts)``, but each distinct raw token is
    resolved (stopword, stem, term number) once per chunk and the per-token work is C
    loops (``chain``, ``dict.fromkeys``, ``map``): no list of terms per document is built.
    """
    with paused_gc():
        raw = analyzer._split_all(texts)
        lengths = np.fromiter(map(len, raw), dtype=np.int32, count=len(raw))
        flat = list(chain.from_iterable(raw))
        del raw
        number: dict[str, int] = dict.fromkeys(flat, -1)  # raw token -> term number
        terms: dict[str, int] = {}
        if analyzer._identity:
            for token in number:
                number[token] = terms.setdefault(token, len(terms))
        else:
            resolve = analyzer._resolver(number)
            for token in number:
                term = resolve[token]
                if term:  # "" is a stopword
                    number[token] = terms.setdefault(term, len(terms))
        ids = np.fromiter(map(number.__getitem__, flat), dtype=np.int32, count=len(flat))
    dropped = ids < 0
    if dropped.any():
        doc_of = np.repeat(np.arange(lengths.size), lengths)
        lengths = np.bincount(doc_of[~dropped], minlength=lengths.size).astype(np.int32)
        ids = ids[~dropped]
    return TokenChunk(lengths, terms=list(terms), ids=ids)


def encode_chunk(chunk: TokenChunk) -> TokenChunk:
    """The chunk in the compact form (distinct tokens in first-occurrence order + ids)."""
    if chunk.token_lists is None:
        return chunk
    local: dict[str, int] = {}
    ids = np.fromiter(
        (local[t] if t in local else local.setdefault(t, len(local))
         for tokens in chunk.token_lists for t in tokens),
        dtype=np.int32,
        count=int(chunk.lengths.sum()),
    )
    return TokenChunk(chunk.lengths, terms=list(local), ids=ids)


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
    n_jobs: int = 1,
    show_progress: bool = False,
) -> Iterator[TokenChunk]:
    """`TokenChunk` after `TokenChunk` over ``texts``, in order, `CHUNK_DOCS` texts each.

    ``n_jobs`` is a count from `resolve_n_jobs`; more than one tokenises in worker
    processes, with at most two chunks per worker in flight (memory stays bounded).
    """
    spans = [(s, min(s + CHUNK_DOCS, len(texts))) for s in range(0, len(texts), CHUNK_DOCS)]
    spec = _worker_spec(analyzer) if n_jobs > 1 and len(spans) > 1 else None
    bar = progress(None, show=show_progress, desc="Tokenizing", unit="doc", total=len(texts))
    try:
        if spec is None:
            with analyzer._building():
                for s, e in spans:
                    chunk = tokenize_chunk(analyzer, texts[s:e])
                    bar.update(e - s)
                    yield chunk
            return
        workers = min(n_jobs, len(spans))
        from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for n_jobs > 1

        with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=spec) as pool:
            pending: deque[tuple[int, Future[TokenChunk]]] = deque()
            todo = iter(spans)
            try:
                for s, e in todo:
                    pending.append((e - s, pool.submit(_tokenize_in_worker, texts[s:e])))
                    if len(pending) >= 2 * workers:
                        break
                while pending:
                    size, future = pending.popleft()
                    chunk = future.result()
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


_WORKER_ANALYZER: Analyzer | None = None


def _init_worker(config: dict[str, Any], extra: Any) -> None:
    global _WORKER_ANALYZER
    if extra is not None:
        from ..text import register_tokenizer

        name, tokenizer = extra
        register_tokenizer(name, tokenizer, replace=True)
    _WORKER_ANALYZER = Analyzer.from_config(config)


def _tokenize_in_worker(texts: Sequence[str]) -> TokenChunk:
    assert _WORKER_ANALYZER is not None, "worker not initialised"
    with _WORKER_ANALYZER._building():
        return tokenize_chunk(_WORKER_ANALYZER, texts)  # already the compact form
