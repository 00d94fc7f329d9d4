"""What several subcommands share: the ``--store`` and ``--embedder`` options, progress that degrades
to plain lines off a terminal, a Ctrl-C that stops long work between two committed steps, and
plain-text tables."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from mindcore.errors import MindcoreError

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.store import EmbeddingInfo, Store

EMBEDDER_CHOICES = ("recorded", "hash", "default")

_HASH_ID = re.compile(r"^mindcore-hash-v\d+-d(\d+)-n\d+-\d+-s(\d+)$")


# -- options ---------------------------------------------------------------------------------------


def add_store_argument(parser: argparse.ArgumentParser, *, help: str = "the store: a folder or a URI") -> None:
    parser.add_argument("--store", default=None, metavar="PATH",
                        help=f"{help} (default: $MINDCORE_HOME, else ./.mindcore)")


def add_embedder_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder", choices=EMBEDDER_CHOICES, default="recorded",
        help="the embedding model: 'recorded' (default) the one the store records (the bundled MiniLM or "
             "the hashing embedder), 'hash' the hashing embedder (fast, no model files), 'default' the "
             "bundled all-MiniLM-L6-v2",
    )


def store_location(args: argparse.Namespace) -> str:
    """Where ``--store`` points (the default store's folder when it was not given)."""
    given: str | None = args.store
    return given if given is not None else os.environ.get("MINDCORE_HOME") or ".mindcore"


def open_store(args: argparse.Namespace, *, read_only: bool, create: bool = False) -> Store:
    """The store ``--store`` names. Only ``create=True`` makes a new one: otherwise a folder that does
    not exist, or one that holds no store (no table, nothing mindcore writes: a wrong path), is an
    error naming it, and nothing is written there."""
    from mindcore.store import open as open_store

    location = store_location(args)
    if not create and "://" not in location:
        if not os.path.isdir(location):
            raise MindcoreError(f"no store at {os.path.abspath(location)} (give --store PATH)")
        if not any(e.name.endswith(".lance") or e.name.startswith("_mindcore") for e in os.scandir(location)):
            raise MindcoreError(f"{os.path.abspath(location)} is not a mindcore store (it holds no tables)")
    return open_store(location, read_only=read_only and not location.startswith("memory://"))


def embedder_for(choice: str, recorded: EmbeddingInfo | None) -> Embedder:
    """The embedder ``--embedder`` asks for. ``recorded`` rebuilds the model ``recorded`` names when
    it is one mindcore ships (the hashing embedder, any dimension and seed, or the bundled MiniLM);
    a store that records another model (an HTTP endpoint) needs that model given in Python."""
    from mindcore.embed import HashEmbedder, default_embedder

    if choice not in EMBEDDER_CHOICES:
        raise MindcoreError(f"--embedder: expected one of {EMBEDDER_CHOICES}, got {choice!r}")
    shipped = None if recorded is None else _shipped(recorded)
    if choice == "hash":
        return shipped if isinstance(shipped, HashEmbedder) else HashEmbedder()
    if choice == "default" or recorded is None:
        return default_embedder()
    if shipped is not None:
        return shipped
    raise MindcoreError(
        f"the store records the embedding model {recorded}, which the command line cannot build; "
        "use it from Python (mindcore.open(path, embedder=...)) or pick --embedder hash/default for a new store"
    )


def _shipped(recorded: EmbeddingInfo) -> Embedder | None:
    """The shipped embedder whose model id is ``recorded``'s, if there is one."""
    from mindcore.embed import HashEmbedder, default_embedder
    from mindcore.embed.minilm import MODEL_ID

    match = _HASH_ID.match(recorded.model_id)
    if match:
        hashing = HashEmbedder(int(match.group(1)), seed=int(match.group(2)))
        return hashing if hashing.model_id == recorded.model_id else None
    return default_embedder() if recorded.model_id == MODEL_ID else None


# -- progress --------------------------------------------------------------------------------------


class Progress:
    """A progress bar (tqdm) on a terminal; elsewhere (a pipe, a log file, a test) plain lines on
    stderr, at most one per ``every`` seconds plus the last one, so logs stay readable.

    >>> with Progress("rows", total=3, stream=sys.stdout, tty=False) as bar:
    ...     bar.update(3)
    rows: 3/3
    """

    def __init__(self, label: str, *, total: int | None = None, unit: str = "", every: float = 1.0,
                 stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._every = every
        self._last_line = float("-inf")  # the first update always prints (monotonic time may start near 0)
        self._printed_at = -1
        is_tty = self._stream.isatty() if tty is None else tty
        self._bar: Any = None
        if is_tty:
            tqdm = importlib.import_module("tqdm").tqdm  # untyped

            self._bar = tqdm(total=total, desc=label, unit=unit or "it", file=self._stream, leave=True)

    def set_total(self, total: int | None) -> None:
        """The total, once it is known (after reading the input, say)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def update(self, n: int = 1, note: str | None = None) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            return
        now = time.monotonic()
        if now - self._last_line >= self._every or (self.total is not None and self.done >= self.total):
            self._line(note)
            self._last_line = now

    def _line(self, note: str | None) -> None:
        if self._printed_at == self.done:
            return
        self._printed_at = self.done
        of = f"/{self.total}" if self.total is not None else ""
        unit = f" {self.unit}" if self.unit else ""
        print(f"{self.label}: {self.done}{of}{unit}" + (f" ({note})" if note else ""), file=self._stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            self._line(None)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


# -- interruption ----------------------------------------------------------------------------------


class Stopped(Exception):
    """Raised by :meth:`StopRequest.check` when Ctrl-C asked to stop."""


class StopRequest:
    """Set by the first Ctrl-C inside :func:`stop_between_steps`: the work checks :attr:`requested`
    between two committed steps and stops there. A second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.requested = False

    def check(self) -> None:
        """Raise :class:`Stopped` if Ctrl-C asked to stop: for a progress callback called between
        two committed steps of work that runs elsewhere."""
        if self.requested:
            raise Stopped


@contextmanager
def stop_between_steps(what: str) -> Iterator[StopRequest]:
    """Turn the first Ctrl-C (SIGINT) into a request to stop after the current step (``what`` says
    which, e.g. "the current batch"); the previous handler comes back on exit. Off the main thread
    (where signals cannot be handled) Ctrl-C keeps its usual meaning."""
    stop = StopRequest()

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True
        print(f"\ninterrupted: stopping after {what} (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


# -- output ----------------------------------------------------------------------------------------


def human_bytes(n: int | None) -> str:
    """``1536`` -> ``'1.5 KiB'``; ``None`` (unknown) -> ``'-'``.

    >>> human_bytes(1536), human_bytes(10), human_bytes(None)
    ('1.5 KiB', '10 B', '-')
    """
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table (it reads as aligned text in a terminal too).

    >>> print(table(["a", "b"], [[1, "x"]]))
    | a | b |
    |---|---|
    | 1 | x |
    """
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
