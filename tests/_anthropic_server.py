"""A small Anthropic Messages API server for tests: real sockets on 127.0.0.1, a random port.

``POST /v1/messages`` answers with what ``reply(request_body)`` returns: a str (one text block)
or a list of content blocks (``tool_use`` blocks for tool calls). ``fail(status, ...)`` makes the
next requests answer with those HTTP statuses, to test retries and errors.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = str | list[dict[str, Any]]


class FakeAnthropic:
    def __init__(self, reply: Callable[[dict[str, Any]], Answer]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._faults: deque[int] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def fail(self, *statuses: int) -> None:
        with self._lock:
            self._faults.extend(statuses)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            return fault, {"type": "error", "error": {"type": "api_error", "message": "injected failure"}}
        answer = self.reply(body)
        blocks = [{"type": "text", "text": answer}] if isinstance(answer, str) else answer
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return 200, {"id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model"),
                     "content": blocks, "stop_reason": stop, "stop_sequence": None,
                     "usage": {"input_tokens": 11, "output_tokens": 5}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                server.requests.append(body)
                status, payload = server._answer(body) if self.path == "/v1/messages" else (404, {"error": "no route"})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
