"""BM25 quality of the drop-in defaults: the LlamaIndex BM25Retriever's ``metadata_mode``.

Usage::

    python benchmarks/dropin_quality.py [--data-dir DIR] [--datasets cranfield,cisi] [--core-only]

``llama_index.retrievers.hybrid.BM25Retriever`` indexes ``node.get_content(
MetadataMode.EMBED)`` by default, as ``llama-index-retrievers-bm25`` does: the node's
metadata (here the document title, as ``title: ...``) is searchable. This measures what
that default does to nDCG@10 and Recall@100 against ``metadata_mode="none"`` (the text
alone), for two ways a user lays out the nodes:

- *title in text and metadata*: the text is title + body (how this package's BEIR loader
  builds a `Doc`), the title also in the metadata, so EMBED repeats the title;
- *title in metadata only*: the text is the body, the title only in the metadata (a
  LlamaIndex reader's usual node), so EMBED is the only way the title is searched.

The core row (`BM25Index.from_docs` on title + body) is the default the drop-in work
must not change; ``--core-only`` prints it alone, so that the script (with
``_common.py``) copied into an older checkout gives the "before" figure. Each query takes the top 100 (``similarity_top_k=100``), in
the order returned, and is scored with ``hybrid_retrievers.evaluation.evaluate_run``
(trec_eval definitions). Nothing is downloaded; the tables are printed and written to
``benchmarks/results/dropin_quality.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    fmt_float,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)

TOP = 100
METRICS = ["ndcg@10", "recall@100"]

Search = Callable[[str], list[str]]  # query -> doc ids, best first


def _body(doc: Any) -> str:
    """The text without its leading title (the loader joins title and body)."""
    title = str(doc.metadata.get("title", ""))
    return doc.text[len(title):].strip() if title and doc.text.startswith(title) else doc.text


def _core(docs: list[Any]) -> Search:
    from hybrid_retrievers import BM25Index

    index = BM25Index.from_docs(docs)
    return lambda query: [hit.doc.id for hit in index.search(query, TOP)]


def _llama_index(docs: list[Any], title_in_text: bool, metadata_mode: str | None) -> Search:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.hybrid import BM25Retriever

    nodes = [TextNode(id_=d.id, text=d.text if title_in_text else _body(d),
                      metadata=dict(d.metadata)) for d in docs]
    mode = {} if metadata_mode is None else {"metadata_mode": metadata_mode}
    retriever = BM25Retriever(nodes=nodes, similarity_top_k=TOP, **mode)
    return lambda query: [n.node.node_id for n in retriever.retrieve(query)]


def _evaluate(dataset: Any, search: Search) -> dict[str, float]:
    from hybrid_retrievers.evaluation import evaluate_run

    run = {}
    for qid, query in dataset.queries.items():
        ids = search(query)
        run[qid] = {doc_id: float(len(ids) - i) for i, doc_id in enumerate(ids)}
    return evaluate_run(run, dataset.qrels, METRICS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    parser.add_argument("--core-only", action="store_true",
                        help="only the core BM25Index default (runs on a tree without the "
                             "drop-in LlamaIndex retriever, for the 'before' figure)")
    args = parser.parse_args()
    quiet_third_party()
    systems: list[tuple[str, Callable[[list[Any]], Search]]] = [
        ("core BM25Index.from_docs (title + body)", _core)]
    if not args.core_only:
        for layout, in_text in (("title in text and metadata", True),
                                ("title in metadata only", False)):
            for label, mode in (("none", "none"), ("embed (default)", None)):
                systems.append((f"LlamaIndex BM25Retriever, {layout}, metadata_mode={label}",
                                lambda docs, t=in_text, m=mode: _llama_index(docs, t, m)))
    sections = []
    for name in args.datasets.split(","):
        coll = load_collection(name, args.data_dir)
        if coll is None:
            print(f"skipping {name}: not found under {args.data_dir}")
            continue
        docs = list(coll.dataset.corpus.values())
        rows = []
        for label, build in systems:
            t0 = time.perf_counter()
            scores = _evaluate(coll.dataset, build(docs))
            rows.append([label, *[fmt_float(scores[m]) for m in METRICS],
                         f"{time.perf_counter() - t0:.1f}"])
        head = (f"### {name} ({len(docs)} docs, {len(coll.dataset.queries)} queries; "
                f"source: {coll.source})")
        sections.append(head + "\n\n" + markdown_table(["system", *METRICS, "s"], rows))
        print(sections[-1] + "\n", flush=True)
    text = "\n\n".join([
        "# Drop-in defaults: BM25 quality of LlamaIndex metadata_mode",
        f"Top {TOP} per query, default analyzer and BM25 parameters.",
        *sections,
        "\n".join(environment_lines()),
    ])
    print("results written to", write_results("dropin_quality", text))


if __name__ == "__main__":
    main()
