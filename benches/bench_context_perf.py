"""Context assembly speed: discovery at 1k and 10k tools, a session's recent context and append,
and the HTTP server (p50/p99 per request, requests per second under 8 concurrent clients).

Baselines in the same run, written the obvious way:

* discovery ``rank-bm25+numpy``: ``BM25Okapi`` (its idf switched to Lucene's, k1 0.9, b 0.4) built
  once over the tools; per query ``get_scores``, min-max normalisation and ``argsort``; for hybrid,
  plus numpy matrix products of the query with each field matrix and the weighted average.
* ``python`` for assembly: the session's messages as a list of dicts, walked newest first summing
  ``len(content.encode()) // 4``.

Query embedding is excluded (the embedder is a table of precomputed vectors). Tools are BFCL's
function docs, repeated with a numbered name up to the size; queries are BFCL's.

Targets (issue 9): discover p50 <= 1 ms at 1k tools, <= 5 ms at 10k; recent over 10k messages
p50 <= 5 ms; one append p50 <= 5 ms; over HTTP on 127.0.0.1, bm25 discover on 1,000 tools <= 1.2 ms
and recent context on a 2,000-message session <= 1.5 ms (the seed's Rust server: 8.6-9.8 ms and
2.8-3.3 ms on these machines).

Measured (Intel Xeon, 2 cores shared with other work; p50): discover bm25 0.09 ms at 1k tools and
0.77 ms at 10k (rank-bm25+numpy 1.7 and 25 ms), hybrid 0.19 / 0.87 ms (2.0 / 27 ms); recent over
10k messages 0.32 ms; one append 3.9 ms; 2,000 messages appended in one call to a new session 30-36 ms
(issue 26: well under 50 ms). Over HTTP, each server in its own process, the seed's
``agentified-server`` (set ``AGENTIFIED_SERVER_BIN``) measured in the same run with the same clients:
bm25 discover 0.54 ms with ``http.client`` and 1.14 ms with httpx (seed: 13.5 and 14.2 ms), recent
context 0.99 and 1.51 ms (seed: 2.44 and 2.91 ms).

    pytest benches/bench_context_perf.py --benchmark-only -q
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.context import Tool, ToolFields
from mindcore.embed import HashEmbedder
from mindcore.eval import data_dir
from mindcore.kernels import bm25_tokenize

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
SIZES = (1_000,) if QUICK else (1_000, 10_000)


def _docs() -> tuple[list[dict[str, Any]], list[str]]:
    folder = data_dir() / "tools" / "bfcl"
    if not (folder / "tool_pool.jsonl").exists():
        pytest.skip(f"shared tool data not found under {folder}")
    docs = [json.loads(line) for line in (folder / "tool_pool.jsonl").read_text().splitlines()]
    queries = [json.loads(line)["query"] for line in (folder / "queries.jsonl").read_text().splitlines()]
    return docs, queries[:200]


class _Table:
    """Precomputed vectors (query embedding excluded from the timings)."""

    def __init__(self, texts: list[str]) -> None:
        inner = HashEmbedder(dim=384)
        self.dim, self.model_id = inner.dim, inner.model_id + "-table"
        unique = list(dict.fromkeys(texts))
        self._table = dict(zip(unique, inner.embed(unique), strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._table[t] for t in texts])


@pytest.fixture(scope="module")
def catalogs() -> dict[int, dict[str, Any]]:
    docs, queries = _docs()
    out: dict[int, dict[str, Any]] = {}
    for n in SIZES:
        tools = []
        for i in range(n):
            d = docs[i % len(docs)]
            name = d["name"] if i < len(docs) else f"{d['name']}_v{i // len(docs)}"
            tools.append(Tool(f"t{i}", d["description"], d.get("parameters") or {},
                              fields=ToolFields(name, d["description"])))
        texts = queries + [x for t in tools for x in t.embedding_texts() if x is not None]
        embedder = _Table(texts)
        ctx = mindcore.Context(tempfile.mkdtemp(prefix="bench-ctx-"), dataset="bench", embedder=embedder)
        ctx.register(tools)
        for strategy in ("bm25", "hybrid"):
            ctx.discover(queries[0], strategy=strategy)  # builds the index and the field matrices
        out[n] = {"ctx": ctx, "tools": tools, "queries": queries, "embedder": embedder}
    return out


def _baseline(tools: list[Tool], embedder: _Table) -> Any:
    from rank_bm25 import BM25Okapi

    class Lucene(BM25Okapi):  # type: ignore[misc]
        def _calc_idf(self, nd: dict[str, int]) -> None:
            self.idf = {w: math.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}

    bm25 = Lucene([bm25_tokenize(t.document()) for t in tools], k1=0.9, b=0.4)
    names = embedder.embed([t.embedding_texts()[0] for t in tools])
    descriptions = embedder.embed([t.embedding_texts()[1] for t in tools])

    def discover(query: str, strategy: str, limit: int = 5) -> list[int]:
        raw = bm25.get_scores(bm25_tokenize(query))
        span = raw.max() - raw.min()
        lexical = (raw - raw.min()) / span if span > 0 else np.zeros_like(raw)
        if strategy == "bm25":
            scores = lexical
        else:
            q = embedder.embed([query])[0]
            q = q / (np.linalg.norm(q) or 1.0)
            semantic = (0.1 * (names @ q) + 0.5 * (descriptions @ q)) / 0.6
            scores = 0.7 * semantic + 0.3 * lexical
        return list(np.argsort(-scores, kind="stable")[:limit])

    return discover


@pytest.mark.parametrize("strategy", ["bm25", "hybrid"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["mindcore", "rank-bm25+numpy"])
def test_discover(benchmark: Any, catalogs: dict[int, dict[str, Any]], n: int, strategy: str, impl: str) -> None:
    c = catalogs[n]
    cycle = itertools.cycle(c["queries"])
    finish(benchmark, impl, f"context: discover {strategy} ({size_label(n)} tools)")
    if impl == "mindcore":
        ctx = c["ctx"]
        benchmark(lambda: ctx.discover(next(cycle), strategy=strategy))
    else:
        discover = _baseline(c["tools"], c["embedder"])
        benchmark(lambda: discover(next(cycle), strategy))


def _long_session(n: int) -> tuple[mindcore.context.Session, list[dict[str, str]]]:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(3000)]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(rng.choices(words, k=40))}
                for i in range(n)]
    session = mindcore.Context(tempfile.mkdtemp(prefix="bench-session-"), dataset="bench").session("long")
    session.append(messages)
    return session, messages


@pytest.fixture(scope="module")
def session() -> tuple[mindcore.context.Session, list[dict[str, str]]]:
    return _long_session(2_000 if QUICK else 10_000)


@pytest.mark.parametrize("impl", ["mindcore", "python"])
def test_assemble_recent(benchmark: Any, session: Any, impl: str) -> None:
    s, messages = session
    finish(benchmark, impl, f"context: assemble recent ({size_label(len(messages))} messages)")
    if impl == "mindcore":
        s.context.messages(max_tokens=4000).assemble()
        benchmark(lambda: s.context.messages(max_tokens=4000).assemble())
    else:
        def recent() -> list[dict[str, str]]:
            used, out = 0, []
            for m in reversed(messages):
                t = len(m["content"].encode()) // 4
                if used + t > 4000 and out:
                    break
                used += t
                out.append(m)
            return out[::-1]

        benchmark(recent)


def test_append_one(benchmark: Any, session: Any) -> None:
    s, messages = session
    finish(benchmark, "mindcore", f"context: append one message ({size_label(len(messages))} session)")
    benchmark.pedantic(lambda: s.append([{"role": "user", "content": "one more message"}]), rounds=50, iterations=1)


def test_append_2000_in_one_call(benchmark: Any) -> None:
    """``Session.append`` of 2,000 messages (40 random words each) to a new session each round:
    checked, screened for secrets, one commit (the in-process half of the server's append row)."""
    rng = random.Random(1)
    words = [f"w{i}" for i in range(3000)]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(rng.choices(words, k=40))}
                for i in range(2_000)]
    ctx = mindcore.Context(tempfile.mkdtemp(prefix="bench-append-"), dataset="bench")
    sessions = (ctx.session(f"append-{i}") for i in itertools.count())
    for _ in range(2):  # warm-up: the table exists, its first write is done
        next(sessions).append(messages)
    finish(benchmark, "mindcore", "context: append 2,000 messages in one call (a new session)")
    benchmark.pedantic(lambda: next(sessions).append(messages), rounds=5 if QUICK else 15, iterations=1)


# -- the server over HTTP ---------------------------------------------------------------------------


#: The seed's own server (``agentified-server`` of ratel-ai/ratel at e4dbc36, a release build), when
#: this names its binary: measured in the same run, with the same clients and requests.
SEED_SERVER = os.environ.get("AGENTIFIED_SERVER_BIN")
SERVERS = ["mindcore serve", "agentified-server (seed)"]


def _start(impl: str, port: int) -> subprocess.Popen[bytes]:
    folder = tempfile.mkdtemp(prefix="bench-server-")
    if impl == "mindcore serve":
        root = os.path.dirname(os.path.dirname(os.path.abspath(mindcore.__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
        return subprocess.Popen([sys.executable, "-m", "mindcore", "serve", "--port", str(port),
                                 "--log-level", "warning", "--store", folder], env=env)
    if not SEED_SERVER:
        pytest.skip("set AGENTIFIED_SERVER_BIN to the seed server's binary to measure it")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # BM25 only, as here
    env.update(AGENTIFIED_PORT=str(port), AGENTIFIED_DB_PATH=os.path.join(folder, "agentified.db"),
               RUST_LOG="warn")
    return subprocess.Popen([SEED_SERVER], env=env)


@pytest.fixture(scope="module", params=SERVERS)
def served(request: pytest.FixtureRequest, catalogs: dict[int, dict[str, Any]]) -> Any:
    """A server in a process of its own (the client's work never competes with it for a GIL),
    with 1,000 tools and a 2,000-message session."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = _start(request.param, port)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, f"{request.param} did not start"
        time.sleep(0.1)
    tools = [t.to_wire() for t in catalogs[1_000]["tools"]]
    with httpx.Client(base_url=url, timeout=120) as http:
        http.post("/api/v1/datasets/bench/tools", json={"tools": tools}).raise_for_status()
        rng = random.Random(0)
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(
            rng.choices([f"w{i}" for i in range(3000)], k=40))} for i in range(2_000)]
        for at in range(0, len(messages), 500):
            http.post("/api/v1/messages", json={"dataset": "bench", "namespace": "n", "session": "s",
                                                "messages": messages[at:at + 500]}).raise_for_status()
    yield request.param, url, catalogs[1_000]["queries"]
    proc.terminate()
    proc.wait(timeout=60)


REQUESTS = {
    "discover": lambda q: ("POST", "/api/v1/datasets/bench/discover", {"query": q, "strategy": "bm25"}),
    "context": lambda q: ("POST", "/api/v1/context", {"dataset": "bench", "namespace": "n", "session": "s",
                                                      "messages": {"strategy": "recent", "max_tokens": 4000}}),
}
GROUPS = {"discover": "server: bm25 discover over HTTP (1k tools)",
          "context": "server: recent context over HTTP (2k messages)"}


def _row(impl: str) -> str:
    """The row's name: ``mindcore`` is the reference the report divides by."""
    return "mindcore" if impl == "mindcore serve" else impl


class _StdlibClient:
    """One keep-alive connection of the standard library's ``http.client``: little client-side
    work, so the figure is mostly the server's."""

    def __init__(self, url: str) -> None:
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)

    def request(self, method: str, path: str, body: Any) -> None:
        self._conn.request(method, path, body=json.dumps(body), headers={"content-type": "application/json"})
        response = self._conn.getresponse()
        response.read()
        assert response.status == 200, response.status

    def close(self) -> None:
        self._conn.close()


@pytest.mark.parametrize("client", ["httpx", "http.client"])
@pytest.mark.parametrize("kind", ["discover", "context"])
def test_server_latency(benchmark: Any, served: Any, kind: str, client: str) -> None:
    """p50/p99 per request, with httpx (agentified's Python SDK's client) and with ``http.client``."""
    import httpx

    impl, url, queries = served
    cycle = itertools.cycle(queries)
    finish(benchmark, _row(impl), f"{GROUPS[kind]}, {client} client")
    http: Any = httpx.Client(base_url=url) if client == "httpx" else _StdlibClient(url)
    try:
        def one() -> None:
            method, path, body = REQUESTS[kind](next(cycle))
            if client == "httpx":
                http.request(method, path, json=body).raise_for_status()
            else:
                http.request(method, path, body)

        one()
        benchmark.pedantic(one, rounds=300 if not QUICK else 50, iterations=1, warmup_rounds=10)
    finally:
        http.close()


@pytest.mark.parametrize("kind", ["discover", "context"])
def test_server_throughput(benchmark: Any, served: Any, kind: str) -> None:
    import httpx

    impl, url, queries = served
    per_client = 40 if QUICK else 150
    finish(benchmark, _row(impl), GROUPS[kind] + ", 8 concurrent clients", items=8 * per_client)

    async def client(http: httpx.AsyncClient, offset: int) -> list[float]:
        times = []
        for i in range(per_client):
            method, path, body = REQUESTS[kind](queries[(offset + i) % len(queries)])
            t = time.perf_counter()
            (await http.request(method, path, json=body)).raise_for_status()
            times.append(time.perf_counter() - t)
        return times

    async def run() -> tuple[float, list[float]]:
        async with httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=8)) as http:
            t = time.perf_counter()
            parts = await asyncio.gather(*(client(http, 17 * c) for c in range(8)))
            return time.perf_counter() - t, [x for p in parts for x in p]

    elapsed, latencies = benchmark.pedantic(lambda: asyncio.run(run()), rounds=1, iterations=1)
    benchmark.extra_info["requests_per_second"] = round(8 * per_client / elapsed, 1)
    benchmark.extra_info["p50_ms"] = round(1000 * statistics.median(latencies), 2)
    benchmark.extra_info["p99_ms"] = round(1000 * float(np.percentile(latencies, 99)), 2)
