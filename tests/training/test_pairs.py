"""Training pairs: mining (titles, headings, sentences, LLM with fallback), filtering and
deduplication, k-fold query splits with no leak, qrels and user pairs, BM25 hard negatives."""

from __future__ import annotations

import logging
import threading

import pytest

from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.training import TrainingPair, mine_pairs, split_queries
from hybrid_retrievers.training.negatives import add_hard_negatives
from hybrid_retrievers.training.pairs import normalize_text, pairs_from_qrels, pairs_from_user
from hybrid_retrievers.types import Doc

BODY = ("the lift of a swept wing grows with the angle of attack until the boundary layer "
        "separates from the upper surface. at high subsonic speeds the sweep delays "
        "compressibility drag. flaps and slats raise the maximum lift coefficient for "
        "landing.")


def _doc(doc_id: str, title: str | None, body: str = BODY) -> Doc:
    text = f"{title} . {title} . {body}" if title else body
    return Doc(doc_id, text, {"title": title} if title else {})


def _distinct(i: int) -> str:
    return " ".join(f"document {i} sentence {j} is about swept wing lift and drag."
                    for j in range(4))


def test_titles_strip_the_title_from_the_body_and_drop_boilerplate() -> None:
    docs = [_doc("1", "lift of swept wings"), _doc("2", "Introduction to it", BODY + " two"),
            _doc("3", "Introduction to it", BODY + " three"), _doc("4", "ab"),
            _doc("5", None)]
    pairs = mine_pairs(docs, "titles")
    assert [(p.anchor, p.doc_id, p.source) for p in pairs] == [
        ("lift of swept wings", "1", "titles")]  # boilerplate (2 docs) and 'ab' (1 word) gone
    assert pairs[0].positive == BODY  # both copies of the title removed


def test_headings_give_heading_section_pairs() -> None:
    text = ("# Wing lift basics\n" + BODY + "\n\n## Bread rising yeast notes\n"
            "sourdough bread rises because wild yeast and lactic acid bacteria ferment the "
            "flour, and kneading develops gluten, the elastic network that traps the gas.\n")
    pairs = mine_pairs([Doc("d", text)], "titles")
    assert [(p.anchor, p.source) for p in pairs] == [
        ("Wing lift basics", "headings"), ("Bread rising yeast notes", "headings")]
    assert pairs[1].positive.startswith("sourdough") and "##" not in pairs[0].positive


def test_sentences_are_the_inverse_cloze_task_and_seeded() -> None:
    docs = [_doc(str(i), None, _distinct(i)) for i in range(5)]
    a = mine_pairs(docs, "sentences", seed=1)
    assert a == mine_pairs(docs, "sentences", seed=1)
    assert len(a) == 5
    for p in a:
        assert p.source == "sentences" and p.anchor in docs[int(p.doc_id)].text
        assert p.anchor not in p.positive  # the rest of the passage, without the sentence


def test_max_pairs_samples_deterministically() -> None:
    ds = load_dataset("cranfield")
    full = mine_pairs(ds.corpus.values(), "titles")
    assert len(full) > 1000  # Cranfield has a title per document
    keys = [(normalize_text(p.anchor), p.doc_id) for p in full]
    assert len(set(keys)) == len(keys)  # deduplicated
    some = mine_pairs(ds.corpus.values(), "titles", max_pairs=50, seed=3)
    assert len(some) == 50 and some == mine_pairs(ds.corpus.values(), "titles", max_pairs=50,
                                                  seed=3)


def test_llm_questions_with_timeout_and_fallback(caplog: pytest.LogCaptureFixture) -> None:
    docs = [_doc(str(i), None, _distinct(i) + f" case {i}.") for i in range(4)]
    release = threading.Event()  # set after mining: until then case 2 hangs

    def llm(prompt: str) -> str:
        if "case 1" in prompt:
            raise RuntimeError("rate limited")
        if "case 2" in prompt:
            release.wait(60)  # hung: abandoned at the timeout
        if "case 3" in prompt:
            return "   "
        return "How does sweep change the lift of a wing?"

    try:
        with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.models"):
            # 1 s: ample for the prompt answers on a loaded machine, far below the hang.
            pairs = mine_pairs(docs, "llm", generate=llm, timeout=1.0)
    finally:
        release.set()
    by_doc = {p.doc_id: p for p in pairs}
    assert by_doc["0"].source == "llm" and by_doc["0"].anchor.startswith("How does sweep")
    assert {by_doc[i].source for i in "123"} == {"llm-fallback"}
    assert "rate limited" in caplog.text and "no answer within 1 s" in caplog.text
    with pytest.raises(TypeError, match="generate="):
        mine_pairs(docs, "llm")


def test_bad_mining_inputs() -> None:
    with pytest.raises(ValueError, match="how must be one of"):
        mine_pairs([_doc("1", "a b c")], "paragraphs")
    with pytest.raises(ValueError, match="corpus is empty"):
        mine_pairs([], "titles")


def test_split_queries_is_a_partition_with_no_leak() -> None:
    ids = [str(i) for i in range(23)]
    folds = split_queries(ids, 5, seed=7)
    assert folds == split_queries(ids, 5, seed=7)
    held_all = [q for _, held in folds for q in held]
    assert sorted(held_all) == sorted(ids)  # every query held out exactly once
    for train, held in folds:
        assert not set(train) & set(held)  # the no-leak rule
        assert sorted(train + held) == sorted(ids)
    with pytest.raises(ValueError, match="at least 2"):
        split_queries(ids, 1)
    with pytest.raises(ValueError, match="cannot split 3 queries into 5 folds"):
        split_queries(ids[:3], 5)


def test_qrels_pairs_use_only_the_training_queries() -> None:
    ds = load_dataset("cranfield")
    judged = [q for q in ds.queries if ds.qrels.get(q)]
    train, held = split_queries(judged, 2)[0]
    pairs = pairs_from_qrels(ds.queries, ds.qrels, ds.corpus, train)
    anchors = {normalize_text(p.anchor) for p in pairs}
    assert anchors and not anchors & {normalize_text(ds.queries[q]) for q in held}
    assert all(ds.qrels[q].get(p.doc_id, 0) >= 1 for p in pairs
               for q in train if ds.queries[q] == p.anchor)


def test_user_pairs_are_found_by_id_or_text() -> None:
    docs = [_doc("a", "wing lift"), Doc("b", "Bread rises.")]
    got = pairs_from_user([("q one", "a"), ("q two", "  bread   RISES. "),
                           TrainingPair("q three", "b", "ignored", "x")], docs)
    assert [(p.anchor, p.doc_id, p.source) for p in got] == [
        ("q one", "a", "user"), ("q two", "b", "user"), ("q three", "b", "user")]
    with pytest.raises(ValueError, match=r"1 pair\(s\) name a passage that is not in the corpus"):
        pairs_from_user([("q", "nowhere")], docs)
    with pytest.raises(TypeError, match=r"pairs\[0\] must be a \(query, passage\)"):
        pairs_from_user(["just a string"], docs)


def test_hard_negatives_exclude_positives_and_near_duplicates() -> None:
    docs = [Doc("pos", "swept wing lift at high speed"),
            Doc("dup", "Swept wing lift at high speed!"),  # a near-duplicate of the positive
            Doc("pos2", "lift of a swept wing in a wind tunnel"),  # another positive
            Doc("neg1", "swept wing drag at high speed"), Doc("neg2", "wing flutter"),
            Doc("far", "bread rises")]
    pairs = [TrainingPair("swept wing lift", "pos", docs[0].text, "user"),
             TrainingPair("swept wing lift", "pos2", docs[2].text, "user")]
    got = add_hard_negatives(pairs, docs, 2)
    assert [p.negatives for p in got] == [(docs[3].text, docs[4].text)] * 2
    # Fewer negatives than asked: the pair is dropped.
    assert add_hard_negatives(pairs, docs, 5) == []
    assert add_hard_negatives(pairs, docs, 0) == pairs
