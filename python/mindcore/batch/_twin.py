"""The async twins of the batch functions: the sync function run in a worker thread with
``asyncio.to_thread``, as every capability's ``a*`` methods run theirs, so an event loop keeps
serving while a batch runs."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["async_twin"]

P = ParamSpec("P")
R = TypeVar("R")


def async_twin(fn: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``a<name>``: ``fn`` awaited in a worker thread, with its parameters, result and errors."""

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"a{fn.__name__}"
    twin.__doc__ = (
        f"The async twin of :func:`{fn.__name__}`: the same arguments, result and errors, the work done in a "
        "worker thread (``asyncio.to_thread``) so the event loop keeps running; callbacks such as ``progress`` "
        "are called from that thread."
    )
    return twin
