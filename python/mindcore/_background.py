"""Slow setup (importing LanceDB, loading a model) run once in a background thread.

:class:`BackgroundLoad` starts its work when it is created and hands the result to every caller
of :meth:`~BackgroundLoad.result`, which waits for it: the work runs exactly once however many
threads ask at the same moment, and a failure is raised, as the same exception, to every one of
them (nothing is half-loaded, nothing is retried).

A process that forks while a load is under way would give its child a thread that no longer
exists (the child would wait for it forever) and, mid-import, a held import lock: so a fork
waits for every pending load to finish first (``os.register_at_fork``), and no load starts while
a fork is in progress.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

__all__ = ["BackgroundLoad"]

T = TypeVar("T")

# Loads still running, and the lock a fork holds so that no new one starts while it forks.
_PENDING: set[BackgroundLoad[Any]] = set()
_PENDING_LOCK = threading.Lock()
_FORK_LOCK = threading.Lock()


class BackgroundLoad(Generic[T]):
    """``load()`` run once in a new thread called ``name``; :meth:`result` waits for its value.

    >>> job = BackgroundLoad(lambda: 6 * 7, "answer")
    >>> job.result()
    42
    """

    def __init__(self, load: Callable[[], T], name: str) -> None:
        self._load: Callable[[], T] | None = load
        self._future: Future[T] = Future()
        self._thread = threading.Thread(target=self._run, name=name)
        with _FORK_LOCK:
            with _PENDING_LOCK:
                _PENDING.add(self)
            self._thread.start()

    def _run(self) -> None:
        load, self._load = self._load, None  # keep nothing the load closed over once it is done
        assert load is not None
        try:
            value = load()
        except BaseException as exc:  # every caller of result() gets it, whatever it is
            self._future.set_exception(exc)
        else:
            self._future.set_result(value)
        finally:
            with _PENDING_LOCK:
                _PENDING.discard(self)

    def result(self) -> T:
        """The loaded value, waiting for it if the load is still running; the load's exception if
        it failed (raised to every caller)."""
        return self._future.result()

    def done(self) -> bool:
        """Whether the load has finished (successfully or not)."""
        return self._future.done()

    def wait(self) -> None:
        """Wait for the load to finish, whether or not it succeeded."""
        self._thread.join()


def _before_fork() -> None:
    _FORK_LOCK.acquire()
    with _PENDING_LOCK:
        pending = list(_PENDING)
    for job in pending:
        if job._thread is not threading.current_thread():  # a load that forks cannot wait for itself
            job.wait()


def _after_fork() -> None:
    _FORK_LOCK.release()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)
