"""The write pipeline every path into long-term memory shares (``remember``, ``remember_many``,
extraction, backfill, the ``ltm_remember`` tool, bulk ingest): validate, screen for secrets,
embed, judge each item against the memories near it (duplicate, update, contradiction or
unrelated, see :mod:`mindcore.ltm._decide`), plan eviction, record history, commit.

The read of the scope (for the judgement and eviction) and the commits happen under one lock of
the store shared by every thread, process and machine writing that scope, so two writers can
neither both add the same fact nor leave the scope over ``max_items``. A resolver LLM is asked
before the lock is taken (a slow model must not hold up other writers): the scope is read, its
pairs judged, then, under the lock, the scope is read again; pairs that appeared meanwhile are
judged after the lock is released and the write tries again (up to ``_JUDGE_ROUNDS`` times; then
the conservative judgement decides what is left). The history events
(retired memories in full, duplicates, evictions) are committed first, then the inserts, deletes
and last-access bumps as one commit, so no reader sees the scope over its cap or a retired
memory missing from history; when the second commit fails the events are deleted again. A
process killed between the two commits leaves events of a write that never landed: the first
write of a :class:`WritePipeline` (and every restore or forget) deletes them under the lock
before anything else (see :mod:`mindcore.ltm._history`). Each retirement a write commits is
logged at INFO on ``mindcore.ltm``.

:meth:`WritePipeline.restore` brings a retired memory back (``LongTermMemory.restore``) by the
same two commits: its ``restored`` event, then the memory.

:class:`BulkPipeline` applies the same rules to many scopes at once (``mindcore.batch.remember``):
it takes the locks of all of them, in sorted order so that it cannot deadlock with single-scope
writers or another bulk write, reads them with one scan and commits them together.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.errors import InvalidInputError, InvalidTypeError, MemoryNotFoundError, SecretRefusedError
from mindcore.ltm._decide import Decision, Judge, ScopePlan, Stored, conservative_judge, decide, plan_scope
from mindcore.ltm._history import RETIRED, Event, batch_of, restorable, state_ids, valid_events, void_events
from mindcore.ltm._repo import (
    HistoryEvent,
    HistoryRepo,
    MemoryRepo,
    ScopesRepo,
    entry_memories,
    entry_retention,
    entry_vectors,
    storable,
)
from mindcore.ltm.config import DAY_MS, DEFAULT_DUPLICATE_THRESHOLD, LongTermMemoryConfig
from mindcore.ltm.extract import Candidate
from mindcore.ltm.keys import with_key, write_keys
from mindcore.ltm.resolve import MemoryPair, PairVerdict, resolve_pairs
from mindcore.ltm.types import (
    DEFAULT_KIND,
    KINDS,
    MAX_CONTEXT_CHARS,
    MAX_TEXT_CHARS,
    MAX_THREAD_CHARS,
    Memory,
    RememberResult,
    RememberStatus,
    Row,
    embedded_text,
)
from mindcore.policy import SecretPolicy
from mindcore.store import Store
from mindcore.store.scoring import Weights, rank
from mindcore.validation import text_problem

if TYPE_CHECKING:
    from mindcore.llm import LLM
    from mindcore.store.cache import CacheEntry

__all__ = ["DUPLICATE_THRESHOLD", "EVICT_IMPORTANCE", "EVICT_RECENCY", "BulkPipeline", "Outcome", "Row",
           "WritePipeline", "eviction_cut", "retention_weights", "scope_lock_name", "validate_item", "validate_items"]

log = logging.getLogger("mindcore.ltm")

DUPLICATE_THRESHOLD = DEFAULT_DUPLICATE_THRESHOLD  # the default of LongTermMemoryConfig.duplicate_threshold
# Eviction ranks by the seed's recency and importance weights, whatever recall's weights are.
EVICT_RECENCY = 0.2
EVICT_IMPORTANCE = 0.1
# Scopes share this many store locks (a lock file each on disk): enough that unrelated users
# rarely wait for each other, few enough that the lock folder stays small.
_LOCK_STRIPES = 256

# How many times a write asks the resolver about pairs that appeared while it was asking.
_JUDGE_ROUNDS = 3


class _KnownVerdicts:
    """A judge that answers from the resolver's verdicts so far and, for other pairs, from the
    conservative judgement; the pairs that judgement is not certain of (it keeps both) are noted
    as ``missing``, to ask the resolver next. A near-verbatim repeat or an explicit negation of
    the same statement needs no model."""

    def __init__(self, config: LongTermMemoryConfig) -> None:
        self.verdicts: dict[tuple[str, str], PairVerdict] = {}
        self.missing: list[MemoryPair] = []
        self._fallback = conservative_judge(config)

    def __call__(self, pairs: list[MemoryPair]) -> list[PairVerdict]:
        unknown = [p for p in pairs if (p.old, p.new) not in self.verdicts]
        fallback = dict(zip(((p.old, p.new) for p in unknown), self._fallback(unknown), strict=True))
        # A repeat is not stored whatever its other pairs are: those need no model either.
        repeats = {p.new for p in unknown if fallback[(p.old, p.new)].relation == "duplicate"}
        self.missing = [p for p in unknown if fallback[(p.old, p.new)].relation == "unrelated" and p.new not in repeats]
        return [self.verdicts.get((p.old, p.new)) or fallback[(p.old, p.new)] for p in pairs]

    def ask(self, resolver: LLM, timeout: float | None) -> None:
        asked = list({(p.old, p.new): p for p in self.missing}.values())
        self.missing = []
        for pair, verdict in zip(asked, resolve_pairs(asked, resolver, timeout=timeout), strict=True):
            self.verdicts[(pair.old, pair.new)] = verdict


def validate_items(items: Iterable[str | Mapping[str, Any] | Candidate]) -> list[Row]:
    """Every item validated (see :func:`validate_item`); a bare string or mapping is refused."""
    if isinstance(items, str | bytes | Mapping):
        # A bare string would store one memory per character; a single mapping, its keys.
        raise InvalidTypeError(f"items: expected a list of texts or mappings, got {type(items).__name__}")
    return [validate_item(item) for item in items]


def validate_item(item: str | Mapping[str, Any] | Candidate) -> Row:
    """One item as a :data:`Row`, or a ``ValueError`` (an :class:`InvalidInputError` for text that
    cannot be stored faithfully) naming the field."""
    if isinstance(item, str):
        item = {"text": item}
    elif isinstance(item, Candidate):
        item = {"text": item.text, "kind": item.kind, "importance": item.importance}
    elif not isinstance(item, Mapping):
        raise TypeError(f"expected a str or a mapping with 'text', got {type(item).__name__}")
    text, kind = item.get("text"), item.get("kind", DEFAULT_KIND)
    importance, created_at = item.get("importance", 0.5), item.get("created_at")
    context, thread, position = item.get("context"), item.get("thread"), item.get("position")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text: expected a non-blank string, got {text!r}")
    text = text.strip()
    for name, value in (("text", text), ("context", context), ("thread", thread)):
        problem = text_problem(value) if isinstance(value, str) else None
        if problem:
            raise InvalidInputError(f"{name}: {problem}")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"text: {len(text):,} characters; a memory is at most {MAX_TEXT_CHARS:,}")
    if kind is None:
        kind = DEFAULT_KIND
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(importance, bool) or not isinstance(importance, int | float) or not 0 <= importance <= 1:
        raise ValueError(f"importance: expected a number in [0, 1], got {importance!r}")
    if created_at is not None and (isinstance(created_at, bool) or not isinstance(created_at, int)):
        raise ValueError(f"created_at: expected unix milliseconds (int), got {created_at!r}")
    if context is not None:
        if not isinstance(context, str):
            raise ValueError(f"context: expected a string or None, got {type(context).__name__}")
        context = context.strip() or None
        if context is not None and len(context) > MAX_CONTEXT_CHARS:
            raise ValueError(f"context: {len(context):,} characters; at most {MAX_CONTEXT_CHARS:,}")
    if thread is not None and (not isinstance(thread, str) or not thread.strip() or len(thread) > MAX_THREAD_CHARS):
        raise ValueError(f"thread: expected a non-blank string of at most {MAX_THREAD_CHARS} characters, got {thread!r}")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise ValueError(f"position: expected a non-negative int, got {position!r}")
    if position is not None and thread is None:
        raise ValueError("position: a position is a place in a thread; give thread= too")
    return Row(text, kind, float(importance), created_at, context, thread, position)


def _refused_identifier(policy: SecretPolicy, value: str, field: str) -> bool:
    try:
        policy.screen_identifier(value, field)
    except SecretRefusedError:
        return True
    return False


def _restored_thread(policy: SecretPolicy, thread: Any) -> str | None:
    """A retired memory's thread as it may be restored (``None``: none, or it was stored before
    threads were kept)."""
    return None if thread is None else policy.screen_identifier(str(thread), "thread")


class WritePipeline:
    """Validated rows in, one commit out; see the module docstring."""

    def __init__(self, store: Store, repo: MemoryRepo, config: LongTermMemoryConfig,
                 embed: Callable[[list[str]], np.ndarray], clock: Callable[[], int], *,
                 resolver: LLM | None = None) -> None:
        self._repo = repo
        self._history = HistoryRepo(store)
        self._config = config
        self._embed = embed
        self._clock = clock
        self._resolver = resolver
        self._lock = store.lock(scope_lock_name(repo.ns))
        # Whether this pipeline has looked for events of a write that never landed (once: a
        # crash before this object existed is the only way to leave them).
        self._checked = False

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The scope's write lock (held by every write, :meth:`LongTermMemory.forget` and ``clear``)."""
        return self._lock.hold()

    def _screen(self, row: Row) -> Row | None:
        """The row as the secret policy lets it be stored, or ``None`` when refused."""
        policy = self._config.secrets
        try:
            return row._replace(text=policy.screen(row.text, "text"), context=policy.screen_optional(row.context, "context"),
                                thread=None if row.thread is None else policy.screen_identifier(row.thread, "thread"))
        except SecretRefusedError:
            return None

    def _with_keys(self, rows: list[Row], writer: LLM) -> list[Row]:
        """``rows`` (already screened) with the fact line the key writer gives each as the first
        line of its context (:mod:`mindcore.ltm.keys`); a line the secret policy refuses, or one
        that would make the context too long, is left out."""
        keys = write_keys(writer, [(row.text, row.context) for row in rows], timeout=self._config.key_writer_timeout)
        policy = self._config.secrets
        out = list(rows)
        for i, key in keys.items():
            try:
                screened_key = policy.screen(key, "context")
            except SecretRefusedError:
                continue
            context = with_key(rows[i].context, screened_key)
            if len(context) <= MAX_CONTEXT_CHARS:
                out[i] = rows[i]._replace(context=context)
        return out

    def ingest(self, rows: Sequence[Row], *, dedupe: bool, source: str,
               resolver: LLM | None = None) -> tuple[list[RememberResult], int]:
        """Store ``rows``; one result per row, in order, and how many memories were evicted. With
        ``dedupe``, each row is judged against the memories near it (see :mod:`mindcore.ltm._decide`),
        by ``resolver`` when given (else the pipeline's own, if any), else conservatively; without,
        every row is stored."""
        results: list[RememberResult] = [RememberResult("secret", None)] * len(rows)
        screened = [self._screen(row) for row in rows]
        clean = [i for i, row in enumerate(screened) if row is not None]
        if not clean:
            return results, 0
        rows = [screened[i] for i in clean]  # type: ignore[misc]
        if self._config.key_writer is not None and source != "extraction":
            rows = self._with_keys(rows, self._config.key_writer)
        vectors = self._embed([embedded_text(row[0], row[4]) for row in rows])
        if resolver is None:
            resolver = self._resolver
        known = _KnownVerdicts(self._config)
        if dedupe and resolver is not None:
            # Judge before taking the lock: the scope as it is now.
            now = self._clock()
            plan_rows(rows, vectors, _stored(self._repo.entry(), self._config, now), config=self._config,
                      embed=self._embed, judge=known, dedupe=True, source=source, now=now)
        for round_ in range(_JUDGE_ROUNDS):
            if known.missing and resolver is not None:
                known.ask(resolver, self._config.resolver_timeout)
            with self._lock.hold():
                if not self._checked:
                    self._drop_void(self._history.state_events(self._repo.ns))
                now = self._clock()
                stored = _stored(self._repo.entry(), self._config, now)
                plan = plan_rows(rows, vectors, stored, config=self._config, embed=self._embed, judge=known,
                                 dedupe=dedupe, source=source, now=now)
                if known.missing and resolver is not None and round_ + 1 < _JUDGE_ROUNDS:
                    continue  # the scope changed while the model judged: judge the new pairs, unlocked
                history = self._history.append([(self._repo.ns, e) for e in plan.events])
                try:
                    written = self._repo.write(plan.new, plan.vectors, delete=plan.delete, touch=plan.touch)
                except BaseException:
                    self._history.undo(history)  # the memories did not change: neither does their history
                    raise
                break
        _log_retirements(plan.events)
        for i, result in zip(clean, plan.results(written), strict=True):
            results[i] = result
        return results, plan.evicted

    def _drop_void(self, events: Sequence[Event]) -> list[Event]:
        """Delete the events of writes that never landed (see :mod:`mindcore.ltm._history`) and
        return the others. The caller holds the scope's lock: no writer is between its commits."""
        self._checked = True
        live = self._repo.live_among(state_ids(events))
        void = void_events(events, live)
        if not void:
            return list(events)
        # Deleting history on a stale read (object storage lags by up to its read consistency)
        # would lose true events: read both tables again at their latest versions first.
        self._repo.table.refresh()
        self._history.table.refresh()
        live = self._repo.live_among(state_ids(events))
        void = void_events(events, live)
        if not void:
            return list(events)
        batches = {batch_of(i) for i in void}
        # ``events`` may be the state events only: a void write's duplicates go with it.
        every = [str(e["id"]) for e in self._history.events(self._repo.ns) if batch_of(str(e["id"])) in batches]
        self._history.delete_events(self._repo.ns, every)
        log.warning("long-term memory %s: deleted %d history events of %d writes that never landed (the process "
                    "stopped between the history commit and the memory commit)", self._repo.ns, len(every),
                    len(batches))
        return valid_events(events, live)

    def events(self) -> list[Event]:
        """Every history event of the scope, oldest first, after deleting those of writes that never
        landed. Hold :meth:`locked`."""
        return self._drop_void(self._history.events(self._repo.ns))

    def restore(self, memory_id: str) -> tuple[Memory, bool]:
        """Make the retired memory ``memory_id`` live again, with its id, text, kind, importance,
        source, context and ``created_at`` (its last access is now); ``(memory, True)``. A live
        memory is returned as it is: ``(memory, False)``. Raises :class:`MemoryNotFoundError` for
        an id the scope does not hold, live or retired, and :class:`SecretRefusedError` when the
        secret policy now refuses the text (nothing is written either way).

        Under the scope's lock: the void events of an interrupted write are deleted first; then
        a ``restored`` event is committed, then the memory (re-embedded) with, in a full scope,
        the eviction of the lowest other memories to stay within ``max_items`` (the restored
        one is kept: restoring is asked for by name).
        """
        with self._lock.hold():
            self._repo.table.refresh()  # a read-modify-write under the lock starts at the latest version
            self._history.table.refresh()
            events = self.events()
            live = self._repo.get([memory_id])
            if live:
                return live[0], False
            retired = restorable(events, memory_id)
            if retired is None:
                raise MemoryNotFoundError(
                    f"memory_id: no memory {memory_id!r} in long-term memory scope {self._repo.ns}, live or "
                    "retired (an unknown id, another scope's, or forgotten); nothing was restored")
            policy = self._config.secrets
            text = policy.screen(str(retired["text"] or ""), "text")
            context = policy.screen_optional(retired["context"], "context")
            now = max(self._clock(), int(retired["created_at"] or 0))
            created = int(retired["memory_created_at"] or 0)
            memory = Memory(id=memory_id, text=text, kind=str(retired["kind"] or DEFAULT_KIND),
                            importance=round(float(retired["importance"] or 0.0), 6), created_at=created,
                            last_accessed_at=max(now, created), source=str(retired["source"] or "manual"),
                            context=context, thread=_restored_thread(policy, retired.get("thread")),
                            position=None if retired.get("position") is None else int(retired["position"]))
            if not storable([memory]):
                raise SecretRefusedError("text: not restored: it looks like a credential; leave credentials out")
            vectors = self._embed([embedded_text(text, context)])
            entry = self._repo.entry()
            victims = self._restore_room(entry, now)
            evicted = entry_memories(entry, victims)
            restored = [HistoryEvent(memory, "restored", now, f"undoes {retired['action']}",
                                     successor_id=retired["successor_id"] or None),
                        *(HistoryEvent(m, "evicted", now, "lowest by recency and importance over max_items")
                          for m in evicted)]
            appended = self._history.append([(self._repo.ns, e) for e in restored])
            try:
                self._repo.write([memory], vectors, delete=[m.id for m in evicted])
            except BaseException:
                self._history.undo(appended)
                raise
        _log_retirements(restored[1:])
        return memory, True

    def _restore_room(self, entry: CacheEntry, now: int) -> list[int]:
        """Positions (in ``entry_vectors`` order) of the stored memories to evict so the scope
        stays within ``max_items`` with one more memory, which is kept."""
        max_items = self._config.max_items
        assert max_items is not None  # resolved by the config
        ids, matrix = entry_vectors(entry)
        if max_items == 0 or len(ids) + 1 <= max_items:
            return []
        weights = retention_weights(self._config)
        scores = entry_retention(entry, weights=weights, now_ms=now)
        cut, _ = eviction_cut(scores, [], np.zeros((0, matrix.shape[1]), np.float32), now,
                              max_items=max_items - 1, weights=weights)
        return sorted(int(i) for i in cut)

    def plan_eviction(self, ids: Sequence[str], new: Sequence[Memory], new_vectors: np.ndarray,
                      now: int) -> tuple[list[str], set[int]]:
        """Which stored ids to delete and which new memories not to write, so at most ``max_items``
        remain: the lowest by recency and importance (0.2·2^(-age/half_life) + 0.1·importance) over
        stored and new memories together, ranked by the store's scorer with the similarity weight at 0."""
        max_items = self._config.max_items
        assert max_items is not None  # resolved by the config
        if max_items == 0 or len(ids) + len(new) <= max_items:
            return [], set()
        weights = retention_weights(self._config)
        stored = self._repo.retention_scores(len(ids), weights=weights, now_ms=now) if ids else {}
        cut, dropped = eviction_cut(np.array([stored.get(i, -np.inf) for i in ids], dtype=np.float64), new,
                                    new_vectors, now, max_items=max_items, weights=weights)
        return [ids[int(i)] for i in cut], dropped


def _log_retirements(events: Sequence[HistoryEvent]) -> None:
    """Log each retirement a commit made, at INFO (quiet unless asked for)."""
    if not log.isEnabledFor(logging.INFO):
        return
    for e in events:
        if e.action in RETIRED:
            successor = f" for {e.successor_id}" if e.successor_id else ""
            log.info("retired %s (%s: %s)%s", e.memory.id, e.action, e.reason, successor)


def scope_lock_name(namespace: str) -> str:
    """The store lock a write to the scope ``namespace`` (a ``scope_key``) holds while it reads the
    scope and commits: one of ``_LOCK_STRIPES`` locks shared by every thread, process and machine."""
    stripe = int.from_bytes(hashlib.blake2b(namespace.encode(), digest_size=4).digest(), "big") % _LOCK_STRIPES
    return f"ltm-scope-{stripe:03d}"


def plan_rows(rows: Sequence[Row], vectors: np.ndarray, stored: Stored, *, config: LongTermMemoryConfig,
              embed: Callable[[list[str]], np.ndarray], judge: Judge | None, dedupe: bool, source: str,
              now: int) -> ScopePlan:
    """What writing ``rows`` (``vectors``: what recall embeds for each) does to a scope whose live
    memories are ``stored``: the decisions of :func:`mindcore.ltm._decide.decide` (every row is
    stored without ``dedupe``), then eviction to ``max_items`` over what stays live."""
    if dedupe:
        decisions, known = decide(rows, vectors, stored, config=config, embed=embed,
                                  judge=judge or conservative_judge(config))
    else:
        decisions, known = [Decision() for _ in rows], {}
    max_items = config.max_items
    assert max_items is not None  # resolved by the config
    weights = retention_weights(config)

    def cut(scores: np.ndarray, new: list[Memory], new_vectors: np.ndarray) -> tuple[np.ndarray, set[int]]:
        return eviction_cut(scores, new, new_vectors, now, max_items=max_items, weights=weights)

    return plan_scope(rows, vectors, decisions, known, stored, now=now, source=source, max_items=max_items, cut=cut)


def _stored(entry: CacheEntry, config: LongTermMemoryConfig, now: int) -> Stored:
    """A cached scope as :func:`plan_rows` reads it (ids, vectors, memories and retention from the cache)."""
    ids, matrix = entry_vectors(entry)
    weights = retention_weights(config)
    inv = shadow = None
    if len(matrix) == entry.n:  # every row has a vector: the cache's norms and shadow line up
        try:
            inv = entry.row_norms().inv
        except ValueError:  # a row that is not finite: the kernel reports it, as before
            inv = None
        shadow = entry.row_shadow() if inv is not None else None
    return Stored(ids, matrix, functools.partial(entry_memories, entry),
                  functools.partial(entry_retention, entry, weights=weights, now_ms=now),
                  inv_norms=inv, shadow=shadow)


def retention_weights(config: LongTermMemoryConfig) -> Weights:
    """How eviction ranks memories: the seed's recency and importance weights (whatever recall's
    weights are) with recall's half-life, similarity weight 0."""
    return Weights(similarity=0.0, recency=EVICT_RECENCY, extra=EVICT_IMPORTANCE,
                   half_life_ms=config.weights.half_life_days * DAY_MS)


def eviction_cut(stored: np.ndarray, new: Sequence[Memory], new_vectors: np.ndarray, now: int, *,
                 max_items: int, weights: Weights) -> tuple[np.ndarray, set[int]]:
    """Which stored memories to delete (positions in ``stored``, their retention scores) and which
    ``new`` ones not to write, so at most ``max_items`` (> 0) remain: the lowest by the store's
    scorer with ``weights`` (see :func:`retention_weights`) over stored and new together."""
    total = len(stored) + len(new)
    if total <= max_items:
        return np.empty(0, dtype=np.int64), set()
    scores = np.empty(total, dtype=np.float64)
    scores[: len(stored)] = stored
    if new:
        top = rank(
            new_vectors[0], new_vectors, weights, k=len(new), metric="dot", now_ms=now,
            timestamps=np.array([m.created_at for m in new], dtype=np.int64),
            extra=np.array([m.importance for m in new], dtype=np.float32),
        )
        scores[len(stored) + top.indices] = top.scores
    # Keep the best max_items; on equal scores stored memories stay and newer arrivals go.
    order = np.argsort(-scores, kind="stable")
    cut = order[max_items:]
    return cut[cut < len(stored)], {int(i) - len(stored) for i in cut if i >= len(stored)}


#: What happened to one row of a bulk write: its status, and the id of the memory it stored
#: (``stored``) or matched (``duplicate``; ``None`` when that memory was evicted by the same write).
Outcome = tuple[RememberStatus, str | None]


class BulkPipeline:
    """:meth:`WritePipeline.ingest` for many scopes at once: the same outcome for each scope as
    ingesting its rows alone (secret policy, duplicates within the scope's rows and against
    its memories, updates and contradictions retiring memories, eviction to ``max_items``), with one
    secret scan and one embedding call for all rows and, under the locks of every scope (taken in
    sorted order, so a bulk write and single-scope writers cannot deadlock), one scan of the
    scopes, one commit of their history and one of their memories."""

    def __init__(self, store: Store, repo: ScopesRepo, config: LongTermMemoryConfig,
                 embed: Callable[[list[str]], np.ndarray], clock: Callable[[], int]) -> None:
        self._store = store
        self._repo = repo
        self._history = HistoryRepo(store)
        self._config = config
        self._embed = embed
        self._clock = clock

    def _screen(self, rows: Sequence[Row]) -> list[Row | None]:
        """Each row as the secret policy lets it be stored, ``None`` when refused (one scan)."""
        policy = self._config.secrets
        texts = policy.screen_batch([row[0] for row in rows])
        with_context = [i for i, row in enumerate(rows) if row[4] is not None]
        contexts = dict(zip(with_context, policy.screen_batch([str(rows[i][4]) for i in with_context]), strict=True))
        out: list[Row | None] = []
        threads = [row.thread is not None and _refused_identifier(policy, row.thread, "thread") for row in rows]
        for i, row in enumerate(rows):
            screened_text, screened_context = texts[i], contexts.get(i)
            refused = screened_text is None or (row.context is not None and screened_context is None) or threads[i]
            out.append(None if refused else row._replace(text=str(screened_text), context=screened_context))
        return out

    def ingest(self, scopes: Mapping[str, Sequence[Row]], *, dedupe: bool,
               source: str) -> tuple[dict[str, list[Outcome]], int, bool]:
        """Store each scope's rows (``scope_key -> rows``): one outcome per row, in order, per scope;
        how many memories were evicted in all; whether anything was committed."""
        secret: Outcome = ("secret", None)
        results: dict[str, list[Outcome]] = {ns: [secret] * len(rows) for ns, rows in scopes.items()}
        screened = self._screen([row for rows in scopes.values() for row in rows])
        parts: dict[str, tuple[list[Row], list[int]]] = {}
        texts: list[str] = []
        start = 0
        for ns, rows in scopes.items():
            part = screened[start:start + len(rows)]
            start += len(rows)
            clean = [i for i, row in enumerate(part) if row is not None]
            if clean:
                kept: list[Row] = [row for row in part if row is not None]
                parts[ns] = (kept, clean)
                texts += [embedded_text(row[0], row[4]) for row in kept]
        if not parts:
            return results, 0, False
        vectors = self._embed(texts)
        evicted = 0
        with contextlib.ExitStack() as held:
            for name in sorted({scope_lock_name(ns) for ns in parts}):
                held.enter_context(self._store.lock(name).hold())
            now = self._clock()
            entries = self._repo.entries(list(parts))
            writes: dict[str, tuple[list[Memory], np.ndarray, list[str]]] = {}
            plans: dict[str, ScopePlan] = {}
            start = 0
            for ns, (rows, _) in parts.items():
                stored = _stored(entries[ns], self._config, now)
                plan = plan_rows(rows, vectors[start:start + len(rows)], stored, config=self._config,
                                 embed=self._embed, judge=None, dedupe=dedupe, source=source, now=now)
                start += len(rows)
                evicted += plan.evicted
                writes[ns] = ([*plan.new, *plan.touch], np.concatenate([plan.vectors, plan.touch_vectors]),
                              plan.delete)
                plans[ns] = plan
            history = self._history.append([(ns, e) for ns, plan in plans.items() for e in plan.events])
            try:
                written = self._repo.write(writes)
            except BaseException:
                self._history.undo(history)
                raise
            committed = bool(written) or any(victims for _, _, victims in writes.values())
        for ns, plan in plans.items():
            out = results[ns]
            for i, result in zip(parts[ns][1], plan.results(written), strict=True):
                out[i] = (result.status, None if result.memory is None else result.memory.id)
        return results, evicted, committed
