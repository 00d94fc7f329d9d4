"""The per-run draft buffer, the in-flight claims shared by concurrent runs, and the flush rules.

Writes of a run are kept here and turned into stored rows at the end of the run by
:func:`plan_flush`, a pure function of the draft and a fresh view of the store (so the rules are
tested without a store). The caller holds the mind's lock from the view's reads to the commit.

Flush rules (clean run / crashed run):

* beliefs: each draft belief merges into the stored row with its id, else into a stored belief
  that became similar meanwhile (another process), else is created; a crashed run writes them
  with ``error=True``, a clean one clears that flag. A belief merges only into one that says the
  same (near-verbatim), that it explicitly negates, or that the agent named with ``replaces``
  (:func:`same_belief`, the judgement long-term memory writes use): two beliefs that only read
  alike are both kept. The replaced content goes into the belief's history, in the same commit;
  a repeat leaves no entry;
* reflections: appended (``error=True`` after a crash); a pin beyond the cap is stored unpinned;
* goals: created (while under the cap) and updated (while still active) after a clean run only;
* unpins: applied after a clean run only (a crash keeps the rule pinned, the safe default).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from mindcore.mind.entries import (
    BeliefChange,
    Confidence,
    Priority,
    history_from_json,
    history_to_json,
    recall_weight,
)
from mindcore.relations import judge_pair

__all__ = [
    "Claims",
    "DraftBelief",
    "DraftBuffer",
    "DraftGoal",
    "DraftReflection",
    "FlushPlan",
    "FlushView",
    "GoalUpdate",
    "belief_key",
    "merge_belief",
    "plan_flush",
    "replaced",
    "same_belief",
]

Row = dict[str, Any]
_RANK = {"low": 0, "medium": 1, "high": 2}


def belief_key(content: str) -> str:
    """What two concurrent runs compare to spot the same belief: trimmed, lower-cased text."""
    return content.strip().lower()


def goal_key(description: str) -> str:
    """What makes two goal descriptions the same goal: the words, whatever the case and spacing.

    >>> goal_key("  Track TSMC  N3 capacity") == goal_key("track tsmc n3 CAPACITY")
    True
    """
    return " ".join(description.split()).casefold()


def _cosine(a: Any, b: Any) -> float | None:
    if a is None or b is None:
        return None
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(np.dot(x, y) / norm) if norm > 0 and x.shape == y.shape else None


def replaced(old: str, new: str, *, at: int, old_vector: Any = None, new_vector: Any = None,
             chosen: bool = False) -> BeliefChange | None:
    """The history entry for belief content ``old`` when ``new`` replaces it: ``None`` when ``new``
    says the same thing, a ``contradiction`` when it explicitly negates it, and, when the agent
    ``chosen`` to replace it (``mind_believe``'s ``replaces``), an ``update`` for anything else.

    >>> replaced("The staging server is up", "The staging server is not up", at=7).relation
    'contradiction'
    >>> replaced("The staging server is up", "the staging server is up", at=7) is None
    True
    >>> replaced("The staging server is up", "The staging server is down", at=7, chosen=True).reason
    'replaced by the agent; may be a contradiction (antonym: up / down)'
    """
    if belief_key(old) == belief_key(new):
        return None
    verdict = judge_pair(old, new, similarity=_cosine(old_vector, new_vector))
    if verdict.supersedes:
        return BeliefChange(old, at, cast("Any", verdict.relation), verdict.reason)
    if not chosen or verdict.relation == "duplicate":
        return None
    why = "replaced by the agent" + (f"; {verdict.reason.removeprefix('both kept: ')}" if verdict.possible else "")
    return BeliefChange(old, at, "update", why)


def same_belief(old: str, new: str, *, old_vector: Any = None, new_vector: Any = None) -> bool:
    """Whether a new belief ``new`` is a new version of the held ``old`` without the agent saying so:
    the same statement (near-verbatim) or its explicit negation. Two beliefs that only read alike
    ("The staging server is up" / "The prod server is up") are both kept.

    >>> same_belief("The staging server is up", "the staging server is up!")
    True
    >>> same_belief("The staging server is up", "The prod server is up")
    False
    """
    if belief_key(old) == belief_key(new):
        return True
    verdict = judge_pair(old, new, similarity=_cosine(old_vector, new_vector))
    return verdict.relation in ("duplicate", "contradiction")


@dataclass
class DraftBelief:
    id: str
    content: str
    confidence: Confidence
    tags: list[str] | None  # None: keep the stored tags when merging into a stored belief
    expires_at: int | None
    allow_downgrade: bool
    vector: np.ndarray
    created_at: int
    #: Table version this belief was checked against for duplicates (-1: never).
    seen_version: int = -1
    #: Contents this draft entry held before a later contradicting or updating belief replaced them.
    history: list[BeliefChange] = field(default_factory=list)
    #: The content (and vector) it started with: what replaces the stored content at flush.
    first_content: str = ""
    first_vector: np.ndarray | None = None
    #: The agent named the belief this one replaces (``mind_believe``'s ``replaces``).
    chosen: bool = False

    def __post_init__(self) -> None:
        if not self.first_content:
            self.first_content = self.content
        if self.first_vector is None:
            self.first_vector = self.vector

    def absorb(self, other: DraftBelief) -> None:
        """A later ``mind_believe`` that matched this draft entry."""
        change = replaced(self.content, other.content, at=other.created_at, old_vector=self.vector,
                          new_vector=other.vector, chosen=other.chosen)
        if change is not None:
            self.history.append(change)
        self.seen_version = min(self.seen_version, other.seen_version)
        self.content = other.content
        self.vector = other.vector
        self.allow_downgrade = self.allow_downgrade or other.allow_downgrade
        self.confidence = _merge_confidence(self.confidence, other.confidence, other.allow_downgrade)
        if other.tags:
            self.tags = list(other.tags)
        self.expires_at = other.expires_at


@dataclass
class DraftReflection:
    id: str
    content: str
    pinned: bool
    tags: list[str]
    related_to: str | None
    expires_at: int | None
    vector: np.ndarray
    created_at: int


@dataclass
class DraftGoal:
    id: str
    description: str
    priority: Priority
    tags: list[str]
    due_by: str | None
    created_at: int
    updated_at: int
    progress: list[str] = field(default_factory=list)


@dataclass
class GoalUpdate:
    """Pending changes to a stored goal (merged over the run, applied at flush)."""

    description: str | None = None
    priority: Priority | None = None
    progress: list[str] = field(default_factory=list)
    updated_at: int = 0


@dataclass
class DraftBuffer:
    """Everything a run wrote, in call order."""

    beliefs: dict[str, DraftBelief] = field(default_factory=dict)
    reflections: dict[str, DraftReflection] = field(default_factory=dict)
    goals: dict[str, DraftGoal] = field(default_factory=dict)
    goal_updates: dict[str, GoalUpdate] = field(default_factory=dict)
    unpins: dict[str, None] = field(default_factory=dict)  # ordered set of stored reflection ids
    _row_ids: list[str] = field(default_factory=list, repr=False)
    _rows: dict[str, int] = field(default_factory=dict, repr=False)
    _matrix: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return (len(self.beliefs) + len(self.reflections) + len(self.goals) + len(self.goal_updates)
                + len(self.unpins))

    def pinned_count(self) -> int:
        return sum(r.pinned for r in self.reflections.values())

    def summary(self) -> str:
        """The pending writes by kind, e.g. ``"1 belief, 2 goals"`` (``""`` when there are none)."""
        kinds = (
            (self.beliefs, "belief"), (self.reflections, "reflection"), (self.goals, "goal"),
            (self.goal_updates, "goal update"), (self.unpins, "unpin"),
        )
        return ", ".join(f"{len(d)} {noun}{'' if len(d) == 1 else 's'}" for d, noun in kinds if d)

    def put_belief(self, d: DraftBelief) -> DraftBelief:
        """Add ``d``, or merge it into the draft belief with the same id; returns the entry kept."""
        held = self.beliefs.get(d.id)
        if held is not None:
            held.absorb(d)
            self._set_row(self._rows[d.id], held.vector)
            return held
        self.beliefs[d.id] = d
        self._rows[d.id] = len(self._row_ids)
        self._row_ids.append(d.id)
        self._set_row(self._rows[d.id], d.vector)
        return d

    def absorb_into(self, id: str, d: DraftBelief) -> DraftBelief:
        """Merge ``d`` into the draft belief ``id`` (a similar one)."""
        held = self.beliefs[id]
        held.absorb(d)
        self._set_row(self._rows[id], held.vector)
        return held

    def similar_belief(self, vector: np.ndarray, threshold: float) -> DraftBelief | None:
        """The draft belief most similar to ``vector`` at cosine >= ``threshold``."""
        from mindcore.kernels import near_duplicates

        n = len(self._row_ids)
        if n == 0 or self._matrix is None:
            return None
        idx, _ = near_duplicates(np.ascontiguousarray(vector, dtype=np.float32)[None, :], self._matrix[:n],
                                 threshold=threshold)
        best = int(idx[0])
        return self.beliefs[self._row_ids[best]] if best >= 0 else None

    def _set_row(self, i: int, vector: np.ndarray) -> None:
        # The vectors live in one matrix grown by doubling: a run with many beliefs stays linear.
        if self._matrix is None or i >= len(self._matrix):
            grown = np.zeros((max(8, 2 * i), len(vector)), dtype=np.float32)
            if self._matrix is not None:
                grown[: len(self._matrix)] = self._matrix
            self._matrix = grown
        self._matrix[i] = vector


class Claims:
    """In-flight beliefs and pending cap usage of the concurrent runs of one mind in this
    process. A run's claims are released when it flushes, whatever happened to their text.

    Runs are held by weak reference: a run dropped without a flush (its writes are lost anyway)
    gives its claims and cap slots back once it is garbage-collected instead of holding them
    for the life of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beliefs: dict[str, tuple[weakref.ref[Any], str]] = {}
        self._goals: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._pins: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def _held(self, key: str, run: object) -> str | None:
        held = self._beliefs.get(key)
        if held is None:
            return None
        owner = held[0]()
        if owner is None:  # its run was dropped without a flush
            del self._beliefs[key]
            return None
        return held[1] if owner is not run else None

    def claim(self, key: str, run: object, belief_id: str) -> str | None:
        """Claim ``key`` for ``run``; returns the id another run already claimed it with."""
        with self._lock:
            other = self._held(key, run)
            if other is not None:
                return other
            self._beliefs[key] = (weakref.ref(run), belief_id)
            return None

    def holder(self, key: str, run: object) -> str | None:
        """The id another run has claimed ``key`` with, if any."""
        with self._lock:
            return self._held(key, run)

    def set_pending(self, run: object, *, goals: int, pins: int) -> None:
        with self._lock:
            self._goals[run] = goals
            self._pins[run] = pins

    def others_pending(self, run: object) -> tuple[int, int]:
        """New goals and pins that other live runs will write."""
        with self._lock:
            goals = sum(n for r, n in self._goals.items() if r is not run)
            pins = sum(n for r, n in self._pins.items() if r is not run)
            return goals, pins

    def release(self, run: object) -> None:
        with self._lock:
            self._beliefs = {k: v for k, v in self._beliefs.items() if _alive_other(v[0], run)}
            self._goals.pop(run, None)
            self._pins.pop(run, None)

    def held_by(self, run: object) -> int:
        with self._lock:
            return sum(1 for v in self._beliefs.values() if v[0]() is run)


def _alive_other(ref: weakref.ref[Any], run: object) -> bool:
    owner = ref()
    return owner is not None and owner is not run


def _merge_confidence(old: str, new: Confidence, allow_downgrade: bool) -> Confidence:
    if allow_downgrade or _RANK[new] >= _RANK.get(old, 0):
        return new
    return old  # type: ignore[return-value]


def merge_belief(row: Row, d: DraftBelief, *, clean: bool, now: int) -> Row:
    """A stored belief row after ``d`` matched it: content (and vector) replaced, confidence
    raised (or lowered only with ``allow_downgrade``), tags replaced only when given, expiry
    refreshed, creation time kept; a clean run clears the crashed-run flag, a crashed one sets it.
    The history gains the stored content if ``d`` contradicts or updates it (see :func:`replaced`),
    then the contents ``d`` itself replaced during the run.
    """
    out = dict(row)
    conf = _merge_confidence(str(row.get("confidence") or "low"), d.confidence, d.allow_downgrade)
    history = history_from_json(row.get("history"))
    change = replaced(str(row.get("content") or ""), d.first_content, at=d.created_at,
                      old_vector=row.get("vector"), new_vector=d.first_vector, chosen=d.chosen)
    if change is not None:
        history.append(change)
    history.extend(d.history)
    out.update(
        history=history_to_json(history),
        content=d.content,
        vector=d.vector,
        confidence=conf,
        expires_at=d.expires_at,
        error=not clean,
        recall_weight=recall_weight("belief", conf, not clean),
        updated_at=now,
    )
    if d.tags:
        out["tags"] = list(d.tags)
    return out


def new_belief_row(d: DraftBelief, *, clean: bool, now: int) -> Row:
    return {
        "id": d.id, "type": "belief", "content": d.content, "confidence": d.confidence,
        "recall_weight": recall_weight("belief", d.confidence, not clean), "tags": list(d.tags or []),
        "expires_at": d.expires_at, "error": not clean, "vector": d.vector,
        "created_at": d.created_at, "updated_at": now, "history": history_to_json(d.history),
    }


def reflection_row(r: DraftReflection, *, pinned: bool, clean: bool, now: int) -> Row:
    return {
        "id": r.id, "type": "reflection", "content": r.content, "pinned": pinned,
        "recall_weight": recall_weight("reflection", None, not clean), "tags": list(r.tags),
        "related_to": r.related_to, "expires_at": r.expires_at, "error": not clean, "vector": r.vector,
        "created_at": r.created_at, "updated_at": now,
    }


def goal_row(g: DraftGoal, *, now: int, status: str = "active", outcome: str | None = None) -> Row:
    return {
        "id": g.id, "type": "goal", "content": g.description, "priority": g.priority, "status": status,
        "tags": list(g.tags), "due_by": g.due_by, "progress": list(g.progress), "outcome": outcome,
        "created_at": g.created_at, "updated_at": now,
    }


def apply_goal_update(row: Row, u: GoalUpdate, *, now: int) -> Row:
    out = dict(row)
    if u.description is not None:
        out["content"] = u.description
    if u.priority is not None:
        out["priority"] = u.priority
    if u.progress:
        out["progress"] = [*(row.get("progress") or []), *u.progress]
    out["updated_at"] = now
    return out


class FlushView(Protocol):
    """A fresh view of the committed store, read under the mind's lock."""

    @property
    def version(self) -> int:
        """The table version the view reads."""
        ...

    def rows(self, ids: Iterable[str]) -> dict[str, Row]:
        """Full stored rows (vector included) by id; missing ids are absent."""
        ...

    def active_goal_count(self) -> int: ...

    def pinned_ids(self, now: int) -> set[str]:
        """Ids of pinned reflections that have not expired."""
        ...

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        """Id of the stored, unexpired belief most similar to ``vector`` at cosine >= threshold."""
        ...


@dataclass
class FlushPlan:
    """Rows to upsert in one commit, and what was dropped (with reasons)."""

    rows: list[Row] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    created: int = 0
    updated: int = 0


def plan_flush(
    draft: DraftBuffer,
    view: FlushView,
    *,
    clean: bool,
    now: int,
    max_goals: int,
    max_pinned: int,
    dedup_threshold: float,
) -> FlushPlan:
    """Turn ``draft`` into the rows to commit (see the module docstring for the rules)."""
    plan = FlushPlan()
    out: dict[str, Row] = {}  # id -> row to write; later changes to the same row merge in here

    ids = [*draft.beliefs, *(draft.unpins if clean else ()), *(draft.goal_updates if clean else ())]
    fresh = view.rows(ids) if ids else {}

    # Unpins first: they free pin slots for this run's new pins.
    pinned = view.pinned_ids(now)
    if clean:
        for rid in draft.unpins:
            row = fresh.get(rid)
            if row is not None and row.get("type") == "reflection" and row.get("pinned"):
                out[rid] = {**row, "pinned": False, "updated_at": now}
                pinned.discard(rid)
                plan.updated += 1

    for d in draft.beliefs.values():
        target = d.id if d.id in out or (d.id in fresh and fresh[d.id].get("type") == "belief") else None
        if target is None and d.seen_version != view.version:
            # Another process may have stored the same belief since this run checked.
            target = view.similar_belief(d.vector, dedup_threshold, now)
            if target is not None and target not in out and target not in fresh:
                fresh.update(view.rows([target]))
            held = None if target is None else out.get(target) or fresh.get(target)
            if held is not None and not same_belief(str(held.get("content") or ""), d.first_content,
                                                    old_vector=held.get("vector"), new_vector=d.first_vector):
                target = None  # it only reads alike: both beliefs are kept
        if target is not None and (target in out or target in fresh):
            base = out.get(target) or fresh[target]
            out[target] = merge_belief(base, d, clean=clean, now=now)
            plan.updated += 1
        else:
            out[d.id] = new_belief_row(d, clean=clean, now=now)
            plan.created += 1

    for r in draft.reflections.values():
        pin = r.pinned and len(pinned) < max_pinned
        if r.pinned and not pin:
            plan.dropped.append(
                f"reflection {r.id} stored unpinned: the pinned reflection cap ({max_pinned}) was reached"
            )
        if pin:
            pinned.add(r.id)
        out[r.id] = reflection_row(r, pinned=pin, clean=clean, now=now)
        plan.created += 1

    if clean:
        active = view.active_goal_count()
        for g in draft.goals.values():
            if active >= max_goals:
                plan.dropped.append(f"goal {g.id} ({g.description[:60]!r}) dropped: the active goal cap "
                                    f"({max_goals}) was reached")
                continue
            active += 1
            out[g.id] = goal_row(g, now=now)
            plan.created += 1
        for gid, u in draft.goal_updates.items():
            row = fresh.get(gid)
            if row is None or row.get("type") != "goal" or row.get("status") != "active":
                plan.dropped.append(f"update of goal {gid} dropped: it is no longer active")
                continue
            out[gid] = apply_goal_update(row, u, now=now)
            plan.updated += 1
    else:
        if draft.goals or draft.goal_updates:
            plan.dropped.append(
                f"crashed run: {len(draft.goals)} new goal(s) and {len(draft.goal_updates)} goal update(s) dropped"
            )
        if draft.unpins:
            plan.dropped.append(f"crashed run: {len(draft.unpins)} unpin(s) dropped")

    plan.rows = list(out.values())
    return plan
