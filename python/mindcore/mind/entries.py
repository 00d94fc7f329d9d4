"""Typed entries of a mind (`Goal`, `Belief`, `Reflection`) and `RecallResult`.

Fields are snake_case; :meth:`to_dict` gives the seed's camelCase shape (what the tools return
to a model), leaving out optional fields that are not set. Timestamps are unix milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BELIEF_HISTORY_LIMIT",
    "CONFIDENCE_WEIGHT",
    "CRASHED_WEIGHT",
    "PRIORITY_RANK",
    "REFLECTION_WEIGHT",
    "Belief",
    "BeliefChange",
    "Confidence",
    "EntryType",
    "Goal",
    "GoalStatus",
    "Priority",
    "RecallResult",
    "Reflection",
    "entry_from_row",
    "entry_to_row",
    "history_from_json",
    "history_to_json",
    "recall_weight",
]

Confidence = Literal["low", "medium", "high"]
Priority = Literal["low", "normal", "high"]
GoalStatus = Literal["active", "completed"]
EntryType = Literal["goal", "belief", "reflection"]

CONFIDENCES: tuple[Confidence, ...] = ("low", "medium", "high")
PRIORITIES: tuple[Priority, ...] = ("low", "normal", "high")
STATUSES: tuple[GoalStatus, ...] = ("active", "completed")

#: The confidence term of the recall score.
CONFIDENCE_WEIGHT: dict[str, float] = {"low": 0.3, "medium": 0.6, "high": 1.0}
#: Reflections have no confidence; they count as medium.
REFLECTION_WEIGHT = CONFIDENCE_WEIGHT["medium"]
#: Entries written by a crashed run count as low, whatever they claim.
CRASHED_WEIGHT = CONFIDENCE_WEIGHT["low"]
#: Header order of goal priorities.
PRIORITY_RANK: dict[str, int] = {"high": 0, "normal": 1, "low": 2}


def recall_weight(kind: EntryType, confidence: str | None, error: bool) -> float:
    """The confidence term of an entry's recall score.

    >>> recall_weight("belief", "high", False), recall_weight("belief", "high", True)
    (1.0, 0.3)
    >>> recall_weight("reflection", None, False)
    0.6
    """
    if error:
        return CRASHED_WEIGHT
    if kind == "reflection":
        return REFLECTION_WEIGHT
    return CONFIDENCE_WEIGHT[confidence or "medium"]


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True, slots=True)
class Goal:
    """Something the agent works toward across runs.

    >>> Goal("g1", "Ship v2", priority="high", created_at=1, updated_at=1).to_dict()["priority"]
    'high'
    """

    id: str
    description: str
    priority: Priority = "normal"
    status: GoalStatus = "active"
    tags: list[str] = field(default_factory=list)
    due_by: str | None = None
    progress: list[str] = field(default_factory=list)
    outcome: str | None = None
    created_at: int = 0
    updated_at: int = 0

    @property
    def type(self) -> Literal["goal"]:
        return "goal"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "type": "goal", "description": self.description, "priority": self.priority,
            "status": self.status, "tags": list(self.tags),
        }
        _put(out, "dueBy", self.due_by)
        out["progress"] = list(self.progress)
        _put(out, "outcome", self.outcome)
        out["createdAt"], out["updatedAt"] = self.created_at, self.updated_at
        return out


#: A belief keeps at most this many replaced contents (the oldest go first).
BELIEF_HISTORY_LIMIT = 20


@dataclass(frozen=True, slots=True)
class BeliefChange:
    """A content a belief held until a contradicting or updating belief replaced it.

    ``relation`` is ``"contradiction"`` (the new content denies the old one or gives a conflicting
    value) or ``"update"`` (the same subject, a newer detail); ``reason`` says which cue decided
    (see :func:`mindcore.relations.classify_pair`); ``replaced_at`` is unix ms.

    >>> BeliefChange("The staging server is up", 5, "contradiction", "antonym: up / down").to_dict()["replacedAt"]
    5
    """

    content: str
    replaced_at: int
    relation: Literal["update", "contradiction"]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "replacedAt": self.replaced_at, "relation": self.relation,
                "reason": self.reason}


def history_to_json(history: Sequence[BeliefChange]) -> str | None:
    """The stored form of a belief's history (``None`` when empty), newest
    :data:`BELIEF_HISTORY_LIMIT` kept."""
    if not history:
        return None
    kept = list(history)[-BELIEF_HISTORY_LIMIT:]
    return json.dumps([{"content": c.content, "replaced_at": c.replaced_at, "relation": c.relation,
                        "reason": c.reason} for c in kept], ensure_ascii=False)


def history_from_json(raw: object) -> list[BeliefChange]:
    """A belief's history from its stored form (``[]`` for ``None`` or an unreadable value)."""
    if not isinstance(raw, str) or not raw:
        return []
    try:
        items = json.loads(raw)
        return [BeliefChange(str(i["content"]), int(i["replaced_at"]),
                             "update" if i.get("relation") == "update" else "contradiction", str(i.get("reason") or ""))
                for i in items]
    except (ValueError, TypeError, KeyError):
        return []


@dataclass(frozen=True, slots=True)
class Belief:
    """A statement the agent holds true, with a confidence and an optional expiry.

    >>> Belief("b1", "The API limit is 100 req/min", "high").to_dict()["confidence"]
    'high'
    """

    id: str
    content: str
    confidence: Confidence = "medium"
    tags: list[str] = field(default_factory=list)
    expires_at: int | None = None
    created_at: int = 0
    updated_at: int = 0
    error: bool = False
    #: The contents this belief held before contradicting or updating beliefs replaced them,
    #: oldest first (a paraphrase merged into it leaves no entry).
    history: list[BeliefChange] = field(default_factory=list)

    @property
    def type(self) -> Literal["belief"]:
        return "belief"

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now_ms

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "type": "belief", "content": self.content, "confidence": self.confidence,
            "tags": list(self.tags),
        }
        _put(out, "expiresAt", self.expires_at)
        out["createdAt"], out["updatedAt"] = self.created_at, self.updated_at
        if self.error:
            out["error"] = True
        if self.history:
            out["history"] = [c.to_dict() for c in self.history]
        return out


@dataclass(frozen=True, slots=True)
class Reflection:
    """An observation about the agent's own work; pinned ones are standing rules.

    >>> Reflection("r1", "Ask before deleting", pinned=True).to_dict()["pinned"]
    True
    """

    id: str
    content: str
    pinned: bool = False
    tags: list[str] = field(default_factory=list)
    related_to: str | None = None
    expires_at: int | None = None
    created_at: int = 0
    updated_at: int = 0
    error: bool = False

    @property
    def type(self) -> Literal["reflection"]:
        return "reflection"

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now_ms

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "type": "reflection", "content": self.content, "pinned": self.pinned,
            "tags": list(self.tags),
        }
        _put(out, "relatedTo", self.related_to)
        _put(out, "expiresAt", self.expires_at)
        out["createdAt"], out["updatedAt"] = self.created_at, self.updated_at
        if self.error:
            out["error"] = True
        return out


Entry = Goal | Belief | Reflection


@dataclass(frozen=True, slots=True)
class RecallResult:
    """One ``mind_recall`` result (the seed's ``MindRecallResult``): ``content`` is a goal's
    description; ``score`` is set for beliefs and reflections, never for goals. ``entry`` is the
    typed entry it came from."""

    entry: Entry
    score: float | None = None

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def type(self) -> EntryType:
        return self.entry.type

    @property
    def content(self) -> str:
        e = self.entry
        return e.description if isinstance(e, Goal) else e.content

    @property
    def tags(self) -> list[str]:
        return self.entry.tags

    def to_dict(self) -> dict[str, Any]:
        e = self.entry
        out: dict[str, Any] = {"id": e.id, "type": e.type, "content": self.content}
        _put(out, "score", self.score)
        out.update(tags=list(e.tags), createdAt=e.created_at, updatedAt=e.updated_at)
        if isinstance(e, Goal):
            out.update(priority=e.priority, status=e.status, progress=list(e.progress))
            _put(out, "outcome", e.outcome)
            _put(out, "dueBy", e.due_by)
        elif isinstance(e, Belief):
            out["confidence"] = e.confidence
            _put(out, "expiresAt", e.expires_at)
            out["error"] = e.error
        else:
            out["pinned"] = e.pinned
            _put(out, "relatedTo", e.related_to)
            _put(out, "expiresAt", e.expires_at)
            out["error"] = e.error
        return out


def entry_from_row(row: Mapping[str, Any]) -> Entry:
    """Build the typed entry of a stored row (see ``mindcore.mind._repo`` for the columns)."""
    kind = row["type"]
    common: dict[str, Any] = {
        "id": str(row["id"]),
        "tags": list(row.get("tags") or []),
        "created_at": int(row["created_at"]),
        "updated_at": int(row["updated_at"]),
    }
    if kind == "goal":
        return Goal(
            description=str(row["content"]), priority=row.get("priority") or "normal",
            status=row.get("status") or "active", due_by=row.get("due_by"),
            progress=list(row.get("progress") or []), outcome=row.get("outcome"), **common,
        )
    expires = row.get("expires_at")
    common.update(content=str(row["content"]), expires_at=None if expires is None else int(expires),
                  error=bool(row.get("error")))
    if kind == "belief":
        return Belief(confidence=row.get("confidence") or "medium", history=history_from_json(row.get("history")),
                      **common)
    if kind == "reflection":
        return Reflection(pinned=bool(row.get("pinned")), related_to=row.get("related_to"), **common)
    raise ValueError(f"row {row.get('id')!r}: unknown entry type {kind!r}")


def entry_to_row(e: Entry, vector: Any = None) -> dict[str, Any]:
    """The stored row of an entry (every column; ``vector`` for beliefs and reflections)."""
    row: dict[str, Any] = {
        "id": e.id, "type": e.type, "tags": list(e.tags), "created_at": e.created_at, "updated_at": e.updated_at,
        "confidence": None, "priority": None, "status": None, "pinned": None, "progress": None, "outcome": None,
        "due_by": None, "expires_at": None, "error": None, "related_to": None, "history": None, "vector": vector,
    }
    if isinstance(e, Goal):
        row.update(content=e.description, priority=e.priority, status=e.status, progress=list(e.progress),
                   outcome=e.outcome, due_by=e.due_by, recall_weight=None)
    elif isinstance(e, Belief):
        row.update(content=e.content, confidence=e.confidence, expires_at=e.expires_at, error=e.error,
                   recall_weight=recall_weight("belief", e.confidence, e.error), history=history_to_json(e.history))
    else:
        row.update(content=e.content, pinned=e.pinned, related_to=e.related_to, expires_at=e.expires_at,
                   error=e.error, recall_weight=recall_weight("reflection", None, e.error))
    return row
