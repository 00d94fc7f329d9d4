"""Running a coroutine from blocking code (the one helper lives in :mod:`mindcore.toolspec`)."""

from __future__ import annotations

from mindcore.toolspec import LoopRunning, run_to_completion

__all__ = ["LoopRunning", "run_to_completion"]
