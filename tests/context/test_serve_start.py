"""``mindcore serve`` is up before its store is: ``/health`` answers while the store opens in a
thread, other requests wait for it, and a store that cannot be opened stops the server with one
line. Also ``--workers N``: several processes over one store, the real agentified SDK as client."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from _serve_process import PACKAGE_ROOT, ServeProcess  # noqa: E402

from mindcore.server.starting import StartingApp  # noqa: E402


class _Echo:
    """A stand-in for the built app: answers every request with its path."""

    closed = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = scope["path"].encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    def close(self) -> None:
        self.closed = True


async def _request(app: StartingApp, path: str, method: str = "GET") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"x-request-id", b"probe-1")]}
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_health_answers_while_the_app_is_built_and_other_requests_wait_for_it() -> None:
    release = threading.Event()
    built = _Echo()

    def build() -> _Echo:
        release.wait()
        return built

    app = StartingApp(build)

    async def scenario() -> None:
        assert await _request(app, "/health") == (200, b'{"status": "ok"}')  # the build is still blocked
        waiting = asyncio.create_task(_request(app, "/api/v1/messages"))
        await asyncio.sleep(0)
        assert not waiting.done()
        release.set()
        assert await waiting == (200, b"/api/v1/messages")
        assert await _request(app, "/health") == (200, b"/health")  # now the built app answers it

    asyncio.run(scenario())


def test_a_failed_build_answers_503_and_is_reported_once() -> None:
    failures: list[BaseException] = []

    def build() -> _Echo:
        raise OSError("disk gone")

    app = StartingApp(build, on_failure=failures.append)

    async def scenario() -> None:
        for path in ("/api/v1/context", "/health"):
            status, body = await _request(app, path)
            assert status == 503 and b"disk gone" in body

    asyncio.run(scenario())
    assert [str(f) for f in failures] == ["disk gone"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_store_that_cannot_be_opened_stops_serve_with_one_line(tmp_path: Path, workers: str) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("not a store")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mindcore", "serve", "--port", "0", "--log-level", "warning",
                           "--workers", workers, "--store", str(not_a_folder)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"mindcore serve: cannot open the store: cannot create the store folder {not_a_folder}: File exists"]
    assert not_a_folder.read_text() == "not a store"


@pytest.mark.parametrize(("variable", "value", "error"), [
    ("MINDCORE_WORKERS", "two", "argument --workers: expected a whole number, got 'two' (from MINDCORE_WORKERS)"),
    ("MINDCORE_EMBED_TOOLS", "lazy", "argument --embed-tools: invalid choice: 'lazy' (choose from 'background', "
                                     "'on-demand') (from MINDCORE_EMBED_TOOLS)"),
])
def test_a_bad_environment_default_is_a_usage_error(tmp_path: Path, variable: str, value: str, error: str) -> None:
    env = {**os.environ, variable: value,
           "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mindcore", "serve", "--port", "0", "--store", str(tmp_path / "s")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"mindcore serve: error: {error}"
    assert "Traceback" not in done.stderr and "cannot open the store" not in done.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was opened


def test_the_command_line_overrides_the_environment_and_good_defaults_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mindcore.server.serve import add_arguments

    def parsed(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        add_arguments(parser)  # reads the environment now
        return parser.parse_args(argv)

    monkeypatch.setenv("MINDCORE_WORKERS", "two")
    monkeypatch.setenv("MINDCORE_EMBED_TOOLS", "lazy")
    args = parsed("--workers", "3", "--embed-tools", "on-demand")
    assert (args.workers, args.embed_tools) == (3, "on-demand")
    monkeypatch.setenv("MINDCORE_WORKERS", "2")
    monkeypatch.setenv("MINDCORE_EMBED_TOOLS", "on-demand")
    args = parsed()
    assert (args.workers, args.embed_tools) == (2, "on-demand") and type(args.embed_tools) is str


def test_two_workers_share_one_store_through_the_real_sdk(tmp_path: Path) -> None:
    pytest.importorskip("agentified")
    from agentified import Agentified, BackendTool, RegisterInput

    tools = [BackendTool(name=f"tool_{i}", description=f"look up order status, variant {i}", parameters={},
                         handler=lambda args: {"ok": True}) for i in range(30)]
    namespaces: set[str] = set()

    async def client(url: str, k: int) -> list[int]:
        ag = Agentified()
        await ag.connect(url)  # a connection of its own, to whichever worker accepts it
        try:
            found = []
            for j in range(8):
                session = (await ag.dataset("shop").register(RegisterInput(tools=tools))).session(f"s{k}")
                namespaces.add(session.namespace_id)
                await session.update_conversation([{"role": "user", "content": f"client {k} message {i}"}
                                                   for i in range(j + 1)])
                found.append(len(await ag._sdk.discover("shop", "order status", limit=50, strategy="bm25")))
            return found
        finally:
            await ag.disconnect()

    async def clients(url: str) -> list[int]:
        parts = await asyncio.gather(*(client(url, k) for k in range(8)))
        return [n for part in parts for n in part]

    with ServeProcess(tmp_path / "store", "--workers", "2", "--embed-tools", "on-demand") as server:
        assert set(asyncio.run(clients(server.url))) == {30}  # every worker sees every tool
        (namespace,) = namespaces
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for k in range(8):
                page = http.get("/api/v1/messages", params={"dataset": "shop", "namespace": namespace,
                                                            "session": f"s{k}", "limit": 1000}).json()
                assert [m["content"] for m in page["messages"]] == [f"client {k} message {i}" for i in range(8)]
                assert [m["seq"] for m in page["messages"]] == list(range(1, 9))
    pids = {line.rsplit("[", 1)[1] for line in server.lines if "Started server process" in line}
    assert len(pids) == 2, server.lines


def test_two_workers_over_an_s3_store(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same over object storage (the moto server): the store's options come from the
    environment, as S3 clients read them."""
    for key, value in {"AWS_ENDPOINT": s3["aws_endpoint"], "AWS_ACCESS_KEY_ID": s3["aws_access_key_id"],
                       "AWS_SECRET_ACCESS_KEY": s3["aws_secret_access_key"], "AWS_REGION": s3["aws_region"],
                       "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(key, value)
    uri = "s3://mindcore-test/serve-workers"

    answers: list[int] = []

    def client(url: str, k: int) -> None:
        with httpx.Client(base_url=url, timeout=300) as http:
            for j in range(4):
                answers.append(http.post("/api/v1/messages", json={
                    "dataset": "d", "namespace": "n", "session": "s",
                    "messages": [{"role": "user", "content": f"client {k} message {j}"}]}).status_code)

    with ServeProcess(uri, "--workers", "2", "--embed-tools", "on-demand") as server:  # type: ignore[arg-type]
        with httpx.Client(base_url=server.url, timeout=300) as http:
            http.post("/api/v1/datasets/d/tools", json={"tools": [
                {"name": f"t{i}", "description": f"order status {i}"} for i in range(5)]}).raise_for_status()
        threads = [threading.Thread(target=client, args=(server.url, k)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [200] * 16, server.lines[-40:]
        with httpx.Client(base_url=server.url, timeout=300) as http:
            page = http.get("/api/v1/messages", params={"dataset": "d", "namespace": "n", "session": "s",
                                                        "limit": 100}).json()
            assert sorted(m["content"] for m in page["messages"]) == sorted(
                f"client {k} message {j}" for k in range(4) for j in range(4))
            assert [m["seq"] for m in page["messages"]] == list(range(1, 17))
            found = http.post("/api/v1/datasets/d/discover", json={"query": "order status", "limit": 10}).json()
            assert len(found["tools"]) == 5
