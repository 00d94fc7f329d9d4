"""A child process of tests/context/test_context_sessions.py: appends to one session, one message at
a time (or through update_conversation), once the parent says go."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from mindcore.context import Context


def main(store: str, name: str, count: int, folder: str, mode: str) -> None:
    session = Context(store, dataset="ds").session("shared", namespace="ns")
    Path(folder, f"{name}.ready").touch()
    while not Path(folder, "go").exists():
        time.sleep(0.01)
    other = "w2" if name == "w1" else "w1"
    for i in range(count):
        if i in (count // 3, 2 * count // 3):
            # Meet the other writer: each third of the run holds messages of both, so the writes
            # interleave however the machine schedules the two processes.
            Path(folder, f"{name}.at{i}").touch()
            while not Path(folder, f"{other}.at{i}").exists():
                time.sleep(0.01)
        time.sleep(random.uniform(0, 0.02))  # let the other writer in: a lock holder can re-take it at once
        message = {"role": "user", "content": f"{name}-{i}"}
        if mode == "append":
            session.append([message])
        else:  # the whole conversation as this writer knows it: its own messages so far
            session.update_conversation([{"role": "user", "content": f"{name}-{j}"} for j in range(i + 1)])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
