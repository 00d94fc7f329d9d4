"""`LongTermMemory`: durable, private facts about one user, recalled by meaning, recency and importance."""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.embed.base import check_embedder
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.kernels import dedupe_within, looks_like_secret, near_duplicates
from mindcore.llm.base import check_llm
from mindcore.ltm._repo import MemoryRepo, NewMemory
from mindcore.ltm.config import resolve_enabled, resolve_max_items
from mindcore.ltm.extract import (
    Candidate,
    ExtractionParseError,
    build_extraction_messages,
    parse_candidates,
    render_conversation,
)
from mindcore.ltm.render import render_memories
from mindcore.ltm.tools import build_toolset
from mindcore.ltm.types import (
    DEFAULT_KIND,
    KINDS,
    MAX_CONTEXT_CHARS,
    MAX_TEXT_CHARS,
    ExtractionReport,
    Memory,
    RememberResult,
    embedded_text,
)
from mindcore.store import StoreLike, resolve_store
from mindcore.store.scoring import Weights, rank
from mindcore.toolspec import Toolset
from mindcore.validation import check_callable, text_problem

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.llm import LLM
    from mindcore.store import Store

__all__ = ["DUPLICATE_THRESHOLD", "LongTermMemory", "RecallWeights"]

log = logging.getLogger("mindcore.ltm")

DUPLICATE_THRESHOLD = 0.92
DAY_MS = 86_400_000
# Eviction ranks by the seed's recency and importance weights, whatever recall's weights are.
EVICT_RECENCY = 0.2
EVICT_IMPORTANCE = 0.1
MAX_RECALL_K = 1_000
# A query longer than this is cut for embedding and matching (with a warning): far more than any
# question, and it keeps a pasted document from costing seconds per recall.
MAX_QUERY_CHARS = 8_000
# One validated write: text, kind, importance, created_at, context.
_Row = tuple[str, str, float, int | None, str | None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class RecallWeights:
    """How recall ranks: ``similarity·cosine + recency·2^(-age/half_life) + importance·importance``.

    The defaults are the seed's (0.7 / 0.2 / 0.1, 30-day half-life); age runs from the later of a
    memory's creation and its last recall. ``lexical`` adds ``lexical·bm25/max(bm25)``: BM25 over the
    stored texts (the Rust BM25 kernel), scaled so the query's best lexical match gets 1 (unless that
    match is weak, raw BM25 < 2). On LoCoMo it lifts recall@5 from 15.8% to 53.6% with the default
    embedder over bare turns, and to 64.1% with each turn's context (previous turn and speaker, see
    :meth:`LongTermMemory.remember`); see ``benches/bench_locomo.py``. ``lexical=0`` is the seed's
    pure hybrid score. The default keeps the seed's weights: on LoCoMo, dropping recency
    (``recency=0``) measured 0.5-2 points higher at every k (conversations 0-4, where settings were
    chosen, and 5-9), but LoCoMo asks about every session alike, while a user's memories do go
    stale. Other lexical weights (0.7, 1.5) and similarity 1.0 moved recall by under a point either
    way on conversations 0-4; reciprocal-rank fusion measured 10 points lower at recall@5.
    """

    similarity: float = 0.7
    recency: float = 0.2
    importance: float = 0.1
    half_life_days: float = 30.0
    lexical: float = 1.0

    def __post_init__(self) -> None:
        for name in ("similarity", "recency", "importance", "lexical"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name}: expected a finite weight >= 0, got {value!r}")
        if not self.half_life_days > 0 or not np.isfinite(self.half_life_days):
            raise ValueError(f"half_life_days: expected a positive number, got {self.half_life_days!r}")

    @property
    def hybrid(self) -> Weights:
        """The similarity, recency and importance weights as the store's :class:`~mindcore.store.Weights`
        (importance is the per-row extra; the lexical term is added on top of it).

        >>> RecallWeights().hybrid
        Weights(similarity=0.7, recency=0.2, extra=0.1, half_life_ms=2592000000.0, tau_ms=None)
        """
        return Weights(similarity=self.similarity, recency=self.recency, extra=self.importance,
                       half_life_ms=self.half_life_days * DAY_MS)


# Memories with bumps that may still be pending; written out when the interpreter exits.
_LIVE: weakref.WeakSet[LongTermMemory] = weakref.WeakSet()
_EXIT_HOOK = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    # Registered on first use, after the store module's own exit hook: atexit runs hooks in
    # reverse order, so pending bumps are written while the store is still open.
    global _exit_hook_registered
    with _EXIT_HOOK:
        if not _exit_hook_registered:
            atexit.register(_flush_all_at_exit)
            _exit_hook_registered = True


def _flush_all_at_exit() -> None:
    for ltm in list(_LIVE):
        ltm._write_touches()


@functools.cache
def _shared_default_embedder() -> Any:
    # One model per process, however many sessions create a memory without an embedder.
    from mindcore.embed import default_embedder

    return default_embedder()


def _require_id(name: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name}: expected a non-empty string, got {value!r}")


class LongTermMemory:
    """Durable facts about one user in one (namespace, workspace) scope.

    Use :meth:`create`, which honours the opt-in rules (and returns ``None`` when memory is off);
    the constructor assumes the caller already decided memory is on.

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> store = mindcore.open("memory://ltm-doc")
    >>> ltm = LongTermMemory.create(store, user_id="u1", namespace="chat", embedder=HashEmbedder(),
    ...                             enabled=True)
    >>> ltm.remember("Prefers green tea", kind="preference", importance=0.8).text
    'Prefers green tea'
    >>> [m.text for m in ltm.recall("what does the user like to drink? green tea?", k=1)]
    ['Prefers green tea']
    >>> ltm.remember("api_key = sk-live-0123456789abcdef0123456789") is None
    True
    """

    # At most this many queued background turns are stored in one commit.
    _COALESCE_MAX = 64

    def __init__(
        self,
        store: StoreLike,
        *,
        user_id: str,
        namespace: str = "default",
        workspace_id: str | None = None,
        embedder: Embedder,
        extractor: LLM | None = None,
        max_items: int | None = None,
        weights: RecallWeights | None = None,
        clock: Callable[[], int] | None = None,
        touch_delay: float = 2.0,
    ) -> None:
        _require_id("user_id", user_id)
        _require_id("namespace", namespace)
        _require_id("workspace_id", workspace_id, optional=True)
        check_embedder(embedder)
        if extractor is not None:
            check_llm(extractor, "extractor")
        if weights is not None and not isinstance(weights, RecallWeights):
            raise InvalidTypeError(f"weights: expected RecallWeights, got {type(weights).__name__}")
        if clock is not None:
            check_callable(clock, "clock")
        if not isinstance(touch_delay, int | float) or isinstance(touch_delay, bool) or touch_delay < 0:
            raise InvalidInputError(f"touch_delay: expected seconds >= 0, got {touch_delay!r}")
        self.user_id = user_id
        self.namespace = namespace
        self.workspace_id = workspace_id
        self.embedder = embedder
        self.extractor = extractor
        self.max_items = resolve_max_items(max_items)
        self.weights = weights or RecallWeights()
        self._clock = clock or _now_ms
        # Opened (and checked writable) after the arguments: a bad argument opens nothing.
        self.store: Store = resolve_store(store)
        self._owns_store = self.store is not store
        self._repo = MemoryRepo(self.store, user_id=user_id, namespace=namespace, workspace_id=workspace_id,
                                embedder=embedder)
        self._write_lock = threading.Lock()
        # Last-access bumps are coalesced and written by one background thread, off recall's path.
        self.touch_delay = float(touch_delay)
        self._touch_lock = threading.Lock()  # guards the pending bumps and the timer
        self._touch_io = threading.Lock()  # one bump write at a time
        self._pending_touch: dict[str, tuple[int, int]] = {}
        self._touch_timer: threading.Timer | None = None
        _LIVE.add(self)
        _register_exit_hook()
        self._background_pool: ThreadPoolExecutor | None = None
        # Background extractions waiting for the worker (see remember_conversation_in_background).
        self._queue_lock = threading.Lock()
        self._queued: list[tuple[list[Any], Future[ExtractionReport]]] = []
        self._draining = False
        self._toolset = build_toolset(self)

    @classmethod
    def create(
        cls,
        store: StoreLike,
        *,
        user_id: str,
        namespace: str = "default",
        workspace_id: str | None = None,
        embedder: Embedder | None = None,
        extractor: LLM | None = None,
        enabled: bool | None = None,
        max_items: int | None = None,
        weights: RecallWeights | None = None,
        clock: Callable[[], int] | None = None,
        touch_delay: float = 2.0,
    ) -> LongTermMemory | None:
        """A long-term memory for ``user_id``, or ``None`` when memory is off for this session.

        ``store`` is a :class:`mindcore.store.Store` or anything :func:`mindcore.open` takes (a
        path, ``memory://...``, an object-storage URI); a store that cannot be written raises
        :class:`~mindcore.errors.StoreNotWritableError` here, not at the first write.

        ``enabled=False`` is a veto; ``MINDCORE_MEMORY_ENABLED=0/false`` a global veto;
        ``enabled=True`` or ``MINDCORE_MEMORY_ENABLED=1/true/yes/on`` turns it on; otherwise it is off.
        ``embedder=None`` uses :func:`mindcore.embed.default_embedder` (``None`` is returned, with a
        warning, if it cannot be loaded). ``max_items=None`` reads ``MINDCORE_MEMORY_MAX_ITEMS``
        (default 500; 0 disables eviction). ``clock`` returns "now" in unix ms (tests, replays).
        Last-access bumps are written in the background ``touch_delay`` seconds after a recall (one
        write for a burst of recalls), or at :meth:`flush`, :meth:`close` or interpreter exit.
        """
        if not resolve_enabled(enabled):
            return None
        if embedder is None:
            try:
                embedder = _shared_default_embedder()
            except Exception as exc:  # a missing model must disable memory, not crash the chat
                log.warning("long-term memory disabled: no embedder could be loaded (%s)", exc)
                return None
        return cls(store, user_id=user_id, namespace=namespace, workspace_id=workspace_id, embedder=embedder,
                   extractor=extractor, max_items=max_items, weights=weights, clock=clock, touch_delay=touch_delay)

    # -- recall ---------------------------------------------------------------------------------

    def recall(self, query: str, k: int = 5, *, touch: bool = True) -> list[Memory]:
        """The ``k`` best memories for ``query``, best first, each with ``.score`` and ``.similarity``.

        A blank query recalls nothing. With ``touch`` (the default) the returned memories' last access
        is bumped in the background (see :meth:`flush`), so memories in use age slower.
        """
        return self.recall_many([query], k, touch=touch)[0]

    def recall_many(self, queries: Sequence[str], k: int = 5, *, touch: bool = True) -> list[list[Memory]]:
        """:meth:`recall` for several queries at once (one embedding call, then one ranking pass per query)."""
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise TypeError("queries: expected a sequence of strings")
        for query in queries:
            if not isinstance(query, str):
                raise TypeError(f"query: expected str, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RECALL_K:
            raise ValueError(f"k: expected an int in 1..{MAX_RECALL_K}, got {k!r}")
        out: list[list[Memory]] = [[] for _ in queries]
        if any(len(q) > MAX_QUERY_CHARS for q in queries):
            warnings.warn(f"recall: queries longer than {MAX_QUERY_CHARS:,} characters are cut to that length",
                          stacklevel=3)
            queries = [q[:MAX_QUERY_CHARS] for q in queries]
        asked = [i for i, q in enumerate(queries) if q.strip()]
        if not asked:
            return out
        vectors = self._embed([queries[i] for i in asked])
        now = self._clock()
        w = self.weights
        hybrid = w.hybrid
        for i, vector in zip(asked, vectors, strict=True):
            if w.lexical > 0:
                out[i] = self._repo.search_lexical(
                    vector, queries[i], k=k, w_sim=w.similarity, w_rec=w.recency, w_importance=w.importance,
                    w_lexical=w.lexical, half_life_ms=w.half_life_days * DAY_MS, now_ms=now,
                )
            else:
                out[i] = self._repo.search(vector, k=k, weights=hybrid, now_ms=now)
        if touch:
            self._schedule_touch([m for hits in out for m in hits], now)
        return out

    async def arecall(self, query: str, k: int = 5, *, touch: bool = True) -> list[Memory]:
        return await asyncio.to_thread(self.recall, query, k, touch=touch)

    @staticmethod
    def render(memories: Iterable[Memory]) -> str:
        """The ``<recalled-memories>`` block for the prompt (``""`` when there is nothing to show)."""
        return render_memories(memories)

    # -- writes ---------------------------------------------------------------------------------

    def remember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                 created_at: int | None = None, context: str | None = None) -> Memory | None:
        """Store one fact and return it; ``None`` when refused because it looks like a secret (or, for
        a backdated ``created_at`` in a full scope, when it ranks below every memory kept).

        ``context`` situates the fact, e.g. the turn it answers and who said it
        (``"Bob: How was the trip?\\nAlice:"``). Recall's BM25 side indexes the whole context with
        ``text`` and the vector embeds ``text`` after the context's last line (document expansion, see
        :func:`~mindcore.ltm.types.embedded_text`: on LoCoMo the previous turn and the speaker lift
        recall@5 from 53.6 to 64.1), but :meth:`render` shows ``text`` only. A near-duplicate
        (cosine ≥ 0.92 of the embedded texts) of a stored memory is not stored again: the existing
        memory is returned. Use :meth:`try_remember` to tell these cases apart.
        """
        return self.try_remember(text, kind=kind, importance=importance, created_at=created_at,
                                 context=context).memory

    def try_remember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                     created_at: int | None = None, source: str = "manual",
                     context: str | None = None) -> RememberResult:
        """Like :meth:`remember`, but says whether the fact was ``stored``, a ``duplicate``, a ``secret``
        or ``evicted`` (see :class:`~mindcore.ltm.RememberResult`)."""
        return self.remember_many([{"text": text, "kind": kind, "importance": importance,
                                    "created_at": created_at, "context": context}], source=source)[0]

    async def aremember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                        created_at: int | None = None, context: str | None = None) -> Memory | None:
        return await asyncio.to_thread(self.remember, text, kind, importance, created_at=created_at,
                                       context=context)

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any] | Candidate],
        *,
        dedupe: bool = True,
        source: str = "manual",
    ) -> list[RememberResult]:
        """Store many facts in one write (bulk import); one :class:`RememberResult` per item, in order.

        Items are strings or mappings with ``text`` and optional ``kind``, ``importance``,
        ``created_at`` (unix ms) and ``context`` (see :meth:`remember`). Every item passes the secret
        filter; with ``dedupe`` (the default) near-duplicates of stored memories and of earlier items
        are not stored. Raises ``ValueError``
        (storing nothing) if any item is malformed.
        """
        if isinstance(items, str | bytes | Mapping):
            # A bare string would store one memory per character; a single mapping, its keys.
            raise InvalidTypeError(f"items: expected a list of texts or mappings, got {type(items).__name__}")
        rows = [self._validate(item) for item in items]
        return self._ingest(rows, dedupe=dedupe, source=source)[0]

    def _validate(self, item: str | Mapping[str, Any] | Candidate) -> _Row:
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
        problem = text_problem(text) or (text_problem(context) if isinstance(context, str) else None)
        if problem:
            raise InvalidInputError(f"{'text' if text_problem(text) else 'context'}: {problem}")
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

    def _ingest(
        self, rows: Sequence[_Row], *, dedupe: bool, source: str
    ) -> tuple[list[RememberResult], int]:
        """The write pipeline every path shares: secret filter, embed, near-duplicate checks (within
        the batch and against the store), then one commit holding the inserts and the evictions."""
        results: list[RememberResult] = [RememberResult("secret", None)] * len(rows)
        clean = [i for i, row in enumerate(rows)
                 if not looks_like_secret(row[0]) and not (row[4] and looks_like_secret(row[4]))]
        if not clean:
            return results, 0
        vectors = self._embed([embedded_text(rows[i][0], rows[i][4]) for i in clean])
        keep = dedupe_within(vectors, threshold=DUPLICATE_THRESHOLD) if dedupe else np.ones(len(clean), bool)
        # Within the batch, a dropped item is a duplicate of the first kept item it matches.
        first_of = np.arange(len(clean))
        if not keep.all():
            kept = np.flatnonzero(keep)
            first_of[~keep] = kept[near_duplicates(vectors[~keep], vectors[kept], threshold=DUPLICATE_THRESHOLD)[0]]
        # Check against the stored vectors and write under one lock: two threads of this process
        # cannot both add the same fact.
        with self._write_lock:
            ids, stored_vectors = self._repo.vectors()
            now = self._clock()
            candidates = np.flatnonzero(keep)
            existing = np.full(len(clean), -1, dtype=np.int64)
            if dedupe and ids and candidates.size:
                existing[candidates] = near_duplicates(vectors[candidates], stored_vectors,
                                                       threshold=DUPLICATE_THRESHOLD)[0]
            fresh = [int(j) for j in candidates if existing[j] < 0]
            new = []
            for j in fresh:
                text, kind, importance, created_at, context = rows[clean[j]]
                new.append(self._repo.new_memory(NewMemory(
                    text=text, kind=kind, importance=importance,
                    created_at=now if created_at is None else created_at, source=source, context=context)))
            new_vectors = vectors[fresh]
            victims, dropped = self._plan_eviction(ids, new, new_vectors, now)
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

    def _plan_eviction(self, ids: Sequence[str], new: Sequence[Memory], new_vectors: np.ndarray,
                       now: int) -> tuple[list[str], set[int]]:
        """Which stored ids to delete and which new memories not to write, so at most ``max_items``
        remain: the lowest by recency and importance (0.2·2^(-age/half_life) + 0.1·importance) over
        stored and new memories together, ranked by the store's scorer with the similarity weight at 0."""
        total = len(ids) + len(new)
        if self.max_items == 0 or total <= self.max_items:
            return [], set()
        weights = Weights(similarity=0.0, recency=EVICT_RECENCY, extra=EVICT_IMPORTANCE,
                          half_life_ms=self.weights.half_life_days * DAY_MS)
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
        cut = order[self.max_items:]
        victims = [ids[i] for i in cut if i < len(ids)]
        dropped = {int(i) - len(ids) for i in cut if i >= len(ids)}
        return victims, dropped

    # -- extraction -----------------------------------------------------------------------------

    def remember_conversation(self, messages: Iterable[Any]) -> ExtractionReport:
        """Mine a finished turn for durable facts and store them; returns what happened.

        Only user and assistant messages (the last 12,000 characters) reach the extractor. An LLM
        failure or an unparseable reply stores nothing, is logged, and is reported in ``.error``.
        """
        extractor = self._require_extractor()
        conversation = render_conversation(messages)
        if not conversation:
            return ExtractionReport()
        try:
            reply = extractor.complete(build_extraction_messages(conversation), json=True)
        except Exception as exc:  # whatever the LLM client raises, stored memories are untouched
            return self._failed(f"extraction LLM failed: {type(exc).__name__}: {exc}")
        return self.ingest_extraction(reply)

    async def aremember_conversation(self, messages: Iterable[Any]) -> ExtractionReport:
        """The async twin of :meth:`remember_conversation` (``asyncio.create_task`` it to run in the background)."""
        extractor = self._require_extractor()
        conversation = render_conversation(messages)
        if not conversation:
            return ExtractionReport()
        try:
            reply = await extractor.acomplete(build_extraction_messages(conversation), json=True)
        except Exception as exc:
            return self._failed(f"extraction LLM failed: {type(exc).__name__}: {exc}")
        return await asyncio.to_thread(self.ingest_extraction, reply)

    def remember_conversation_in_background(self, messages: Iterable[Any]) -> Future[ExtractionReport]:
        """Fire-and-forget :meth:`remember_conversation` on this memory's background thread.

        The messages are copied now; :meth:`flush` (or the returned future) waits for the result.
        Turns queued while the worker is busy are extracted one after the other (one LLM call at a
        time) and stored together, in one commit: a burst of turns costs one write instead of one
        per turn (a commit costs far more than the pipeline's own work; see ``benches/bench_ltm.py``).
        """
        self._require_extractor()
        snapshot = [dict(m) if isinstance(m, Mapping) else m for m in messages]
        future: Future[ExtractionReport] = Future()
        with self._queue_lock:
            self._queued.append((snapshot, future))
            start, self._draining = not self._draining, True
        if start:
            try:
                self._background.submit(self._drain_queue)
            except RuntimeError as exc:  # the worker was shut down (close): nothing queued will run
                with self._queue_lock:
                    stranded, self._queued, self._draining = self._queued, [], False
                for _, f in stranded:
                    if f is not future and f.set_running_or_notify_cancel():
                        f.set_exception(exc)
                raise
        return future

    def _drain_queue(self) -> None:
        """The background worker: extract and store whatever is queued, in batches of at most
        ``_COALESCE_MAX`` turns, until the queue is empty."""
        while True:
            with self._queue_lock:
                batch, self._queued = self._queued[: self._COALESCE_MAX], self._queued[self._COALESCE_MAX:]
                if not batch:
                    self._draining = False
                    return
            live = [(m, f) for m, f in batch if f.set_running_or_notify_cancel()]
            if not live:
                continue
            try:
                reports = self._extract_and_ingest([m for m, _ in live], concurrency=1)
            except Exception as exc:  # a failed commit fails this batch's futures, not the worker
                log.exception("long-term memory: background extraction failed")
                for _, f in live:
                    f.set_exception(exc)
                continue
            for (_, f), report in zip(live, reports, strict=True):
                f.set_result(report)

    def ingest_extraction(self, reply: str) -> ExtractionReport:
        """Parse an extraction LLM's reply and store its candidates (the pipeline after the LLM call)."""
        return self.ingest_extractions([reply])[0]

    def ingest_extractions(self, replies: Sequence[str]) -> list[ExtractionReport]:
        """:meth:`ingest_extraction` for many replies: one embedding call, one commit.

        Stored memories evicted by that commit are counted on the last report.
        """
        reports: list[ExtractionReport] = []
        rows: list[_Row] = []
        owner: list[int] = []
        for n, reply in enumerate(replies):
            try:
                parsed = parse_candidates(reply)
            except ExtractionParseError as exc:
                reports.append(self._failed(f"extraction reply rejected: {exc}"))
                continue
            reports.append(ExtractionReport(candidates=len(parsed.candidates), invalid=parsed.invalid,
                                            over_limit=parsed.over_limit))
            rows.extend((c.text, c.kind, c.importance, None, None) for c in parsed.candidates)
            owner.extend([n] * len(parsed.candidates))
        if not rows:
            return reports
        results, evicted = self._ingest(rows, dedupe=True, source="extraction")
        for n, result in zip(owner, results, strict=True):
            report = reports[n]
            if result.status == "stored" and result.memory is not None:
                report.stored.append(result.memory)
            elif result.status == "duplicate":
                report.duplicates += 1
            elif result.status == "secret":
                report.secrets += 1
            else:
                report.evicted += 1
        reports[owner[-1]].evicted += evicted - sum(r.evicted for r in reports)
        return reports

    def remember_conversations(self, conversations: Sequence[Iterable[Any]], *,
                               concurrency: int = 4) -> list[ExtractionReport]:
        """Backfill: extract from many conversations (``concurrency`` LLM calls at a time), then
        store every candidate in one pass and one commit. One report per conversation."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency: expected a positive int, got {concurrency!r}")
        self._require_extractor()
        return self._extract_and_ingest(conversations, concurrency=concurrency)

    def _extract_and_ingest(self, conversations: Sequence[Iterable[Any]], *,
                            concurrency: int) -> list[ExtractionReport]:
        extractor = self._require_extractor()
        rendered = [render_conversation(c) for c in conversations]

        def ask(conversation: str) -> str | ExtractionReport:
            if not conversation:
                return ExtractionReport()
            try:
                return str(extractor.complete(build_extraction_messages(conversation), json=True))
            except Exception as exc:  # one failed call loses that conversation only
                return self._failed(f"extraction LLM failed: {type(exc).__name__}: {exc}")

        if concurrency == 1:
            replies = [ask(c) for c in rendered]
        else:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="mindcore-ltm-extract") as pool:
                replies = list(pool.map(ask, rendered))
        ingested = iter(self.ingest_extractions([r for r in replies if isinstance(r, str)]))
        return [r if isinstance(r, ExtractionReport) else next(ingested) for r in replies]

    def _require_extractor(self) -> Any:
        if self.extractor is None:
            raise ValueError("remember_conversation needs an extractor: pass extractor=<LLM> to create()")
        return self.extractor

    @staticmethod
    def _failed(message: str) -> ExtractionReport:
        log.warning("long-term memory extraction stored nothing: %s", message)
        return ExtractionReport(error=message)

    # -- removal and inspection -----------------------------------------------------------------

    def forget(self, memory_id: str) -> bool:
        """Delete one memory for good; ``False`` if there was no such memory."""
        _require_id("memory_id", memory_id)
        with self._write_lock:
            return self._repo.delete([memory_id]) > 0

    def clear(self) -> int:
        """Delete every memory in this scope for good; returns how many there were."""
        with self._write_lock:
            return self._repo.clear()

    async def aforget(self, memory_id: str) -> bool:
        return await asyncio.to_thread(self.forget, memory_id)

    async def aclear(self) -> int:
        return await asyncio.to_thread(self.clear)

    async def aremember_many(self, items: Iterable[str | Mapping[str, Any] | Candidate], *, dedupe: bool = True,
                             source: str = "manual") -> list[RememberResult]:
        return await asyncio.to_thread(lambda: self.remember_many(items, dedupe=dedupe, source=source))

    def memories(self) -> list[Memory]:
        """Every stored memory in this scope, oldest first."""
        return self._repo.all()

    def get(self, memory_id: str) -> Memory | None:
        """The memory with this id in this scope, or ``None``."""
        found = self._repo.get([memory_id])
        return found[0] if found else None

    def __len__(self) -> int:
        return self._repo.count()

    # -- tools ----------------------------------------------------------------------------------

    @property
    def tools(self) -> Toolset:
        """``ltm_recall(query, k?)`` and ``ltm_remember(text, kind?, importance?)``."""
        return self._toolset

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Dispatch a model's tool call (see :attr:`tools`)."""
        return self._toolset.call(name, arguments)

    # -- background work ------------------------------------------------------------------------

    def _schedule_touch(self, memories: Sequence[Memory], now: int) -> None:
        """Queue last-access bumps; they are written together ``touch_delay`` seconds later (or at
        :meth:`flush`, :meth:`close` or interpreter exit), so a burst of recalls costs one write."""
        with self._touch_lock:
            for m in memories:
                accessed, recency = self._pending_touch.get(m.id, (0, 0))
                self._pending_touch[m.id] = (max(accessed, now), max(recency, now, m.created_at))
            if self._touch_timer is not None:
                return
            timer = threading.Timer(self.touch_delay, self._write_touches)
            timer.daemon = True  # pending bumps are written by the exit hook instead
            self._touch_timer = timer
        timer.start()

    def _write_touches(self) -> None:
        with self._touch_io:
            with self._touch_lock:
                pending, self._pending_touch = self._pending_touch, {}
                self._touch_timer = None
            if not pending:
                return
            try:
                self._repo.touch(pending)
            except Exception:  # a failed bump only makes memories age a little faster
                log.exception("long-term memory: could not record last access of %d memories", len(pending))

    @property
    def _background(self) -> ThreadPoolExecutor:
        # Created on first use: a memory that never runs background work holds no thread.
        with self._touch_lock:
            if self._background_pool is None:
                self._background_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mindcore-ltm")
            return self._background_pool

    def flush(self) -> None:
        """Write pending last-access bumps now and wait for background extractions to finish."""
        with self._touch_lock:
            timer, self._touch_timer = self._touch_timer, None
        if timer is not None:
            timer.cancel()
        self._write_touches()
        if self._background_pool is not None:
            self._background_pool.submit(lambda: None).result()

    def close(self) -> None:
        """Finish background work (pending bumps, queued extractions), release the worker thread,
        and close the store if this memory opened it (it was given a path)."""
        self.flush()
        if self._background_pool is not None:
            self._background_pool.shutdown(wait=True)
        _LIVE.discard(self)
        if self._owns_store:  # it was given a path and opened the store itself
            self.store.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.ascontiguousarray(self.embedder.embed(texts), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"embedder returned shape {vectors.shape} for {len(texts)} texts")
        return vectors
