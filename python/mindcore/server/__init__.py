"""The HTTP server: agentified's wire protocol over :mod:`mindcore.context` (``mindcore serve``, or
:func:`create_app` as an ASGI app for uvicorn). See :mod:`mindcore.server.app` for the routes."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mindcore.server.app import ContextServer as ContextServer
    from mindcore.server.app import create_app as create_app

__all__ = ["ContextServer", "create_app"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so ``mindcore serve`` listens before the store's libraries are imported.
    if name in __all__:
        return getattr(importlib.import_module("mindcore.server.app"), name)
    raise AttributeError(f"module 'mindcore.server' has no attribute {name!r}")
