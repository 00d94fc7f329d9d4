"""Log lines of mindcore's HTTP servers (``mindcore serve``, ``mindcore mcp --http``): text for
people (the default) or one JSON object per line for log collectors (``--log-format json``), and
the request id every answer carries.

A JSON line holds ``ts`` (ISO 8601, UTC), ``level``, ``logger`` and ``message``, plus, on a
request's line, ``request_id``, ``client``, ``method``, ``path``, ``route``, ``status`` and ``ms``;
an error's traceback goes in ``exc``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["LOG_FORMATS", "JsonFormatter", "configure", "log_request", "request_id_of"]

LOG_FORMATS = ("text", "json")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        http = getattr(record, "http", None)
        if isinstance(http, dict):
            line.update(http)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str, form: str) -> None:
    """Send the process's logs to stderr at ``level``, as ``text`` or ``json`` lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if form == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def request_id_of(scope: Mapping[str, Any]) -> str:
    """The request's own ``x-request-id`` when it is usable (1 to 128 of ``A-Z a-z 0-9 . _ : -``),
    else a new one."""
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            given = value.decode("latin-1")
            return given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
    return uuid.uuid4().hex


def log_request(log: logging.Logger, scope: Mapping[str, Any], route: str, status: int, seconds: float,
                request_id: str) -> None:
    """The one line a request gets in ``log``: client, method, path, status, time and request id."""
    if not log.isEnabledFor(logging.INFO):  # nothing to build for a line no one keeps
        return
    client = (scope.get("client") or ("-", 0))[0]
    method, path = scope["method"], scope["path"]
    log.info('%s "%s %s" %d %.1fms %s', client, method, path, status, seconds * 1000, request_id,
             extra={"http": {"request_id": request_id, "client": client, "method": method, "path": path,
                             "route": route, "status": status, "ms": round(seconds * 1000, 3)}})
