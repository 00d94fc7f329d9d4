"""Doctest collection for this package: :mod:`mindcore.mcp.server`'s examples build a real MCP
server, so they run only where the optional ``mcp`` package is installed (``mindcore[mcp]``, which
the test extra includes); the rest of the package's examples need nothing extra."""

from __future__ import annotations

from mindcore.mcp.server import mcp_installed

collect_ignore = [] if mcp_installed() else ["server.py"]
