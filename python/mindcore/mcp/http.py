"""What ``mindcore mcp --http`` adds around the MCP app for its operators: ``GET /health``
(``{"status": "ok"}``), ``GET /metrics`` (Prometheus' text format: requests and latency histograms
by route, open, refused and timed-out connections, store commits), an ``x-request-id`` header on
every answer (the caller's own when usable) and one log line per request in the ``mindcore.mcp``
logger, text or JSON (``--log-format``), naming it.

Routes in the metrics are ``/mcp``, ``/health``, ``/metrics`` and ``other``. A streamed answer
(the server-sent events of ``GET /mcp``) is timed until its stream ends.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mindcore._http_logs import log_request, request_id_of
from mindcore._http_metrics import Metrics

__all__ = ["Observed"]

log = logging.getLogger("mindcore.mcp")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_OWN = {"/health": b"application/json", "/metrics": b"text/plain; version=0.0.4; charset=utf-8"}
_ROUTES = {"/mcp", *_OWN}


class Observed:
    """``app`` with ``/health``, ``/metrics`` (``metrics``), request ids and request log lines."""

    def __init__(self, app: App, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        path = scope["path"]
        route = path if path in _ROUTES else "other"
        header = (b"x-request-id", request_id.encode())
        if path in _OWN:
            status, body = await self._own(path, scope["method"])
            content_type = _OWN[path] if status == 200 else b"application/json"
            await send({"type": "http.response.start", "status": status, "headers": [
                (b"content-type", content_type), (b"content-length", str(len(body)).encode()), header]})
            await send({"type": "http.response.body", "body": body})
        else:
            answered = [500]

            async def tagged(message: Message) -> None:
                if message["type"] == "http.response.start":
                    answered[0] = message["status"]
                    message = {**message, "headers": [*message.get("headers", []), header]}
                await send(message)

            try:
                await self.app(scope, receive, tagged)
            finally:
                status = answered[0]
        elapsed = time.perf_counter() - started
        self.metrics.observe(route, scope["method"], status, elapsed)
        log_request(log, scope, route, status, elapsed, request_id)

    async def _own(self, path: str, method: str) -> tuple[int, bytes]:
        if method != "GET":
            return 405, json.dumps({"error": f"method not allowed: {method} (use GET)"}).encode()
        if path == "/health":
            return 200, b'{"status":"ok"}'
        import anyio.to_thread

        text = await anyio.to_thread.run_sync(self.metrics.render)  # its store figures may read disk
        return 200, text.encode()
