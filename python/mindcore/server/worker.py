"""What each ``mindcore serve`` process runs: the app and the guarded HTTP protocol, configured
at import from the settings ``serve`` leaves in the environment (see
:mod:`mindcore.server.settings`), so one process and ``--workers N`` processes (started afresh by
uvicorn's supervisor, which passes them names to import, not objects) run the same code. Import
it only after the settings are in place.

The app factory keeps the process lean before the store's libraries load, and the app trims the C
heap once large requests stop (see :mod:`mindcore.server.footprint`)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mindcore._http_guard import ConnectionStats, guarded_protocol
from mindcore._http_logs import configure as configure_logs
from mindcore.server.footprint import TRIM_AFTER_BYTES, HeapTrimmer, body_size, lean_process, settle_collector
from mindcore.server.settings import ServeSettings
from mindcore.server.starting import StartingApp

if TYPE_CHECKING:
    from mindcore.server.app import ContextServer
    from mindcore.store import Store

__all__ = ["Protocol", "app", "connections", "on_failure", "started"]

_settings = ServeSettings.from_env()
#: Open, refused and timed-out connections of this process (``/metrics`` shows them).
connections = ConnectionStats()
#: uvicorn's httptools protocol with this process's limits (``uvicorn.Config(http=...)``).
Protocol: type[Any] = guarded_protocol(_settings.limits, connections)
#: The app this process serves, once :func:`app` has made it.
started: StartingApp | None = None


class _Serving:
    """The app and the store this process opened for it (closed with it); each request of at
    least :data:`~mindcore.server.footprint.TRIM_AFTER_BYTES` asks for a heap trim."""

    def __init__(self, server: ContextServer, store: Store, trimmer: HeapTrimmer | None = None) -> None:
        self.server = server
        self.store = store
        self.trimmer = trimmer or HeapTrimmer()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.server(scope, receive, send)
        if scope["type"] == "http" and body_size(scope) >= TRIM_AFTER_BYTES:
            self.trimmer.request()  # the answer is sent: its buffers are free

    def close(self) -> None:
        try:
            self.server.close()
        finally:
            self.store.close()


def _build() -> _Serving:
    from mindcore.server.app import create_app
    from mindcore.store import StoreConfig, open

    # With several workers a read must see what another worker just wrote (read your own writes
    # through any worker): object storage is then checked for new versions on every read.
    config = StoreConfig(read_consistency=timedelta(0)) if _settings.workers > 1 else None
    store = open(_settings.store, config=config)
    try:
        server = create_app(store, llm=_settings.llm(), token=_settings.token, max_body=_settings.max_body,
                            embed_tools=_settings.embed_tools)  # type: ignore[arg-type]  # create_app checks it
        server.metrics.connections = connections
    except BaseException:
        store.close()
        raise
    settle_collector()
    return _Serving(server, store)


def _terminate(exc: BaseException) -> None:
    logging.getLogger("mindcore.server").error("mindcore serve: cannot open the store: %s", exc)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down as on Ctrl-C


#: Called once when the app cannot be built (its store cannot be opened); ``mindcore serve`` sets
#: it to stop its server and report why.
on_failure: Callable[[BaseException], None] = _terminate


def app() -> StartingApp:
    """The app factory uvicorn calls in each serving process."""
    global started
    lean_process()  # before the store's libraries are imported (in the build thread)
    if multiprocessing.parent_process() is not None:  # a --workers process: nothing set its logs up yet
        configure_logs(_settings.log_level, _settings.log_format)
    started = StartingApp(_build, on_failure=lambda exc: on_failure(exc))
    return started
