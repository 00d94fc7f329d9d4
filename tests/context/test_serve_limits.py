"""``mindcore serve`` under slow, greedy and abusive clients, as a real process on real sockets:
headers or a body that never finish get 408 and a close, connections past the cap get 503 while
``/health`` keeps answering, pages are cut to ``MAX_PAGE``, deep JSON is a 400, and a request
stuck in a worker thread never holds up ``/health``."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

from _openai_server import FakeOpenAI, Fault
from _serve_process import ServeProcess

from mindcore._http_guard import Limits
from mindcore.server.app import MAX_PAGE

SESSION = {"dataset": "d", "namespace": "n", "session": "s"}


def connect(server: ServeProcess) -> socket.socket:
    return socket.create_connection(server.host_port, timeout=120)


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65_536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture(scope="module")
def quick_limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ServeProcess(tmp_path_factory.mktemp("limits") / "store", "--header-timeout", "2",
                      "--body-timeout", "2") as server:
        yield server


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """The default limits: for large bodies, which may arrive in many packets on a busy machine."""
    with ServeProcess(tmp_path_factory.mktemp("roomy") / "store") as server:
        yield server


def test_headers_that_never_finish_get_408_and_a_close(quick_limits: ServeProcess) -> None:
    with connect(quick_limits) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no blank line: the headers go on
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    with connect(quick_limits) as sock:  # a connection that sends nothing at all
        assert read_all(sock).startswith(b"HTTP/1.1 408 ")


def test_a_trickled_body_is_cut_off_with_408(quick_limits: ServeProcess) -> None:
    body = json.dumps({**SESSION, "messages": [{"role": "user", "content": "x" * 200}]}).encode()
    with connect(quick_limits) as sock:
        sock.sendall(b"POST /api/v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                     b"content-length: " + str(len(body)).encode() + b"\r\n\r\n")
        stop = threading.Event()

        def trickle() -> None:  # one byte at a time, never the whole body
            for byte in body[:-1]:
                if stop.wait(0.05):
                    return
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    return

        sender = threading.Thread(target=trickle)
        sender.start()
        try:
            answer = read_all(sock)
        finally:
            stop.set()
            sender.join()
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    page = httpx.get(f"{quick_limits.url}/api/v1/messages", params=SESSION).json()
    assert page["messages"] == []  # the cut request stored nothing


def test_a_keep_alive_connection_serves_many_requests_within_the_limits(quick_limits: ServeProcess) -> None:
    with httpx.Client(base_url=quick_limits.url) as http:
        for _ in range(5):
            assert http.get("/health").status_code == 200
            assert http.post("/api/v1/datasets/d/discover", json={"query": "q"}).status_code == 200


def test_connections_past_the_cap_get_503_and_health_answers_once_some_close(tmp_path: Path) -> None:
    cap = 12
    with ServeProcess(tmp_path / "store", "--max-connections", str(cap), "--header-timeout", "600") as server:
        idle = [connect(server) for _ in range(cap)]  # held open, sending nothing
        try:
            with connect(server) as extra:
                assert read_all(extra).startswith(b"HTTP/1.1 503 ")
            for sock in idle[: cap // 2]:
                sock.close()
            deadline = time.monotonic() + 120  # the server sees the closes when its loop next runs
            while True:
                try:
                    if httpx.get(f"{server.url}/health", timeout=30).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "no connection was freed"
                time.sleep(0.05)
        finally:
            for sock in idle:
                sock.close()


def test_pages_are_cut_to_the_cap(roomy: ServeProcess) -> None:
    with httpx.Client(base_url=roomy.url, timeout=120) as http:
        n = MAX_PAGE + 200
        sent = http.post("/api/v1/messages", json={**SESSION, "session": "big",
                                                    "messages": [{"role": "user", "content": f"m{i}"} for i in range(n)]})
        assert sent.json()["appended"] == n
        page = http.get("/api/v1/messages", params={**SESSION, "session": "big", "limit": 100_000_000}).json()
        assert len(page["messages"]) == MAX_PAGE and page["has_more"] is True
        assert page["messages"][-1]["content"] == f"m{n - 1}"  # the latest page
        assert len(http.get("/api/v1/messages", params={**SESSION, "session": "big"}).json()["messages"]) == 50
        assert http.get("/api/v1/messages", params={**SESSION, "limit": -1}).status_code == 400

        tools = [{"name": f"tool_{i}", "description": f"does thing {i}"} for i in range(MAX_PAGE + 5)]
        assert http.post("/api/v1/datasets/many/tools", json={"tools": tools}).status_code == 201
        listed = http.get("/api/v1/datasets/many/tools", params={"limit": 10**9}).json()
        assert len(listed["tools"]) == MAX_PAGE and listed["has_more"] is True
        rest = http.get("/api/v1/datasets/many/tools", params={"offset": MAX_PAGE}).json()
        assert [t["name"] for t in rest["tools"]] == [f"tool_{i}" for i in range(MAX_PAGE, MAX_PAGE + 5)]
        assert rest["has_more"] is False
        found = http.post("/api/v1/datasets/many/discover", json={"query": "thing", "limit": 10**8})
        assert found.status_code == 200 and 0 < len(found.json()["tools"]) <= MAX_PAGE


def test_json_nested_far_too_deep_is_a_400_and_the_server_goes_on(roomy: ServeProcess) -> None:
    with httpx.Client(base_url=roomy.url, timeout=120) as http:
        deep = b'{"messages":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
        answer = http.post("/api/v1/messages", content=deep, headers={"content-type": "application/json"})
        assert answer.status_code == 400 and "too deeply" in answer.json()["error"]
        assert http.get("/health").json() == {"status": "ok"}


def test_a_request_stuck_in_a_worker_never_holds_up_health(tmp_path: Path) -> None:
    """A ``compacted`` context waits on an LLM that does not answer; ``/health`` and other requests
    are served meanwhile."""
    with FakeOpenAI() as llm, ServeProcess(tmp_path / "store", "--llm-base-url", llm.base_url,
                                           "--llm-model", "m") as server:
        with httpx.Client(base_url=server.url, timeout=600) as http:
            many = [{"role": "user", "content": f"message {i} " + "word " * 40} for i in range(40)]
            assert http.post("/api/v1/messages", json={**SESSION, "messages": many}).status_code == 200
        llm.fail(Fault.hang(600))
        stuck: list[Any] = []

        def compacted() -> None:
            body = {**SESSION, "messages": {"strategy": "compacted", "max_tokens": 200}}
            try:
                stuck.append(httpx.post(f"{server.url}/api/v1/context", json=body, timeout=600).status_code)
            except httpx.TransportError as exc:
                stuck.append(exc)

        waiting = threading.Thread(target=compacted)
        waiting.start()
        deadline = time.monotonic() + 300
        while not any(r.path.endswith("/chat/completions") for r in llm.requests):  # the LLM was called
            assert time.monotonic() < deadline and waiting.is_alive(), stuck
            time.sleep(0.05)
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for _ in range(20):
                assert http.get("/health").status_code == 200
            assert http.get("/api/v1/messages", params=SESSION).status_code == 200
        assert not stuck  # still waiting on the LLM
        llm.release_hanging()  # the client retries the dropped call, and the context is assembled
        waiting.join(timeout=600)
    assert stuck == [200]


def test_writes_waiting_for_a_lock_never_hold_up_reads(tmp_path: Path) -> None:
    """More appends than the server has threads wait for a session's lock (held here, as another
    process or maintenance would); discovery, pages and ``/metrics`` are answered meanwhile."""
    import mindcore
    from mindcore.context import Context
    from mindcore.store.messages import MessageLog

    with ServeProcess(tmp_path / "store") as server, httpx.Client(base_url=server.url, timeout=600) as http:
        assert http.post("/api/v1/datasets/d/tools", json={"tools": [{"name": "t", "description": "d"}]}).status_code == 201
        assert http.post("/api/v1/messages", json={**SESSION, "messages": [{"role": "user", "content": "0"}]}).json()[
            "last_seq"] == 1
        with mindcore.open(str(tmp_path / "store")) as store:
            log = Context(store, dataset="d").session("s", namespace="n")._log
            answers: list[Any] = []

            def append(i: int) -> None:
                body = {**SESSION, "messages": [{"role": "user", "content": str(i)}]}
                answers.append(httpx.post(f"{server.url}/api/v1/messages", json=body, timeout=600).status_code)

            writers = [threading.Thread(target=append, args=(i,)) for i in range(1, 11)]
            with MessageLog(store, "context_messages")._lock_of(log).hold():
                for w in writers:
                    w.start()
                deadline = time.monotonic() + 300
                while True:  # every append is in a thread of the server, waiting for the lock
                    metrics = http.get("/metrics", timeout=120).text  # a starved read fails, not hangs
                    busy = next(int(float(line.split()[-1])) for line in metrics.splitlines()
                                if line.startswith("mindcore_http_requests_in_worker "))
                    if busy >= 10:
                        break
                    assert time.monotonic() < deadline, metrics
                    time.sleep(0.05)
                found = http.post("/api/v1/datasets/d/discover", json={"query": "t", "strategy": "bm25"}, timeout=120)
                assert found.status_code == 200 and [t["name"] for t in found.json()["tools"]] == ["t"]
                assert http.get("/api/v1/messages", params=SESSION, timeout=120).json()["max_seq"] == 1
                assert not answers
            for w in writers:
                w.join(timeout=600)
        assert answers == [200] * 10
        page = http.get("/api/v1/messages", params={**SESSION, "limit": 50}).json()
        assert [m["seq"] for m in page["messages"]] == list(range(1, 12))


def test_the_file_limit_is_raised_and_the_cap_stays_below_it() -> None:
    code = ("import resource\nfrom mindcore._http_guard import raise_file_limit, default_max_connections\n"
            "soft = raise_file_limit()\nprint(soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0], "
            "default_max_connections())")
    soft, now, cap = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                             check=True).stdout.split())
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft == now == (65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536))
    assert cap == soft - 128


@pytest.mark.parametrize("bad", [{"header_timeout": 0}, {"body_timeout": -1}, {"max_connections": 0},
                                 {"header_timeout": True}])
def test_limits_refuse_nonsense(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Limits(**bad)
