"""An ASGI app that is up before the app it serves is built: ``/health`` answers at once, while
the store opens (and its libraries load) in a thread; every other request waits for it.

``mindcore serve`` listens within a fraction of a second this way, so an orchestrator's health
check and a client's first connection never race a slow start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from mindcore._http_logs import log_request, request_id_of

__all__ = ["StartingApp"]

log = logging.getLogger("mindcore.server")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]
#: An ASGI app with a ``close()`` (a :class:`~mindcore.server.app.ContextServer`).
_Served = Any


class StartingApp:
    """Serves ``build()``'s app once it is built (in a thread, from the server's start-up).

    Until then ``GET /health`` answers ``{"status": "ok"}`` (the process is up and will serve)
    and other requests wait. When building fails, every request answers 503 with the reason,
    ``failure`` holds it, and ``on_failure`` is called once (``mindcore serve`` stops on it).
    """

    def __init__(self, build: Callable[[], _Served], on_failure: Callable[[BaseException], None] | None = None) -> None:
        self._build = build
        self._on_failure = on_failure
        self._app: _Served | None = None
        self.failure: BaseException | None = None
        self._done = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Begin building (once); :meth:`__call__` starts it on the first lifespan or request."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run_build, name="mindcore-serve-start", daemon=True).start()

    def _run_build(self) -> None:
        try:
            app = self._build()
        except BaseException as exc:
            self.failure = exc
            if self._on_failure is None:  # else the caller reports it
                log.error("mindcore serve: cannot start: %s", exc)
        else:
            self._app = app
        with self._lock:
            self._done.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_resolve, future)
        if self.failure is not None and self._on_failure is not None:
            self._on_failure(self.failure)

    async def _ready(self) -> _Served | None:
        if not self._done.is_set():
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            with self._lock:
                if not self._done.is_set():
                    self._waiters.append((loop, future))
                else:
                    future.set_result(None)
            await future
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        self.start()
        app = self._app
        if app is None and scope["type"] == "http" and scope["path"] == "/health" and scope["method"] == "GET" \
                and self.failure is None:
            started, request_id = time.perf_counter(), request_id_of(scope)
            await _answer(send, 200, {"status": "ok"}, request_id)
            log_request(log, scope, "/health", 200, time.perf_counter() - started, request_id)
            return
        if app is None:
            app = await self._ready()
        if app is None:
            if scope["type"] == "http":
                await _answer(send, 503, {"error": f"the server could not start: {self.failure}"},
                              request_id_of(scope))
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                app = await self._ready()
                if app is not None:
                    await asyncio.to_thread(app.close)
                await send({"type": "lifespan.shutdown.complete"})
                return


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _answer(send: Send, status: int, payload: dict[str, Any], request_id: str) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"x-request-id", request_id.encode())]})
    await send({"type": "http.response.body", "body": body})
