"""A multiprocessing fork server for tests that run real child processes.

Its server imports LanceDB and the modules a test's children need once, so a child starts in
milliseconds instead of the seconds a fresh interpreter needs to import LanceDB.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

_TESTS = os.path.dirname(os.path.abspath(__file__))


def fork_context(preload: Sequence[str], *folders: str) -> Iterator[Any]:
    """A ``forkserver`` context whose server has imported ``preload`` (use as a module-scoped pytest
    fixture: ``yield from fork_context([...], folder)``); ``folders`` hold the modules children
    import besides those of ``tests/``. Skips off Linux."""
    import pytest

    if sys.platform != "linux":
        pytest.skip("fork server and SIGKILL tests run on Linux")
    ctx = multiprocessing.get_context("forkserver")
    # Python 3.11's fork server ignores the parent's sys.path: hand it the folders explicitly.
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([*folders, _TESTS, *([old] if old else [])])
    # _forkserver_warnings first: it ignores LanceDB's fork warning in the server's children (see there).
    ctx.set_forkserver_preload(["_forkserver_warnings", *preload])
    try:
        yield ctx
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
