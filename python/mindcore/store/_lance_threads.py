"""A process that used LanceDB exits only once LanceDB's worker threads are out of Python.

LanceDB's synchronous calls run on its Tokio worker threads. When one finishes, its worker takes the
GIL and hands the result to LanceDB's event loop with :meth:`asyncio.loop.call_soon_threadsafe`,
which writes to a socket with the GIL released; the caller is woken by that write, while the worker
still has to take the GIL back to return. If the caller's last call was that one and the program
ends at once, the interpreter can begin finalizing first: the worker, told to exit as it retakes
the GIL, unwinds through code that releases a GIL it no longer holds, and CPython aborts the process
("PyGILState_Release: thread state ... must be current when releasing"), exit status -6 and any
buffered output lost. :func:`settle_lance_threads`, run at exit after the stores are closed, waits
for such a worker to leave Python first.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from types import FrameType

__all__ = ["SETTLE_TIMEOUT_S", "lance_threads_in_python", "settle_lance_threads"]

#: The longest exit waits for a worker to leave Python (it needs the GIL for microseconds; a
#: busy machine can keep it off a core for longer, never this long).
SETTLE_TIMEOUT_S = 5.0

_ASYNCIO_DIR = os.path.dirname(asyncio.__file__)


def lance_threads_in_python() -> set[int]:
    """The identifiers of the threads Python's :mod:`threading` did not start that are inside
    :mod:`asyncio` code (LanceDB's workers handing a result to its event loop)."""
    own = {t.ident for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}
    busy: set[int] = set()
    for ident, frame in sys._current_frames().items():
        if ident in own:
            continue
        f: FrameType | None = frame
        while f is not None and not f.f_code.co_filename.startswith(_ASYNCIO_DIR):
            f = f.f_back
        if f is not None:
            busy.add(ident)
    return busy


def settle_lance_threads(timeout: float = SETTLE_TIMEOUT_S) -> bool:
    """Wait (at most ``timeout`` seconds) until no LanceDB worker is inside Python; whether none is.
    Each wait lets go of the GIL, which is what such a worker waits for."""
    deadline = time.monotonic() + timeout
    while lance_threads_in_python():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True
