"""The HTTP server under load, on 127.0.0.1: 64 concurrent clients each loop over a mix of discovery
(BM25, and the default strategy), ``recent`` context and appends of 1-3 messages to a session of
their own, for 60 s (``MINDCORE_BENCH_QUICK=1``: 10 s), while 2,000 more connections are held open
to the same server (half idle after connecting, half trickling a request's headers one byte about
every second, reconnecting whenever the server cuts them off) and a probe times ``GET /health``
every 20 ms on a new connection each time, as an orchestrator's health check does.

Afterwards every client's session is read back (``GET /api/v1/messages``, paging with
``after_seq``): each acknowledged append's messages must be there exactly once, in order, at the
sequence numbers the server acknowledged.

Targets (the issue): 0 errors, p99 <= 50 ms for the clients' requests, every acknowledged append
present once; with the 2,000 idle or trickling connections open, ``/health`` p99 <= 50 ms. Only
correctness fails the bench (an error, a lost, duplicated or reordered message); latencies are
recorded in the row's notes, beside each server's own view of them (``/metrics``'s histograms:
``server_p99_le_ms_*``, the histogram bucket that holds the 99th percentile), its resident memory,
its connection counters (``refused``, ``timed_out``) and the CPU each process used (in cores).

Setup: ``mindcore serve --store <tmp> --port 0`` at its defaults (10 s header deadline, 5 s
keep-alive, connections capped at the file limit less 128, one log line a request) in a process of
its own, 1,000 BFCL tools registered and a 2,000-message session that ``recent`` assembles 4,000
tokens of. With ``AGENTIFIED_SERVER_BIN`` set, agentified's own server (``agentified-server`` of
ratel-ai/ratel at e4dbc36, BM25 only) gets the same setup and clients (its routes are the same); it
has no header deadline and no ``/metrics``, and what it does under 2,000 connections is recorded,
not failed. The load starts once the server's CPU has settled after the setup (mindcore embeds the
registered tools in the background).

Measured (Intel Xeon, 2 cores, 60 s runs, 2026-11-29). Open loops at 100 requests a second:
``mindcore serve`` p50 3.0 ms, p99 36 ms (reads 10-19 ms, appends 60 ms), ``/health`` p99 4.3 ms,
0 errors, all 3,616 acknowledged messages read back once, in order; ``agentified-server`` p50 16 ms,
p99 48 ms, ``/health`` p99 35 ms. Closed loops: ``mindcore serve`` 236 requests a second, p50 20 ms,
p99 1.6 s (discover's p99 205 ms, appends' 1.7 s), ``/health`` p99 65 ms; ``agentified-server``
240 requests a second, p50 241 ms, p99 640 ms, ``/health`` p50 228 ms, p99 456 ms. Both: 0 errors,
every acknowledged message read back once; mindcore cut the 11,000 trickling connections at the
header deadline (408) and refused none. Resident memory 630-700 MB (the embedding model included,
loaded to embed the registered tools) against the reference's 67-106 MB.

Closed loops queue: each client sends its next request as soon as the last is answered, so the
mean latency is 64 divided by the throughput, and a p99 of 50 ms for 64 clients with no pause would
take some 2,000 requests a second of these 2 cores. Reads and writes have threads of their own in
the server, so the appends that wait for a log's lock (maintenance folding new rows into the
table's indexes holds it, up to a second or two on this machine) hold up other appends, not
discovery or context. One client alone gets discover in about 1.2 ms, ``recent`` in 1.2 ms and an
append in 5-8 ms (``alone_*``). ``/health`` is answered on the event loop; its tail is the way in
(a new connection, the event loop waiting for the GIL on a busy machine).

Clients: a minimal HTTP/1.1 client on asyncio streams, one keep-alive connection each, no pause
between requests (a closed loop: latency is about 64 in flight divided by the throughput). Measured
here, ``httpx.AsyncClient`` spends about 1.4 ms of client CPU a request against 0.1 ms for this
one, which on two cores would take the server's CPU. The held connections and the probe run in
processes of their own (this file, run as a script), so neither waits on the clients' event loop.

    pytest benches/bench_server_load.py --benchmark-only -q
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import random
import re
import resource
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _bench import finish
from bench_context_perf import SERVERS, _docs, _start
from bench_server import SESSION, _Conn, _free_port, _messages, _row, _tools, _wait_healthy

from mindcore._http_guard import raise_file_limit

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests" / "context"))  # ServeProcess: the serve tests' own way to start it
from _serve_process import ServeProcess  # noqa: E402

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
SECONDS = 10.0 if QUICK else 60.0
UNLOADED_SECONDS = 3.0
CLIENTS = 64
HELD = 2_000
PROBE_EVERY = 0.02
#: A request still unanswered after this long counts as an error (a hang).
REQUEST_TIMEOUT = 30.0
#: The open loops' offered load over all clients: 64 agents each asking about every 0.6 s.
OPEN_RATE = 100.0
#: A client connection idle this long is not reused (the servers' keep-alive timeouts are 5 s).
IDLE_REUSE_S = 4.0
KINDS = ("discover_bm25", "discover_default", "context_recent", "append")
LOAD_SESSION = {"dataset": "bench", "namespace": "load"}


# -- a small HTTP/1.1 client on asyncio streams --------------------------------------------------


class UnreadableAnswer(Exception):
    """An answer this client cannot read (no content-length, a malformed status line)."""


class Connection:
    """One keep-alive HTTP/1.1 connection; reopened on the next request after an error, a
    ``connection: close``, or an idle spell the server may have ended (its keep-alive timeout is
    5 s: a connection idle for :data:`IDLE_REUSE_S` is not reused, as HTTP clients do, rather than
    racing the server's close)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._used = 0.0

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """``(status, body)``; raises ``OSError``, ``asyncio.IncompleteReadError`` or
        :class:`UnreadableAnswer` (and closes the connection) when the exchange fails."""
        payload = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(payload)}\r\n\r\n").encode()
        if self._writer is not None and time.monotonic() - self._used >= IDLE_REUSE_S:
            self.close()
        try:
            if self._writer is None:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            assert self._reader is not None
            self._writer.write(head + payload)
            status, length, close = _parse_head(await self._reader.readuntil(b"\r\n\r\n"))
            data = await self._reader.readexactly(length)
        except BaseException:
            self.close()
            raise
        self._used = time.monotonic()
        if close:
            self.close()
        return status, data

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


def _parse_head(head: bytes) -> tuple[int, int, bool]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise UnreadableAnswer(f"bad status line {lines[0]!r}")
    fields = dict(line.lower().split(":", 1) for line in lines[1:] if ":" in line)
    if "content-length" not in fields:
        raise UnreadableAnswer(f"no content-length in {head[:200]!r}")
    return int(parts[1]), int(fields["content-length"]), fields.get("connection", "").strip() == "close"


TRANSPORT_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, UnreadableAnswer, TimeoutError)


# -- the 64 clients ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the clients saw: requests sent and latencies (seconds) of those answered, by kind;
    every error; each client's acknowledged appends ``(first_seq, last_seq, contents)`` and the
    contents of the appends that failed."""

    clients: range = range(0)
    sent: Counter[str] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[tuple[str, str]] = field(default_factory=list)
    acked: dict[int, list[tuple[int, int, list[str]]]] = field(default_factory=lambda: defaultdict(list))
    unacked: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))


def _request_for(kind: str, client: int, n: int, rng: random.Random, queries: list[str]) -> tuple[str, str, Any]:
    if kind == "discover_bm25":
        return "POST", "/api/v1/datasets/bench/discover", {"query": rng.choice(queries), "strategy": "bm25"}
    if kind == "discover_default":
        return "POST", "/api/v1/datasets/bench/discover", {"query": rng.choice(queries)}
    if kind == "context_recent":
        return "POST", "/api/v1/context", {"dataset": "bench", "namespace": "n", "session": "s",
                                           "messages": {"strategy": "recent", "max_tokens": 4000}}
    words = " ".join(f"w{rng.randrange(3000)}" for _ in range(20))
    messages = [{"role": "user" if j % 2 == 0 else "assistant", "content": f"client {client} append {n} part {j}: {words}"}
                for j in range(rng.randint(1, 3))]
    return "POST", "/api/v1/messages", {**LOAD_SESSION, "session": f"c{client}", "messages": messages}


async def _client(client: int, port: int, deadline: float, queries: list[str], tally: Tally,
                  rate: float | None = None) -> None:
    """One client's loop until ``deadline``: closed (the next request as soon as the last is
    answered) or, given ``rate`` (requests a second), open: requests fall due as a Poisson process
    and each one's latency counts from when it fell due, so a late start is measured, not hidden."""
    conn = Connection("127.0.0.1", port)
    rng = random.Random(client)
    timing = random.Random(-1 - client)
    due = time.perf_counter()
    n = 0
    while True:
        due = time.perf_counter() if rate is None else due + timing.expovariate(rate)
        if due >= deadline:
            break
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        kind = rng.choice(KINDS)
        method, path, body = _request_for(kind, client, n, rng, queries)
        n += 1
        tally.sent[kind] += 1
        started = due
        try:
            status, data = await asyncio.wait_for(conn.request(method, path, body), REQUEST_TIMEOUT)
        except TRANSPORT_ERRORS as exc:  # no answer (status 0): a refused, reset or hung connection
            status, data = 0, f"{type(exc).__name__}: {exc}".encode()
        else:
            tally.latencies[kind].append(time.perf_counter() - started)
        if not 200 <= status < 300:
            tally.errors.append((kind, f"{status}: {data[:150]!r}"))
            if kind == "append":
                tally.unacked[client] += [m["content"] for m in body["messages"]]
            continue
        if kind == "append":
            answer = json.loads(data)
            tally.acked[client].append((answer["first_seq"], answer["last_seq"], [m["content"] for m in body["messages"]]))
    conn.close()


async def _run_clients(port: int, seconds: float, queries: list[str], clients: range,
                       rate: float | None = None) -> tuple[float, Tally]:
    """Run ``clients`` for ``seconds``: closed loops, or open ones offering ``rate`` requests a
    second between them."""
    tally = Tally(clients=clients)
    started = time.perf_counter()
    each = None if rate is None else rate / len(clients)
    await asyncio.gather(*(_client(c, port, started + seconds, queries, tally, each) for c in clients))
    return time.perf_counter() - started, tally


async def _read_session(port: int, client: int) -> list[dict[str, Any]]:
    """Every message of client ``client``'s session, paging forward with ``after_seq``."""
    conn = Connection("127.0.0.1", port)
    out: list[dict[str, Any]] = []
    after = 0
    try:
        while True:
            status, data = await conn.request(
                "GET", f"/api/v1/messages?dataset=bench&namespace=load&session=c{client}&limit=1000&after_seq={after}")
            assert status == 200, (status, data[:200])
            page = json.loads(data)
            out += page["messages"]
            if not page["messages"] or not page["has_more"]:
                return out
            after = page["messages"][-1]["seq"]
    finally:
        conn.close()


def check_sessions(port: int, *tallies: Tally) -> dict[str, int]:
    """Read every client's session back and :func:`audit` it."""
    async def read(clients: range) -> list[list[dict[str, Any]]]:
        return list(await asyncio.gather(*(_read_session(port, c) for c in clients)))

    found = Counter[str]()
    for tally in tallies:
        for client, stored in zip(tally.clients, asyncio.run(read(tally.clients)), strict=True):
            found.update(audit(stored, tally.acked[client], tally.unacked[client]))
    return dict(found)


def audit(stored: list[dict[str, Any]], acked: list[tuple[int, int, list[str]]], unacked: list[str]) -> Counter[str]:
    """One session's messages as read back against what its client was told: the acknowledged
    messages, and of them those lost, stored more than once or at another sequence number than
    acknowledged; whether the session holds them out of order (``sessions_out_of_order``); stored
    messages of failed appends, and stored messages nobody sent (``unknown``).

    >>> stored = [{"seq": 1, "content": "a"}, {"seq": 2, "content": "b"}, {"seq": 3, "content": "b"}]
    >>> found = audit(stored, [(1, 2, ["a", "b"]), (3, 3, ["c"])], [])
    >>> found["messages_acked"], found["lost"], found["duplicated"], found["sessions_out_of_order"]
    (3, 1, 1, 0)
    """
    contents = [m["content"] for m in stored]
    seq_of = {m["content"]: m["seq"] for m in stored}
    counts = Counter(contents)
    expected = [(first + i, text) for first, _last, texts in acked for i, text in enumerate(texts)]
    expected_texts = {text for _seq, text in expected}
    failed = set(unacked)
    in_store_order = [text for text in dict.fromkeys(contents) if text in expected_texts]
    return Counter({
        "messages_acked": len(expected),
        "lost": sum(1 for _seq, text in expected if text not in counts),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "wrong_seq": sum(1 for seq, text in expected if text in seq_of and seq_of[text] != seq)
                     + sum(1 for first, last, texts in acked if last - first + 1 != len(texts)),
        "sessions_out_of_order": int(in_store_order != [text for _seq, text in expected if text in counts]),
        "unacknowledged_present": sum(1 for text in counts if text in failed),
        "unknown": sum(1 for text in counts if text not in expected_texts and text not in failed),
    })


# -- the held connections and the probe (subprocesses: this file run as a script) -----------------


def _stdin_closed(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` once the parent closes our stdin."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        if not os.read(fd, 4096):
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, readable)


async def _hold(host: str, port: int, count: int, ramp: float) -> dict[str, Any]:
    """Keep ``count`` connections open (half idle, half trickling headers), reconnecting each one
    the server closes; print ``{"ready": n}`` once all are open (or after 60 s), and return the
    counts once stdin closes."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    _stdin_closed(loop, stop)
    counts: Counter[str] = Counter()
    is_open = [0]

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rng: random.Random) -> bytes:
        prefix = f"GET /health HTTP/1.1\r\nhost: {host}\r\nx-trickle: ".encode()
        sent = 0
        while True:
            try:  # the server's answer (a 408) or its close ends the connection
                return await asyncio.wait_for(reader.read(4096), 0.5 + rng.random())
            except TimeoutError:
                writer.write(prefix[sent:sent + 1] if sent < len(prefix) else b"a")
                sent += 1

    async def hold_one(i: int) -> None:
        rng = random.Random(i)
        await asyncio.sleep(ramp * i / count)
        while True:
            try:
                reader, writer = await asyncio.open_connection(host, port)
            except OSError as exc:
                counts[f"connect_failed_{type(exc).__name__}"] += 1
                await asyncio.sleep(0.2 + 0.3 * rng.random())
                continue
            counts["connects"] += 1
            is_open[0] += 1
            try:
                answer = await (reader.read(4096) if i % 2 == 0 else trickle(reader, writer, rng))
                match = re.match(rb"HTTP/1\.1 (\d{3})", answer)
                counts[f"closed_{match.group(1).decode()}" if match else "closed_without_answer"] += 1
            except OSError as exc:
                counts[f"closed_{type(exc).__name__}"] += 1
            finally:
                is_open[0] -= 1
                writer.close()

    tasks = [asyncio.create_task(hold_one(i)) for i in range(count)]
    ready_by = time.monotonic() + 60
    while is_open[0] < count and time.monotonic() < ready_by and not stop.is_set():
        await asyncio.sleep(0.05)
    print(json.dumps({"ready": is_open[0]}), flush=True)
    samples = []
    while not stop.is_set():
        samples.append(is_open[0])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"open_min": min(samples, default=0), "open_mean": round(float(np.mean(samples)), 1) if samples else 0,
            **counts}


def _probe(host: str, port: int, every: float) -> dict[str, Any]:
    """``GET /health`` every ``every`` seconds on a new connection each time, until stdin closes."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    latencies: list[float] = []
    errors: list[str] = []
    next_at = time.perf_counter()
    while not stop.is_set():
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT)
            conn.request("GET", "/health")
            response = conn.getresponse()
            response.read()
            conn.close()
            if response.status == 200:
                latencies.append(time.perf_counter() - started)
            else:
                errors.append(f"status {response.status}")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        next_at = max(next_at + every, time.perf_counter())
        stop.wait(next_at - time.perf_counter())
    return {"latencies": latencies, "errors": errors}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    """``hold HOST PORT COUNT`` or ``probe HOST PORT``: run until stdin closes, then print a JSON
    summary (with the CPU seconds this process used) as the last line."""
    parser = argparse.ArgumentParser(description="the held connections and the /health probe of the load bench")
    parser.add_argument("role", choices=["hold", "probe"])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("count", type=int, nargs="?", default=HELD)
    args = parser.parse_args(argv)
    raise_file_limit()
    started = time.perf_counter()
    if args.role == "hold":
        summary = asyncio.run(_hold(args.host, args.port, args.count, ramp=4.0))
    else:
        summary = _probe(args.host, args.port, PROBE_EVERY)
    summary.update(cpu_seconds=_cpu_seconds(), wall_seconds=time.perf_counter() - started)
    print(json.dumps(summary), flush=True)


class Helper:
    """This file run as a script in a process of its own (see :func:`main`)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=HERE)

    def read_line(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line it prints, or None if none comes within ``timeout`` seconds or it exits."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        return json.loads(line) if line.strip() else None

    def finish(self) -> dict[str, Any]:
        """Close its stdin and read its summary."""
        out, _ = self.proc.communicate(timeout=120)
        lines = out.splitlines()
        return json.loads(lines[-1]) if lines else {"failed": f"exit {self.proc.returncode}"}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- the server: start, set up, observe -------------------------------------------------------------


@contextlib.contextmanager
def serving(impl: str, folder: Path) -> Iterator[tuple[int, int]]:
    """``(port, pid)`` of ``impl`` serving a new store in a process of its own."""
    if impl == "mindcore serve":
        with ServeProcess(folder / "store") as server:
            assert server._proc is not None  # ServeProcess keeps its Popen to itself; its pid is all we need
            yield server.host_port[1], server._proc.pid
        return
    port = _free_port()
    proc = _start(impl, port)
    try:
        _wait_healthy(port, proc, time.monotonic() + 300)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def set_up(port: int) -> None:
    """1,000 tools and the 2,000-message session ``recent`` reads."""
    conn = _Conn(port)
    try:
        conn.request("POST", "/api/v1/datasets/bench/tools", {"tools": _tools()})
        conn.request("POST", "/api/v1/messages", {**SESSION, "messages": _messages(2_000)})
        for kind in KINDS[:3]:  # each read path once (mindcore builds the BM25 index on the first)
            conn.request(*_request_for(kind, 0, 0, random.Random(0), ["warm up"]))
    finally:
        conn.close()


def process_cpu(pid: int) -> float:
    """CPU seconds ``pid`` has used (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> float:
    """CPU seconds every process on this machine has used (``/proc/stat``): against the bench's
    own processes' share, what other work took during the load."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def settle(pid: int, deadline: float) -> None:
    """Wait until ``pid`` uses under 5% of a core over half a second (background work after the
    setup, such as embedding the tools, done)."""
    while time.monotonic() < deadline:
        before = process_cpu(pid)
        time.sleep(0.5)
        if process_cpu(pid) - before < 0.025:
            return


def memory_mb(pid: int) -> dict[str, float]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
            "peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024, 1)}


_SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")  # a route's labels hold braces: {id}


def scrape(port: int) -> dict[tuple[str, str], float] | None:
    """``/metrics`` as ``{(name, labels): value}``; None when the server has none."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        text = response.read().decode()
    finally:
        conn.close()
    if response.status != 200:
        return None
    return {(m[1], m[2] or ""): float(m[3]) for line in text.splitlines() if (m := _SAMPLE.match(line))}


def server_view(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> dict[str, Any]:
    """What the server counted during the load: its connection counters, and per route the
    histogram bucket (upper bound, ms) holding the median and the 99th percentile."""
    def delta(name: str, labels: str = "") -> float:
        return after.get((name, labels), 0.0) - before.get((name, labels), 0.0)

    out: dict[str, Any] = {
        "refused": int(delta("mindcore_http_connections_refused_total")),
        "timed_out": int(delta("mindcore_http_requests_timed_out_total")),
    }
    buckets: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (name, labels), _value in after.items():
        if name == "mindcore_http_request_duration_seconds_bucket":
            route, le = re.findall(r'route="([^"]*)",le="([^"]*)"', labels)[0]
            buckets[route].append((float(le), delta(name, labels)))
    short = {"/api/v1/datasets/{id}/discover": "discover", "/api/v1/context": "context",
             "/api/v1/messages": "messages", "/health": "health"}
    for route, name in short.items():
        series = sorted(buckets.get(route, []))
        total = series[-1][1] if series else 0
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            bound = next((le for le, n in series if total and n >= q * total), None)
            if bound is not None:
                out[f"server_{label}_le_ms_{name}"] = "inf" if bound == float("inf") else round(bound * 1000, 1)
    return out


# -- the bench --------------------------------------------------------------------------------------


def _ms(values: list[float], q: float) -> float:
    return round(1000 * float(np.percentile(values, q)), 2) if values else float("nan")


def _load_figures(elapsed: float, tally: Tally) -> dict[str, Any]:
    every = [x for kind in KINDS for x in tally.latencies[kind]]
    figures: dict[str, Any] = {
        "seconds": round(elapsed, 1), "requests": sum(tally.sent.values()),
        "requests_per_second": round(len(every) / elapsed, 1), "errors": len(tally.errors),
        "p50_ms": _ms(every, 50), "p95_ms": _ms(every, 95), "p99_ms": _ms(every, 99),
    }
    for kind in KINDS:
        for q in (50, 95, 99):
            figures[f"{kind}_p{q}_ms"] = _ms(tally.latencies[kind], q)
    if tally.errors:
        figures["first_errors"] = "; ".join(f"{k} {e}" for k, e in tally.errors[:3])
    return figures


@pytest.mark.parametrize("pacing", ["closed", "open"])
@pytest.mark.parametrize("impl", SERVERS)
def test_server_load(benchmark: Any, impl: str, pacing: str) -> None:
    reference = impl != "mindcore serve"
    rate = OPEN_RATE if pacing == "open" else None
    load = "closed loops" if rate is None else f"open loops offering {rate:g} requests/s"
    finish(benchmark, _row(impl), f"server load: {CLIENTS} clients in {load} (discover, context, append) for "
                                  f"{SECONDS:g} s beside {HELD:,} idle or trickling connections")
    raise_file_limit()  # before starting anything: the server and the helpers inherit it
    queries = _docs()[1]
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp, serving(impl, Path(tmp)) as (port, pid):
        set_up(port)
        settle(pid, time.monotonic() + 300)
        # One client alone first: each request's own cost, against which the load's queueing shows.
        _, alone = asyncio.run(_run_clients(port, UNLOADED_SECONDS, queries, range(CLIENTS, CLIENTS + 1)))
        before = scrape(port)
        holder = Helper("hold", "127.0.0.1", str(port), str(HELD))
        probe: Helper | None = None
        try:
            ready = holder.read_line(timeout=120) or {}
            probe = Helper("probe", "127.0.0.1", str(port))
            cpu = (process_cpu(pid), _cpu_seconds(), machine_cpu())
            elapsed, tally = benchmark.pedantic(
                lambda: asyncio.run(_run_clients(port, SECONDS, queries, range(CLIENTS), rate)), rounds=1, iterations=1)
            cpu = (process_cpu(pid) - cpu[0], _cpu_seconds() - cpu[1], machine_cpu() - cpu[2])
            probed = probe.finish()
            held = holder.finish()
        finally:
            holder.kill()
            if probe is not None:
                probe.kill()
        alive = _alive(port)
        figures = _load_figures(elapsed, tally)
        health = probed.get("latencies", [])
        figures.update(
            health_p50_ms=_ms(health, 50), health_p99_ms=_ms(health, 99),
            health_max_ms=round(1000 * max(health), 1) if health else float("nan"),
            health_probes=len(health), health_errors=len(probed.get("errors", [])),
            held_ready=ready.get("ready", 0),
            **{f"held_{k}": v for k, v in held.items() if k not in ("cpu_seconds", "wall_seconds")},
            server_cpu=round(cpu[0] / elapsed, 2), client_cpu=round(cpu[1] / elapsed, 2),
            holder_cpu=round(held.get("cpu_seconds", 0) / held.get("wall_seconds", 1), 2),
            probe_cpu=round(probed.get("cpu_seconds", 0) / probed.get("wall_seconds", 1), 2),
            machine_cpu=round(cpu[2] / elapsed, 2),
            **{f"alone_{kind}_p50_ms": _ms(alone.latencies[kind], 50) for kind in KINDS},
        )
        figures["errors"] += len(alone.errors)
        if probed.get("errors"):
            figures["first_health_errors"] = "; ".join(probed["errors"][:3])
        if alive:
            figures.update(memory_mb(pid))
            after = scrape(port)
            if before is not None and after is not None:
                figures.update(server_view(before, after))
            figures.update(check_sessions(port, tally, alone))
        else:
            figures["server_down_after_load"] = True
    benchmark.extra_info["items"] = figures["requests"]
    benchmark.extra_info.update(figures)
    if reference:  # the reference's failures are recorded, not failed
        return
    assert alive, "mindcore serve stopped answering after the load"
    assert figures["errors"] == 0, figures.get("first_errors")
    assert figures["health_errors"] == 0, figures.get("first_health_errors")
    assert figures["messages_acked"] > 0
    for problem in ("lost", "duplicated", "wrong_seq", "sessions_out_of_order", "unknown"):
        assert figures.get(problem, 0) == 0, (problem, figures)


def _alive(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        conn.request("GET", "/health")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


if __name__ == "__main__":
    main()
