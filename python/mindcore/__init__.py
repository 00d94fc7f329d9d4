"""mindcore: memory and context for LLM agents, on a Rust core."""

from __future__ import annotations

from mindcore._core import __version__

__all__ = ["__version__"]
