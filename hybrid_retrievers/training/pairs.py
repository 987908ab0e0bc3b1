"""Training pairs for fine-tuning a bi-encoder: from the user, from judgments, or mined.

A `TrainingPair` is an anchor (a query, or a stand-in for one) and the id and text of a
passage it should retrieve. Where they come from:

- the user's own ``(query, passage)`` pairs (`pairs_from_user`; each passage must be a
  document of the corpus, by text or id, so hard negatives can exclude it);
- a BEIR qrels split (`pairs_from_qrels`) for the *training* queries only
  (`split_queries` makes the folds; evaluation queries never become pairs);
- no labels at all (`mine_pairs`): the corpus's own structure,

  * ``"titles"``: a document's title -> its body (the title removed from it), and a
    markdown heading -> the section under it;
  * ``"sentences"``: one sentence -> the rest of its passage, the Inverse Cloze Task
    of Lee, Chang & Toutanova (2019), "Latent Retrieval for Weakly Supervised Open
    Domain Question Answering" (ACL);
  * ``"llm"``: a question an LLM writes for a sampled passage (any `TextGenerator`).
    The HyDE rules apply: each call has a timeout, and a failed, hung or blank
    generation never fails the run; that passage falls back to its ``"sentences"``
    pair, a warning is logged on ``hybrid_retrievers.models`` and the pair's
    ``source`` says so.

Mined pairs are filtered (an anchor of 3 to 64 words, a positive of at least
``min_words`` words, the anchor not the positive itself) and deduplicated: an anchor
seen for two or more different documents (boilerplate such as "Introduction" or
"Abstract") is dropped everywhere, and a repeated ``(anchor, document)`` is kept once.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..text.splitting import sentence_spans
from ..timeout import DEFAULT_LLM_TIMEOUT, call_with_timeout, check_timeout
from ..types import Doc
from ..validation import check_k

__all__ = [
    "MINING_METHODS",
    "QUESTION_PROMPT",
    "TrainingPair",
    "mine_pairs",
    "normalize_text",
    "pairs_from_qrels",
    "pairs_from_user",
    "split_queries",
]

logger = logging.getLogger("hybrid_retrievers.models")

MINING_METHODS = ("titles", "sentences", "llm")
"""Valid ``how`` values of `mine_pairs`."""

QUESTION_PROMPT = ("Write one short question that the following passage answers. Reply "
                   "with the question only.\n\nPassage: {passage}\n\nQuestion:")
"""The default prompt of ``mine_pairs(how="llm")``; ``{passage}`` is replaced."""

_MIN_ANCHOR_WORDS, _MAX_ANCHOR_WORDS = 3, 64
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class TrainingPair:
    """One training example: an anchor and the passage it should retrieve.

    Attributes:
        anchor: the query (or its stand-in: a title, a sentence, an LLM question).
        doc_id: the id of the positive passage's document in the corpus.
        positive: the positive passage's text.
        source: where the pair came from: ``"user"``, ``"qrels"``, ``"titles"``,
            ``"headings"``, ``"sentences"``, ``"llm"`` or ``"llm-fallback"``.
        negatives: hard negative passages (filled by `add_hard_negatives`).
    """

    anchor: str
    doc_id: str
    positive: str
    source: str
    negatives: tuple[str, ...] = ()


def normalize_text(text: str) -> str:
    """Lower case, whitespace collapsed: the key for duplicates and the no-leak rule."""
    return " ".join(text.lower().split())


def _words(text: str) -> int:
    return len(text.split())


def split_queries(query_ids: Iterable[str], folds: int = 2, *, seed: int = 0
                  ) -> list[tuple[list[str], list[str]]]:
    """K-fold split of query ids: ``folds`` pairs of ``(train ids, held-out ids)``.

    The ids are shuffled with ``seed`` and dealt into ``folds`` parts; fold ``i`` holds
    part ``i`` out and trains on the rest, so every query is held out exactly once and
    no held-out query is ever a training query of its fold.

    Example:
        >>> [(len(t), len(h)) for t, h in split_queries([str(i) for i in range(10)], 2)]
        [(5, 5), (5, 5)]
    """
    ids = list(dict.fromkeys(query_ids))
    folds = check_k(folds, "folds")
    if folds < 2:
        raise ValueError(f"folds must be at least 2 (one part held out, the rest trained on), "
                         f"got {folds}")
    if len(ids) < folds:
        raise ValueError(f"cannot split {len(ids)} queries into {folds} folds; pass fewer folds")
    random.Random(seed).shuffle(ids)
    parts = [ids[i::folds] for i in range(folds)]
    return [([q for j, part in enumerate(parts) if j != i for q in part], parts[i])
            for i in range(folds)]


def pairs_from_qrels(
    queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
    corpus: Mapping[str, Doc], query_ids: Iterable[str] | None = None,
) -> list[TrainingPair]:
    """One pair per (training query, relevant document) judged ``grade >= 1``.

    Args:
        queries, qrels, corpus: a BEIR dataset's (`BeirDataset` fields).
        query_ids: the training queries (a fold's train ids); ``None``: all judged ones.
            Pass the train part of `split_queries`, never the evaluation queries.
    """
    ids = list(qrels) if query_ids is None else list(query_ids)
    out = []
    for qid in ids:
        text = queries.get(qid)
        if text is None:
            raise ValueError(f"query id {qid!r} is not in the dataset's queries")
        for doc_id, grade in qrels.get(qid, {}).items():
            if grade >= 1 and doc_id in corpus:
                out.append(TrainingPair(text, doc_id, corpus[doc_id].text, "qrels"))
    return out


def pairs_from_user(pairs: Iterable[Any], corpus: Sequence[Doc]) -> list[TrainingPair]:
    """The user's ``(query, passage)`` pairs, each passage found in ``corpus``.

    A passage is matched by document id first, then by text (whitespace and case
    ignored). `TrainingPair` items are checked the same way.

    Raises:
        ValueError: no pairs, or a passage that is not a document of the corpus (the
            first few are named): its hard negatives could not exclude it, and a model
            tuned on passages the index does not hold is not measured by it.
        TypeError: an item that is not a 2-tuple of str or a `TrainingPair`.
    """
    by_id = {d.id: d for d in corpus}
    by_text: dict[str, Doc] = {}
    for d in corpus:
        by_text.setdefault(normalize_text(d.text), d)
    out, missing = [], []
    for i, item in enumerate(pairs):
        if isinstance(item, TrainingPair):
            query, passage = item.anchor, item.doc_id
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(
                isinstance(v, str) for v in item):
            query, passage = item
        else:
            raise TypeError(f"pairs[{i}] must be a (query, passage) tuple of str or a "
                            f"TrainingPair, got {item!r:.80}")
        if not query.strip():
            raise ValueError(f"pairs[{i}] has an empty query")
        doc = by_id.get(passage) or by_text.get(normalize_text(passage))
        if doc is None and isinstance(item, TrainingPair):
            doc = by_text.get(normalize_text(item.positive))
        if doc is None:
            missing.append(f"pairs[{i}] ({passage[:60]!r})")
            continue
        out.append(TrainingPair(query, doc.id, doc.text, "user"))
    if missing:
        raise ValueError(
            f"{len(missing)} pair(s) name a passage that is not in the corpus, e.g. "
            + ", ".join(missing[:3]) + "; a passage must be a document's id or its exact text")
    if not out:
        raise ValueError("pairs is empty: pass at least one (query, passage) pair, or mine "
                         "pairs from the corpus (mine='titles' or 'sentences')")
    return out


def mine_pairs(
    corpus: Iterable[Doc],
    how: str = "titles",
    *,
    min_words: int = 20,
    max_pairs: int | None = None,
    generate: Callable[[str], str] | None = None,
    prompt: str = QUESTION_PROMPT,
    timeout: float | None = DEFAULT_LLM_TIMEOUT,
    seed: int = 0,
) -> list[TrainingPair]:
    """Training pairs from the corpus alone (no judgments), filtered and deduplicated.

    Args:
        corpus: the documents (`Doc`; a title is read from ``metadata["title"]``).
        how: ``"titles"`` (title -> body, heading -> section), ``"sentences"`` (one
            sentence -> the rest of its passage) or ``"llm"`` (an LLM's question ->
            the passage).
        min_words: shortest positive passage kept, in words.
        max_pairs: keep at most this many (a seeded sample; also the number of
            passages sent to the LLM with ``how="llm"``).
        generate: the LLM for ``how="llm"``: a callable ``prompt -> str``.
        prompt: the LLM prompt, with ``{passage}``.
        timeout: seconds per LLM call (``None``: no limit); as in HyDE.
        seed: seed of the sentence choice and of the samples.

    Example:
        >>> docs = [Doc("1", "Wing lift. " + "The lift of a swept wing grows with the "
        ...             "angle of attack until the flow separates. " * 3,
        ...             {"title": "Lift of swept wings"})]
        >>> [(p.anchor, p.doc_id, p.source) for p in mine_pairs(docs, "titles")]
        [('Lift of swept wings', '1', 'titles')]
    """
    if how not in MINING_METHODS:
        raise ValueError(f"how must be one of {MINING_METHODS!r}, got {how!r}")
    docs = list(corpus)
    if not docs:
        raise ValueError("corpus is empty: there is nothing to mine pairs from")
    min_words = check_k(min_words, "min_words")
    rng = random.Random(seed)
    if how == "llm":
        if not callable(generate):
            raise TypeError("how='llm' needs generate=: a callable prompt -> str (an LLM)")
        if "{passage}" not in prompt:
            raise ValueError("prompt must contain {passage}")
        timeout = check_timeout(timeout)
        candidates = [d for d in docs if _words(d.text) >= min_words]
        if max_pairs is not None and len(candidates) > max_pairs:
            candidates = rng.sample(candidates, max_pairs)
        raw = [p for d in candidates
               for p in _llm_pair(d, generate, prompt, timeout, rng)]
    elif how == "titles":
        raw = [p for d in docs for p in _structure_pairs(d)]
    else:
        raw = [p for d in docs for p in _sentence_pairs(d, rng)]
    pairs = _filtered(raw, min_words)
    if max_pairs is not None and len(pairs) > check_k(max_pairs, "max_pairs"):
        pairs = sorted(rng.sample(pairs, max_pairs), key=pairs.index)
    return pairs


def _structure_pairs(doc: Doc) -> list[TrainingPair]:
    out = []
    title = doc.metadata.get("title") if doc.metadata else None
    if isinstance(title, str) and title.strip():
        body = doc.text.strip()
        # BEIR documents read as "title text", and some repeat the title: strip every copy.
        stripped = normalize_text(title)
        while normalize_text(body[: len(title) + 2]).startswith(stripped):
            body = body[len(title):].lstrip(" .:-\n\t")
            if not body:
                break
        out.append(TrainingPair(title.strip(), doc.id, body, "titles"))
    matches = list(_HEADING.finditer(doc.text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(doc.text)
        section = doc.text[m.end():end].strip()
        out.append(TrainingPair(m.group(1), doc.id, section, "headings"))
    return out


def _sentence_pairs(doc: Doc, rng: random.Random) -> list[TrainingPair]:
    spans = sentence_spans(doc.text)
    usable = [(a, b) for a, b in spans
              if _MIN_ANCHOR_WORDS + 2 <= _words(doc.text[a:b]) <= _MAX_ANCHOR_WORDS]
    if len(spans) < 2 or not usable:
        return []
    a, b = rng.choice(usable)
    rest = (doc.text[:a] + " " + doc.text[b:]).strip()
    return [TrainingPair(doc.text[a:b].strip(), doc.id, rest, "sentences")]


def _llm_pair(doc: Doc, generate: Callable[[str], str], prompt: str,
              timeout: float | None, rng: random.Random) -> list[TrainingPair]:
    try:
        question = call_with_timeout(generate, prompt.replace("{passage}", doc.text),
                                     timeout=timeout)
        if not isinstance(question, str):
            raise TypeError(f"the generator returned {type(question).__name__}, not str")
        if not question.strip():
            raise ValueError("the generator returned blank text")
    except Exception as exc:  # the HyDE rule: an LLM failure never fails the run
        logger.warning("question generation failed for document %r (%s: %s); using a "
                       "sentence pair instead", doc.id, type(exc).__name__, exc)
        return [replace(p, source="llm-fallback") for p in _sentence_pairs(doc, rng)]
    return [TrainingPair(question.strip(), doc.id, doc.text, "llm")]


def _filtered(pairs: list[TrainingPair], min_words: int) -> list[TrainingPair]:
    kept = [p for p in pairs
            if _MIN_ANCHOR_WORDS <= _words(p.anchor) <= _MAX_ANCHOR_WORDS
            and _words(p.positive) >= min_words
            and normalize_text(p.anchor) != normalize_text(p.positive)]
    docs_per_anchor = Counter(
        a for a, _ in {(normalize_text(p.anchor), p.doc_id) for p in kept})
    seen: set[tuple[str, str]] = set()
    out = []
    for p in kept:
        key = (normalize_text(p.anchor), p.doc_id)
        if docs_per_anchor[key[0]] > 1 or key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out
