"""A small OpenAI-compatible HTTP server for tests: real sockets on 127.0.0.1, a random port.

It serves ``POST /v1/embeddings`` and ``POST /v1/chat/completions`` and can be told to fail the
next requests in chosen ways (HTTP errors, hanging, malformed JSON, NaN vectors) so the clients'
retries, timeouts and error messages are tested against real HTTP.

    with FakeOpenAI(dim=8) as server:
        server.fail(Fault.status(500), Fault.status(500))   # the next two requests get HTTP 500
        client = OpenAIEmbedder("m", base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

_ERROR_BODY = '{"error": {"message": "injected failure", "type": "server_error"}}'


@dataclass(frozen=True)
class Fault:
    """One injected failure, consumed by the next request to any endpoint."""

    kind: str  # "status" | "hang" | "malformed" | "nan" | "empty_choices" | "wrong_count"
    code: int = 500
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 30.0

    @classmethod
    def status(cls, code: int, *, body: str | None = None, headers: dict[str, str] | None = None) -> Fault:
        """Answer with HTTP `code` (and optional body and headers such as ``retry-after-ms``)."""
        return cls("status", code=code, body=body or _ERROR_BODY, headers=headers or {})

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Fault:
        """Accept the request and answer nothing for `seconds` (or until the server closes)."""
        return cls("hang", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 with a body that is not JSON."""
        return cls("malformed")

    @classmethod
    def nan(cls) -> Fault:
        """An embeddings answer whose first vector holds NaN."""
        return cls("nan")

    @classmethod
    def wrong_count(cls) -> Fault:
        """An embeddings answer with one vector fewer than inputs."""
        return cls("wrong_count")

    @classmethod
    def empty_choices(cls) -> Fault:
        """A chat answer with no choices."""
        return cls("empty_choices")


@dataclass
class Request:
    path: str
    body: Any
    headers: dict[str, str]


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic, not normalised vector for `text` (the client must normalise it)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 3.0).tolist()


def echo_reply(messages: list[dict[str, Any]], json_mode: bool) -> str:
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return json.dumps({"echo": last}) if json_mode else f"echo: {last}"


class FakeOpenAI:
    """The server; start it with ``with FakeOpenAI() as server`` (or :meth:`start` / :meth:`close`)."""

    def __init__(
        self,
        *,
        dim: int = 8,
        reply: Callable[[list[dict[str, Any]], bool], str | dict[str, Any]] = echo_reply,
        reject_max_tokens: bool = False,
        reversed_order: bool = False,
    ) -> None:
        self.dim = dim
        self.reply = reply
        self.reject_max_tokens = reject_max_tokens
        self.reversed_order = reversed_order  # answer embeddings in reverse `index` order
        self.requests: list[Request] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def fail(self, *faults: Fault) -> None:
        """Queue failures for the next requests, one per request, in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def release_hanging(self) -> None:
        """End every hang now and to come: each closes its connection without an answer."""
        self._closing.set()

    def close(self) -> None:
        self._closing.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- request handling -------------------------------------------------------------------
    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _embeddings(self, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if not texts or any(not isinstance(t, str) or t == "" for t in texts):
            return 400, {"error": {"message": "'input' must be non-empty strings", "type": "invalid_request_error"}}
        vectors = [fake_vector(t, self.dim) for t in texts]
        if fault is not None and fault.kind == "nan":
            vectors[0][0] = float("nan")
        if fault is not None and fault.kind == "wrong_count":
            vectors = vectors[:-1]
        data = []
        for i, v in enumerate(vectors):
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode()
            else:
                emb = v
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if self.reversed_order:
            data.reverse()
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> tuple[int, Any]:
        if self.reject_max_tokens and "max_tokens" in body:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            return 400, {"error": {"message": message, "type": "invalid_request_error", "param": "max_tokens"}}
        json_mode = (body.get("response_format") or {}).get("type") == "json_object"
        answer = self.reply(body.get("messages", []), json_mode)
        # A reply function may answer with a whole message (tool calls, a null content).
        message = {"role": "assistant", **answer} if isinstance(answer, dict) else {"role": "assistant", "content": answer}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        choices = [] if fault is not None and fault.kind == "empty_choices" else [
            {"index": 0, "message": message, "finish_reason": finish}
        ]
        usage = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        return 200, {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": choices,
            "usage": usage,
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: str, headers: dict[str, str] | None = None) -> None:
                data = payload.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode(errors="replace")
                server.requests.append(Request(self.path, body, {k.lower(): v for k, v in self.headers.items()}))
                fault = server._next_fault()
                if fault is not None and fault.kind == "hang":
                    server._closing.wait(fault.seconds)
                    self.close_connection = True
                    return
                if fault is not None and fault.kind == "status":
                    self._send(fault.code, fault.body, fault.headers)
                    return
                if fault is not None and fault.kind == "malformed":
                    self._send(200, '{"object": "list", "data": [ {"embedding": [0.1, 0.2')
                    return
                if self.path == "/v1/embeddings":
                    status, payload = server._embeddings(body, fault)
                elif self.path == "/v1/chat/completions":
                    status, payload = server._chat(body, fault)
                else:
                    status, payload = 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                self._send(status, json.dumps(payload))

        return Handler
