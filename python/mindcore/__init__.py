"""mindcore: memory and context for LLM agents, on a Rust core.

Capabilities and the store are imported on first use (LanceDB alone costs ~1.5 s to import), so
``import mindcore`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mindcore._core import __version__
from mindcore.errors import MindcoreError
from mindcore.kernels import looks_like_secret

if TYPE_CHECKING:  # the lazy names, for type checkers and IDEs
    from mindcore.ltm import LongTermMemory as LongTermMemory
    from mindcore.ltm import Memory as Memory
    from mindcore.mind import Belief as Belief
    from mindcore.mind import Goal as Goal
    from mindcore.mind import Mind as Mind
    from mindcore.mind import MindConfig as MindConfig
    from mindcore.mind import RecallResult as RecallResult
    from mindcore.mind import Reflection as Reflection
    from mindcore.store import Store as Store
    from mindcore.store import StoreConfig as StoreConfig
    from mindcore.store import aopen as aopen
    from mindcore.store import open as open
    from mindcore.toolspec import Toolset as Toolset
    from mindcore.toolspec import ToolSpec as ToolSpec
    from mindcore.working import WorkingMemory as WorkingMemory
    from mindcore.working import WorkingMemoryConfig as WorkingMemoryConfig

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "open": "mindcore.store",
    "aopen": "mindcore.store",
    "Store": "mindcore.store",
    "StoreConfig": "mindcore.store",
    "WorkingMemory": "mindcore.working",
    "WorkingMemoryConfig": "mindcore.working",
    "LongTermMemory": "mindcore.ltm",
    "Memory": "mindcore.ltm",
    "Mind": "mindcore.mind",
    "MindConfig": "mindcore.mind",
    "Goal": "mindcore.mind",
    "Belief": "mindcore.mind",
    "Reflection": "mindcore.mind",
    "RecallResult": "mindcore.mind",
    "Toolset": "mindcore.toolspec",
    "ToolSpec": "mindcore.toolspec",
}

__all__ = ["MindcoreError", "__version__", "looks_like_secret", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mindcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
