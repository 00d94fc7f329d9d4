"""The write pipeline every path into long-term memory shares (``remember``, ``remember_many``,
extraction, backfill, the ``ltm_remember`` tool): validate, screen for secrets, embed, drop
near-duplicates (within the batch and against the scope), plan eviction, commit once.

The read of the scope (for duplicates and eviction) and the commit happen under one lock of the
store shared by every thread, process and machine writing that scope, so two writers can neither
both add the same fact nor leave the scope over ``max_items``; inserts and evictions land in one
commit, so no reader sees the scope over its cap.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindcore.errors import InvalidInputError, InvalidTypeError, SecretRefusedError
from mindcore.kernels import dedupe_within, near_duplicates
from mindcore.ltm._repo import (
    MemoryRepo,
    NewMemory,
    ScopesRepo,
    entry_duplicates,
    entry_retention,
    entry_vectors,
)
from mindcore.ltm.config import DAY_MS, LongTermMemoryConfig
from mindcore.ltm.extract import Candidate
from mindcore.ltm.types import (
    DEFAULT_KIND,
    KINDS,
    MAX_CONTEXT_CHARS,
    MAX_TEXT_CHARS,
    Memory,
    RememberResult,
    RememberStatus,
    embedded_text,
)
from mindcore.store import Store
from mindcore.store.scoring import Weights, rank
from mindcore.validation import text_problem

__all__ = ["DUPLICATE_THRESHOLD", "EVICT_IMPORTANCE", "EVICT_RECENCY", "BulkPipeline", "Outcome", "Row",
           "WritePipeline", "eviction_cut", "retention_weights", "scope_lock_name", "validate_item", "validate_items"]

DUPLICATE_THRESHOLD = 0.92
# Eviction ranks by the seed's recency and importance weights, whatever recall's weights are.
EVICT_RECENCY = 0.2
EVICT_IMPORTANCE = 0.1
# Scopes share this many store locks (a lock file each on disk): enough that unrelated users
# rarely wait for each other, few enough that the lock folder stays small.
_LOCK_STRIPES = 256

#: One validated write: text, kind, importance, created_at, context.
Row = tuple[str, str, float, int | None, str | None]


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
    context = item.get("context")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text: expected a non-blank string, got {text!r}")
    text = text.strip()
    for name, value in (("text", text), ("context", context)):
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
    return text, kind, float(importance), created_at, context


class WritePipeline:
    """Validated rows in, one commit out; see the module docstring."""

    def __init__(self, store: Store, repo: MemoryRepo, config: LongTermMemoryConfig,
                 embed: Callable[[list[str]], np.ndarray], clock: Callable[[], int]) -> None:
        self._repo = repo
        self._config = config
        self._embed = embed
        self._clock = clock
        self._lock = store.lock(scope_lock_name(repo.ns))

    def _screen(self, row: Row) -> Row | None:
        """The row as the secret policy lets it be stored, or ``None`` when refused."""
        text, kind, importance, created_at, context = row
        policy = self._config.secrets
        try:
            return (policy.screen(text, "text"), kind, importance, created_at,
                    policy.screen_optional(context, "context"))
        except SecretRefusedError:
            return None

    def ingest(self, rows: Sequence[Row], *, dedupe: bool, source: str) -> tuple[list[RememberResult], int]:
        """Store ``rows``; one result per row, in order, and how many memories were evicted."""
        results: list[RememberResult] = [RememberResult("secret", None)] * len(rows)
        screened = [self._screen(row) for row in rows]
        clean = [i for i, row in enumerate(screened) if row is not None]
        if not clean:
            return results, 0
        rows = [screened[i] for i in clean]  # type: ignore[misc]
        vectors = self._embed([embedded_text(row[0], row[4]) for row in rows])
        keep = dedupe_within(vectors, threshold=DUPLICATE_THRESHOLD) if dedupe else np.ones(len(rows), bool)
        # Within the batch, a dropped item is a duplicate of the first kept item it matches.
        first_of = np.arange(len(rows))
        if not keep.all():
            kept = np.flatnonzero(keep)
            first_of[~keep] = kept[near_duplicates(vectors[~keep], vectors[kept], threshold=DUPLICATE_THRESHOLD)[0]]
        with self._lock.hold():
            now = self._clock()
            candidates = np.flatnonzero(keep)
            existing = np.full(len(rows), -1, dtype=np.int64)
            if dedupe and candidates.size:
                ids, found = self._repo.duplicates(vectors[candidates], threshold=DUPLICATE_THRESHOLD)
                existing[candidates] = found
            else:
                ids, _ = self._repo.vectors()
            fresh = [int(j) for j in candidates if existing[j] < 0]
            new = []
            for j in fresh:
                text, kind, importance, created_at, context = rows[j]
                new.append(self._repo.new_memory(NewMemory(
                    text=text, kind=kind, importance=importance,
                    created_at=now if created_at is None else created_at, source=source, context=context)))
            new_vectors = vectors[fresh]
            victims, dropped = self.plan_eviction(ids, new, new_vectors, now)
            written = self._repo.write(
                [m for n, m in enumerate(new) if n not in dropped],
                new_vectors[[n for n in range(len(new)) if n not in dropped]],
                delete=victims,
            )
        matched = {ids[int(e)] for e in existing if e >= 0}
        known = {m.id: m for m in self._repo.get(sorted(matched))} if matched else {}
        outcome: dict[int, RememberResult] = {}
        for n, j in enumerate(fresh):
            memory = new[n]
            if n in dropped:
                outcome[j] = RememberResult("evicted", None)
            elif memory.id in written:
                outcome[j] = RememberResult("stored", memory)
            else:  # refused by the repository's own secret check (a defence in depth)
                outcome[j] = RememberResult("secret", None)
        for j, i in enumerate(clean):
            root = int(first_of[j])
            if existing[root] >= 0:
                # None only if the stored twin was forgotten meanwhile: nothing of this item is stored.
                results[i] = RememberResult("duplicate", known.get(ids[int(existing[root])]))
            elif root != j and outcome[root].status == "stored":
                results[i] = RememberResult("duplicate", outcome[root].memory)
            else:
                results[i] = outcome[root]
        return results, len(victims) + len(dropped)

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


def scope_lock_name(namespace: str) -> str:
    """The store lock a write to the scope ``namespace`` (a ``scope_key``) holds while it reads the
    scope and commits: one of ``_LOCK_STRIPES`` locks shared by every thread, process and machine."""
    stripe = int.from_bytes(hashlib.blake2b(namespace.encode(), digest_size=4).digest(), "big") % _LOCK_STRIPES
    return f"ltm-scope-{stripe:03d}"


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


@dataclass(slots=True)
class _Scope:
    """One scope's part of a bulk write, as it goes through :meth:`BulkPipeline.ingest`."""

    rows: list[Row]  # the rows the secret policy lets through, screened
    clean: list[int]  # their positions among the scope's rows
    vectors: np.ndarray
    keep: np.ndarray  # not a near-duplicate of an earlier row of the scope
    first_of: np.ndarray  # the kept row each row duplicates (itself when kept)


class BulkPipeline:
    """:meth:`WritePipeline.ingest` for many scopes at once: the same outcome for each scope as
    ingesting its rows alone (secret policy, near-duplicates within the scope's rows and against
    its memories, eviction to ``max_items``), with one secret scan and one embedding call for all
    rows and, under the locks of every scope (taken in sorted order, so a bulk write and
    single-scope writers cannot deadlock), one scan of the scopes and one commit."""

    def __init__(self, store: Store, repo: ScopesRepo, config: LongTermMemoryConfig,
                 embed: Callable[[list[str]], np.ndarray], clock: Callable[[], int]) -> None:
        self._store = store
        self._repo = repo
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
        for i, (_, kind, importance, created_at, context) in enumerate(rows):
            screened_text, screened_context = texts[i], contexts.get(i)
            refused = screened_text is None or (context is not None and screened_context is None)
            out.append(None if refused else (str(screened_text), kind, importance, created_at, screened_context))
        return out

    def ingest(self, scopes: Mapping[str, Sequence[Row]], *, dedupe: bool,
               source: str) -> tuple[dict[str, list[Outcome]], int, bool]:
        """Store each scope's rows (``scope_key -> rows``): one outcome per row, in order, per scope;
        how many memories were evicted in all; whether anything was committed."""
        secret: Outcome = ("secret", None)
        results: dict[str, list[Outcome]] = {ns: [secret] * len(rows) for ns, rows in scopes.items()}
        screened = self._screen([row for rows in scopes.values() for row in rows])
        plans: dict[str, _Scope] = {}
        texts: list[str] = []
        start = 0
        for ns, rows in scopes.items():
            part = screened[start:start + len(rows)]
            start += len(rows)
            clean = [i for i, row in enumerate(part) if row is not None]
            if clean:
                kept: list[Row] = [row for row in part if row is not None]
                plans[ns] = _Scope(kept, clean, np.empty(0), np.empty(0), np.empty(0))
                texts += [embedded_text(row[0], row[4]) for row in kept]
        if not plans:
            return results, 0, False
        vectors = self._embed(texts)
        start = 0
        for plan in plans.values():
            plan.vectors = vectors[start:start + len(plan.rows)]
            start += len(plan.rows)
            n = len(plan.rows)
            plan.keep = dedupe_within(plan.vectors, threshold=DUPLICATE_THRESHOLD) if dedupe else np.ones(n, bool)
            # Within a scope, a dropped row is a duplicate of the first kept row it matches.
            plan.first_of = np.arange(n)
            if not plan.keep.all():
                kept_at = np.flatnonzero(plan.keep)
                plan.first_of[~plan.keep] = kept_at[near_duplicates(
                    plan.vectors[~plan.keep], plan.vectors[kept_at], threshold=DUPLICATE_THRESHOLD)[0]]
        evicted = 0
        with contextlib.ExitStack() as held:
            for name in sorted({scope_lock_name(ns) for ns in plans}):
                held.enter_context(self._store.lock(name).hold())
            now = self._clock()
            entries = self._repo.entries(list(plans))
            writes: dict[str, tuple[list[Memory], np.ndarray, list[str]]] = {}
            staged: dict[str, tuple[Sequence[str], np.ndarray, list[int], list[Memory], set[int], set[str]]] = {}
            for ns, plan in plans.items():
                entry = entries[ns]
                candidates = np.flatnonzero(plan.keep)
                existing = np.full(len(plan.rows), -1, dtype=np.int64)
                if dedupe and candidates.size:
                    ids, found = entry_duplicates(entry, np.ascontiguousarray(plan.vectors[candidates]),
                                                  threshold=DUPLICATE_THRESHOLD)
                    existing[candidates] = found
                else:
                    ids, _ = entry_vectors(entry)
                fresh = [int(j) for j in candidates if existing[j] < 0]
                new = [MemoryRepo.new_memory(NewMemory(
                    text=text, kind=kind, importance=importance, created_at=now if created_at is None else created_at,
                    source=source, context=context)) for text, kind, importance, created_at, context in
                    (plan.rows[j] for j in fresh)]
                new_vectors = plan.vectors[fresh]
                victims: list[str] = []
                dropped: set[int] = set()
                max_items = self._config.max_items
                if max_items and len(ids) + len(new) > max_items:
                    weights = retention_weights(self._config)
                    cut, dropped = eviction_cut(entry_retention(entry, weights=weights, now_ms=now), new,
                                                new_vectors, now, max_items=max_items, weights=weights)
                    victims = [ids[int(i)] for i in cut]
                evicted += len(victims) + len(dropped)
                stay = [n for n in range(len(new)) if n not in dropped]
                writes[ns] = ([new[n] for n in stay], new_vectors[stay], victims)
                staged[ns] = (ids, existing, fresh, new, dropped, set(victims))
            written = self._repo.write(writes)
            committed = bool(written) or any(victims for _, _, victims in writes.values())
        for ns, plan in plans.items():
            ids, existing, fresh, new, dropped, gone = staged[ns]
            outcome: dict[int, Outcome] = {}
            for n, j in enumerate(fresh):
                memory_id = new[n].id
                if n in dropped:
                    outcome[j] = ("evicted", None)
                elif memory_id in written:
                    outcome[j] = ("stored", memory_id)
                else:  # refused by the repository's own secret check (a defence in depth)
                    outcome[j] = secret
            out = results[ns]
            for j, i in enumerate(plan.clean):
                root = int(plan.first_of[j])
                if existing[root] >= 0:
                    twin = ids[int(existing[root])]
                    out[i] = ("duplicate", None if twin in gone else twin)
                elif root != j and outcome[root][0] == "stored":
                    out[i] = ("duplicate", outcome[root][1])
                else:
                    out[i] = outcome[root]
        return results, evicted, committed
