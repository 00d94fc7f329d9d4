"""``mindcore serve``: the agentified-compatible HTTP server on uvicorn.

Options (each also read from the environment): ``--host`` (127.0.0.1), ``--port`` (9119),
``--store`` (created if missing; default ``$MINDCORE_HOME`` or ``./.mindcore``), ``--token``
(``MINDCORE_TOKEN``: required as ``Authorization: Bearer ...`` on ``/api`` requests),
``--llm-model`` / ``--llm-base-url`` (``MINDCORE_LLM_MODEL`` / ``MINDCORE_LLM_BASE_URL``: an
OpenAI-compatible endpoint for ``compacted`` summaries; without one ``compacted`` answers 422),
``--max-body`` (bytes; larger bodies get 413). One log line per request, with its request id
(``--log-format json``: one JSON object per line, see :mod:`mindcore.server.logs`); counters and
latency histograms at ``GET /metrics`` (see :mod:`mindcore.server.metrics`).

Slow and idle clients are cut off (see :mod:`mindcore._http_guard`): ``--header-timeout``
(seconds to send a request's headers, default 10), ``--body-timeout`` (seconds for its body, 30),
``--keep-alive`` (seconds an idle connection stays open, 5), each answered 408 and closed, and
``--max-connections`` (default: the file limit less 128, after raising the soft limit to the hard
one), past which a new connection gets 503.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindcore.llm import LLM

__all__ = ["add_arguments", "main", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9119


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (its real port read back when ``port`` is 0); a one-line
    error when the address cannot be bound (in use, not this machine's)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as e:
        raise SystemExit(f"mindcore serve: cannot listen on {host}:{port}: {e.strerror or e}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # as uvicorn would; connections wait in the backlog until it serves
    except OSError as e:
        sock.close()
        raise SystemExit(f"mindcore serve: cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mindcore._argtypes import port_number, positive_seconds
    from mindcore._http_guard import add_limit_arguments
    from mindcore.server.app import DEFAULT_MAX_BODY

    env = os.environ.get
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                        help="port (default 9119; 0 picks a free one, printed)")
    parser.add_argument("--store", default=None, help="store folder or URI (created if missing)")
    parser.add_argument("--token", default=env("MINDCORE_TOKEN"), help="bearer token required on /api requests")
    parser.add_argument("--llm-model", default=env("MINDCORE_LLM_MODEL"), help="model for compacted summaries")
    parser.add_argument("--llm-base-url", default=env("MINDCORE_LLM_BASE_URL"),
                        help="OpenAI-compatible endpoint for compacted summaries")
    parser.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, help="largest request body in bytes")
    add_limit_arguments(parser)
    parser.add_argument("--keep-alive", type=positive_seconds, default=5.0, metavar="SECONDS",
                        help="time an idle connection stays open (default 5)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="log lines as text (default) or one JSON object each, with the request id")


def _llm(model: str | None, base_url: str | None) -> LLM | None:
    if model is None and base_url is None:
        return None
    from mindcore.llm import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model or "default", base_url=base_url)


def serve(args: argparse.Namespace) -> None:
    try:
        import httptools  # noqa: F401  (the guarded protocol is uvicorn's httptools one)
        import uvicorn
    except ImportError:
        raise SystemExit("mindcore serve needs uvicorn and httptools: pip install 'mindcore[server]'") from None
    from mindcore._http_guard import guarded_protocol, limits_from, raise_file_limit
    from mindcore.server.app import create_app
    from mindcore.server.logs import configure as configure_logs

    configure_logs(args.log_level, args.log_format)
    app = create_app(args.store, llm=_llm(args.llm_model, args.llm_base_url), token=args.token or None,
                     max_body=args.max_body)
    # Bound here, not by uvicorn, so the address logged is the one listened on (port 0 included).
    sock = listen(args.host, args.port)
    port = sock.getsockname()[1]
    logging.getLogger("mindcore.server").info("serving store %s on http://%s:%d", app.store.uri, args.host, port)
    raise_file_limit()
    limits = limits_from(args)
    config = uvicorn.Config(app, host=args.host, port=port, log_level=args.log_level, access_log=False,
                            lifespan="on", http=guarded_protocol(limits, app.metrics.connections),
                            timeout_keep_alive=args.keep_alive, log_config=None)
    uvicorn.Server(config).run(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mindcore serve", description="the agentified-compatible HTTP server")
    add_arguments(parser)
    serve(parser.parse_args(argv))
    return 0
