"""``serve`` under hostile clients: what the MCP tools tell a remote client, and the
streamable HTTP transport's answers to malformed, oversized and foreign requests.

The HTTP test runs the real ``serve --transport http`` process on a free loopback port
and sends a bounded list of requests to it (never another address).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hybrid_retrievers.cli import main

ROOT = Path(__file__).resolve().parents[2]
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAFElEQVR4nGOUM7rDAANMDEgAhQMAKzoBMs91tH4"
       "AAAAASUVORK5CYII=")


def _index(tmp_path: Path) -> Path:
    src = tmp_path / "notes"
    src.mkdir()
    (src / "proxy.md").write_text("Set the HTTPS proxy with the HTTPS_PROXY variable.\n")
    idx = tmp_path / "notes-index"
    assert main(["index", str(src), "--out", str(idx), "--bm25-only"]) == 0
    return idx


def _assert_for_a_client(message: str, idx: Path, argument: str) -> None:
    """Names the argument and the index's folder name; no server path, no CLI flag."""
    assert message.startswith(argument) or f"{argument} must" in message, message
    assert repr(idx.name) in message and str(idx.parent) not in message, message
    assert "--" not in message, message


def test_tool_errors_name_the_argument_and_the_index_not_the_server_path(
    tmp_path: Path
) -> None:
    """reliability-r4 F14: ``no chunk 'x' in /abs/path/idx`` and ``--image: /abs/path...
    no --describer was given`` reached the client."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from hybrid_retrievers.ingest import FolderIndex
    from hybrid_retrievers.cli._serve import build_server

    idx = _index(tmp_path)
    server = build_server(FolderIndex.open(idx))

    async def session() -> None:
        async with Client(server) as client:
            for name, arguments, argument in [
                ("explain", {"query": "x", "id": "../../etc/passwd"}, "id"),
                ("explain", {"query": "x", "id": "/etc/passwd"}, "id"),
                ("search", {"query": "x", "image": f"data:image/png;base64,{PNG}"}, "image"),
            ]:
                result = await client.call_tool(name, arguments)
                assert result.is_error
                message = result.content[0].text.removeprefix(f"Error executing tool {name}: ")
                _assert_for_a_client(message, idx, argument)

    anyio.run(session)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rpc(response) -> dict:
    """The JSON-RPC message of a streamable HTTP answer (JSON or one SSE event)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


def test_http_transport_refuses_bad_requests_and_takes_the_largest_image(tmp_path: Path) -> None:
    """A body that is not JSON, a foreign Host (DNS rebinding), a body over the bound, an
    unknown session, method or tool: each refused with its status, and the server still
    answers. A query image of 5 MB (under the tool's own bound) reaches the tool: the
    SDK's default 4 MiB body limit refused it with 413."""
    pytest.importorskip("mcp")
    httpx = pytest.importorskip("httpx")
    from hybrid_retrievers.cli._serve import MAX_REQUEST_BYTES

    idx = _index(tmp_path)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "hybrid_retrievers", "serve", str(idx), "--transport", "http",
         "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    try:
        with httpx.Client(timeout=30) as http:
            deadline = time.monotonic() + 90
            while True:  # bounded wait for the server to listen
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                try:
                    http.get(f"http://127.0.0.1:{port}/")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the server did not start"
                    time.sleep(0.3)

            assert http.post(url, content=b"{not json", headers=headers).status_code == 400
            assert http.post(url, content=b"[]", headers=headers).status_code == 400
            foreign = {**headers, "Host": "attacker.example"}
            assert http.post(url, content=b"{}", headers=foreign).status_code == 421
            too_big = http.post(url, content=b" " * (MAX_REQUEST_BYTES + 1), headers=headers)
            assert too_big.status_code == 413
            assert http.get(f"http://127.0.0.1:{port}/etc/passwd").status_code == 404

            init_request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "test", "version": "1"}}}
            init = http.post(url, headers=headers, json=init_request)
            assert init.status_code == 200 and "notes-index" in json.dumps(_rpc(init))
            session = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-06-18"}
            http.post(url, headers=session,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            forged = {**session, "mcp-session-id": "forged"}
            assert http.post(url, headers=forged, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/list"}).status_code == 404

            def call(n: int, name: str, arguments: dict) -> dict:
                answer = http.post(url, headers=session, json={
                    "jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}})
                assert answer.status_code == 200, answer.text[:200]
                return _rpc(answer)["result"]

            unknown = http.post(url, headers=session,
                                json={"jsonrpc": "2.0", "id": 3, "method": "nope"})
            assert _rpc(unknown)["error"]["code"] == -32601
            assert call(4, "nope", {})["isError"]
            assert call(5, "search", {"query": 5, "k": "x"})["isError"]
            image = "data:image/png;base64," + "A" * 5_000_000
            refused = call(6, "search", {"query": "x", "image": image})
            assert refused["isError"]
            _assert_for_a_client(refused["content"][0]["text"].removeprefix(
                "Error executing tool search: "), idx, "image")
            found = call(7, "search", {"query": "https proxy", "k": 1})
            assert not found["isError"]
            assert found["structuredContent"]["results"][0]["file"] == "proxy.md"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def test_http_serve_passes_its_bounds_and_warns_off_loopback(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The session bound (the SDK's default is 10,000: opening that many takes minutes,
    so the wiring is checked here) and the body bound reach the SDK; an address other
    than loopback is warned about, as the server has no authentication."""
    pytest.importorskip("mcp")
    from mcp.server.mcpserver import MCPServer

    from hybrid_retrievers.cli._serve import MAX_REQUEST_BYTES, MAX_SESSIONS

    idx = _index(tmp_path)
    runs: list[tuple[str, dict]] = []
    monkeypatch.setattr(MCPServer, "run", lambda self, transport, **kw: runs.append(
        (transport, kw)))
    capsys.readouterr()
    for host in ("127.0.0.1", "0.0.0.0"):
        assert main(["serve", str(idx), "--transport", "http", "--host", host,
                     "--port", "8765"]) == 0
        assert runs[-1] == ("streamable-http", {
            "host": host, "port": 8765, "max_request_body_size": MAX_REQUEST_BYTES,
            "max_sessions": MAX_SESSIONS})
        warned = "no authentication" in capsys.readouterr().err
        assert warned == (host == "0.0.0.0")
