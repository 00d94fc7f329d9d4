"""Where a consciousness lives: one append-only message log per agent in the store's
``consciousness_history`` table (the store's :class:`~mindcore.store.messages.MessageLog`).

A cycle's save appends only what is new, in one commit: the system prompt when it changed, the
cycle's messages, and a ``@cycle`` marker row holding the cycle number and the ids of the events it
processed. When compaction ran, the save appends one snapshot instead: a ``@snapshot`` marker
(cycle number, the latest event ids) and the whole compacted history. Loading reads from the latest
snapshot on; rows before it are pruned after the save. A crash leaves the last save whole: each is
one commit.

Marker rows have roles that start with ``@``, which no chat message has.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mindcore.consciousness.messages import compact_json
from mindcore.consciousness.tokens import message_text
from mindcore.errors import ConsciousnessError
from mindcore.kernels import estimate_message_tokens
from mindcore.store.messages import LogView, MessageLog

if TYPE_CHECKING:
    from mindcore.store import Store

__all__ = ["TABLE", "HistoryRepo", "Saved"]

TABLE = "consciousness_history"
_CYCLE = "@cycle"
_SNAPSHOT = "@snapshot"


@dataclass(frozen=True)
class Saved:
    """A history as saved: ``messages`` (the system prompt first, if any), the number of cycles
    saved, the event ids recorded (oldest first), the log's last ``seq``, the ``seq`` of the
    latest snapshot marker (0: none), and the text the token estimate counts of each message
    (kept beside them so a save estimates the history without walking it again)."""

    messages: list[dict[str, Any]]
    cycle_count: int
    events: list[str]
    max_seq: int
    snapshot_seq: int
    texts: list[str]

    @property
    def tokens(self) -> int:
        """The seed's estimate of ``messages``."""
        return estimate_message_tokens(self.texts)

    @property
    def system_prompt(self) -> str | None:
        return self.messages[0]["content"] if self.messages and self.messages[0]["role"] == "system" else None


EMPTY = Saved([], 0, [], 0, 0, [])


def with_system(messages: list[Any], texts: list[str], system: str | None,
                current: str | None) -> tuple[list[Any], list[str]]:
    """``messages`` and their ``texts`` with the system prompt replaced (or put first when there
    is none; ``system=None`` keeps them as they are)."""
    if system is None:
        return list(messages), list(texts)
    head = 1 if current is not None else 0
    return [{"role": "system", "content": system}, *messages[head:]], [system, *texts[head:]]



class HistoryRepo:
    """The history of one agent: ``log`` names its message log."""

    def __init__(self, store: Store, agent: str) -> None:
        self._log = MessageLog(store, TABLE)
        self.key = f"agent/{agent}"
        self._saved: Saved | None = None

    def load(self) -> Saved:
        """The history as saved now (one version probe when nothing moved)."""
        view = self._log.view(self.key)
        saved = self._saved
        if saved is not None and saved.max_seq == view.max_seq:  # seq only grows: nothing new
            return saved
        saved = _read(view)
        self._saved = saved
        return saved

    def save_cycle(self, expected: Saved, system: str | None, messages: Sequence[dict[str, Any]], cycle: int,
                   events: Sequence[str], at_ms: int) -> Saved:
        """Append the cycle's rows in one commit, if the log is still at ``expected``."""
        rows: list[dict[str, Any]] = []
        if system is not None and system != expected.system_prompt:
            rows.append({"role": "system", "content": system})
        rows += messages
        rows.append({"role": _CYCLE, "content": compact_json({"cycle": cycle, "events": list(events), "at": at_ms})})
        _, last = self._append(expected, rows)
        history, texts = with_system(expected.messages, expected.texts, system, expected.system_prompt)
        saved = Saved(history + list(messages), cycle, [*expected.events, *events], last, expected.snapshot_seq,
                      texts + [message_text(m) for m in messages])
        self._saved = saved
        return saved

    def save_snapshot(self, expected: Saved, messages: Sequence[dict[str, Any]], cycle: int,
                      events: Sequence[str], at_ms: int, remember: int) -> Saved:
        """Append a snapshot (marker + the whole compacted history) in one commit, if the log is
        still at ``expected``."""
        kept = _last([*expected.events, *events], remember)
        marker = {"role": _SNAPSHOT, "content": compact_json({"cycle": cycle, "events": kept, "at": at_ms})}
        first, last = self._append(expected, [marker, *messages])
        saved = Saved(list(messages), cycle, kept, last, first, [message_text(m) for m in messages])
        self._saved = saved
        return saved

    def prune(self, saved: Saved) -> None:
        """Drop the rows the latest snapshot replaced."""
        if saved.snapshot_seq > 1:
            self._log.prune(self.key, saved.snapshot_seq)
            self._saved = saved

    def _append(self, expected: Saved, rows: list[dict[str, Any]]) -> tuple[int, int]:
        def successors(view: LogView) -> list[dict[str, Any]]:
            if view.max_seq != expected.max_seq:
                raise ConsciousnessError(
                    f"{self.key}: the history was saved by another writer since this one loaded it "
                    f"(seq {view.max_seq} != {expected.max_seq}); nothing saved: run one consciousness per agent")
            return rows

        return self._log.append(self.key, successors)


def _last(ids: Sequence[str], n: int) -> list[str]:
    return list(ids[len(ids) - n:]) if n else []


def _read(view: LogView) -> Saved:
    n = len(view)
    if n == 0:
        return EMPTY
    roles: list[str] = view.column("role")
    start = max((i for i in range(n - 1, -1, -1) if roles[i] == _SNAPSHOT), default=-1)
    contents: list[str] = view.column("content")
    calls: list[str | None] = view.column("tool_calls")
    call_ids: list[str | None] = view.column("tool_call_id")
    system: dict[str, Any] | None = None
    body: list[dict[str, Any]] = []
    cycle = 0
    events: list[str] = []
    snapshot_seq = 0
    if start >= 0:
        marker = json.loads(contents[start])
        cycle, events, snapshot_seq = int(marker["cycle"]), list(marker["events"]), int(view.seq[start])
    for i in range(max(start, 0), n):
        role = roles[i]
        if role == _SNAPSHOT:
            continue
        if role == _CYCLE:
            marker = json.loads(contents[i])
            cycle = int(marker["cycle"])
            events += marker["events"]
            continue
        if role == "system":
            system = {"role": "system", "content": contents[i]}
            continue
        message: dict[str, Any] = {"role": role, "content": contents[i]}
        if calls[i] is not None:
            message["tool_calls"] = json.loads(calls[i])  # type: ignore[arg-type]
        if call_ids[i] is not None:
            message["tool_call_id"] = call_ids[i]
        body.append(message)
    history = ([system] if system else []) + body
    return Saved(history, cycle, events, view.max_seq, snapshot_seq, [message_text(m) for m in history])

