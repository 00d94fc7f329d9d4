"""The HTTP server: agentified's wire protocol over :mod:`mindcore.context` (``mindcore serve``, or
:func:`create_app` as an ASGI app for uvicorn). See :mod:`mindcore.server.app` for the routes."""

from __future__ import annotations

from mindcore.server.app import ContextServer, create_app

__all__ = ["ContextServer", "create_app"]
