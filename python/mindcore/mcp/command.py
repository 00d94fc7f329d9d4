"""``mindcore mcp``: serve a store's memory over MCP, on stdio (the default) or streamable HTTP.

The store is opened once, when the server starts, and closed when it stops: on stdio when the
client closes the server's stdin (or on SIGINT / SIGTERM), on HTTP on SIGINT / SIGTERM. Logs go
to stderr; on stdio, stdout carries the protocol and nothing else.

The ``mindcore`` command wires it as a subcommand: ``sub = subparsers.add_parser("mcp",
description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)``,
``add_arguments(sub)``, then ``run(args)`` is the exit status.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anyio

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DESCRIPTION", "EPILOG", "add_arguments", "main", "run"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765

DESCRIPTION = "Serve a store's memory tools and prompt blocks over the Model Context Protocol (stdio or HTTP)."
EPILOG = """\
examples:
  mindcore mcp --store ~/.mindcore --agent support --user-id user-7 --thread-id t-1
  mindcore mcp --store ~/.mindcore --agent support --http --port 8765   # http://127.0.0.1:8765/mcp

A desktop client launches the stdio form; for example, in its MCP servers settings:
  {"command": "mindcore", "args": ["mcp", "--store", "/home/me/.mindcore", "--agent", "support"]}
`python -m mindcore.mcp` takes the same options.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mindcore mcp`` (the CLI adds them to its subcommand)."""
    parser.add_argument("--store", default=None,
                        help="store folder or URI (created if missing; default $MINDCORE_HOME or ./.mindcore)")
    parser.add_argument("--user-id", default="default", help="whose long-term memories to serve (default: default)")
    parser.add_argument("--agent", default="agent",
                        help="the agent whose Mind to serve; also the long-term memory namespace (default: agent)")
    parser.add_argument("--thread-id", default="default",
                        help="the thread of the working memory and context session (default: default)")
    parser.add_argument("--dataset", default="default", help="the context dataset tools are discovered in")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind with --http (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port with --http (default {DEFAULT_PORT})")
    from mindcore._http_guard import add_limit_arguments

    add_limit_arguments(parser)  # with --http
    parser.add_argument("--embedder", default="default", choices=["default", "hash"],
                        help="'default': the bundled offline model; 'hash': the hashing embedder, no model "
                             "(for testing only: its recall is far weaker)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
                        help="stderr logging (default warning; info says when the store opens and closes, "
                             "and with --http gives a line per request)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="log lines as text (default) or one JSON object per line")


def _embedder(name: str) -> Any:
    if name == "hash":
        from mindcore.embed import HashEmbedder

        return HashEmbedder()
    return None  # the store's, else the bundled model


class _StopSignals:
    """SIGINT and SIGTERM stop the server the same way, once; later signals are ignored, so nothing
    cuts the store's close short.

    Outside the stdio event loop a stop raises ``KeyboardInterrupt`` in the main thread, and serving
    unwinds. Inside it, raising would tear asyncio down mid-step (an error log, and a wait on the
    thread of a stdin read), so the stop cancels the serving scope from the loop instead; a stop
    that comes while the loop starts is kept until the scope exists. Installed for SIGINT as well,
    which keeps asyncio's runner from installing its own.
    """

    def __init__(self) -> None:
        self.received = False
        self._in_loop = False
        self._cancel: Callable[[], object] | None = None

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._stop)

    @contextmanager
    def in_event_loop(self) -> Iterator[None]:
        """While the event loop runs (``anyio.run``): stops are kept, not raised."""
        self._in_loop = True
        try:
            yield
        finally:
            self._in_loop = False

    @contextmanager
    def cancelling(self, scope: anyio.CancelScope) -> Iterator[None]:
        """While inside: a stop cancels ``scope`` (at once if one already came)."""
        loop = asyncio.get_running_loop()
        self._cancel = lambda: loop.call_soon_threadsafe(scope.cancel)
        if self.received:
            scope.cancel()
        try:
            yield
        finally:
            self._cancel = None

    def _stop(self, signum: int, frame: Any) -> None:
        if self.received:
            return
        self.received = True
        if self._cancel is not None:
            self._cancel()  # a signal handler runs between two steps of the loop: hand it over
        elif not self._in_loop:
            raise KeyboardInterrupt


async def _serve_stdio_until_stopped(server: Any, stops: _StopSignals) -> None:
    import anyio

    from mindcore.mcp.server import serve_stdio

    with anyio.CancelScope() as scope, stops.cancelling(scope):
        await serve_stdio(server)


def _is_a_stop(exc: BaseException) -> bool:
    """Whether ``exc`` is a stop signal's ``KeyboardInterrupt``, bare or in a group (a task group
    re-raises it wrapped)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(KeyboardInterrupt)[1] is None
    return isinstance(exc, KeyboardInterrupt)


def run(args: argparse.Namespace) -> int:
    """Serve until the client or a signal stops the server; the exit status."""
    try:
        return _serve(args)
    except BaseException as exc:
        if _is_a_stop(exc):  # a signal that landed outside the serving loop, during shut-down say
            return 0
        raise


def _serve(args: argparse.Namespace) -> int:
    from mindcore._http_logs import configure
    from mindcore.errors import MindcoreError
    from mindcore.mcp.server import create_server, mcp_installed, serve_http
    from mindcore.mcp.service import MemoryService

    configure(args.log_level, args.log_format)
    log = logging.getLogger("mindcore.mcp")
    if not mcp_installed():  # an optional extra
        print("mindcore mcp needs the mcp package: pip install 'mindcore[mcp]'", file=sys.stderr)
        return 2
    try:
        service = MemoryService(args.store, agent=args.agent, user_id=args.user_id, thread_id=args.thread_id,
                                dataset=args.dataset, embedder=_embedder(args.embedder))
    except MindcoreError as exc:
        print(f"mindcore mcp: {exc}", file=sys.stderr)
        return 2
    stops = _StopSignals()
    stops.install()
    try:
        server = create_server(service)
        # SIGINT or SIGTERM is a normal stop (uvicorn shuts down, then passes the signal on).
        try:
            if args.http:
                log.info("serving store %s on http://%s:%d/mcp", service.store.uri, args.host, args.port)
                from mindcore._http_guard import limits_from, raise_file_limit

                raise_file_limit()
                serve_http(server, host=args.host, port=args.port, log_level=args.log_level,
                           limits=limits_from(args), commits=lambda: service.store.commits)
            else:
                import anyio

                log.info("serving store %s on stdio", service.store.uri)
                with stops.in_event_loop():
                    anyio.run(_serve_stdio_until_stopped, server, stops)
        except BaseException as exc:
            if not _is_a_stop(exc):
                raise
    finally:
        service.close()
        log.info("closed store %s", service.store.uri)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mindcore.mcp``: the same command as ``mindcore mcp``."""
    parser = argparse.ArgumentParser(prog="mindcore mcp", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))
