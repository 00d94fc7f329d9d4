"""The write pipeline every path into long-term memory shares (``remember``, ``remember_many``,
extraction, backfill, the ``ltm_remember`` tool): validate, screen for secrets, embed, drop
near-duplicates (within the batch and against the scope), plan eviction, commit once.

The read of the scope (for duplicates and eviction) and the commit happen under one lock of the
store shared by every thread, process and machine writing that scope, so two writers can neither
both add the same fact nor leave the scope over ``max_items``; inserts and evictions land in one
commit, so no reader sees the scope over its cap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mindcore.errors import InvalidInputError, InvalidTypeError, SecretRefusedError
from mindcore.kernels import dedupe_within, near_duplicates
from mindcore.ltm._repo import MemoryRepo, NewMemory
from mindcore.ltm.config import DAY_MS, LongTermMemoryConfig
from mindcore.ltm.extract import Candidate
from mindcore.ltm.types import (
    DEFAULT_KIND,
    KINDS,
    MAX_CONTEXT_CHARS,
    MAX_TEXT_CHARS,
    Memory,
    RememberResult,
    embedded_text,
)
from mindcore.store import Store
from mindcore.store.scoring import Weights, rank
from mindcore.validation import text_problem

__all__ = ["DUPLICATE_THRESHOLD", "EVICT_IMPORTANCE", "EVICT_RECENCY", "Row", "WritePipeline", "validate_item",
           "validate_items"]

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
        stripe = int.from_bytes(hashlib.blake2b(repo.ns.encode(), digest_size=4).digest(), "big") % _LOCK_STRIPES
        self._lock = store.lock(f"ltm-scope-{stripe:03d}")

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
        total = len(ids) + len(new)
        if max_items == 0 or total <= max_items:
            return [], set()
        weights = Weights(similarity=0.0, recency=EVICT_RECENCY, extra=EVICT_IMPORTANCE,
                          half_life_ms=self._config.weights.half_life_days * DAY_MS)
        scores = np.empty(total, dtype=np.float64)
        if ids:
            stored = self._repo.retention_scores(len(ids), weights=weights, now_ms=now)
            scores[: len(ids)] = [stored.get(i, -np.inf) for i in ids]
        if new:
            top = rank(
                new_vectors[0], new_vectors, weights, k=len(new), metric="dot", now_ms=now,
                timestamps=np.array([m.created_at for m in new], dtype=np.int64),
                extra=np.array([m.importance for m in new], dtype=np.float32),
            )
            scores[len(ids) + top.indices] = top.scores
        # Keep the best max_items; on equal scores stored memories stay and newer arrivals go.
        order = np.argsort(-scores, kind="stable")
        cut = order[max_items:]
        victims = [ids[i] for i in cut if i < len(ids)]
        dropped = {int(i) - len(ids) for i in cut if i >= len(ids)}
        return victims, dropped
