"""Child-process bodies for tests/test_ltm_restore.py, run as ``python tests/_ltm_procs.py CMD STORE ARG``.

- ``remember STORE TEXT``: remember ``TEXT`` for user ``u1`` and print ``done <id>``. With
  ``MINDCORE_TEST_BLOCK_MEMORY_WRITE=1`` the write stops between its two commits: the memory
  commit (``MemoryRepo.write``) prints ``blocked`` and waits forever, the history commit having
  landed, so the parent can ``kill -9`` the process exactly there.
- ``restore STORE ID``: restore memory ``ID`` of user ``u1`` and print ``restored <id>: <text>``.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory
from mindcore.ltm._repo import MemoryRepo

BLOCK = "MINDCORE_TEST_BLOCK_MEMORY_WRITE"


def _blocked_write(self: MemoryRepo, *args: Any, **kwargs: Any) -> set[str]:
    print("blocked", flush=True)
    threading.Event().wait()  # until the parent kills this process
    raise AssertionError("unreachable")


def main(argv: list[str]) -> int:
    command, path, arg = argv
    if os.environ.get(BLOCK) == "1":
        MemoryRepo.write = _blocked_write  # type: ignore[method-assign]
    ltm = LongTermMemory(mindcore.open(path), user_id="u1", embedder=HashEmbedder())
    if command == "remember":
        memory = ltm.remember(arg)
        print(f"done {None if memory is None else memory.id}", flush=True)
    elif command == "restore":
        memory = ltm.restore(arg)
        print(f"restored {memory.id}: {memory.text}", flush=True)
    else:
        raise SystemExit(f"unknown command {command!r}")
    ltm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
