"""``mindcore serve``: the agentified-compatible HTTP server on uvicorn.

Options (each also read from the environment): ``--host`` (127.0.0.1), ``--port`` (9119),
``--store`` (created if missing; default ``$MINDCORE_HOME`` or ``./.mindcore``), ``--token``
(``MINDCORE_TOKEN``: required as ``Authorization: Bearer ...`` on ``/api`` requests),
``--llm-model`` / ``--llm-base-url`` (``MINDCORE_LLM_MODEL`` / ``MINDCORE_LLM_BASE_URL``: an
OpenAI-compatible endpoint for ``compacted`` summaries; without one ``compacted`` answers 422),
``--max-body`` (bytes; larger bodies get 413), ``--embed-tools`` (``MINDCORE_EMBED_TOOLS``:
``background``, the default, embeds a dataset's tools after each registration; ``on-demand`` only
once a semantic or hybrid discovery asks, so a BM25-only server never loads the embedding model),
``--workers`` (``MINDCORE_WORKERS``: serving processes over the one store, default 1). One log line
per request, with its request id (``--log-format json``: one JSON object per line, see
:mod:`mindcore._http_logs`); counters and latency histograms at ``GET /metrics`` (see
:mod:`mindcore.server.metrics`).

A value read from the environment is checked as if it were given on the command line: a bad one
is a usage error (exit 2) that names the variable.

Slow and idle clients are cut off (see :mod:`mindcore._http_guard`): ``--header-timeout``
(seconds to send a request's headers, default 10), ``--body-timeout`` (seconds for its body, 30),
``--keep-alive`` (seconds an idle connection stays open, 5), each answered 408 and closed, and
``--max-connections`` (default: the file limit less 128, after raising the soft limit to the hard
one), past which a new connection gets 503.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["add_arguments", "main", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9119
EMBED_TOOLS = ("background", "on-demand")

T = TypeVar("T")


class _FromEnv(str):
    """An option's default read from the environment variable ``variable``. argparse converts a
    text default with the option's ``type`` when the option is not given, so a bad value is a
    usage error like a bad argument; :func:`_naming_env` adds where it came from."""

    variable: str


def _env_default(variable: str, fallback: str) -> str:
    value = os.environ.get(variable)
    if value is None:
        return fallback
    text = _FromEnv(value)
    text.variable = variable
    return text


def _naming_env(convert: Callable[[str], T]) -> Callable[[str], T]:
    """``convert``, its errors naming the environment variable when the text came from one."""

    def checked(text: str) -> T:
        try:
            return convert(text)
        except argparse.ArgumentTypeError as exc:
            if isinstance(text, _FromEnv):
                raise argparse.ArgumentTypeError(f"{exc} (from {text.variable})") from None
            raise

    checked.__name__ = convert.__name__  # argparse names the type in some of its messages
    return checked


def _embed_tools(text: str) -> str:
    """An argparse ``type``: one of :data:`EMBED_TOOLS` (``choices`` is not checked on defaults)."""
    if text not in EMBED_TOOLS:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(repr(c) for c in EMBED_TOOLS)})")
    return str(text)  # a plain string, not the _FromEnv it may be


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
    from mindcore._argtypes import port_number, positive_int, positive_seconds
    from mindcore._http_guard import add_limit_arguments
    from mindcore.server.http import DEFAULT_MAX_BODY

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
    parser.add_argument("--embed-tools", type=_naming_env(_embed_tools), metavar="{background,on-demand}",
                        default=_env_default("MINDCORE_EMBED_TOOLS", "background"),
                        help="embed registered tools in the background after each registration (default), or "
                             "only once a semantic or hybrid discovery asks (a BM25-only server never loads the "
                             "model); until then such discoveries rank by BM25 and say so in strategy_used")
    parser.add_argument("--workers", type=_naming_env(positive_int), default=_env_default("MINDCORE_WORKERS", "1"),
                        metavar="N",
                        help="serving processes over the one store (default 1; writes are serialised by the "
                             "store's locks)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="log lines as text (default) or one JSON object each, with the request id")


def serve(args: argparse.Namespace) -> None:
    try:
        import httptools  # noqa: F401  (the guarded protocol is uvicorn's httptools one)
        import uvicorn
    except ImportError:
        raise SystemExit("mindcore serve needs uvicorn and httptools: pip install 'mindcore[server]'") from None
    from mindcore._http_guard import limits_from, raise_file_limit
    from mindcore._http_logs import configure as configure_logs
    from mindcore.server.settings import SETTINGS_ENV, ServeSettings

    configure_logs(args.log_level, args.log_format)
    workers = getattr(args, "workers", 1)
    if workers > 1:
        _check_store(args.store)  # once here, not in every worker a supervisor would restart
    # Bound here, not by uvicorn, so the address logged is the one listened on (port 0 included).
    sock = listen(args.host, args.port)
    port = sock.getsockname()[1]
    raise_file_limit()
    limits = limits_from(args)
    settings = ServeSettings(store=args.store, token=args.token or None, llm_model=args.llm_model,
                             llm_base_url=args.llm_base_url, max_body=args.max_body,
                             header_timeout=limits.header_timeout, body_timeout=limits.body_timeout,
                             max_connections=limits.max_connections, embed_tools=args.embed_tools, workers=workers,
                             log_level=args.log_level,
                             log_format=args.log_format)
    os.environ[SETTINGS_ENV] = settings.to_env()  # read by each serving process (mindcore.server.worker)
    store = args.store or os.environ.get("MINDCORE_HOME") or "./.mindcore"
    logging.getLogger("mindcore.server").info(
        "serving store %s on http://%s:%d%s", store, args.host, port, f" with {workers} workers" if workers > 1 else "")
    config = uvicorn.Config("mindcore.server.worker:app", factory=True, host=args.host, port=port,
                            log_level=args.log_level, access_log=False, lifespan="on",
                            http="mindcore.server.worker:Protocol", timeout_keep_alive=args.keep_alive,
                            log_config=None, workers=workers)
    server = uvicorn.Server(config)
    from mindcore.server import worker  # after the settings are in the environment

    if workers > 1:
        from uvicorn.supervisors import Multiprocess

        supervisor: Any = Multiprocess
        if "target" in inspect.signature(supervisor).parameters:  # older uvicorn takes the serving function too
            supervisor(config, target=server.run, sockets=[sock]).run()
        else:
            supervisor(config, sockets=[sock]).run()
        return
    worker.on_failure = lambda _exc: setattr(server, "should_exit", True)
    server.run(sockets=[sock])
    if worker.started is not None and worker.started.failure is not None:
        raise SystemExit(f"mindcore serve: cannot open the store: {worker.started.failure}")


def _check_store(store: str | None) -> None:
    """Open (creating it when missing) and close the store, or exit with one line saying why.
    In a process of its own: the supervisor of ``--workers`` then never loads the store's
    libraries, which it would hold (about 160 MB resident) while it only watches the workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        failure = pool.submit(_open_and_close, store).result()
    if failure is not None:
        raise SystemExit(f"mindcore serve: cannot open the store: {failure}")


def _open_and_close(store: str | None) -> str | None:
    """Why ``store`` cannot be opened (or created), or ``None`` when it can."""
    from mindcore.errors import MindcoreError
    from mindcore.store import resolve_store

    try:
        resolve_store(store).close()
    except (MindcoreError, OSError, ValueError) as exc:
        return str(exc)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mindcore serve", description="the agentified-compatible HTTP server")
    add_arguments(parser)
    serve(parser.parse_args(argv))
    return 0
