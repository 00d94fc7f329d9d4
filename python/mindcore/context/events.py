"""Events a context emits after assembling: ``"context:assembled"`` (also spelt
``"context_assembled"``) and ``"recall"``.

Listeners run synchronously, in subscription order, right after an assembly; one that raises (or
whose coroutine raises) is logged and skipped, never breaking the assembly or the other listeners.
A listener may be a coroutine function: :meth:`~mindcore.context.ContextBuilder.aassemble` awaits
it; the blocking :meth:`~mindcore.context.ContextBuilder.assemble` runs it to completion.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mindcore.context.types import RankedTool, Recalled
from mindcore.errors import ContextError
from mindcore.validation import check_callable

__all__ = ["EVENT_NAMES", "ContextAssembledEvent", "Emitter", "RecallEvent"]

log = logging.getLogger("mindcore.context")

# Both spellings the agentified SDKs use name the same event.
_CANONICAL = {"context:assembled": "context:assembled", "context_assembled": "context:assembled", "recall": "recall"}
EVENT_NAMES = tuple(_CANONICAL)

Listener = Callable[[Any], Any]


@dataclass(frozen=True)
class ContextAssembledEvent:
    """One assembly: what the agentified SDKs report as ``context:assembled``."""

    session_id: str
    dataset_id: str
    namespace_id: str
    strategy_used: str
    total_messages: int
    included_messages: int
    token_estimate: int
    fallback: bool
    recalled: Recalled
    duration_ms: float


@dataclass(frozen=True)
class RecallEvent:
    """One tool recall (only when the assembly asked for one): its ``config`` and ``matches``."""

    session_id: str
    dataset_id: str
    namespace_id: str
    config: dict[str, Any]
    matches: list[RankedTool] = field(default_factory=list)
    duration_ms: float = 0.0


class Emitter:
    """Listeners by event name; :meth:`on` returns the function that removes the listener."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {name: [] for name in set(_CANONICAL.values())}
        self._lock = threading.Lock()

    def on(self, name: str, callback: Listener) -> Callable[[], None]:
        canonical = _CANONICAL.get(name) if isinstance(name, str) else None
        if canonical is None:
            raise ContextError(f"event: {name!r} is not one of {', '.join(repr(n) for n in EVENT_NAMES)}")
        check_callable(callback, "callback")
        with self._lock:
            self._listeners[canonical].append(callback)

        def dispose() -> None:
            with self._lock:
                listeners = self._listeners[canonical]
                if callback in listeners:
                    listeners.remove(callback)

        return dispose

    def _snapshot(self, name: str) -> list[Listener]:
        with self._lock:
            return list(self._listeners[_CANONICAL[name]])

    def emit(self, name: str, event: Any) -> None:
        """Call every listener; coroutines are run to completion (or scheduled on this thread's
        running loop)."""
        for listener in self._snapshot(name):
            result = _call(listener, name, event)
            if inspect.isawaitable(result):
                _finish(result, name)

    async def aemit(self, name: str, event: Any) -> None:
        """Call every listener, awaiting the asynchronous ones."""
        for listener in self._snapshot(name):
            result = _call(listener, name, event)
            if inspect.isawaitable(result):
                try:
                    await result
                except Exception:
                    log.warning("a %r listener failed", name, exc_info=True)


def _call(listener: Listener, name: str, event: Any) -> Any:
    try:
        return listener(event)
    except Exception:
        log.warning("a %r listener failed", name, exc_info=True)
        return None


def _finish(awaitable: Awaitable[Any], name: str) -> None:
    async def guarded() -> None:
        try:
            await awaitable
        except Exception:
            log.warning("a %r listener failed", name, exc_info=True)

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(guarded())
        return
    task = loop.create_task(guarded())
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)


_PENDING: set[asyncio.Task[None]] = set()
