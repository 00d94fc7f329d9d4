"""Child-process body for tests/test_store_messages_group.py: threads of one process appending
to shared message logs (through the group commit) while another process does the same."""

from __future__ import annotations

import threading
from multiprocessing.connection import Connection

import mindcore
from mindcore.store.messages import MessageLog

LOGS = ("a", "b", "c")


def append_many(path: str, name: str, threads: int, rounds: int, conn: Connection) -> None:
    """Say ready, wait for go; then ``threads`` threads each append ``rounds`` times, round robin
    over :data:`LOGS`, one or two messages named ``name-thread-round``; send back every
    acknowledged ``(log, first_seq, last_seq, contents)``."""
    with mindcore.open(path) as store:
        log = MessageLog(store, "chat_messages")
        acked: list[tuple[str, int, int, list[str]]] = []
        conn.send("ready")
        assert conn.recv() == "go"

        def client(t: int) -> None:
            for r in range(rounds):
                target = LOGS[(t + r) % len(LOGS)]
                contents = [f"{name}-{t}-{r}-{k}" for k in range(1 + r % 2)]
                first, last = log.append(target, [{"role": "user", "content": c} for c in contents])
                acked.append((target, first, last, contents))

        workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        conn.send(("done", acked))
    conn.close()
