"""Running a coroutine from blocking code: what a blocking call does with an async callback (a
compaction function, a tool handler)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

__all__ = ["LoopRunning", "run_to_completion"]


class LoopRunning(Exception):
    """The calling thread runs an event loop: the coroutine cannot be run to completion from it
    (it was closed); the caller should use the async twin of its call."""


def run_to_completion(awaitable: Any) -> Any:
    """The result of ``awaitable``, run on a fresh event loop; :class:`LoopRunning` when this
    thread already runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async def wait() -> Any:
            return await awaitable

        return asyncio.run(wait())
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise LoopRunning
