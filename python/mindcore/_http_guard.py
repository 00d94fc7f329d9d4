"""Connection limits for ``mindcore serve`` and ``mindcore mcp --http``: what a slow or abusive
client may hold.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) and answers 503 past
``limit_concurrency`` once a request's headers are in, but a client that never finishes its headers
or trickles its body keeps a connection, and a file descriptor, forever. :class:`Limits` and the
protocol :func:`guarded_protocol` builds on uvicorn's httptools one add:

- a deadline for a request's headers (from the connection, then from each request's first byte;
  a keep-alive connection with no request is closed by uvicorn's ``timeout_keep_alive``),
  answered with 408 and a close;
- a deadline for its body, from the end of the headers to the last byte, answered the same way;
- a cap on open connections below the process's file limit: a connection past it gets 503 and is
  closed at once, so ``/health`` and the clients already connected keep working.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "ConnectionStats",
    "Limits",
    "add_limit_arguments",
    "default_max_connections",
    "guarded_protocol",
    "limits_from",
    "raise_file_limit",
]

#: Default seconds a client has for a request's headers, and for its body.
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0

#: File descriptors kept free of client connections: the store's files, logs, the listening socket.
RESERVED_FILES = 128


@dataclass
class ConnectionStats:
    """Counts the connection guard keeps (``/metrics`` of ``mindcore serve`` shows them)."""

    open: int = 0
    refused: int = 0
    timed_out: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)


def raise_file_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (at most 65,536), as servers
    do at start; the soft limit in force after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # not allowed here: keep the limit there is
            pass
    return 65_536 if soft == resource.RLIM_INFINITY else int(soft)


def default_max_connections() -> int:
    """Open client connections allowed: the soft file limit less :data:`RESERVED_FILES`."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = 65_536 if soft == resource.RLIM_INFINITY else int(soft)
    return max(16, soft - RESERVED_FILES)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client connection may take (seconds, or a count)."""

    #: From the connection (or the previous response) to the end of the request's headers.
    header_timeout: float = HEADER_TIMEOUT
    #: From the end of the headers to the last byte of the body.
    body_timeout: float = BODY_TIMEOUT
    #: Open connections; past it a new one gets 503 and is closed.
    max_connections: int = 1_024

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name}: expected a number of seconds above 0, got {value!r}")
        if not isinstance(self.max_connections, int) or self.max_connections < 1:
            raise ValueError(f"max_connections: expected a count of at least 1, got {self.max_connections!r}")


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """``--header-timeout``, ``--body-timeout`` and ``--max-connections`` (read by :func:`limits_from`)."""
    from mindcore._argtypes import positive_int, positive_seconds

    parser.add_argument("--header-timeout", type=positive_seconds, default=HEADER_TIMEOUT, metavar="SECONDS",
                        help=f"time a client has to send a request's headers (default {HEADER_TIMEOUT:g}; "
                             "then 408)")
    parser.add_argument("--body-timeout", type=positive_seconds, default=BODY_TIMEOUT, metavar="SECONDS",
                        help=f"time a client has to send a request's body (default {BODY_TIMEOUT:g}; then 408)")
    parser.add_argument("--max-connections", type=positive_int, default=None, metavar="N",
                        help="open connections allowed, past which a new one gets 503 (default: the open-file "
                             "limit less 128)")


def limits_from(args: argparse.Namespace) -> Limits:
    """The :class:`Limits` the options of :func:`add_limit_arguments` ask for; call it after
    :func:`raise_file_limit`, which the default connection cap depends on."""
    return Limits(header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                  max_connections=args.max_connections or default_max_connections())


def _plain_response(status: bytes, text: bytes) -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: " + str(len(text)).encode() + b"\r\n\r\n" + text)


TIMEOUT_408 = _plain_response(b"408 Request Timeout", b'{"error":"the request was not received in time"}')
FULL_503 = _plain_response(b"503 Service Unavailable", b'{"error":"too many open connections; retry later"}')


def guarded_protocol(limits: Limits, stats: ConnectionStats | None = None) -> type[Any]:
    """uvicorn's httptools protocol with ``limits`` applied (pass it as ``uvicorn.Config(http=...)``);
    ``stats`` counts open, refused and timed-out connections (``/metrics`` shows them)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    counts = stats if stats is not None else ConnectionStats()

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            counts.add("open")
            if len(self.connections) > limits.max_connections:
                counts.add("refused")
                self._refuse(FULL_503)
                return
            self._arm(limits.header_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            counts.add("open", -1)
            super().connection_lost(exc)

        def on_message_begin(self) -> None:  # a request's first byte (idle keep-alive: uvicorn's timer)
            super().on_message_begin()
            self._arm(limits.header_timeout)

        def on_headers_complete(self) -> None:
            self._arm(limits.body_timeout)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True  # the app reading the body sees the client gone
                self.cycle.message_event.set()
                if self.cycle.response_started:  # the app has begun answering: only close
                    self.transport.close()
                    return
            counts.add("timed_out")
            self._refuse(TIMEOUT_408)

        def _refuse(self, response: bytes) -> None:
            self._disarm()
            self.transport.write(response)
            self.transport.close()

    return GuardedHttpToolsProtocol
