"""The request path of ``mindcore serve`` under its speed-ups: the worker pool answers like
``asyncio.to_thread`` (results, exceptions, context variables, calls side by side, an abandoned
call), the query string is read as ``parse_qsl`` reads it, and a session is checked once and
kept, while every read still sees every write."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

import mindcore
from mindcore.context import Context
from mindcore.errors import ContextError
from mindcore.server.app import create_app
from mindcore.server.http import Request, _query
from mindcore.server.pool import WorkerPool

WHO = contextvars.ContextVar("WHO", default="nobody")


def test_the_pool_gives_results_raises_errors_and_keeps_context_variables() -> None:
    pool = WorkerPool(max_threads=2)

    async def main() -> None:
        WHO.set("caller")
        assert await pool.run(lambda: (WHO.get(), threading.current_thread().name)) == \
            ("caller", "mindcore-serve-0")
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)
        assert await pool.run(divmod, 7, 2) == (3, 1)

    try:
        asyncio.run(main())
    finally:
        pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(pool.run(int))


def test_the_pool_runs_calls_side_by_side_up_to_its_size() -> None:
    pool = WorkerPool(max_threads=3)
    inside, gate = threading.Semaphore(0), threading.Event()

    def held() -> str:
        inside.release()
        gate.wait(10)
        return threading.current_thread().name

    async def main() -> set[str]:
        calls = [asyncio.ensure_future(pool.run(held)) for _ in range(5)]
        for _ in range(3):  # three run at once; the other two wait for a thread
            assert await asyncio.to_thread(inside.acquire, True, 10)
        assert not inside.acquire(timeout=0.2)
        gate.set()
        return set(await asyncio.gather(*calls))

    try:
        assert asyncio.run(main()) == {"mindcore-serve-0", "mindcore-serve-1", "mindcore-serve-2"}
    finally:
        pool.close()


def test_an_abandoned_call_leaves_the_pool_working() -> None:
    pool = WorkerPool(max_threads=1)
    gate = threading.Event()

    async def main() -> int:
        slow = asyncio.ensure_future(pool.run(gate.wait, 10))
        await asyncio.sleep(0.05)
        slow.cancel()
        gate.set()
        return await pool.run(len, "four")

    try:
        assert asyncio.run(main()) == 4
    finally:
        pool.close()


@pytest.mark.parametrize("text", ["", "a=1&b=2", "a", "a=", "=x", "a=1&a=2", "&&a=1&", "a=b=c", "a=%20b", "a=x+y",
                                  "dataset=d&namespace=n&session=s&limit=5", "a=1;b=2", "s=caf%C3%A9"])
def test_the_query_string_reads_as_parse_qsl_reads_it(text: str) -> None:
    assert _query(text) == dict(parse_qsl(text, keep_blank_values=True))


def _get(app: object, query: dict[str, str]) -> tuple[int, object]:
    return app.handle(Request("GET", ["api", "v1", "messages"], query, {}, b""))  # type: ignore[attr-defined]


def test_a_kept_session_sees_every_write_and_a_bad_id_is_still_refused(tmp_path: Path) -> None:
    app = create_app(tmp_path / "store")
    try:
        where = {"dataset": "d", "namespace": "n", "session": "s"}
        assert _get(app, where) == (200, {"messages": [], "has_more": False, "max_seq": 0})
        with mindcore.open(tmp_path / "store") as other:  # another process's writer, in effect
            Context(other, dataset="d").session("s", "n").append([{"role": "user", "content": "hi"}])
        status, page = _get(app, where)
        assert status == 200 and [m["content"] for m in page["messages"]] == ["hi"]  # type: ignore[index]
        assert app.session("d", "s", "n") is app.session("d", "s", "n")
        status, answer = _get(app, {**where, "session": ""})
        assert status == 400 and "session" in answer["error"]  # type: ignore[index]
        with pytest.raises(ContextError):
            app.session("d", "", "n")
    finally:
        app.close()
