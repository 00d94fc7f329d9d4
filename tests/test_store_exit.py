"""A program that used LanceDB exits only once LanceDB's workers are out of Python.

LanceDB's worker thread still runs Python (asyncio's ``call_soon_threadsafe``) after the caller has
its result. If the interpreter finalizes before that worker is out, CPython aborts the process
(exit -6, "PyGILState_Release: thread state ... must be current when releasing"): under load, about
one run in fifteen of ``tests/test_ltm_reliability.py``'s writer did. mindcore's exit handler waits
for such threads; the child below stands one in for LanceDB's worker (a thread Python's threading
module did not start, inside asyncio code when the program ends) and shows the exit waiting for it.
"""

from __future__ import annotations

import _thread
import asyncio
import subprocess
import sys
import threading
from pathlib import Path

from conftest import user_env

from mindcore.store._lance_threads import lance_threads_in_python, settle_lance_threads

CHILD = """
import _thread, asyncio, atexit, sys, time

import pyarrow as pa
import mindcore

table = mindcore.open(sys.argv[1]).table("notes", {"text": pa.string()})
table.append("a", [{"text": "a note"}])
entered, exiting = [], []

async def hand_off():
    entered.append(True)
    while not exiting:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.2)  # still inside when the program has begun to exit
    with open(sys.argv[2], "w") as out:
        out.write("handed off")

_thread.start_new_thread(asyncio.run, (hand_off(),))
while not entered:
    time.sleep(0.001)
atexit.register(exiting.append, True)  # runs before mindcore's exit handler, registered earlier
"""


def test_the_exit_waits_for_a_worker_inside_asyncio(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "store"), str(out)], env=user_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert out.read_text() == "handed off"  # the worker finished before the interpreter ended it


def test_settling_waits_for_a_foreign_thread_inside_asyncio() -> None:
    """A thread Python's threading module did not start (as LanceDB's workers are) counts while it
    runs asyncio code, and settling returns once it is out."""
    entered, release, left = threading.Event(), threading.Event(), threading.Event()

    async def hold() -> None:
        entered.set()
        while not release.is_set():
            await asyncio.sleep(0.001)

    def foreign() -> None:
        asyncio.run(hold())
        left.set()

    ident = _thread.start_new_thread(foreign, ())
    assert entered.wait(60)
    assert ident in lance_threads_in_python()
    assert not settle_lance_threads(timeout=0.01)  # still inside: settling gives up at its timeout
    release.set()
    assert settle_lance_threads(timeout=60)
    assert left.wait(60)
    assert ident not in lance_threads_in_python()
