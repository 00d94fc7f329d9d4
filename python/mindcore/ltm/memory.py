"""`LongTermMemory`: durable, private facts about one user, recalled by meaning, recency and importance.

The write pipeline lives in :mod:`mindcore.ltm.pipeline`, the background workers in
:mod:`mindcore.ltm.background`, storage in :mod:`mindcore.ltm._repo`; this class ties them together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from mindcore.embed.base import check_embedder, check_vectors
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.llm.base import check_llm
from mindcore.ltm._history import (
    LINKING,
    earlier_versions,
    last_states,
    retired_versions,
    state_ids,
    valid_events,
)
from mindcore.ltm._order import TIE_MARGIN, by_score_then_id
from mindcore.ltm._repo import HistoryEvent, HistoryRepo, MemoryRepo
from mindcore.ltm._when import time_window
from mindcore.ltm.background import ExtractionQueue, TouchWriter
from mindcore.ltm.config import DAY_MS, LongTermMemoryConfig, RecallOptions, RecallWeights, resolve_enabled
from mindcore.ltm.extract import (
    Candidate,
    ExtractionParseError,
    build_extraction_messages,
    parse_candidates,
    render_conversation,
)
from mindcore.ltm.pipeline import (
    DUPLICATE_THRESHOLD,
    EVICT_IMPORTANCE,
    EVICT_RECENCY,
    Row,
    WritePipeline,
    validate_item,
    validate_items,
)
from mindcore.ltm.render import render_memories
from mindcore.ltm.rewrite import best_of, rewrite_query
from mindcore.ltm.tools import build_toolset
from mindcore.ltm.types import DEFAULT_KIND, ExtractionReport, Memory, MemoryVersion, RememberResult
from mindcore.store import StoreLike, resolve_store
from mindcore.toolspec import Toolset
from mindcore.tracing import traced
from mindcore.validation import check_bool, check_callable

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.llm import LLM
    from mindcore.store import Store

__all__ = ["DUPLICATE_THRESHOLD", "EVICT_IMPORTANCE", "EVICT_RECENCY", "LongTermMemory", "RecallWeights"]

log = logging.getLogger("mindcore.ltm")

MAX_RECALL_K = 1_000
# A query longer than this is cut for embedding and matching (with a warning): far more than any
# question, and it keeps a pasted document from costing seconds per recall.
MAX_QUERY_CHARS = 8_000


# At equal times, history lists a version's first entry, then what happened to it, then repeats.
_ORDER = {"created": 0, "updated": 1, "superseded": 1, "evicted": 1, "forgotten": 1, "restored": 1, "related": 3,
          "duplicate": 3}


def _count(queries: Any) -> int | None:
    """How many queries a :meth:`LongTermMemory.recall_many` call was given (for its span)."""
    return len(queries) if isinstance(queries, Sequence) and not isinstance(queries, str) else None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


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
    >>> ltm.remember("api_key = sk-live-9fQ2xK7mR4tW1zB8nL5vC3jH6dP0sY") is None
    True
    """

    # At most this many queued background turns are stored in one commit.
    _COALESCE_MAX = 64

    _extractions: ExtractionQueue

    def __init__(
        self,
        store: StoreLike,
        *,
        user_id: str,
        namespace: str = "default",
        workspace_id: str | None = None,
        embedder: Embedder,
        extractor: LLM | None = None,
        config: LongTermMemoryConfig | None = None,
        max_items: int | None = None,
        weights: RecallWeights | None = None,
        clock: Callable[[], int] | None = None,
        touch_delay: float | None = None,
        resolver: LLM | Literal[False] | None = None,
    ) -> None:
        _require_id("user_id", user_id)
        _require_id("namespace", namespace)
        _require_id("workspace_id", workspace_id, optional=True)
        check_embedder(embedder)
        if extractor is not None:
            check_llm(extractor, "extractor")
        if resolver is not None and resolver is not False:
            check_llm(resolver, "resolver")
        if config is not None and not isinstance(config, LongTermMemoryConfig):
            raise InvalidTypeError(f"config: expected a LongTermMemoryConfig, got {type(config).__name__}")
        if clock is not None:
            check_callable(clock, "clock")
        overrides: dict[str, Any] = {"max_items": max_items, "weights": weights, "touch_delay": touch_delay,
                                     "resolver": resolver}
        base = config or LongTermMemoryConfig()
        # The keyword options override the config (both spellings keep working).
        self.config = dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})
        # Identifiers are stored too (in every row and in the scope's name): screened first.
        for field_name, ident in (("user_id", user_id), ("namespace", namespace), ("workspace_id", workspace_id)):
            if ident is not None:
                self.config.secrets.screen_identifier(ident, field_name)
        self.user_id = user_id
        self.namespace = namespace
        self.workspace_id = workspace_id
        self.embedder = embedder
        self.extractor = extractor
        #: The LLM that judges every write's pairs (``None``: the conservative judgement, or the
        #: extractor for what extraction writes; see ``LongTermMemoryConfig.resolver``).
        chosen = self.config.resolver
        self.resolver: LLM | None = None if chosen is None or chosen is False else chosen
        # What judges extraction's writes: the resolver, else the extractor unless told otherwise.
        self._extraction_resolver = self.resolver if self.resolver is not None else (
            extractor if chosen is None else None)
        self._clock = clock or _now_ms
        # Opened (and checked writable) after the arguments: a bad argument opens nothing.
        self.store: Store = resolve_store(store)
        self._owns_store = self.store is not store
        self._repo = MemoryRepo(self.store, user_id=user_id, namespace=namespace, workspace_id=workspace_id,
                                embedder=embedder)
        self._history = HistoryRepo(self.store)
        self._pipeline = WritePipeline(self.store, self._repo, self.config, self._embed, self._clock,
                                       resolver=self.resolver)
        # Last-access bumps are coalesced and written off recall's path.
        self._touches = TouchWriter(lambda pending: self._repo.touch(pending), self.config.touch_delay)
        self._extractions = ExtractionQueue(
            lambda turns, threads: self._extract_and_ingest(turns, concurrency=1, threads=threads),
            coalesce_max=self._COALESCE_MAX)
        self._toolset = build_toolset(self)

    @property
    def max_items(self) -> int:
        """The most memories this scope keeps (0: no limit)."""
        assert self.config.max_items is not None  # resolved by the config
        return self.config.max_items

    @property
    def weights(self) -> RecallWeights:
        return self.config.weights

    @property
    def touch_delay(self) -> float:
        return self.config.touch_delay

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
        config: LongTermMemoryConfig | None = None,
        max_items: int | None = None,
        weights: RecallWeights | None = None,
        clock: Callable[[], int] | None = None,
        touch_delay: float | None = None,
        resolver: LLM | Literal[False] | None = None,
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
        ``resolver``: an LLM that judges whether a new memory duplicates, updates or contradicts
        the stored ones near it (one call per write that has such pairs, strict JSON, before the
        scope's lock is taken); whatever its reply does not settle is judged conservatively.
        ``None`` (the default): the ``extractor`` judges what extraction writes, and other writes
        act only on certainty (a near-verbatim repeat, an explicit negation of the same statement),
        keeping every other pair side by side; ``False``: no model judges. Everything retired is
        in :meth:`history` and comes back with :meth:`restore`.
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
                   extractor=extractor, config=config, max_items=max_items, weights=weights, clock=clock,
                   touch_delay=touch_delay, resolver=resolver)

    # -- recall ---------------------------------------------------------------------------------

    def recall(self, query: str, k: int = 5, *, touch: bool = True,
               options: RecallOptions | None = None) -> list[Memory]:
        """The ``k`` best memories for ``query``, best first, each with ``.score`` and ``.similarity``
        (:meth:`render` shows the newer of two related memories first, see :attr:`Memory.related`).

        A blank query recalls nothing. With ``touch`` (the default) the returned memories' last access
        is bumped in the background (see :meth:`flush`), so memories in use age slower. ``options``
        (default: ``config.recall``) says what recall adds around its hits: the memories next to a
        hit in its thread, and the lift of memories dated when the query says
        (:class:`~mindcore.ltm.RecallOptions`). With ``config.query_rewriter``, the model's search
        queries for ``query`` are ranked beside it and each memory keeps its best score
        (:mod:`mindcore.ltm.rewrite`).
        """
        return self.recall_many([query], k, touch=touch, options=options)[0]

    @traced("ltm.recall", k="k", queries=lambda call: _count(call["queries"]))
    def recall_many(self, queries: Sequence[str], k: int = 5, *, touch: bool = True,
                    options: RecallOptions | None = None) -> list[list[Memory]]:
        """:meth:`recall` for several queries at once (one embedding call, then one ranking pass per query)."""
        if options is not None and not isinstance(options, RecallOptions):
            raise InvalidTypeError(f"options: expected RecallOptions, got {type(options).__name__}")
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
        # Each question, then the search queries a configured rewriter gives for it.
        searches = [[queries[i], *self._rewrites(queries[i])] for i in asked]
        vectors = iter(self._embed([text for texts in searches for text in texts]))
        now = self._clock()
        around = self.config.recall if options is None else options
        # Without lexical fusion, the store's own search serves a scope without threads, as always.
        neighbours = around.neighbours if self.weights.lexical > 0 or self._repo.has_threads() else 0
        for i, texts in zip(asked, searches, strict=True):
            rankings = [self._rank(text, next(vectors), k, now, around, neighbours) for text in texts]
            if len(rankings) == 1:
                out[i] = rankings[0]
                continue
            # Each memory at its best score over the searches: the top k of that is within the
            # top k of each search, so the searches' own top k are all it needs.
            best = list(best_of(rankings).values())
            order = by_score_then_id([m.id for m in best], [float(m.score or 0.0) for m in best], k, complete=True)
            out[i] = [best[n] for n in order or []]
        if touch:
            self._touches.schedule([m for hits in out for m in hits], now)
        return out

    def _rewrites(self, question: str) -> list[str]:
        rewriter = self.config.query_rewriter
        if rewriter is None:
            return []
        return rewrite_query(rewriter, question, timeout=self.config.query_rewriter_timeout,
                             secrets=self.config.secrets)

    def _rank(self, query: str, vector: np.ndarray, k: int, now: int, around: RecallOptions,
              neighbours: int) -> list[Memory]:
        """The ``k`` best memories for one search, best first, equal scores in id order."""
        w = self.weights
        window = time_window(query, now) if around.time_boost > 0 else None
        fetch = k + TIE_MARGIN
        while True:  # equal scores are ordered by id: fetch until the run of ties at the cut ends
            if w.lexical > 0 or neighbours > 0 or window is not None:
                hits = self._repo.search_lexical(
                    vector, query, k=fetch, w_sim=w.similarity, w_rec=w.recency,
                    w_importance=w.importance, w_lexical=w.lexical, half_life_ms=w.half_life_days * DAY_MS,
                    now_ms=now, neighbours=neighbours, neighbour_decay=around.neighbour_decay,
                    window=window, time_boost=around.time_boost,
                )
            else:
                hits = self._repo.search(vector, k=fetch, weights=w.hybrid, now_ms=now)
            order = by_score_then_id([m.id for m in hits], [float(m.score or 0.0) for m in hits], k,
                                     complete=len(hits) < fetch)
            if order is not None:
                return [hits[n] for n in order]
            fetch *= 2

    async def arecall(self, query: str, k: int = 5, *, touch: bool = True,
                      options: RecallOptions | None = None) -> list[Memory]:
        return await asyncio.to_thread(self.recall, query, k, touch=touch, options=options)

    @staticmethod
    def render(memories: Iterable[Memory], *, dates: bool = False) -> str:
        """The ``<recalled-memories>`` block for the prompt (``""`` when there is nothing to show).
        Of two related memories both shown (a newer one kept beside an older one it may update,
        :attr:`Memory.related`), the newer comes first; ``dates=True`` adds the day each memory was
        stored (``- [fact] Moved to Berlin (2026-05-05)``), so the model sees which is newer."""
        return render_memories(memories, dates=dates)

    # -- writes ---------------------------------------------------------------------------------

    def remember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                 created_at: int | None = None, context: str | None = None, thread: str | None = None,
                 position: int | None = None) -> Memory | None:
        """Store one fact and return it; ``None`` when refused because it looks like a secret (or, for
        a backdated ``created_at`` in a full scope, when it ranks below every memory kept).

        ``context`` situates the fact, e.g. the turn it answers and who said it
        (``"Bob: How was the trip?\\nAlice:"``). Recall's BM25 side indexes the whole context with
        ``text`` and the vector embeds ``text`` after the context's last line (document expansion, see
        :func:`~mindcore.ltm.types.embedded_text`), but :meth:`render` shows ``text`` only.

        ``thread`` names the conversation (or session, document...) the fact came from and
        ``position`` its place there (a turn index; without it, order of ``created_at``): a recall
        that finds this memory brings the memories around it in the thread too
        (:class:`~mindcore.ltm.RecallOptions`), and :meth:`render` shows them in order. A thread is
        an identifier: one that looks like a secret is refused, whatever the secret policy's action.

        The new fact is judged against the stored memories near it (cosine ≥
        ``config.related_threshold``), on the texts alone, never their contexts: a duplicate is not
        stored again (the existing memory is returned and its last access bumped); an update ("Moved
        to Berlin" after "Lives in Lyon") or a contradiction ("Is not allergic to peanuts" after "Is
        allergic to peanuts") is stored and retires the old memory, which is then no longer recalled,
        rendered or counted, and stays in :meth:`history`. Use :meth:`try_remember` to tell these
        cases apart.
        """
        return self.try_remember(text, kind=kind, importance=importance, created_at=created_at,
                                 context=context, thread=thread, position=position).memory

    def try_remember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                     created_at: int | None = None, source: str = "manual",
                     context: str | None = None, thread: str | None = None,
                     position: int | None = None) -> RememberResult:
        """Like :meth:`remember`, but says what happened: ``.status`` (``stored``, ``duplicate``,
        ``secret`` or ``evicted``), ``.action`` (``created``, ``duplicate``, ``updated``,
        ``superseded``, ``evicted`` or ``refused``), ``.replaced`` (the memory it retired) and
        ``.reason`` (see :class:`~mindcore.ltm.RememberResult`)."""
        return self.remember_many([{"text": text, "kind": kind, "importance": importance,
                                    "created_at": created_at, "context": context, "thread": thread,
                                    "position": position}], source=source)[0]

    async def aremember(self, text: str, kind: str = DEFAULT_KIND, importance: float = 0.5, *,
                        created_at: int | None = None, context: str | None = None, thread: str | None = None,
                        position: int | None = None) -> Memory | None:
        return await asyncio.to_thread(self.remember, text, kind, importance, created_at=created_at,
                                       context=context, thread=thread, position=position)

    @traced("ltm.remember", source="source", user_id=lambda call: call["self"].user_id)
    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any] | Candidate],
        *,
        dedupe: bool = True,
        source: str = "manual",
    ) -> list[RememberResult]:
        """Store many facts in one write (bulk import); one :class:`RememberResult` per item, in order.

        Items are strings or mappings with ``text`` and optional ``kind``, ``importance``,
        ``created_at`` (unix ms), ``context``, ``thread`` and ``position`` (see :meth:`remember`). Every item passes the secret
        filter; with ``dedupe`` (the default) each item is judged as :meth:`remember` judges it,
        against the stored memories and the earlier items alike, as if remembered one after the
        other (an item retired by a later one is reported ``stored``; :meth:`history` shows it
        retired). ``dedupe=False`` stores every item as it is. Raises ``ValueError`` (storing
        nothing) if any item is malformed.
        """
        return self._pipeline.ingest(validate_items(items), dedupe=dedupe, source=source)[0]

    def _plan_eviction(self, ids: Sequence[str], new: Sequence[Memory], new_vectors: np.ndarray,
                       now: int) -> tuple[list[str], set[int]]:
        """See :meth:`mindcore.ltm.pipeline.WritePipeline.plan_eviction`."""
        return self._pipeline.plan_eviction(ids, new, new_vectors, now)

    # -- extraction -----------------------------------------------------------------------------

    def remember_conversation(self, messages: Iterable[Any], *, thread: str | None = None) -> ExtractionReport:
        """Mine a finished turn for durable facts and store them; returns what happened.

        Only user and assistant messages (the last 12,000 characters) reach the extractor. An LLM
        failure or an unparseable reply stores nothing, is logged, and is reported in ``.error``.

        ``thread`` names the conversation: the facts are stored in it, in the order they are
        stored, so recalling one brings those stored beside it (see :meth:`remember`). A thread
        that looks like a secret raises :class:`~mindcore.errors.SecretRefusedError` before the
        model is called.
        """
        extractor = self._require_extractor()
        thread = self._conversation_thread(thread)
        conversation = render_conversation(messages)
        if not conversation:
            return ExtractionReport()
        try:
            reply = extractor.complete(build_extraction_messages(conversation), json=True)
        except Exception as exc:  # whatever the LLM client raises, stored memories are untouched
            return self._failed(f"extraction LLM failed: {type(exc).__name__}: {exc}")
        return self.ingest_extraction(reply, thread=thread)

    async def aremember_conversation(self, messages: Iterable[Any], *, thread: str | None = None) -> ExtractionReport:
        """The async twin of :meth:`remember_conversation` (``asyncio.create_task`` it to run in the background)."""
        extractor = self._require_extractor()
        thread = self._conversation_thread(thread)
        conversation = render_conversation(messages)
        if not conversation:
            return ExtractionReport()
        try:
            reply = await extractor.acomplete(build_extraction_messages(conversation), json=True)
        except Exception as exc:
            return self._failed(f"extraction LLM failed: {type(exc).__name__}: {exc}")
        return await asyncio.to_thread(self.ingest_extraction, reply, thread=thread)

    def remember_conversation_in_background(self, messages: Iterable[Any], *,
                                            thread: str | None = None) -> Future[ExtractionReport]:
        """Fire-and-forget :meth:`remember_conversation` on this memory's background thread.

        The messages are copied now; :meth:`flush` (or the returned future) waits for the result.
        Turns queued while the worker is busy are extracted one after the other (one LLM call at a
        time) and stored together, in one commit: a burst of turns costs one write instead of one
        per turn (a commit costs far more than the pipeline's own work; see ``benches/bench_ltm.py``).
        """
        self._require_extractor()
        thread = self._conversation_thread(thread)
        snapshot = [dict(m) if isinstance(m, Mapping) else m for m in messages]
        return self._extractions.submit(snapshot, thread)

    def ingest_extraction(self, reply: str, *, thread: str | None = None) -> ExtractionReport:
        """Parse an extraction LLM's reply and store its candidates (the pipeline after the LLM
        call), in ``thread`` if given (see :meth:`remember_conversation`)."""
        return self.ingest_extractions([reply], threads=[thread])[0]

    def ingest_extractions(self, replies: Sequence[str], *,
                           threads: Sequence[str | None] | None = None) -> list[ExtractionReport]:
        """:meth:`ingest_extraction` for many replies (``threads``: one per reply, or none): one
        embedding call, one commit.

        Stored memories evicted by that commit are counted on the last report.
        """
        threads = self._conversation_threads(threads, len(replies))
        reports: list[ExtractionReport] = []
        rows: list[Row] = []
        owner: list[int] = []
        for n, reply in enumerate(replies):
            try:
                parsed = parse_candidates(reply)
            except ExtractionParseError as exc:
                reports.append(self._failed(f"extraction reply rejected: {exc}"))
                continue
            reports.append(ExtractionReport(candidates=len(parsed.candidates), invalid=parsed.invalid,
                                            over_limit=parsed.over_limit))
            rows.extend(Row(c.text, c.kind, c.importance, None, None, threads[n]) for c in parsed.candidates)
            owner.extend([n] * len(parsed.candidates))
        if not rows:
            return reports
        results, evicted = self._pipeline.ingest(rows, dedupe=True, source="extraction",
                                                 resolver=self._extraction_resolver)
        for n, result in zip(owner, results, strict=True):
            report = reports[n]
            if result.status == "stored" and result.memory is not None:
                report.stored.append(result.memory)
                if result.replaced is not None:
                    report.replaced.append(result.replaced)
            elif result.status == "duplicate":
                report.duplicates += 1
            elif result.status == "secret":
                report.secrets += 1
            else:
                report.evicted += 1
        reports[owner[-1]].evicted += evicted - sum(r.evicted for r in reports)
        return reports

    def remember_conversations(self, conversations: Sequence[Iterable[Any]], *, concurrency: int = 4,
                               threads: Sequence[str | None] | None = None) -> list[ExtractionReport]:
        """Backfill: extract from many conversations (``concurrency`` LLM calls at a time), then
        store every candidate in one pass and one commit. One report per conversation;
        ``threads``, one per conversation, names the thread each one's facts are stored in (see
        :meth:`remember_conversation`)."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency: expected a positive int, got {concurrency!r}")
        self._require_extractor()
        return self._extract_and_ingest(conversations, concurrency=concurrency,
                                        threads=self._conversation_threads(threads, len(conversations)))

    def _conversation_thread(self, thread: object) -> str | None:
        """``thread`` as :meth:`remember` takes it (a ``ValueError`` otherwise), screened by the
        secret policy: one that looks like a secret raises ``SecretRefusedError``."""
        if thread is None:
            return None
        row = validate_item({"text": "-", "thread": thread})
        return None if row.thread is None else self.config.secrets.screen_identifier(row.thread, "thread")

    def _conversation_threads(self, threads: Sequence[str | None] | None, n: int) -> list[str | None]:
        if threads is None:
            return [None] * n
        if isinstance(threads, str) or not isinstance(threads, Sequence) or len(threads) != n:
            raise ValueError(f"threads: expected a sequence of {n} threads (one per conversation), got {threads!r}")
        return [self._conversation_thread(t) for t in threads]

    def _extract_and_ingest(self, conversations: Sequence[Iterable[Any]], *,
                            concurrency: int, threads: Sequence[str | None]) -> list[ExtractionReport]:
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
        asked = [n for n, r in enumerate(replies) if isinstance(r, str)]
        ingested = iter(self.ingest_extractions([str(replies[n]) for n in asked], threads=[threads[n] for n in asked]))
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

    def forget(self, memory_id: str, *, purge: bool = False) -> bool:
        """Delete one memory for good, with its history: every event of it and of the earlier
        versions it replaced (their texts included). ``memory_id`` may also be a retired version
        (see :meth:`history`): it and its own earlier versions are deleted, its successor stays, and
        the successor's history marks it ``forgotten`` (no text). ``False`` if there was no such
        memory in this scope.

        The memory is no longer recalled, but until the store's next compaction and the end of
        ``StoreConfig.cleanup_grace`` its text stays in files of the store (old versions serve
        readers in other processes). ``purge=True`` erases it at once, with its history: when
        this returns, neither is in any file of the store, on a folder or on object storage.
        Purging rewrites the table's files holding deleted rows and drops every old version, so
        it costs a compaction; processes reading the store meanwhile re-open the latest version.

        >>> import mindcore
        >>> from mindcore.embed import HashEmbedder
        >>> ltm = mindcore.LongTermMemory(mindcore.open("memory://"), user_id="u1", embedder=HashEmbedder())
        >>> m = ltm.remember("Lives at 12 Rue Oberkampf")
        >>> ltm.forget(m.id, purge=True), len(ltm)
        (True, 0)
        """
        _require_id("memory_id", memory_id)
        check_bool(purge, "purge")
        # A pending last-access bump is written first, so nothing writes the row after the purge.
        self._touches.flush()
        with self._pipeline.locked():
            events = self._pipeline.events()
            chain = earlier_versions(events, memory_id)
            # A retired version's successor (not a restored one's: it is live on its own again).
            last = last_states(events).get(memory_id)
            successor = str(last["successor_id"]) if last and last["action"] in LINKING and last["successor_id"] else None
            gone = self._history.delete_memories(self._repo.ns, chain, purge=purge)
            if successor is not None:
                self._history.append([(self._repo.ns, HistoryEvent(Memory(id=memory_id, text=""), "forgotten",
                                                                   self._clock(), successor_id=successor))])
            # With purge the memory table is purged even when the id was a retired version: its
            # text stayed in the table's files after it moved to history.
            return self._repo.delete([memory_id], purge=purge) > 0 or gone > 0

    def clear(self, *, purge: bool = False) -> int:
        """Delete every memory in this scope for good, and their history; returns how many memories there were.

        ``purge=True``: as in :meth:`forget`, the texts and the scope's history are in no file of
        the store when this returns. Other scopes are untouched.
        """
        check_bool(purge, "purge")
        self._touches.flush()
        with self._pipeline.locked():
            self._history.clear(self._repo.ns, purge=purge)
            return self._repo.clear(purge=purge)

    def history(self, memory_id: str) -> list[MemoryVersion]:
        """The versions of a memory, oldest first: each version's ``created`` entry, the times the
        same fact was remembered again (``duplicate``), how it left (``updated`` or ``superseded``
        by its successor, ``evicted``) and came back (``restored``, see :meth:`restore`),
        following the chain both ways from ``memory_id`` (a live memory or a retired one). ``[]``
        for an unknown id. Events of a write that never landed (a process killed between its
        two commits) are left out.

        >>> import mindcore
        >>> from mindcore.embed import HashEmbedder
        >>> ltm = LongTermMemory.create(mindcore.open("memory://ltm-history"), user_id="u1",
        ...                             embedder=HashEmbedder(), enabled=True)
        >>> first = ltm.try_remember("Is allergic to peanuts").memory
        >>> ltm.try_remember("Is not allergic to peanuts").action
        'superseded'
        >>> [(v.text, v.action) for v in ltm.history(first.id)]  # doctest: +NORMALIZE_WHITESPACE
        [('Is allergic to peanuts', 'created'), ('Is allergic to peanuts', 'superseded'),
         ('Is not allergic to peanuts', 'created')]
        """
        _require_id("memory_id", memory_id)
        events = self._events()
        successor: dict[str, str] = {}
        predecessors: dict[str, list[str]] = {}
        for e in events:
            if e["action"] in LINKING and e["successor_id"]:
                successor[str(e["memory_id"])] = str(e["successor_id"])
                predecessors.setdefault(str(e["successor_id"]), []).append(str(e["memory_id"]))
        chain: set[str] = set()
        todo = [memory_id]
        while todo:  # both ways: a version's predecessors and its successor, transitively
            current = todo.pop()
            if current in chain:
                continue
            chain.add(current)
            todo += predecessors.get(current, [])
            if current in successor:
                todo.append(successor[current])
        live = {m.id: m for m in self._repo.get(sorted(chain))}
        versions: list[MemoryVersion] = []
        created: set[str] = set()

        def add_created(mid: str, text: str, kind: str, at: int) -> None:
            if mid in created:
                return
            created.add(mid)
            before = predecessors.get(mid, [])
            versions.append(MemoryVersion(mid, text, kind, "created", at, predecessor_id=before[0] if before else None))

        for e in events:
            mid = str(e["memory_id"])
            if mid not in chain:
                continue
            if e["action"] != "forgotten" and mid not in live:
                add_created(mid, str(e["text"] or ""), str(e["kind"] or ""), int(e["memory_created_at"] or 0))
            versions.append(MemoryVersion(
                mid, str(e["text"] or ""), str(e["kind"] or ""), e["action"], int(e["created_at"] or 0),
                reason=e["reason"], successor_id=e["successor_id"] or None))
        for m in live.values():
            add_created(m.id, m.text, m.kind, m.created_at)
        # At equal times: a first version, what happened to versions, their successors, repeats.
        versions.sort(key=lambda v: (v.at, _ORDER[v.action] if v.action != "created" or not v.predecessor_id else 2))
        return versions

    def _events(self) -> list[Any]:
        """The scope's history events, oldest first, without those of a write that never landed
        (a process killed between its two commits; the next write deletes them)."""
        events = self._history.events(self._repo.ns)
        return valid_events(events, self._repo.live_among(state_ids(events)))

    def retired(self) -> list[MemoryVersion]:
        """The memories of this scope retired now (``updated`` or ``superseded`` by a newer one, or
        ``evicted``, and not restored since), newest retirement first: each with ``action``,
        ``reason`` and ``successor_id`` as its retiring event recorded them. Any of them can be
        brought back with :meth:`restore`.

        >>> import mindcore
        >>> from mindcore.embed import HashEmbedder
        >>> ltm = LongTermMemory(mindcore.open("memory://"), user_id="u1", embedder=HashEmbedder())
        >>> old = ltm.remember("Is allergic to peanuts")
        >>> new = ltm.remember("Is not allergic to peanuts")
        >>> [(v.memory_id == old.id, v.action, v.successor_id == new.id) for v in ltm.retired()]
        [(True, 'superseded', True)]
        """
        events = self._history.events(self._repo.ns)
        return retired_versions(events, self._repo.live_among(state_ids(events)))

    async def aretired(self) -> list[MemoryVersion]:
        """The async twin of :meth:`retired`."""
        return await asyncio.to_thread(self.retired)

    def restore(self, memory_id: str) -> Memory:
        """Bring a retired memory back (see :meth:`retired`): it is live again with the same id,
        text, kind, importance, source, context and ``created_at`` (re-embedded with this memory's
        embedder; its last access is now), and :meth:`history` records it ``restored``. The
        memory that retired it stays live: both are kept. A memory that is already live is
        returned unchanged (nothing is written).

        Raises :class:`~mindcore.errors.MemoryNotFoundError` (nothing written) for an id that is
        neither live nor retired in this scope, e.g. one that was forgotten, and
        :class:`~mindcore.errors.SecretRefusedError` if the secret policy now refuses its text.
        The write holds the scope's lock, and first deletes the history events of any write that
        never landed (a process killed between a write's two commits), so the history it extends
        is true. In a full scope the lowest other memory is evicted, as a write would.

        >>> import mindcore
        >>> from mindcore.embed import HashEmbedder
        >>> ltm = LongTermMemory(mindcore.open("memory://"), user_id="u1", embedder=HashEmbedder())
        >>> old = ltm.remember("Is allergic to peanuts")
        >>> _ = ltm.remember("Is not allergic to peanuts")
        >>> ltm.restore(old.id).text
        'Is allergic to peanuts'
        >>> sorted(m.text for m in ltm.memories())
        ['Is allergic to peanuts', 'Is not allergic to peanuts']
        >>> [v.action for v in ltm.history(old.id) if v.memory_id == old.id]
        ['created', 'superseded', 'restored']
        """
        _require_id("memory_id", memory_id)
        memory, restored = self._pipeline.restore(memory_id)
        if restored:
            log.info("restored %s: %s", memory.id, memory.text)
        return memory

    async def arestore(self, memory_id: str) -> Memory:
        """The async twin of :meth:`restore`."""
        return await asyncio.to_thread(self.restore, memory_id)

    async def aforget(self, memory_id: str, *, purge: bool = False) -> bool:
        return await asyncio.to_thread(lambda: self.forget(memory_id, purge=purge))

    async def aclear(self, *, purge: bool = False) -> int:
        return await asyncio.to_thread(lambda: self.clear(purge=purge))

    async def aremember_many(self, items: Iterable[str | Mapping[str, Any] | Candidate], *, dedupe: bool = True,
                             source: str = "manual") -> list[RememberResult]:
        return await asyncio.to_thread(lambda: self.remember_many(items, dedupe=dedupe, source=source))

    async def ahistory(self, memory_id: str) -> list[MemoryVersion]:
        """The async twin of :meth:`history`."""
        return await asyncio.to_thread(self.history, memory_id)

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

    async def acall(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.call, name, arguments)

    # -- background work ------------------------------------------------------------------------

    def flush(self) -> None:
        """Write pending last-access bumps now and wait for background extractions to finish."""
        self._touches.flush()
        self._extractions.wait()

    def close(self) -> None:
        """Finish background work (pending bumps, queued extractions), release the worker thread,
        and close the store if this memory opened it (it was given a path)."""
        self._extractions.wait()
        self._extractions.close()
        self._touches.close()
        if self._owns_store:  # it was given a path and opened the store itself
            self.store.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _embed(self, texts: list[str]) -> np.ndarray:
        dim = self._repo.table.dim or self.embedder.dim
        return check_vectors(self.embedder.embed(texts), len(texts), dim, f"embedder {self.embedder.model_id}")
