"""mindcore: memory and context for LLM agents, on a Rust core.

>>> import mindcore
>>> mindcore.looks_like_secret("my key is sk-ant-api03-" + "x" * 40)
True
"""

from __future__ import annotations

from mindcore._core import __version__
from mindcore.kernels import looks_like_secret

__all__ = ["__version__", "looks_like_secret"]
