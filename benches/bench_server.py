"""``mindcore serve`` against agentified's own server (``agentified-server`` of ratel-ai/ratel at
e4dbc36, a release build named by ``AGENTIFIED_SERVER_BIN``), measured in the same run with the
same clients and requests: each server in a process of its own, 1,000 BFCL tools registered and a
2,000-message session (40 random words a message), one keep-alive ``http.client`` connection.

Rows of issue 26 (p50 and p95; each table's ``time vs mindcore`` column is the reference's median
divided by mindcore's): BM25 discovery at limit 5 and 50; ``recent`` context, also through
agentified's Python SDK (``ApiClient.get_context``); ``full`` context over all 2,000 messages;
``GET /api/v1/messages`` (default page); registering 1,000 tools in one request (a new dataset
each round); appending 2,000 messages in one request (a new session each round); and start-up,
from launching the process to the first ``/health`` answer, with each server's resident memory
after serving the rest (``rss_mb``; mindcore's without the embedding model loaded: discovery here is
BM25).

    AGENTIFIED_SERVER_BIN=.../agentified-server pytest benches/bench_server.py --benchmark-only -q
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import os
import random
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _bench import finish
from bench_context_perf import SERVERS, _docs, _start

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
ROUNDS = 60 if QUICK else 300
WRITE_ROUNDS = 5 if QUICK else 15


def _launch(impl: str, port: int) -> Any:
    """The server, mindcore's embedding tools only on demand: the rows rank by BM25, and its
    resident memory is measured without the embedding model, as issue 26 asks."""
    os.environ["MINDCORE_EMBED_TOOLS"] = "on-demand"
    try:
        return _start(impl, port)
    finally:
        del os.environ["MINDCORE_EMBED_TOOLS"]


def _row(impl: str) -> str:
    return "mindcore" if impl == "mindcore serve" else impl


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return round(int(line.split()[1]) / 1024, 1)


class _Conn:
    """One keep-alive connection of the standard library's client (little client-side work)."""

    def __init__(self, port: int) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def request(self, method: str, path: str, body: Any = None) -> bytes:
        payload = None if body is None else json.dumps(body)
        headers = {} if body is None else {"content-type": "application/json"}
        self._conn.request(method, path, body=payload, headers=headers)
        response = self._conn.getresponse()
        data = response.read()
        assert 200 <= response.status < 300, (response.status, data[:200])
        return data

    def close(self) -> None:
        self._conn.close()


def _wait_healthy(port: int, proc: Any, deadline: float) -> None:
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.002)


def _tools() -> list[dict[str, Any]]:
    docs, _queries = _docs()
    out = []
    for i in range(1_000):
        d = docs[i % len(docs)]
        name = d["name"] if i < len(docs) else f"{d['name']}_v{i // len(docs)}"
        out.append({"name": name, "description": d["description"], "parameters": d.get("parameters") or {}})
    return out


def _messages(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(rng.choices(words, k=40))}
            for i in range(n)]


SESSION = {"dataset": "bench", "namespace": "n", "session": "s"}
PIDS: dict[str, int] = {}  # the module's server of each implementation


@pytest.fixture(scope="module", params=SERVERS)
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, int, list[str]]]:
    port = _free_port()
    proc = _launch(request.param, port)
    PIDS[request.param] = proc.pid
    try:
        _wait_healthy(port, proc, time.monotonic() + 300)
        conn = _Conn(port)
        conn.request("POST", "/api/v1/datasets/bench/tools", {"tools": _tools()})
        conn.request("POST", "/api/v1/messages", {**SESSION, "messages": _messages(2_000)})
        conn.close()
        yield request.param, port, _docs()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _timed(benchmark: Any, one: Callable[[int], Any], rounds: int, warmup: int = 5) -> None:
    """Run ``one(i)`` ``rounds`` times under the benchmark and add p95 to the row's notes."""
    counter = itertools.count()
    for _ in range(warmup):
        one(next(counter))
    benchmark.pedantic(lambda: one(next(counter)), rounds=rounds, iterations=1)
    data = benchmark.stats.stats.data
    benchmark.extra_info["p95_ms"] = round(1000 * float(np.percentile(data, 95)), 2)


READS: dict[str, tuple[str, Callable[[str], tuple[str, str, Any]]]] = {
    "discover-5": ("discover, BM25, limit 5 (1k tools)",
                   lambda q: ("POST", "/api/v1/datasets/bench/discover", {"query": q, "strategy": "bm25", "limit": 5})),
    "discover-50": ("discover, BM25, limit 50 (1k tools)",
                    lambda q: ("POST", "/api/v1/datasets/bench/discover", {"query": q, "strategy": "bm25",
                                                                           "limit": 50})),
    "recent": ("context recent, 4,000 tokens (2k-message session)",
               lambda q: ("POST", "/api/v1/context", {**SESSION, "messages": {"strategy": "recent",
                                                                              "max_tokens": 4000}})),
    "full": ("context full, all 2,000 messages",
             lambda q: ("POST", "/api/v1/context", {**SESSION, "messages": {"strategy": "full",
                                                                            "max_tokens": 10_000_000}})),
    "messages": ("GET /api/v1/messages, default page (2k-message session)",
                 lambda q: ("GET", "/api/v1/messages?dataset=bench&namespace=n&session=s", None)),
}


@pytest.mark.parametrize("kind", list(READS))
def test_read(benchmark: Any, served: Any, kind: str) -> None:
    impl, port, queries = served
    group, make = READS[kind]
    finish(benchmark, _row(impl), f"server vs agentified: {group}")
    conn = _Conn(port)
    try:
        _timed(benchmark, lambda i: conn.request(*make(queries[i % len(queries)])), ROUNDS)
    finally:
        conn.close()


def test_recent_through_the_sdk(benchmark: Any, served: Any) -> None:
    agentified = pytest.importorskip("agentified")
    impl, port, _queries = served
    finish(benchmark, _row(impl), "server vs agentified: context recent through agentified's Python SDK")
    client = agentified.ApiClient(agentified.models.ApiClientConfig(server_url=f"http://127.0.0.1:{port}", tools=[]))
    loop = asyncio.new_event_loop()
    try:
        def one(_i: int) -> None:
            got = loop.run_until_complete(client.get_context("bench", "n", "s", strategy="recent", max_tokens=4000))
            assert got.messages

        _timed(benchmark, one, ROUNDS)
        loop.run_until_complete(client.close())
    finally:
        loop.close()


def test_register_1000_tools(benchmark: Any, served: Any) -> None:
    impl, port, _queries = served
    finish(benchmark, _row(impl), "server vs agentified: register 1,000 tools in one request (a new dataset)")
    body = json.dumps({"tools": _tools()})
    conn = _Conn(port)
    try:
        _timed(benchmark, lambda i: conn.request("POST", f"/api/v1/datasets/reg{i}/tools", json.loads(body)),
               WRITE_ROUNDS, warmup=2)
    finally:
        conn.close()


def test_append_2000_messages(benchmark: Any, served: Any) -> None:
    impl, port, _queries = served
    finish(benchmark, _row(impl), "server vs agentified: append 2,000 messages in one request (a new session)")
    messages = _messages(2_000, seed=1)
    conn = _Conn(port)
    try:
        _timed(benchmark, lambda i: conn.request("POST", "/api/v1/messages", {
            "dataset": "bench", "namespace": "n", "session": f"append-{i}", "messages": messages}),
            WRITE_ROUNDS, warmup=2)
    finally:
        conn.close()


@pytest.mark.parametrize("impl", SERVERS)
def test_start_up(benchmark: Any, impl: str) -> None:
    """Launch to the first ``/health`` answer (a new empty store each round)."""
    finish(benchmark, _row(impl), "server vs agentified: start-up to the first /health answer")
    procs: list[Any] = []

    def one() -> None:
        port = _free_port()
        proc = _launch(impl, port)
        procs.append(proc)
        _wait_healthy(port, proc, time.monotonic() + 300)

    try:
        benchmark.pedantic(one, rounds=3 if QUICK else 8, iterations=1,
                           teardown=lambda: _stop(procs))
    finally:
        _stop(procs)
    benchmark.extra_info["p95_ms"] = round(1000 * float(np.percentile(benchmark.stats.stats.data, 95)), 2)


def _stop(procs: list[Any]) -> None:
    while procs:
        proc = procs.pop()
        proc.terminate()
        proc.wait(timeout=60)


def test_resident_memory(benchmark: Any, served: Any) -> None:
    """Resident memory (``rss_mb``) of the module's server once it has served the rows above
    (pytest runs this last for each server: it is the file's last test)."""
    impl, _port, _queries = served
    finish(benchmark, _row(impl), "server vs agentified: resident memory after serving the rows above")
    benchmark.extra_info["rss_mb"] = benchmark.pedantic(lambda: _rss_mb(PIDS[impl]), rounds=1, iterations=1)
