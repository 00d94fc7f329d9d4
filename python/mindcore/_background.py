"""Slow setup (importing LanceDB, loading a model) run once in a background thread.

:class:`BackgroundLoad` starts its work when it is created and hands the result to every caller
of :meth:`~BackgroundLoad.result`, which waits for it: the work runs exactly once however many
threads ask at the same moment, and a failure is raised, as the same exception, to every one of
them (nothing is half-loaded, nothing is retried).

Forking while another thread imports a module leaves the child a module lock held by a thread
that no longer exists (its next import of that module hangs), and forking while a native library
connects leaves it half set up. So a load runs in two steps, its imports and then its work, and
``os.fork`` coordinates with both: a fork waits for imports under way and for work already
started to finish, and work that has not started waits until the fork is over. A child forked
while a load had not started its work starts it again, in a new thread, when it first asks for
the result, so a store or model handed down to it still loads.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (its fork hooks must be registered before a fork, not during one)
import importlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

__all__ = ["BackgroundLoad"]

T = TypeVar("T")

# Loads not finished yet. A fork holds _FORK_LOCK from its first hook to its last, so no load
# starts, or starts its work, while a process forks.
_PENDING: set[BackgroundLoad[Any]] = set()
_PENDING_LOCK = threading.Lock()
_FORK_LOCK = threading.Lock()


class BackgroundLoad(Generic[T]):
    """Import ``imports``, then run ``load()``, once, in a new thread called ``name``;
    :meth:`result` waits for the value.

    >>> job = BackgroundLoad(lambda: 6 * 7, "answer", imports=["json"])
    >>> job.result()
    42
    """

    def __init__(self, load: Callable[[], T], name: str, *, imports: Sequence[str] = ()) -> None:
        self._load = load
        self._imports = tuple(imports)
        self._name = name
        self._future: Future[T] = Future()
        self._imported = threading.Event()
        self._working = False  # set, under _FORK_LOCK, when load() starts
        self._orphaned = False  # in a forked child: the thread that was to run load() is gone
        with _FORK_LOCK:
            with _PENDING_LOCK:
                _PENDING.add(self)
            try:
                self._start()
            except BaseException:  # no thread: nothing for a fork to wait for
                with _PENDING_LOCK:
                    _PENDING.discard(self)
                raise

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name)
        self._thread.start()

    def _run(self) -> None:
        try:
            try:
                for module in self._imports:
                    importlib.import_module(module)
            finally:
                self._imported.set()
            with _FORK_LOCK:  # not while a process forks: the child would inherit half of it
                self._working = True
            value = self._load()
        except BaseException as exc:  # every caller of result() gets it, whatever it is
            self._load = _spent  # keep nothing the load closed over
            self._future.set_exception(exc)
        else:
            self._load = _spent
            self._future.set_result(value)
        finally:
            with _PENDING_LOCK:
                _PENDING.discard(self)

    def result(self) -> T:
        """The loaded value, waiting for it if the load is still running; the load's exception if
        it failed (raised to every caller)."""
        if self._orphaned:
            self._adopt()
        return self._future.result()

    def _adopt(self) -> None:
        # Started on first use, not in the fork hook: the libraries' own fork hooks (LanceDB
        # restarts its event loop) run after ours and must have run first.
        with _PENDING_LOCK:
            if self._orphaned:
                self._orphaned = False
                self._start()

    def done(self) -> bool:
        """Whether the load has finished (successfully or not)."""
        return self._future.done()

    def wait(self) -> None:
        """Wait for the load to finish, whether or not it succeeded."""
        if self._orphaned:
            self._adopt()
        self._future.exception()


def _spent() -> Any:  # pragma: no cover - a load runs once
    raise RuntimeError("this background load has already run")


def _before_fork() -> None:
    _FORK_LOCK.acquire()
    with _PENDING_LOCK:
        pending = list(_PENDING)
    me = threading.current_thread()
    for job in pending:
        if job._thread is me or job.done() or job._orphaned:  # a load that forks cannot wait for itself
            continue
        job._imported.wait()
        if job._working:
            job.wait()
    _PENDING_LOCK.acquire()  # held across the fork, so the child's copy is not held by a lost thread


def _after_fork_in_parent() -> None:
    _PENDING_LOCK.release()
    _FORK_LOCK.release()


def _after_fork_in_child() -> None:
    # The threads of pending loads did not survive the fork. Their imports are complete and their
    # work had not started: the child's first caller starts it again.
    for job in _PENDING:
        if not job.done():
            job._orphaned = True
    _PENDING_LOCK.release()
    _FORK_LOCK.release()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
