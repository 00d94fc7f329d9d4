"""Launching ``python -m mindcore.mcp`` as a real subprocess for the MCP tests."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import mindcore

PACKAGE_ROOT = Path(mindcore.__file__).resolve().parents[1]


def server_env() -> dict[str, str]:
    """The environment a server subprocess needs: this checkout's package first on the path."""
    return {"PYTHONPATH": os.pathsep.join(p for p in [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")] if p)}


def command(store: Path, *options: str, embedder: str = "hash") -> list[str]:
    """``python -m mindcore.mcp`` on ``store``; the hashing embedder unless told (it halves the
    tests' time; the HTTP test runs the bundled model)."""
    return [sys.executable, "-m", "mindcore.mcp", "--store", str(store), "--embedder", embedder, *options]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def payload(result: Any) -> dict[str, Any]:
    """A tool result's JSON text content, parsed (and checked equal to its structured content)."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data
