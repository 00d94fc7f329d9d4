"""What each ``mindcore serve`` process runs: the app and the guarded HTTP protocol, configured
at import from the settings ``serve`` leaves in the environment (see
:mod:`mindcore.server.settings`), so one process and ``--workers N`` processes (started afresh by
uvicorn's supervisor, which passes them names to import, not objects) run the same code. Import
it only after the settings are in place."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mindcore._http_guard import ConnectionStats, guarded_protocol
from mindcore.server.logs import configure as configure_logs
from mindcore.server.settings import ServeSettings
from mindcore.server.starting import StartingApp

if TYPE_CHECKING:
    from mindcore.server.app import ContextServer

__all__ = ["Protocol", "app", "connections", "on_failure", "started"]

_settings = ServeSettings.from_env()
#: Open, refused and timed-out connections of this process (``/metrics`` shows them).
connections = ConnectionStats()
#: uvicorn's httptools protocol with this process's limits (``uvicorn.Config(http=...)``).
Protocol: type[Any] = guarded_protocol(_settings.limits, connections)
#: The app this process serves, once :func:`app` has made it.
started: StartingApp | None = None


def _build() -> ContextServer:
    from mindcore.server.app import create_app

    server = create_app(_settings.store, llm=_settings.llm(), token=_settings.token, max_body=_settings.max_body,
                        embed_tools=_settings.embed_tools)  # type: ignore[arg-type]  # create_app checks it
    server.metrics.connections = connections
    return server


def _terminate(exc: BaseException) -> None:
    logging.getLogger("mindcore.server").error("mindcore serve: cannot open the store: %s", exc)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down as on Ctrl-C


#: Called once when the app cannot be built (its store cannot be opened); ``mindcore serve`` sets
#: it to stop its server and report why.
on_failure: Callable[[BaseException], None] = _terminate


def app() -> StartingApp:
    """The app factory uvicorn calls in each serving process."""
    global started
    if multiprocessing.parent_process() is not None:  # a --workers process: nothing set its logs up yet
        configure_logs(_settings.log_level, _settings.log_format)
    started = StartingApp(_build, on_failure=lambda exc: on_failure(exc))
    return started
