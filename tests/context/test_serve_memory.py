"""A ``mindcore serve`` process keeps its resident memory down (see :mod:`mindcore.server.footprint`):
pandas is never loaded, Arrow allocates from the C heap, and the heap is trimmed after a large
request. The sizes themselves are measured by ``benches/bench_server.py`` (``rss_mb``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from _serve_process import PACKAGE_ROOT

from mindcore.server.footprint import COLLECTOR_THRESHOLDS, TRIM_AFTER_BYTES, HeapTrimmer, body_size

# Runs in a fresh interpreter as `mindcore serve` would: settings in the environment, then the
# worker module, its app factory, and requests through the app as uvicorn sends them.
_SERVING = textwrap.dedent("""
    import asyncio, json, os, sys
    from mindcore.server.settings import SETTINGS_ENV, ServeSettings

    os.environ[SETTINGS_ENV] = ServeSettings(store=sys.argv[1], embed_tools="on-demand").to_env()
    from mindcore.server import worker

    loaded_at_import = sorted(m for m in ("pandas", "pyarrow", "lancedb") if m in sys.modules)
    app = worker.app()

    async def call(method, path, payload=None):
        body = b"" if payload is None else json.dumps(payload).encode()
        sent, pending = [], [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            return pending.pop() if pending else {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await app({"type": "http", "method": method, "path": path, "query_string": b"",
                   "headers": [(b"content-length", str(len(body)).encode())]}, receive, send)
        return sent[0]["status"]

    async def main():
        tools = [{"name": f"tool_{i}", "description": f"look up the status of order {i}", "parameters": {}}
                 for i in range(400)]
        assert await call("POST", "/api/v1/datasets/d/tools", {"tools": tools}) == 201
        assert await call("POST", "/api/v1/datasets/d/discover", {"query": "order 7", "strategy": "bm25"}) == 200
        assert await call("POST", "/api/v1/messages", {"dataset": "d", "namespace": "n", "session": "s",
                                                       "messages": [{"role": "user", "content": "hi"}]}) == 200

    asyncio.run(main())
    import gc, pyarrow
    print(json.dumps({"loaded_at_import": loaded_at_import, "pandas": "pandas" in sys.modules,
                      "arrow_pool": pyarrow.default_memory_pool().backend_name,
                      "frozen": gc.get_freeze_count() > 10_000, "gc_thresholds": list(gc.get_threshold())}))
""")


def test_a_serving_process_never_loads_pandas_and_arrow_allocates_from_the_c_heap(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _SERVING, str(tmp_path / "store")], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The libraries' objects are frozen out of the collector's scans once the app is loaded.
    assert seen == {"loaded_at_import": [], "pandas": False, "arrow_pool": "system", "frozen": True,
                    "gc_thresholds": list(COLLECTOR_THRESHOLDS)}


def test_a_chosen_arrow_pool_is_kept(tmp_path: Path) -> None:
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc",
           "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _SERVING, str(tmp_path / "store")], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["arrow_pool"] == "mimalloc"


def test_the_trimmer_waits_for_quiet_and_trims_once_per_burst() -> None:
    calls: list[tuple[str, float]] = []
    trimmed = threading.Event()

    def trim() -> None:
        calls.append((threading.current_thread().name, time.monotonic()))
        trimmed.set()

    trimmer = HeapTrimmer(trim, quiet=0.2)
    last = 0.0
    for _ in range(5):  # a burst: each request restarts the wait
        trimmer.request()
        last = time.monotonic()
        time.sleep(0.05)
    assert trimmed.wait(10)
    time.sleep(0.3)  # room for a second trim, which must not come
    assert len(calls) == 1
    name, at = calls[0]
    assert name == "mindcore-heap-trim" and at - last >= 0.2
    trimmer.request()  # a later request: one more trim
    deadline = time.monotonic() + 10
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(calls) == 2
    HeapTrimmer(None).request()  # without glibc: nothing to do


class _Answers:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def close(self) -> None:
        pass


class _Count:
    def __init__(self) -> None:
        self.requests = 0

    def request(self) -> None:
        self.requests += 1


def test_the_served_app_trims_after_a_large_request_only() -> None:
    from mindcore.server.worker import _Serving

    count = _Count()
    serving = _Serving(_Answers(), store=None, trimmer=count)  # type: ignore[arg-type]

    async def call(length: int | None) -> None:
        headers = [] if length is None else [(b"content-length", str(length).encode())]
        await serving({"type": "http", "headers": headers}, None, _ignore)

    for length in (None, 10, TRIM_AFTER_BYTES - 1):
        asyncio.run(call(length))
    assert count.requests == 0
    asyncio.run(call(TRIM_AFTER_BYTES))
    assert count.requests == 1
    assert body_size({"headers": [(b"content-length", b"12x")]}) == 0


async def _ignore(message: Any) -> None:
    pass


def _mapped(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as maps:
        return maps.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_with_workers_only_the_workers_load_the_store_and_none_loads_pandas(tmp_path: Path) -> None:
    from _serve_process import ServeProcess

    with ServeProcess(tmp_path / "store", "--workers", "2", "--embed-tools", "on-demand") as server:
        deadline = time.monotonic() + 300  # each worker opens the store as it starts
        while True:
            with open(f"/proc/{server.pid}/task/{server.pid}/children") as children:
                serving = [_mapped(int(pid)) for pid in children.read().split()]
            if sum("_lancedb" in m for m in serving) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        supervisor = _mapped(server.pid)
    assert "_lancedb" not in supervisor and "/pandas/" not in supervisor
    assert sum("_lancedb" in m for m in serving) == 2
    assert not any("/pandas/" in m for m in serving)
