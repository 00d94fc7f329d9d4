"""Long-term memory's background work: last-access bumps written off recall's path, and queued
extractions stored in coalesced commits.

Both run on threads the memory owns and both are finished by ``LongTermMemory.flush`` /
``close``; bumps still pending when the interpreter exits are written by an exit hook.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from mindcore.ltm.types import ExtractionReport, Memory

__all__ = ["ExtractionQueue", "TouchWriter"]

log = logging.getLogger("mindcore.ltm")

# Writers with bumps that may still be pending; written out when the interpreter exits.
_LIVE: weakref.WeakSet[TouchWriter] = weakref.WeakSet()
_EXIT_HOOK = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    # Registered on first use, after the store module's own exit hook: atexit runs hooks in
    # reverse order, so pending bumps are written while the store is still open.
    global _exit_hook_registered
    with _EXIT_HOOK:
        if not _exit_hook_registered:
            atexit.register(_flush_all_at_exit)
            _exit_hook_registered = True


def _flush_all_at_exit() -> None:
    for writer in list(_LIVE):
        writer.write()


class TouchWriter:
    """Coalesces last-access bumps: they are written together ``delay`` seconds after the first
    one (or at :meth:`flush` or interpreter exit), so a burst of recalls costs one write."""

    def __init__(self, write: Callable[[Mapping[str, tuple[int, int]]], None], delay: float) -> None:
        self._write = write
        self.delay = delay
        self._lock = threading.Lock()  # guards the pending bumps and the timer
        self._io = threading.Lock()  # one bump write at a time
        self._pending: dict[str, tuple[int, int]] = {}
        self._timer: threading.Timer | None = None
        _LIVE.add(self)
        _register_exit_hook()

    def schedule(self, memories: Sequence[Memory], now: int) -> None:
        with self._lock:
            for m in memories:
                accessed, recency = self._pending.get(m.id, (0, 0))
                self._pending[m.id] = (max(accessed, now), max(recency, now, m.created_at))
            if self._timer is not None:
                return
            timer = threading.Timer(self.delay, self.write)
            timer.daemon = True  # pending bumps are written by the exit hook instead
            self._timer = timer
        timer.start()

    def write(self) -> None:
        """Write the pending bumps now (a failure is logged: it only makes memories age faster)."""
        with self._io:
            with self._lock:
                pending, self._pending = self._pending, {}
                self._timer = None
            if not pending:
                return
            try:
                self._write(pending)
            except Exception:
                log.exception("long-term memory: could not record last access of %d memories", len(pending))

    def flush(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self.write()

    def close(self) -> None:
        self.flush()
        _LIVE.discard(self)


class ExtractionQueue:
    """Conversations waiting for extraction, drained by one worker thread: turns queued while the
    worker is busy are extracted one after the other and stored in one commit (at most
    ``coalesce_max`` turns per commit)."""

    def __init__(self, run: Callable[[list[list[Any]], list[str | None]], list[ExtractionReport]], *,
                 coalesce_max: int = 64) -> None:
        self._run = run
        self.coalesce_max = coalesce_max
        self._lock = threading.Lock()
        self.queued: list[tuple[list[Any], str | None, Future[ExtractionReport]]] = []
        self.draining = False
        self._pool: ThreadPoolExecutor | None = None

    @property
    def _worker(self) -> ThreadPoolExecutor:
        # Created on first use: a memory that never extracts in the background holds no thread.
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mindcore-ltm")
            return self._pool

    def submit(self, messages: list[Any], thread: str | None = None) -> Future[ExtractionReport]:
        future: Future[ExtractionReport] = Future()
        with self._lock:
            self.queued.append((messages, thread, future))
            start, self.draining = not self.draining, True
        if start:
            try:
                self._worker.submit(self._drain)
            except RuntimeError as exc:  # the worker was shut down (close): nothing queued will run
                with self._lock:
                    stranded, self.queued, self.draining = self.queued, [], False
                for _, _, f in stranded:
                    if f is not future and f.set_running_or_notify_cancel():
                        f.set_exception(exc)
                raise
        return future

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch, self.queued = self.queued[: self.coalesce_max], self.queued[self.coalesce_max:]
                if not batch:
                    self.draining = False
                    return
            live = [(m, t, f) for m, t, f in batch if f.set_running_or_notify_cancel()]
            if not live:
                continue
            try:
                reports = self._run([m for m, _, _ in live], [t for _, t, _ in live])
            except Exception as exc:  # a failed commit fails this batch's futures, not the worker
                log.exception("long-term memory: background extraction failed")
                for _, _, f in live:
                    f.set_exception(exc)
                continue
            for (_, _, f), report in zip(live, reports, strict=True):
                f.set_result(report)

    def wait(self) -> None:
        """Return once everything queued so far has been stored (or has failed)."""
        if self._pool is not None:
            self._pool.submit(lambda: None).result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
