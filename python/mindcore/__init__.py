"""mindcore: memory and context for LLM agents, on a Rust core.

Capabilities and the store are imported on first use (LanceDB alone costs ~1.5 s to import), so
``import mindcore`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mindcore._core import __version__

if TYPE_CHECKING:
    from mindcore.mind import Belief, Goal, Mind, MindConfig, RecallResult, Reflection
    from mindcore.working import WorkingMemory

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "WorkingMemory": "mindcore.working",
    "Mind": "mindcore.mind",
    "MindConfig": "mindcore.mind",
    "Goal": "mindcore.mind",
    "Belief": "mindcore.mind",
    "Reflection": "mindcore.mind",
    "RecallResult": "mindcore.mind",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mindcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
