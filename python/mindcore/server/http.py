"""The HTTP plumbing of the ASGI app: requests read within a size limit, JSON responses, errors as
``{"error": "..."}`` with a status."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

try:  # part of `mindcore[server]`; the standard library writes the same JSON, more slowly
    import orjson
except ImportError:  # pragma: no cover - exercised by a test that hides it
    orjson = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MAX_BODY", "ClientGone", "HttpError", "Request", "read_request", "send_bytes", "send_json"]

#: Largest request body accepted (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 16 * 1024 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ClientGone(Exception):
    """The client closed the connection (or was cut off) before its request was read whole: there
    is nothing to answer."""


class HttpError(Exception):
    """Answer with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Request:
    method: str
    segments: list[str]  # the path's segments, each percent-decoded on its own
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body as a JSON object (400 for anything else)."""
        try:
            value = json.loads(self.body, parse_constant=_not_json)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HttpError(400, f"invalid JSON body: {exc}") from None
        except RecursionError:  # nesting deeper than the parser goes (about 1,000 levels)
            raise HttpError(400, "invalid JSON body: nested too deeply") from None
        if not isinstance(value, dict):
            raise HttpError(400, f"the body must be a JSON object, got {type(value).__name__}")
        return value


def _not_json(name: str) -> Any:
    """Python's parser reads ``NaN``, ``Infinity`` and ``-Infinity``; JSON has no such values."""
    raise HttpError(400, f"invalid JSON body: {name} is not a JSON value")


async def read_request(scope: Scope, receive: Receive, max_body: int) -> Request:
    """The request, its body read whole; a body over ``max_body`` bytes is a 413 (checked against
    Content-Length first, then while reading, so a large body is never held in memory)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body:
        raise HttpError(413, f"request body of {int(declared):,} bytes is over the limit of {max_body:,}")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone  # a cut body is never handled as if it were the whole
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_body:
            raise HttpError(413, f"request body is over the limit of {max_body:,} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    path = raw_path.split(b"?", 1)[0]
    try:
        segments = [unquote(s, errors="strict") for s in path.decode("utf-8").split("/")[1:]]
        query = _query(scope.get("query_string", b"").decode("utf-8"))
    except UnicodeDecodeError:
        raise HttpError(400, "the path or query string is not valid UTF-8") from None
    return Request(scope["method"], segments, query, headers, chunks[0] if len(chunks) == 1 else b"".join(chunks))


def _query(text: str) -> dict[str, str]:
    """The query string's fields, a later one replacing an earlier one of the same name, as
    ``dict(parse_qsl(text, keep_blank_values=True))``; split by hand when nothing is escaped."""
    if "%" in text or "+" in text:
        return dict(parse_qsl(text, keep_blank_values=True, errors="strict"))
    return {name: value for name, _, value in (field.partition("=") for field in text.split("&") if field)}


def encode(payload: Any) -> bytes:
    """Compact UTF-8 JSON (with orjson, a 25 kB context answer in a twentieth of ``json.dumps``' time)."""
    if orjson is None:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        return orjson.dumps(payload)
    except TypeError:  # what orjson declines (integers over 64 bits, say) the standard library writes
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def send_json(send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send_bytes(send, status, encode(payload), b"application/json", headers)


async def send_bytes(send: Send, status: int, body: bytes, content_type: bytes,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(headers or [])],
    })
    await send({"type": "http.response.body", "body": body})
