"""Helpers of the CLI tests: a store that every capability wrote to, and ``python -m mindcore`` run as a
real subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import mindcore
from mindcore.embed import HashEmbedder

TOOLS = [("get_weather", "Current weather and forecast for a city"),
         ("book_flight", "Book a flight between two airports on a date"),
         ("send_email", "Send an e-mail to a contact")]


def populate(path: Path) -> Path:
    """A store at ``path`` with a mind, two users' long-term memories, working memory, and a context
    dataset with tools and a session, all embedded with the hashing embedder."""
    emb = HashEmbedder()
    store = mindcore.open(path, embedder=emb)
    mind = mindcore.Mind(store, agent="tracker", embedder=emb)
    mind.believe("TSMC N3 capacity is booked through Q2", confidence="high")
    mind.set_goal("Track TSMC capacity")
    mind.reflect("Always cite the earnings call", pin=True)
    for user, facts in {"user-7": [("Prefers green tea over coffee", "preference"), ("Lives in Lyon", "fact")],
                        "user-8": [("Allergic to peanuts", "fact")]}.items():
        ltm = mindcore.LongTermMemory(store, user_id=user, namespace="chat", embedder=emb)
        for text, kind in facts:
            ltm.remember(text, kind=kind, importance=0.7)
        ltm.close()
    mindcore.WorkingMemory(store, thread_id="t-1").update({"content": "booking a flight to Paris"})
    ctx = mindcore.Context(store, dataset="support", embedder=emb)
    ctx.register([mindcore.Tool(name, description) for name, description in TOOLS])
    ctx.discover("book a flight", strategy="hybrid")
    ctx.session("chat-1").append([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    store.close()
    return path


def fresh_clone(tmp: Path) -> dict[str, str]:
    """The environment of a fresh clone with no evaluation data beside it: a copy of the package under
    ``tmp/clone/python`` first on ``PYTHONPATH`` (the data is looked for beside the package's own
    checkout, so a copy is needed, not a link) and ``$MINDCORE_DATA_DIR`` empty."""
    package = Path(mindcore.__file__).parent
    shutil.copytree(package, tmp / "clone" / "python" / "mindcore", ignore=shutil.ignore_patterns("__pycache__"))
    path = os.pathsep.join(p for p in (str(tmp / "clone" / "python"), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path, "MINDCORE_DATA_DIR": ""}


def run_cli(*args: str | Path, check: bool = True, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m mindcore ARGS`` in a subprocess (stdout and stderr captured; not a terminal)."""
    # Not as an xdist worker: pytest-benchmark, run by `mindcore bench`, disables itself under one.
    base = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    done = subprocess.run([sys.executable, "-m", "mindcore", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**base, **(env or {})})
    if check:
        assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def interrupt_cli(*args: str | Path, first: str) -> tuple[str, str]:
    """``python -m mindcore ARGS`` sent Ctrl-C (SIGINT) once it reports its first committed step
    (a stderr line starting with ``first``); its stdout and stderr after it exited with 130."""
    proc = subprocess.Popen([sys.executable, "-m", "mindcore", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith(first), line
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    return stdout, stderr
