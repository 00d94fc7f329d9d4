"""Keeping a serving process's resident memory down (``mindcore serve``; see
:mod:`mindcore.server.worker`, which applies :func:`lean_process` before the store's libraries load),
and its garbage collector out of the way of requests (:func:`settle_collector`, once the app is
loaded).

Measured at the size of ``benches/bench_server.py`` (1,000 tools, a 2,000-message session, BM25):

- **pandas is refused.** Nothing a server is sent becomes a data frame, yet pyarrow imports pandas
  (about 30 MB resident, code and objects) the first time it checks whether a value is one, which
  LanceDB's import does. pyarrow and LanceDB treat pandas as optional and work without it.
- **Arrow allocates from the C heap** (``ARROW_DEFAULT_MEMORY_POOL=system``) instead of mimalloc,
  which keeps the pages of freed buffers (about 20 MB after the bench's writes). Set the variable
  to choose another pool.
- **The C heap is trimmed when large requests stop** (:class:`HeapTrimmer`: glibc's
  ``malloc_trim``, about 0.5 ms in a thread of its own, a second after the last request with a
  large body): the freed buffers of large registrations and appends otherwise stay resident
  (about 8 MB after the bench's writes, measured in-process).

What stays is mostly code and the objects of the libraries' modules: LanceDB's native library
and pyarrow's (file-backed pages, shared with the page cache), and the modules LanceDB imports.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = [
    "COLLECTOR_THRESHOLDS", "QUIET_SECONDS", "TRIM_AFTER_BYTES", "HeapTrimmer", "body_size", "lean_process",
    "malloc_trim", "settle_collector",
]

#: Python's collector thresholds while serving (its defaults are 700, 10, 10).
COLLECTOR_THRESHOLDS = (20_000, 10, 10)
#: A request whose body is at least this large is followed by a heap trim...
TRIM_AFTER_BYTES = 64 * 1024
#: ...once no other such request came for this many seconds.
QUIET_SECONDS = 1.0


class _RefusePandas:
    """A finder that makes ``import pandas`` fail as if it were not installed."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not loaded in a mindcore serve process", name=name)
        return None


def lean_process() -> None:
    """Refuse pandas and have Arrow allocate from the C heap, in this process; call it before
    pyarrow is imported (once pandas or Arrow's pool is loaded, it leaves them as they are)."""
    if "pandas" not in sys.modules and not any(isinstance(f, _RefusePandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _RefusePandas())
    if "pyarrow" not in sys.modules:  # Arrow reads it when its pool is first used
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def settle_collector() -> None:
    """Set Python's garbage collector for serving, once the app is loaded: every object alive now
    (the modules of the libraries, the store) is frozen out of its scans, and the youngest
    generation is collected less often. A request that parses a large body (a 1,000-tool
    registration makes some 50,000 objects) otherwise sets off full collections that walk the
    whole heap, adding tens of milliseconds to that request or to whichever comes next. (No
    collection first: it would hold the interpreter for a full scan while ``/health`` answers.)"""
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def _load_malloc_trim() -> Callable[[], Any] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc; absent on musl and macOS
    except (AttributeError, OSError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


#: glibc's ``malloc_trim(0)``: hand the heap's free pages back to the system; ``None`` without glibc.
malloc_trim = _load_malloc_trim()


class HeapTrimmer:
    """Runs ``trim`` (default :data:`malloc_trim`) in a thread of its own once :meth:`request`
    has not been called for ``quiet`` seconds. Not between the requests of a burst: they reuse
    the pages the last one freed, and would only fault them back in after each trim."""

    def __init__(self, trim: Callable[[], Any] | None = malloc_trim, quiet: float = QUIET_SECONDS) -> None:
        self._trim = trim
        self._quiet = quiet
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def request(self) -> None:
        if self._trim is None:
            return
        self._wanted.set()
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="mindcore-heap-trim", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        assert self._trim is not None
        while True:
            self._wanted.wait()
            self._wanted.clear()
            while self._wanted.wait(self._quiet):  # asked again meanwhile: wait for quiet again
                self._wanted.clear()
            self._trim()


def body_size(scope: Any) -> int:
    """A request's ``content-length`` (0 when it has none or it is not a number)."""
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0
