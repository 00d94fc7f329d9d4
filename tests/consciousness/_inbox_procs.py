"""Child-process bodies for the inbox tests: pushers, consumers racing each other, a consumer that
is killed while it holds leases, one pushing and acking until it is killed.

They run in processes forked from a multiprocessing fork server that imported LanceDB, mindcore,
redis (when installed) and this module once, so a child starts in milliseconds.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import _forkserver
import lancedb  # noqa: F401  (preloaded by the fork server)

import mindcore.consciousness
from mindcore.consciousness import BaseInbox, Inbox


def fork_context() -> Iterator[Any]:
    """A ``forkserver`` context whose server has imported LanceDB, mindcore and this module
    (use as a module-scoped pytest fixture: ``yield from fork_context()``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    preload = ["lancedb", "mindcore.consciousness", "_inbox_procs"]
    if importlib.util.find_spec("redis") is not None:
        preload.append("redis")  # its import alone takes ~0.3 s
    yield from _forkserver.fork_context(preload, here)


def open_inbox(kind: str, where: str, agent: str, visibility_timeout: float = 30.0) -> BaseInbox:
    """The inbox of ``agent`` at ``where``: a store folder (``kind="store"``) or a Redis URL."""
    if kind == "store":
        return Inbox(where, agent=agent, visibility_timeout=visibility_timeout)
    return mindcore.consciousness.RedisInbox(where, agent=agent, visibility_timeout=visibility_timeout)


def push(kind: str, where: str, agent: str, payloads: list[dict[str, Any]], conn: Connection | None = None,
         one_by_one: bool = True) -> None:
    """Push ``payloads`` (one push each, or one ``push_many``); send the ids back over ``conn``."""
    with open_inbox(kind, where, agent) as inbox:
        ids = [inbox.push(p) for p in payloads] if one_by_one else inbox.push_many(payloads)
    if conn is not None:
        conn.send(ids)
        conn.close()


def consume(kind: str, where: str, agent: str, out: str, done: str, batch: int, deadline_s: float) -> None:
    """Receive and ack until the file ``done`` exists and nothing is pending; write each event id
    received to ``out``, one a line, before acking it, then "work" on the batch for 20 ms. After
    its first batch it waits, holding that batch, until another consumer has one too (each says so
    with a file ``<out>.got`` beside ``out``): the consumers race whatever the machine's load.
    ``deadline_s`` only guards against a hang; it is also the lease, so none runs out."""
    end = time.monotonic() + deadline_s
    folder = os.path.dirname(out)
    with open_inbox(kind, where, agent, visibility_timeout=deadline_s) as inbox, open(out, "w") as f:
        while time.monotonic() < end:
            events = inbox.receive(batch)
            if events:
                f.write("".join(f"{e.id} {e.attempts}\n" for e in events))
                f.flush()
                if not os.path.exists(f"{out}.got"):
                    open(f"{out}.got", "w").close()
                    while len(glob.glob(os.path.join(folder, "*.got"))) < 2 and time.monotonic() < end:
                        time.sleep(0.005)
                inbox.ack([e.id for e in events])
                time.sleep(0.02)
            elif os.path.exists(done) and inbox.pending() == 0:
                return
            else:
                time.sleep(0.005)


def receive_and_hang(kind: str, where: str, agent: str, visibility_timeout: float, n: int, conn: Connection) -> None:
    """Receive ``n`` events, send ``"taken <their ids>"``, then wait to be killed (never acking)."""
    inbox = open_inbox(kind, where, agent, visibility_timeout)
    conn.send(" ".join(["taken", *(e.id for e in inbox.receive(n))]))
    threading.Event().wait()


def churn(kind: str, where: str, agent: str, log: str, trial: int, visibility_timeout: float,
          conn: Connection) -> None:
    """Once the inbox is open (``"ready"`` sent over ``conn``), push, receive, ack and nack forever
    (until killed), logging each step to ``log`` before and after it: ``pushing n`` / ``pushed n
    id``, ``acking ids`` / ``acked ids``; each line logged is also sent over ``conn`` (its first word
    is the progress marker the test kills at). On a store folder it compacts every 4 writes,
    inline, so kills also land inside compactions."""
    import random

    from mindcore.store import StoreConfig

    if kind == "store":
        store = mindcore.open(where, config=StoreConfig(compact_every=4, compact_in_background=False))
        inbox: BaseInbox = Inbox(store, agent=agent, visibility_timeout=visibility_timeout)
    else:
        inbox = open_inbox(kind, where, agent, visibility_timeout)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def step(line: str) -> None:
        os.write(fd, f"{line}\n".encode())
        conn.send(line)

    conn.send("ready")
    rnd = random.Random(trial)
    n = 0
    while True:
        name = f"{trial}-{n}"
        step(f"pushing {name}")
        event_id = inbox.push({"kind": "tool_result", "text": name})
        step(f"pushed {name} {event_id}")
        n += 1
        events = inbox.receive(rnd.randint(1, 3))
        ids = " ".join(e.id for e in events)
        if events and rnd.random() < 0.2:
            inbox.nack([e.id for e in events])
        elif events:
            step(f"acking {ids}")
            inbox.ack([e.id for e in events])
            step(f"acked {ids}")
