"""``hybrid-retrievers serve IDX``: the index as a Model Context Protocol server.

Built on the ``mcp`` SDK's `MCPServer` (the ``serve`` extra), over stdio (default: an
agent starts the process) or streamable HTTP (``--transport http``). Two tools:

* ``search(query, k=5, mode=None, filter=None, parents=False, image=None)``: the same
  records the ``search`` command prints with ``--json`` (file, section, span, passage,
  fused score, each leg's rank; for an index with images, ``type="image"`` and the image's
  path on image results and the routes that found each result), texts cut at `MAX_TEXT`
  characters. ``image`` is a query image as a ``data:image/...;base64,`` URI (at most
  `MAX_IMAGE_CHARS` characters), searched through the index's CLIP vectors;
* ``explain(query, id)``: BM25's per-term breakdown for one chunk (and the learned
  sparse leg's per-token one, when the index has that leg) and where each leg ranks it.

Safety: the server is read-only (no tool writes; both are annotated ``readOnlyHint``);
the index folder is fixed when the server starts, and no tool takes a path (``id`` is
looked up in the index, never opened; a query image is sent as data, and a string that
is not a ``data:image/`` URI is refused before it could be read as a path), so a client
cannot reach a file outside the folder; inputs are bounded (`MAX_QUERY_CHARS`, `MAX_K`,
`MAX_FILTER_KEYS`, filter values are scalars) and a bad one is a tool error naming the
argument. Errors speak the tools' argument names (``image``, ``id``), never the command
line's flags, and name the index by its folder's name, never the server's path.

Over HTTP the SDK answers malformed requests itself (400 for a body that is not JSON-RPC,
404 for an unknown session or path, 421 for a foreign ``Host`` on a loopback address, its
DNS-rebinding guard); this module bounds what it lets through: a request body of at most
`MAX_REQUEST_BYTES` (413 above it: room for the largest image the ``search`` tool takes,
which the SDK's 4 MiB default would refuse) and at most `MAX_SESSIONS` open sessions. The
server has no authentication: bound to an address other than loopback, it says so.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..ingest import FolderIndex
from ._search import MODES

MAX_QUERY_CHARS = 2000
MAX_K = 50
MAX_FILTER_KEYS = 8
MAX_TEXT = 4000
MAX_IMAGE_CHARS = 14_000_000  # a 10 MB image, base64-encoded
MAX_REQUEST_BYTES = MAX_IMAGE_CHARS + 1_000_000
"""The largest HTTP request body: the largest query image plus the other arguments (a
query of `MAX_QUERY_CHARS` characters is at most 12 kB as JSON) and the JSON-RPC frame."""
MAX_SESSIONS = 100
"""Open HTTP sessions at once (the SDK's default is 10,000); an agent opens one."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _check_image(image: Any) -> str | None:
    if image is None:
        return None
    if not isinstance(image, str) or not image.startswith("data:image/"):
        raise ValueError("image must be a data:image/...;base64, URI (the server opens no "
                         "path)")
    if len(image) > MAX_IMAGE_CHARS:
        raise ValueError(f"image must be at most {MAX_IMAGE_CHARS} characters, got {len(image)}")
    return image


def _check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"query must be at most {MAX_QUERY_CHARS} characters, got {len(query)}")
    return query


def _check_filter(filter: Any) -> dict[str, Any] | None:
    if filter is None:
        return None
    if not isinstance(filter, dict) or len(filter) > MAX_FILTER_KEYS:
        raise ValueError(f"filter must be an object of at most {MAX_FILTER_KEYS} metadata keys")
    for key, value in filter.items():
        if not isinstance(value, (str, int, float, bool)) or len(str(value)) > 500:
            raise ValueError(f"filter[{key!r}] must be a string, number or boolean "
                             "(at most 500 characters)")
    return filter


def build_server(loaded: FolderIndex) -> Any:
    """The `MCPServer` with the ``search`` and ``explain`` tools over ``loaded``."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
    except ImportError:
        raise ImportError("serve needs the mcp SDK: pip install 'hybrid-retrievers[serve]'") \
            from None
    server = MCPServer(
        "hybrid-retrievers",
        instructions=f"Hybrid search over the documents indexed in "
                     f"{loaded.folder.name} ({len(loaded.lexical)} chunks; legs: "
                     f"{', '.join(loaded.names)}). Results name their file and section"
                     + ("; image results have type 'image' and the image's path, and a "
                        "query image (a data URI) finds images." if loaded.multimodal else "."),
    )
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def search(query: str = "", k: int = 5, mode: str | None = None,
               filter: dict[str, Any] | None = None, parents: bool = False,
               image: str | None = None) -> dict[str, Any]:
        """Search the index. query: the question or keywords; k: results (1-50); mode:
        fusion mode (rrf, relative_score, dist_based_score, ...); filter: metadata
        equality, e.g. {"file": "README.md"}; parents: return whole sections; image: a
        query image as a data:image/png;base64,... URI (with or without query). Image
        results have type "image" and the image's path."""
        try:
            return _search(query, k, mode, filter, parents, image)
        except (ValueError, KeyError, TypeError) as exc:  # the client's mistake: say which
            raise ToolError(exc.args[0] if exc.args else str(exc)) from None

    def _search(query: Any, k: Any, mode: Any, filter: Any, parents: Any,
                image: Any) -> dict[str, Any]:
        image = _check_image(image)
        if image is not None and not loaded.takes_query_images:
            raise ValueError(f"image: the index {loaded.folder.name!r} holds no image vectors "
                             "(it was built without CLIP), so it cannot be searched by an "
                             "image")
        query = None if image is not None and query in ("", None) else _check_query(query)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
        found = loaded.search(query, k, mode=mode, filter=_check_filter(filter),
                              parents=bool(parents), image=image)
        results = []
        for result in found:
            record = result.as_dict()
            record["text"] = record["text"][:MAX_TEXT]
            results.append(record)
        return {"results": results}

    @server.tool(annotations=read_only)
    def explain(query: str, id: str) -> dict[str, Any]:
        """Why the chunk `id` (from a search result) scored what it did for `query`:
        BM25's per-term idf, tf and contribution, the sparse leg's per-token weights
        (when the index has one), and each leg's rank."""
        try:
            query = _check_query(query)
            if not isinstance(id, str) or not id or len(id) > 1000 or id not in loaded.lexical:
                raise ValueError(f"id must be a chunk id from a search result; the index "
                                 f"{loaded.folder.name!r} has no chunk {str(id)[:100]!r}")
            return loaded.explain(query, id)
        except (ValueError, KeyError, TypeError) as exc:
            raise ToolError(exc.args[0] if exc.args else str(exc)) from None

    return server


def serve_command(args: argparse.Namespace) -> int:
    loaded = FolderIndex.open(args.index, model=args.model, sparse_model=args.sparse_model,
                              clip_model=args.clip_model, label=repr(args.index.name))
    loaded.search("warm up", 1)  # load the model now, not on the first client query
    server = build_server(loaded)
    print(f"serving {args.index} over {args.transport} "
          + (f"at http://{args.host}:{args.port}/mcp" if args.transport == "http" else ""),
          file=sys.stderr, flush=True)
    if args.transport == "http":
        if args.host not in _LOOPBACK:
            print(f"warning: {args.host} is not a loopback address and the server has no "
                  "authentication: anyone who reaches this port can search the index",
                  file=sys.stderr, flush=True)
        server.run("streamable-http", host=args.host, port=args.port,
                   max_request_body_size=MAX_REQUEST_BYTES, max_sessions=MAX_SESSIONS)
    else:
        server.run("stdio")
    return 0
