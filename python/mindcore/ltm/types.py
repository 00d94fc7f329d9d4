"""Public value types of long-term memory: :class:`Memory` and the outcomes of writes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

__all__ = [
    "DEFAULT_KIND",
    "HISTORY_ACTIONS",
    "KINDS",
    "MAX_CONTEXT_CHARS",
    "MAX_TEXT_CHARS",
    "ExtractionReport",
    "HistoryAction",
    "Memory",
    "MemoryVersion",
    "RememberAction",
    "RememberResult",
    "RememberStatus",
    "embedded_text",
    "indexed_text",
]

# The seed's categories: stable preferences, identity facts, project context, decisions, notable events.
KINDS: tuple[str, ...] = ("preference", "identity", "project", "decision", "event", "fact")
DEFAULT_KIND = "fact"
# A memory is one short fact; anything longer is a document, not a memory.
MAX_TEXT_CHARS = 2_000
# A memory's context (see Memory.context) is at most this long; recall uses its last
# CONTEXT_WINDOW_CHARS (the part nearest the fact), so a long context cannot push the fact itself
# out of the embedder's window (256 tokens for the default model).
MAX_CONTEXT_CHARS = 2_000
# A memory's thread (see Memory.thread) is an identifier: at most this long.
MAX_THREAD_CHARS = 256
CONTEXT_WINDOW_CHARS = 600

RememberStatus = Literal["stored", "duplicate", "secret", "evicted"]
#: What one write did (see :class:`RememberResult`): the first five as in :data:`HISTORY_ACTIONS`,
#: ``refused`` for a text that looks like a secret.
RememberAction = Literal["created", "duplicate", "updated", "superseded", "evicted", "refused"]
#: What happened to a memory, as :meth:`LongTermMemory.history` lists it.
HistoryAction = Literal["created", "duplicate", "updated", "superseded", "forgotten", "evicted", "restored",
                        "related"]
HISTORY_ACTIONS: tuple[HistoryAction, ...] = ("created", "duplicate", "updated", "superseded", "forgotten", "evicted",
                                              "restored", "related")
_ACTION_OF_STATUS: dict[str, RememberAction] = {"stored": "created", "duplicate": "duplicate", "secret": "refused",
                                                "evicted": "evicted"}


@dataclass(frozen=True, slots=True)
class Memory:
    """One durable fact about a user.

    Timestamps are unix milliseconds (UTC). ``score`` and ``similarity`` are set on memories returned
    by :meth:`LongTermMemory.recall` (``None`` elsewhere). ``context`` is optional text that situates
    the fact (e.g. the conversation turn it came from and who said it): recall embeds and indexes it
    with ``text``, but the rendered block shows ``text`` only. ``thread`` and ``position`` place it
    in the conversation it came from (see :meth:`LongTermMemory.remember`).

    >>> m = Memory(id="m1", text="Prefers green tea", kind="preference", importance=0.8,
    ...            created_at=0, last_accessed_at=0)
    >>> m.created.year
    1970
    """

    id: str
    text: str
    kind: str = DEFAULT_KIND
    importance: float = 0.5
    created_at: int = 0
    last_accessed_at: int = 0
    source: str = "manual"
    score: float | None = None
    similarity: float | None = None
    context: str | None = None
    #: Ids of older memories this one was kept beside although it may update or contradict them
    #: (both stay; recall puts this one first when both match, and ``history`` links them).
    related: tuple[str, ...] = ()
    #: The conversation (or session, document...) the memory came from, and its place there: recall
    #: brings the memories around a hit in the same thread (:class:`~mindcore.ltm.RecallOptions`).
    thread: str | None = None
    position: int | None = None

    @property
    def created(self) -> datetime:
        return datetime.fromtimestamp(self.created_at / 1000, tz=UTC)

    @property
    def last_accessed(self) -> datetime:
        return datetime.fromtimestamp(self.last_accessed_at / 1000, tz=UTC)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what the ``ltm_recall`` tool returns per memory)."""
        out = asdict(self)
        out["related"] = list(self.related)
        return out


class Row(NamedTuple):
    """One validated write, as the write path carries it."""

    text: str
    kind: str
    importance: float
    created_at: int | None
    context: str | None
    thread: str | None = None
    position: int | None = None


def indexed_text(text: str, context: str | None) -> str:
    r"""What recall's lexical (BM25) side indexes for a memory: its context (if any), then its text
    (after a space when the context ends with ``:``, a speaker label, else on a new line). The
    vector embeds less of the context: see :func:`embedded_text`.

    >>> indexed_text("I went to the support group yesterday.", "Melanie: How was your week?\nCaroline:")
    'Melanie: How was your week?\nCaroline: I went to the support group yesterday.'
    """
    if not context:
        return text
    context = context[-CONTEXT_WINDOW_CHARS:]
    return f"{context} {text}" if context.endswith(":") else f"{context}\n{text}"


def embedded_text(text: str, context: str | None) -> str:
    r"""What recall embeds for a memory: its text after the context's last line only (the words
    right before the fact, e.g. the speaker label). BM25 indexes the whole context
    (:func:`indexed_text`): a sparse index adds the context's terms without diluting the fact's,
    while one dense vector for fact and context drifts toward the context.

    >>> embedded_text("I went to the support group yesterday.", "Melanie: How was your week?\nCaroline:")
    'Caroline: I went to the support group yesterday.'
    """
    if not context:
        return text
    return indexed_text(text, context.strip().rsplit("\n", 1)[-1].strip() or None)


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What happened to one write.

    ``status`` (kept for callers that only need to know whether something was stored):
    ``stored``: ``memory`` is the new memory. ``duplicate``: the same fact already exists and
    ``memory`` is that existing one (nothing was written; its last access was bumped). ``secret``:
    the text looks like a secret or credential and was refused (``memory`` is ``None``).
    ``evicted``: the memory was valid but, with its ``created_at`` and importance, ranked below the
    ``max_items`` kept, so it was not written.

    ``action`` says more: ``created`` (stored, nothing replaced), ``duplicate``, ``updated`` (stored;
    it gives a new detail of ``replaced``, which is retired), ``superseded`` (stored; it contradicts
    ``replaced``, which is retired), ``evicted`` or ``refused`` (a secret). ``replaced`` is the retired
    memory (the nearest one when several were), ``reason`` why the write was judged so. A retired
    memory is no longer recalled, rendered or counted; :meth:`LongTermMemory.history` keeps it.

    >>> RememberResult("stored", None).action
    'created'
    """

    status: RememberStatus
    memory: Memory | None
    action: RememberAction | None = None
    replaced: Memory | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action is None:
            object.__setattr__(self, "action", _ACTION_OF_STATUS[self.status])


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One entry of a memory's history (:meth:`LongTermMemory.history`), oldest first.

    ``memory_id``, ``text`` and ``kind`` are the version's; ``action`` is what happened to it at
    ``at`` (unix ms): ``created``, ``duplicate`` (the same fact was remembered again: ``text`` is
    how it was said, the memory's last access was bumped), ``updated`` or ``superseded`` (retired
    in favour of ``successor_id``), ``evicted`` (dropped to stay within ``max_items``),
    ``restored`` (a retired version made live again by :meth:`LongTermMemory.restore`;
    ``successor_id`` is the memory that had retired it, which stays live too), ``forgotten``
    (this version was forgotten: its text is gone, ``text`` is empty), or ``related`` (a newer
    memory, ``successor_id``, was kept beside this one although it may update or contradict it:
    both stay live, and ``reason`` says what it may be).
    ``predecessor_id`` is set on the ``created`` entry of a memory that replaced another.
    ``reason`` says why (the classifier's reason for updates and contradictions).
    """

    memory_id: str
    text: str
    kind: str
    action: HistoryAction
    at: int
    reason: str | None = None
    successor_id: str | None = None
    predecessor_id: str | None = None


@dataclass(slots=True)
class ExtractionReport:
    """The outcome of one :meth:`LongTermMemory.remember_conversation` pass.

    ``error`` is set (and nothing was written) when the extraction LLM failed or its reply could not
    be parsed; memories stored before stay untouched either way. ``evicted`` counts memories dropped
    to stay within ``max_items`` by this write (older stored ones, or new ones that ranked lowest).
    ``replaced`` lists the memories retired because a stored one updates or contradicts them.
    """

    stored: list[Memory] = field(default_factory=list)
    candidates: int = 0
    secrets: int = 0
    duplicates: int = 0
    replaced: list[Memory] = field(default_factory=list)
    invalid: int = 0
    over_limit: int = 0
    evicted: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
