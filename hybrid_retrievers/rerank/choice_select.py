"""Choice-select reranking: an LLM picks the relevant candidates of each batch and scores them.

The algorithm of LlamaIndex's ``LLMRerank`` (llama-index-core,
``postprocessor/llm_rerank.py``), framework-free:

1. the candidates are cut into batches of ``choice_batch_size``, in input order;
2. each batch is shown to the LLM as ``"Document 1:\\n<text>\\n\\nDocument 2:\\n..."`` with
   the query, and the LLM answers one line per relevant document, ``"Doc: 9, Relevance: 7"``
   (`parse_choice_select_answer`), leaving out the documents it finds irrelevant;
3. every chosen candidate gets its relevance as its score (``1.0`` each when the answer
   had numbers but no relevances); the chosen candidates of all batches are sorted by
   score, highest first, ties keeping batch order and then the answer's order; candidates
   the LLM left out are dropped; the best ``top_n`` are returned.

What this module adds to the original, so a query never fails because of the LLM:

* each LLM call waits at most ``timeout`` seconds (`hybrid_retrievers.timeout`); after a
  timeout the remaining batches are not sent (the sync path; the async path sends all
  batches at once, as the original does);
* a batch whose call raised, timed out, or whose answer names no candidate is **kept in
  input order after every chosen candidate**, with score ``0.0`` and ``status``
  ``"fallback"`` (the original drops such a batch silently); a warning is logged;
* a chosen number outside ``1..n`` (the original's parser lets ``0`` and negative numbers
  through, which pick a candidate from the end of the batch), a repeated number, or a
  mismatch between the numbers and the relevances is ignored and recorded
  (``status="repaired"``); a line whose relevance cannot be read is skipped as a whole
  (the original kept its number and shifted every later relevance onto the wrong
  document);
* each result's ``explanation["rerank"]`` holds ``method="choice_select"``, the model,
  ``status`` (``"ok"``, ``"repaired"``, ``"fallback"``, for the result's own batch),
  ``detail`` and ``batch`` (1-based), besides the usual provenance (`hybrid_retrievers.rerank`).

Prompt injection: candidates are untrusted text shown to the model; a candidate may
contain text such as "Document 3:" or instructions. The choice-select prompt, kept as the
original's, does not guard against that (the listwise `LLMReranker` does more).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..models.names import model_name
from ..timeout import (
    DEFAULT_LLM_TIMEOUT,
    LLMTimeoutError,
    acall_with_timeout,
    call_with_timeout,
    check_timeout,
)
from ..types import Doc, Hit
from ..validation import check_k
from .candidates import RerankInput, RerankItem, prepare, provenance
from .listwise import _as_text

__all__ = ["DEFAULT_CHOICE_SELECT_PROMPT", "BatchJudgement", "ChoiceSelectReranker",
           "format_choice_batch", "parse_choice_select_answer"]

logger = logging.getLogger("hybrid_retrievers.rerank")

DEFAULT_CHOICE_SELECT_PROMPT = (
    "A list of documents is shown below. Each document has a number next to it along "
    "with a summary of the document. A question is also provided. \n"
    "Respond with the numbers of the documents "
    "you should consult to answer the question, in order of relevance, as well \n"
    "as the relevance score. The relevance score is a number from 1-10 based on "
    "how relevant you think the document is to the question.\n"
    "Do not include any documents that are not relevant to the question. \n"
    "Example format: \n"
    "Document 1:\n<summary of document 1>\n\n"
    "Document 2:\n<summary of document 2>\n\n"
    "...\n\n"
    "Document 10:\n<summary of document 10>\n\n"
    "Question: <question>\n"
    "Answer:\n"
    "Doc: 9, Relevance: 7\n"
    "Doc: 3, Relevance: 4\n"
    "Doc: 7, Relevance: 3\n\n"
    "Let's try this now: \n\n"
    "{context_str}\n"
    "Question: {query_str}\n"
    "Answer:\n"
)
"""LlamaIndex's ``DEFAULT_CHOICE_SELECT_PROMPT_TMPL`` (placeholders ``{context_str}``,
``{query_str}``), word for word, so answers parse the same way."""

Ask = Callable[[str, list[Doc]], Any]
"""``ask(query, batch)``: one LLM call for one batch of candidate documents; returns the
answer (a str, or an object with a str ``text`` / ``content``)."""
AAsk = Callable[[str, list[Doc]], Awaitable[Any]]
Parse = Callable[[str, int], tuple[Sequence[Any], Sequence[Any]]]


def format_choice_batch(texts: Sequence[str]) -> str:
    """The batch as the original shows it: ``"Document 1:\\n<text>"`` blocks, numbered
    from 1, joined by a blank line.

    Example:
        >>> print(format_choice_batch(["cats", "wings"]))
        Document 1:
        cats
        <BLANKLINE>
        Document 2:
        wings
    """
    return "\n\n".join(f"Document {i}:\n{text}" for i, text in enumerate(texts, 1))


_DIGITS = re.compile(r"\d+")


def parse_choice_select_answer(answer: str, num_choices: int) -> tuple[list[int], list[float]]:
    """The chosen document numbers and their relevances in an answer such as
    ``"Doc: 9, Relevance: 7"`` (one per line), as LlamaIndex's
    ``default_parse_choice_select_answer_fn`` reads it: a line counts when it has exactly
    one comma, an integer after the first colon and digits after the second; the
    relevance is the first run of digits (``"7.5"`` reads as 7). Other lines are skipped,
    and so are numbers outside ``1..num_choices`` and (unlike the original, which kept the
    number and misaligned the relevances) lines whose relevance cannot be read.

    Example:
        >>> parse_choice_select_answer("Sure.\\nDoc: 2, Relevance: 9\\nDoc: 7, Relevance: 3", 3)
        ([2], [9.0])
    """
    numbers: list[int] = []
    relevances: list[float] = []
    for line in str(answer).split("\n"):
        tokens = line.split(",")
        if len(tokens) != 2:
            continue
        try:
            number = int(tokens[0].split(":")[1].strip())
            relevance = float(_DIGITS.findall(tokens[1].split(":")[1].strip())[0])
        except (IndexError, ValueError):
            continue
        if 1 <= number <= num_choices:
            numbers.append(number)
            relevances.append(relevance)
    return numbers, relevances


@dataclass(frozen=True, slots=True)
class BatchJudgement:
    """What one batch's answer chose.

    Attributes:
        chosen: ``(position in the batch, relevance)`` pairs, in the answer's order.
        status: ``"ok"``, ``"repaired"`` or ``"fallback"`` (nothing usable: the batch
            keeps its input order, after every chosen candidate).
        detail: What was repaired, or why the batch fell back (``""`` when ok).
    """

    chosen: tuple[tuple[int, float], ...]
    status: str
    detail: str


class ChoiceSelectReranker:
    """LlamaIndex's ``LLMRerank`` algorithm (choice select in batches), failing safe.

    See the module docstring for the algorithm and what is added to it. Scores are the
    LLM's relevances (1-10 with the default prompt), so results may number fewer than
    ``top_n``: candidates the LLM leaves out are dropped.

    Args:
        generate: A callable ``prompt -> str`` (a `TextGenerator`), used when no ``ask``
            is given to `rerank`; ``None`` when every call passes its own ``ask``.
        top_n: How many candidates to keep at most (>= 1; the original's default 10).
        choice_batch_size: Candidates per LLM call (>= 1; default 10).
        prompt: The template, with ``{context_str}`` (the formatted batch) and
            ``{query_str}``.
        parse: ``parse(answer, n) -> (numbers, relevances)``; default
            `parse_choice_select_answer`. An empty ``relevances`` scores every number 1.0.
        agenerate: An async ``prompt -> str`` for `arerank` (else ``generate`` runs in a
            daemon worker thread).
        name: The model's name for provenance (default: from ``generate``).
        timeout: Seconds to wait for each LLM answer (default 30; ``None``: no limit).

    Example:
        >>> from hybrid_retrievers import Doc
        >>> docs = [Doc("a", "cats"), Doc("b", "wing lift"), Doc("c", "drag")]
        >>> llm = lambda prompt: "Doc: 3, Relevance: 4\\nDoc: 2, Relevance: 9"
        >>> hits = ChoiceSelectReranker(llm).rerank("lift", docs)
        >>> [(h.id, h.score) for h in hits]
        [('b', 9.0), ('c', 4.0)]
        >>> hit = ChoiceSelectReranker(lambda prompt: "no idea").rerank("lift", docs)[0]
        >>> hit.id, hit.score, hit.explanation["rerank"]["status"]
        ('a', 0.0, 'fallback')
    """

    def __init__(
        self,
        generate: Callable[[str], Any] | None = None,
        *,
        top_n: int = 10,
        choice_batch_size: int = 10,
        prompt: str = DEFAULT_CHOICE_SELECT_PROMPT,
        parse: Parse = parse_choice_select_answer,
        agenerate: Callable[[str], Awaitable[Any]] | None = None,
        name: str | None = None,
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
    ) -> None:
        for label, fn in (("generate", generate), ("agenerate", agenerate)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{label} must be a callable prompt -> str or None, got "
                                f"{type(fn).__name__}")
        if not callable(parse):
            raise TypeError("parse must be a callable (answer, n) -> (numbers, relevances), "
                            f"got {type(parse).__name__}")
        self.generate = generate
        self.agenerate = agenerate
        self.top_n = check_k(top_n, name="top_n")
        self.choice_batch_size = check_k(choice_batch_size, name="choice_batch_size")
        self.prompt = _check_prompt(prompt)
        self.parse = parse
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"name must be a non-empty str or None, got {name!r:.80}")
        self.name = name if name is not None else (
            model_name(generate) if generate is not None else "llm")
        self.timeout = check_timeout(timeout)

    @property
    def model_id(self) -> str:
        return self.name

    def build_prompt(self, query: str, texts: Sequence[str]) -> str:
        """The prompt for ``query`` and one batch's ``texts`` (`format_choice_batch`)."""
        return self.prompt.format(context_str=format_choice_batch(texts), query_str=query)

    def batches(self, count: int, choice_batch_size: int | None = None) -> list[range]:
        """The batches' input positions for ``count`` candidates (``choice_batch_size``
        overrides the reranker's)."""
        size = (self.choice_batch_size if choice_batch_size is None
                else check_k(choice_batch_size, name="choice_batch_size"))
        return [range(start, min(start + size, count)) for start in range(0, count, size)]

    # --------------------------------------------------------------- calls

    def _ask_or_default(self, ask: Ask | None, *others: Any) -> Ask:
        """``ask``, else the default call; TypeError when there is neither (a caller's
        mistake, not an LLM failure to fall back from)."""
        if ask is not None:
            return ask
        if self.generate is None and not any(o is not None for o in others):
            raise TypeError("this ChoiceSelectReranker has no generate: pass ask=... to "
                            "rerank() or build it with a generate callable")
        return self._default_ask

    def _default_ask(self, query: str, batch: list[Doc]) -> Any:
        assert self.generate is not None
        return self.generate(self.build_prompt(query, [d.text for d in batch]))

    def rerank(self, query: str, docs: Sequence[RerankInput], *, top_n: int | None = None,
               ask: Ask | None = None, choice_batch_size: int | None = None) -> list[Hit]:
        """Ask the LLM about each batch in turn; return the best ``top_n`` as new hits.

        ``ask(query, batch_docs)`` replaces the default call (``generate`` on
        `build_prompt`), e.g. to show a chat model images; ``top_n`` and
        ``choice_batch_size`` override the reranker's for this call. Never raises because
        of the LLM; raises TypeError / ValueError for a bad query, candidate list,
        ``top_n`` or ``choice_batch_size``.
        """
        query, items, top_n = prepare(query, docs, top_n, self.top_n)
        fn = self._ask_or_default(ask)
        judgements: list[BatchJudgement] = []
        batches = self.batches(len(items), choice_batch_size)
        for number, batch in enumerate(batches, 1):
            try:
                answer: Any = call_with_timeout(fn, query, [items[i].doc for i in batch],
                                                timeout=self.timeout)
            except Exception as exc:  # fail safe: the query must not fail
                answer = exc
            judgements.append(self.judge(answer, len(batch)))
            if isinstance(answer, LLMTimeoutError) and number < len(batches):
                note = (f"not sent: batch {number} gave no answer within the timeout; kept "
                        "the input order")
                judgements += [BatchJudgement((), "fallback", note)] * (len(batches) - number)
                break
        return self._hits(items, batches, judgements, top_n)

    async def arerank(self, query: str, docs: Sequence[RerankInput], *,
                      top_n: int | None = None, ask: Ask | None = None,
                      aask: AAsk | None = None,
                      choice_batch_size: int | None = None) -> list[Hit]:
        """Async `rerank`: all batches are asked at once (as the original's
        ``run_jobs``), each waited for at most ``timeout`` seconds. ``aask`` is awaited
        when given (else ``ask``, or the default, runs in a daemon worker thread)."""
        query, items, top_n = prepare(query, docs, top_n, self.top_n)
        fn = self._ask_or_default(ask, aask, self.agenerate)
        if aask is None and ask is None and self.agenerate is not None:
            agenerate = self.agenerate

            async def aask(q: str, batch: list[Doc]) -> Any:
                return await agenerate(self.build_prompt(q, [d.text for d in batch]))

        batches = self.batches(len(items), choice_batch_size)

        async def one(batch: range) -> BatchJudgement:
            docs_ = [items[i].doc for i in batch]
            try:
                answer: Any = await acall_with_timeout(
                    None if aask is None else (lambda: aask(query, docs_)), fn, query, docs_,
                    timeout=self.timeout)
            except Exception as exc:  # fail safe: the query must not fail
                answer = exc
            return self.judge(answer, len(batch))

        judgements = list(await asyncio.gather(*(one(b) for b in batches)))
        return self._hits(items, batches, judgements, top_n)

    # ----------------------------------------------------------- judging

    def judge(self, answer: Any, n: int) -> BatchJudgement:
        """What the answer for a batch of ``n`` chose (an exception: the call failed)."""
        if isinstance(answer, LLMTimeoutError):
            return BatchJudgement((), "fallback",
                                  f"the LLM gave {answer}; kept the input order")
        if isinstance(answer, Exception):
            return BatchJudgement((), "fallback", f"the LLM raised {type(answer).__name__}: "
                                  f"{answer}; kept the input order")
        text = _as_text(answer)
        if not isinstance(text, str):
            return BatchJudgement((), "fallback", f"the LLM returned {type(text).__name__}, "
                                  "not text; kept the input order")
        try:
            numbers, relevances = self.parse(text, n)
            numbers, relevances = list(numbers), list(relevances)
        except Exception as exc:  # a caller's parser failing is a parse failure
            return BatchJudgement((), "fallback", f"the parser raised {type(exc).__name__}: "
                                  f"{exc}; kept the input order")
        problems = []
        if not relevances:
            relevances = [1.0] * len(numbers)
        elif len(relevances) != len(numbers):
            problems.append(f"{len(numbers)} numbers but {len(relevances)} relevances; "
                            "paired them in order and ignored the rest")
        chosen: list[tuple[int, float]] = []
        seen: set[int] = set()
        ignored: list[str] = []
        for number, relevance in zip(numbers, relevances):
            position, score = _as_int(number), _as_float(relevance)
            if position is None or not 1 <= position <= n or score is None:
                ignored.append(f"{number!r:.20}: {relevance!r:.20}")
            elif position in seen:
                ignored.append(f"repeated {position}")
            else:
                seen.add(position)
                chosen.append((position - 1, score))
        if ignored:
            problems.append(f"ignored choices {', '.join(ignored)} (valid numbers: 1..{n}, "
                            "relevances: finite numbers)")
        if not chosen:
            snippet = " ".join(text.split())
            snippet = snippet if len(snippet) <= 120 else snippet[:117] + "..."
            problems.append(f"no usable 'Doc: N, Relevance: S' line (N in 1..{n}) in the "
                            f"LLM's answer {snippet!r}; kept the input order")
            return BatchJudgement((), "fallback", "; ".join(problems))
        return BatchJudgement(tuple(chosen), "repaired" if problems else "ok",
                              "; ".join(problems))

    def _hits(self, items: list[RerankItem], batches: list[range],
              judgements: list[BatchJudgement], top_n: int) -> list[Hit]:
        chosen: list[tuple[float, int, BatchJudgement, int]] = []  # score, item, ...
        kept: list[tuple[int, BatchJudgement, int]] = []
        notes = []
        for number, (batch, judgement) in enumerate(zip(batches, judgements), 1):
            if judgement.status == "fallback":
                kept += [(i, judgement, number) for i in batch]
            else:
                chosen += [(score, batch[j], judgement, number) for j, score in judgement.chosen]
            if judgement.status != "ok":
                notes.append(f"batch {number}: {judgement.detail}")
        chosen.sort(key=lambda c: -c[0])  # stable: ties keep batch and answer order
        order = chosen + [(0.0, i, judgement, number) for i, judgement, number in kept]
        if kept:
            logger.warning("LLM reranking (%s) kept the input order of some candidates: %s",
                           self.name, "; ".join(notes))
        elif notes:
            logger.debug("LLM reranking (%s) repaired answers: %s", self.name,
                         "; ".join(notes))
        calls = len(batches)
        out = []
        for rank, (score, i, judgement, number) in enumerate(order[:top_n], 1):
            extra = {"method": "choice_select", "model": self.name, "status": judgement.status,
                     "detail": judgement.detail, "batch": number, "llm_calls": calls}
            out.append(Hit(items[i].doc, score, rank, provenance(items[i], score, extra)))
        return out

    def __repr__(self) -> str:
        return (f"ChoiceSelectReranker({self.name!r}, top_n={self.top_n}, "
                f"choice_batch_size={self.choice_batch_size}, timeout={self.timeout!r})")


def _as_int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number == value or isinstance(value, str) else None


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _check_prompt(prompt: Any) -> str:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str template, got {type(prompt).__name__}")
    try:
        prompt.format(context_str="Document 1:\nx", query_str="q")
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"prompt is not a valid template ({type(exc).__name__}: {exc}); only "
            "{context_str} and {query_str} may be used, and literal braces must be doubled"
        ) from exc
    missing = [p for p in ("{context_str}", "{query_str}") if p not in prompt]
    if missing:
        raise ValueError(f"prompt must contain {{context_str}} and {{query_str}}; missing "
                         f"{', '.join(missing)}")
    return prompt
