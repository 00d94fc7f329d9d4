"""``python -m mindcore.mcp --http`` as a real subprocess on a free 127.0.0.1 port, driven by the
``mcp`` package's streamable HTTP client."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp.client.streamable_http")
pytest.importorskip("uvicorn")

from _mcp_helpers import command, free_port, payload, server_env
from mcp import Client

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import EmbedderMismatchError


def wait_for_port(proc: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert time.monotonic() < deadline, "mindcore mcp --http did not start"
            time.sleep(0.1)


def test_streamable_http_lists_and_calls_tools(tmp_path: Path) -> None:
    """On the bundled offline embedder, as users run it."""
    port = free_port()
    store = tmp_path / "store"
    options = ("--agent", "web", "--http", "--port", str(port), "--log-level", "info")
    proc = subprocess.Popen(command(store, *options, embedder="default"), env=server_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(proc, port)

        async def scenario() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert "mind_believe" in names and "ltm_recall" in names
                believed = await client.call_tool("mind_believe", {"content": "HTTP clients work too",
                                                                       "confidence": "high"})
                assert believed.is_error is False and payload(believed)["action"] == "created"
                header = (await client.read_resource("mindcore://mind/header")).contents[0]
                assert "HTTP clients work too" in header.text  # type: ignore[union-attr]
                bad = await client.call_tool("ltm_recall", {"query": 42})
                assert bad.is_error is True and "not of type 'string'" in payload(bad)["error"]

        asyncio.run(scenario())
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"serving store {store} on http://127.0.0.1:{port}/mcp" in err
    assert f"closed store {store}" in err
    with mindcore.open(store) as reopened, pytest.raises(EmbedderMismatchError, match="MiniLM"):
        mindcore.Mind(reopened, agent="web", embedder=HashEmbedder())  # the store holds the bundled model's vectors


def test_a_client_that_never_finishes_its_headers_is_cut_off(tmp_path: Path) -> None:
    """The same connection guard as ``mindcore serve``: 408 and a close, and the server goes on."""
    port = free_port()
    options = ("--agent", "web", "--http", "--port", str(port), "--header-timeout", "1")
    proc = subprocess.Popen(command(tmp_path / "store", *options), env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(proc, port)
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 "), answer

        async def still_serving() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert "mind_believe" in [t.name for t in (await client.list_tools()).tools]

        asyncio.run(still_serving())
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_health_metrics_request_ids_and_json_log_lines(tmp_path: Path) -> None:
    """What an operator watches: /health, /metrics in Prometheus' text format counting the MCP
    requests, the store's commits and the open connections, an x-request-id on every answer, and a
    JSON log line per request naming it."""
    import json
    import re

    import httpx

    port = free_port()
    options = ("--agent", "web", "--http", "--port", str(port), "--log-level", "info", "--log-format", "json")
    proc = subprocess.Popen(command(tmp_path / "store", *options), env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(proc, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            health = http.get("/health", headers={"x-request-id": "probe-1"})
            assert health.status_code == 200 and health.json() == {"status": "ok"}
            assert health.headers["x-request-id"] == "probe-1"
            assert http.post("/health").status_code == 405

        async def believe() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                done = await client.call_tool("mind_believe", {"content": "Operators can watch this", "confidence": "high"})
                assert done.is_error is False

        asyncio.run(believe())
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            answer = http.get("/metrics")
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
            assert re.fullmatch(r"[0-9a-f]{32}", answer.headers["x-request-id"])
            got = {m[1]: float(m[2]) for m in re.finditer(r"^(\S+) (\S+)$", answer.text, re.MULTILINE)}
            assert got['mindcore_http_requests_total{route="/mcp",method="POST",status="200"}'] >= 1
            assert got['mindcore_http_requests_total{route="/health",method="GET",status="200"}'] == 1
            assert got['mindcore_http_request_duration_seconds_count{route="/mcp"}'] >= 1
            assert got["mindcore_store_commits_total"] >= 1  # the belief
            assert got["mindcore_http_connections_open"] >= 1
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines()]  # every line JSON, uvicorn's too
    requests = [line for line in lines if "request_id" in line]
    assert any(r["request_id"] == "probe-1" and r["route"] == "/health" for r in requests)
    assert any(r["route"] == "/mcp" and r["method"] == "POST" and r["logger"] == "mindcore.mcp" for r in requests)
