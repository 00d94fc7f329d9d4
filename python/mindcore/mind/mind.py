"""`Mind` (an agent's persistent goals, beliefs and reflections) and `MindRun` (one run of it)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from mindcore import validation
from mindcore.embed.base import check_embedder, check_vectors
from mindcore.errors import InvalidTypeError
from mindcore.mind._repo import Repo, StoreView
from mindcore.mind.config import MindConfig, parse_due_by
from mindcore.mind.draft import (
    Claims,
    DraftBelief,
    DraftBuffer,
    DraftGoal,
    DraftReflection,
    GoalUpdate,
    apply_goal_update,
    belief_key,
    goal_key,
    goal_row,
    plan_flush,
    replaced,
    same_belief,
)
from mindcore.mind.entries import (
    CONFIDENCES,
    PRIORITIES,
    PRIORITY_RANK,
    STATUSES,
    Belief,
    BeliefChange,
    Confidence,
    Goal,
    GoalStatus,
    Priority,
    RecallResult,
    Reflection,
)
from mindcore.mind.header import HeaderBudget, render_header
from mindcore.mind.recall import RECALL_WEIGHTS, match_goals
from mindcore.mind.tools import build_toolset
from mindcore.mind.validate import (
    MindError,
    check_bool,
    check_choice,
    check_duration,
    check_id,
    check_tags,
    check_text,
)
from mindcore.toolspec import Toolset

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.store import Store, StoreLike

__all__ = ["Believed", "FlushReport", "Mind", "MindRun", "Reflected"]

log = logging.getLogger("mindcore.mind")

RecallType = Literal["belief", "reflection", "goal", "all"]
_RECALL_TYPES: tuple[RecallType, ...] = ("belief", "reflection", "goal", "all")

_CLAIMS: weakref.WeakKeyDictionary[Any, dict[str, Claims]] = weakref.WeakKeyDictionary()
_CLAIMS_GUARD = threading.Lock()


def _claims_for(store: Any, namespace: str) -> Claims:
    """The in-flight claims shared by every run of one mind namespace in this process."""
    with _CLAIMS_GUARD:
        return _CLAIMS.setdefault(store, {}).setdefault(namespace, Claims())


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Believed(NamedTuple):
    """What :meth:`MindRun.believe` did: ``action`` is ``created``, ``updated_store`` or
    ``updated_draft``; ``id`` is the belief's id. ``replaced`` is set when the new content
    contradicts or updates the content it replaced (which goes into the belief's history)."""

    action: Literal["created", "updated_store", "updated_draft"]
    id: str
    replaced: BeliefChange | None = None


class Reflected(NamedTuple):
    """The new reflection's id, and a warning when pinned rules are within 2 of the cap."""

    id: str
    warning: str | None = None


@dataclass(frozen=True)
class FlushReport:
    """What a run's flush wrote: ``version`` is the table version of its single commit
    (``None`` if there was nothing to write); ``dropped`` lists writes that were refused at
    flush time and why (a cap reached by a concurrent run, a goal completed meanwhile, or the
    goal writes and unpins of a crashed run)."""

    error: bool
    version: int | None = None
    created: int = 0
    updated: int = 0
    dropped: list[str] = field(default_factory=list)


class Mind:
    """An agent's persistent mind: goals, beliefs and reflections kept in a store, a header for
    the system prompt and seven tools for the model.

    ``store`` is a :class:`mindcore.store.Store` or anything :func:`mindcore.open` takes (a path,
    ``memory://...``, an object-storage URI; ``None`` for the default). The entries live in
    namespace ``config.namespace`` (default ``mind/<agent>``). ``embedder`` embeds beliefs,
    reflections and queries (default: the store's embedder, else the bundled offline
    :func:`mindcore.embed.default_embedder`); a store built with another embedding model or
    dimension is refused, and so is a store that cannot be written
    (:class:`~mindcore.errors.StoreNotWritableError`, raised here rather than at a run's flush).
    ``clock`` (unix ms) exists for tests.

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> mind = mindcore.Mind("memory://", agent="research-tracker", embedder=HashEmbedder())
    >>> with mind.run() as run:
    ...     run.header
    ...     run.call("mind_believe", {"content": "TSMC Q2 capacity is booked", "confidence": "high"})["action"]
    ''
    'created'
    >>> print(mind.header())
    --- AGENT MIND ---
    <BLANKLINE>
    ## Beliefs
    - TSMC Q2 capacity is booked (high confidence)
    <BLANKLINE>
    ---
    """

    def __init__(
        self,
        store: StoreLike | None = None,
        *,
        agent: str,
        embedder: Embedder | None = None,
        config: MindConfig | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        validation.check_text(agent, "agent", max_chars=1000)
        if config is not None and not isinstance(config, MindConfig):
            raise InvalidTypeError(f"config: expected a MindConfig, got {type(config).__name__}")
        if embedder is not None:
            check_embedder(embedder)
        if clock is not None:
            validation.check_callable(clock, "clock")
        (config or MindConfig()).secrets.screen_identifier(agent, "agent")
        from mindcore.store import resolve_store

        self.store: Store = resolve_store(store)
        self._owns_store = self.store is not store
        self.agent = agent
        self.config = config or MindConfig()
        self.namespace = self.config.namespace_for(agent)
        if embedder is None:
            from mindcore.embed import default_embedder

            embedder = self.store.embedder or default_embedder()
        self.embedder: Embedder = embedder
        self._clock = clock or _now_ms
        self._repo = Repo(self.store, self.namespace, embedder)
        dim = self._repo.table.dim
        assert dim is not None
        self.dim: int = dim
        self._claims = _claims_for(self.store, self.namespace)

    def __repr__(self) -> str:
        return f"Mind(agent={self.agent!r}, namespace={self.namespace!r}, store={self.store.uri!r})"

    def now(self) -> int:
        """The mind's clock (unix ms)."""
        return int(self._clock())

    # -- runs -----------------------------------------------------------------------------------

    @property
    def tools(self) -> Toolset:
        """The seven ``mind_*`` tools, each call a run of its own committed when it returns (as
        ``mind.believe(...)`` is). A model working through a task should use a run's tools
        (``run.tools``), whose writes land together when the run ends."""
        from mindcore.mind.tools import build_standalone_toolset

        return build_standalone_toolset(self)

    def call(self, name: str, arguments: str | bytes | dict[str, Any] | None = None) -> dict[str, Any]:
        """Dispatch one tool call in a run of its own (see :attr:`tools`); never raises."""
        return self.tools.call(name, arguments)

    async def acall(self, name: str, arguments: str | bytes | dict[str, Any] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.call, name, arguments)

    def run(self) -> MindRun:
        """Start a run: a fresh draft buffer and the header of the committed store. Use it as a
        context manager; leaving the block flushes (an exception makes it an error flush, and
        the exception propagates). Code that cannot use ``with`` ends the run with
        :meth:`MindRun.close`; a run dropped with pending writes loses them, with a
        :class:`ResourceWarning`."""
        return MindRun(self)

    def arun(self) -> _AsyncRun:
        """The async twin of :meth:`run`: ``async with mind.arun() as run: ...``."""
        return _AsyncRun(self)

    # -- reads (committed store) ----------------------------------------------------------------

    def header(self) -> str:
        """The ``--- AGENT MIND ---`` block of the committed store, or ``""`` when it has nothing
        to show."""
        snap = self._repo.snapshot()
        if snap.header.empty:
            return ""
        cfg = self.config
        goals, pinned, beliefs, recent = snap.header.select(
            now_ms=self.now(), window_ms=cfg.recency_window_days * 86_400_000, token_budget=cfg.token_budget
        )
        budget = HeaderBudget(cfg.token_budget, cfg.goals_token_budget, cfg.pinned_token_budget, cfg.max_entry_chars)
        return render_header(goals, pinned, beliefs, recent, token_budget=budget)

    def goals(self, status: GoalStatus | Literal["all"] = "active") -> list[Goal]:
        """Goals with ``status`` (or all), by priority then creation."""
        check_choice(status, "status", (*STATUSES, "all"))
        out = [g for g in self._repo.snapshot().goals() if status in ("all", g.status)]
        out.sort(key=lambda g: (PRIORITY_RANK[g.priority], g.created_at, g.id))
        return out

    def beliefs(self, *, include_expired: bool = False) -> list[Belief]:
        """Beliefs, newest first (expired ones only with ``include_expired``)."""
        now = self.now()
        out = [b for b in self._repo.snapshot().beliefs() if include_expired or not b.expired(now)]
        out.sort(key=lambda b: (b.created_at, b.id), reverse=True)
        return out

    def reflections(self, *, pinned: bool | None = None, include_expired: bool = False) -> list[Reflection]:
        """Reflections, newest first; ``pinned`` True/False keeps only pinned/unpinned ones."""
        now = self.now()
        out = [
            r for r in self._repo.snapshot().reflections()
            if (pinned is None or r.pinned == pinned) and (include_expired or not r.expired(now))
        ]
        out.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return out

    def get(self, id: str) -> Goal | Belief | Reflection | None:
        """The committed entry with this id."""
        return self._repo.snapshot().entries.get(id)

    def history(self, belief_id: str) -> list[BeliefChange]:
        """The contents the committed belief ``belief_id`` held before contradicting or updating
        beliefs replaced them, oldest first, each with when it was replaced, the relation
        (``contradiction`` or ``update``) and the reason. A paraphrase merged into the belief
        leaves no entry. Raises :class:`MindError` if there is no such belief.

        >>> import mindcore
        >>> from mindcore.embed import HashEmbedder
        >>> mind = mindcore.Mind("memory://", agent="ops", embedder=HashEmbedder())
        >>> b = mind.believe("The staging server is up")
        >>> _ = mind.believe("The staging server is not up")
        >>> [(c.content, c.relation) for c in mind.history(b.id)], mind.get(b.id).content
        ([('The staging server is up', 'contradiction')], 'The staging server is not up')
        >>> _ = mind.believe("The staging server is down", replaces=b.id)  # the agent says what it replaces
        >>> [c.relation for c in mind.history(b.id)], mind.get(b.id).content
        (['contradiction', 'update'], 'The staging server is down')
        """
        entry = self.get(belief_id)
        if not isinstance(entry, Belief):
            raise MindError(f"history: no belief with id {belief_id!r}")
        return list(entry.history)

    def recall(
        self,
        query: str,
        *,
        type: RecallType = "all",
        status: GoalStatus = "active",
        tags: Sequence[str] | None = None,
        pinned: bool | None = None,
        include_expired: bool = False,
        threshold: float | None = None,
        limit: int = 5,
    ) -> list[RecallResult]:
        """Search the committed store (see ``mind_recall``): goals by keyword, then beliefs and
        reflections scored ``0.6·cosine + 0.2·e^(-age_days/30) + 0.2·confidence``, at most
        ``limit`` of each type, entries scoring below ``threshold`` dropped."""
        check_text(query, "query")
        check_choice(type, "type", _RECALL_TYPES)
        check_choice(status, "status", STATUSES)
        tag_list = None if tags is None else check_tags(tags)
        if pinned is not None:
            check_bool(pinned, "pinned")
        check_bool(include_expired, "include_expired")
        if threshold is None:
            threshold = self.config.retrieval_threshold
        elif isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise MindError(f"threshold: expected a number in [0, 1], got {threshold!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise MindError(f"limit: expected a positive int, got {limit!r}")
        return self._recall(query, type, status, tag_list, pinned, include_expired, float(threshold), limit)

    def _recall(
        self, query: str, kind: str, status: str, tags: list[str] | None, pinned: bool | None,
        include_expired: bool, threshold: float, limit: int,
    ) -> list[RecallResult]:
        now = self.now()
        snap = self._repo.snapshot()  # one version for every part of the answer
        out: list[RecallResult] = []
        if kind in ("goal", "all"):
            goals = match_goals(snap.goals(), query, status=status, tags=tags, limit=limit)
            out += [RecallResult(g) for g in goals]
        kinds = [k for k in (Belief, Reflection) if kind in (k.__name__.lower(), "all")]
        if not kinds:
            return out
        q = self._embed([query])[0]
        for k in kinds:
            hits = snap.index(k).search(
                q, k=limit, now=now, min_score=threshold, include_expired=include_expired, tags=tags,
                pinned=pinned if k is Reflection else None, weights=RECALL_WEIGHTS,
            )
            out += [RecallResult(e, score=score) for e, score in hits]
        return out

    # -- writes outside a run (each one is a run of its own, committed at once) -----------------

    def believe(self, content: str, **kwargs: Any) -> Believed:
        """:meth:`MindRun.believe`, committed at once."""
        with self.run() as run:
            return run.believe(content, **kwargs)

    def reflect(self, content: str, **kwargs: Any) -> Reflected:
        """:meth:`MindRun.reflect`, committed at once."""
        with self.run() as run:
            return run.reflect(content, **kwargs)

    def unpin_reflection(self, id: str) -> None:
        with self.run() as run:
            run.unpin_reflection(id)

    def set_goal(self, description: str, **kwargs: Any) -> str:
        """:meth:`MindRun.set_goal`, committed at once."""
        with self.run() as run:
            return run.set_goal(description, **kwargs)

    def update_goal(self, id: str, **kwargs: Any) -> None:
        with self.run() as run:
            run.update_goal(id, **kwargs)

    def complete_goal(self, id: str, outcome: str | None = None) -> None:
        with self.run() as run:
            run.complete_goal(id, outcome)

    # -- async twins ----------------------------------------------------------------------------

    async def aheader(self) -> str:
        return await asyncio.to_thread(self.header)

    async def arecall(self, query: str, **kwargs: Any) -> list[RecallResult]:
        return await asyncio.to_thread(lambda: self.recall(query, **kwargs))

    async def ahistory(self, belief_id: str) -> list[BeliefChange]:
        """The async twin of :meth:`history`."""
        return await asyncio.to_thread(self.history, belief_id)

    # -- helpers --------------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        return check_vectors(self.embedder.embed(texts), len(texts), self.dim, f"embedder {self.embedder.model_id}")

    def close(self) -> None:
        """Close the store if this mind opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Mind:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


# The seed's texts (models are prompted with them).
_GOAL_CAP = "Active goal cap reached ({cap}). Complete or archive an existing goal before setting a new one."
_PIN_CAP = (
    "Pinned reflection cap reached ({cap}). Call mind_recall with type:'reflection' and pinned:true to list "
    "current pinned reflections, then call mind_unpin_reflection to remove one before adding another."
)
_PIN_WARNING = (
    "Pinned reflection count is {n} of {cap}. Review and unpin standing rules that are no longer "
    "universally applicable."
)


class MindRun:
    """One run of a :class:`Mind`: the header at the start, the seven tools, a draft buffer of
    the run's writes and the flush at the end. Make one with :meth:`Mind.run`.

    The tools (:meth:`call`) and the Python methods (:meth:`believe`, :meth:`reflect`, ...)
    behave the same; the methods raise :class:`~mindcore.mind.MindError` where a tool returns
    ``{"status": "error", ...}``. Reads see committed data only; this run's writes appear in
    the next run (except :meth:`complete_goal`, which commits at once).
    """

    def __init__(self, mind: Mind) -> None:
        self.mind = mind
        self._draft = DraftBuffer()
        self._lock = threading.RLock()
        self._closed = False
        self.report: FlushReport | None = None
        #: The ``--- AGENT MIND ---`` block for the system prompt ("" when there is nothing to show).
        self.header: str = mind.header()
        self._toolset: Toolset | None = None
        # A run dropped with pending writes loses them: say so (flush detaches this).
        self._unflushed = weakref.finalize(self, _warn_unflushed, self._draft, mind.namespace)

    def __repr__(self) -> str:
        state = "flushed" if self._closed else f"{len(self._draft)} pending"
        return f"MindRun({self.mind.namespace!r}, {state})"

    # -- tools ----------------------------------------------------------------------------------

    @property
    def tools(self) -> Toolset:
        """The seven tools, bound to this run: iterate for the specs (``.to_openai()``,
        ``.to_anthropic()``, ``.to_mcp()``), ``.openai()`` for a provider's list, ``.call()`` to run
        a model's call, ``+`` to combine with another capability's tools."""
        if self._toolset is None:
            self._toolset = build_toolset(self)
        return self._toolset

    @property
    def toolset(self) -> Toolset:
        """Deprecated: :attr:`tools` is the same :class:`~mindcore.toolspec.Toolset`."""
        warnings.warn("MindRun.toolset is deprecated; use MindRun.tools (the same Toolset)",
                      DeprecationWarning, stacklevel=2)
        return self.tools

    def call(self, name: str, arguments: str | bytes | dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a model's tool call (arguments as a JSON string or a dict) and return the result
        for the model; bad arguments come back as ``{"status": "error", "error": "..."}``."""
        return self.tools.call(name, arguments)

    async def acall(self, name: str, arguments: str | bytes | dict[str, Any] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.call, name, arguments)

    # -- the Python API -------------------------------------------------------------------------

    def recall(self, query: str, **kwargs: Any) -> list[RecallResult]:
        """:meth:`Mind.recall` (committed data only: this run's writes are not visible)."""
        self._live()
        return self.mind.recall(query, **kwargs)

    def believe(
        self,
        content: str,
        *,
        confidence: Confidence = "medium",
        tags: Sequence[str] | None = None,
        expires_in: str | None = None,
        allow_downgrade: bool = False,
        replaces: str | None = None,
    ) -> Believed:
        """Record a belief. It updates the belief already held (in this run's draft, in another live
        run of this mind with the same text, or in the store at cosine >= the dedup threshold) only
        when it says the same thing or explicitly negates it; a belief that only reads alike is kept
        beside it. ``replaces``: the id of a held belief this one replaces (its content goes into
        that belief's history). ``expires_in`` (``'7d'``) overrides ``ttl_defaults.belief``."""
        check_text(content, "content")
        check_choice(confidence, "confidence", CONFIDENCES)
        check_bool(allow_downgrade, "allow_downgrade")
        check_text(replaces, "replaces", optional=True)
        ttl = None if expires_in is None else check_duration(expires_in, "expires_in")
        return self._believe(content, confidence, tags, ttl, allow_downgrade, replaces)

    def _believe(self, content: str, confidence: Confidence, tags: Sequence[str] | None, ttl_ms: int | None,
                 allow_downgrade: bool, replaces: str | None = None) -> Believed:
        from mindcore.store import new_id

        tag_list = None if tags is None else check_tags(tags)
        self._live()
        mind, cfg = self.mind, self.mind.config
        content = cfg.secrets.screen(content, "content")
        tag_list = None if tag_list is None else cfg.secrets.screen_all(tag_list, "tags")
        now = mind.now()
        if ttl_ms is None:
            ttl_ms = cfg.ttl_defaults.belief_ms
        vec = mind._embed([content])[0]
        d = DraftBelief(new_id(), content, confidence, tag_list, None if ttl_ms is None else now + ttl_ms,
                        allow_downgrade, vec, now)
        key = belief_key(content)
        thr = cfg.deduplication_threshold
        with self._lock:
            self._live()
            if replaces is not None:
                return self._replace(replaces, d, key)
            # 1. this run's draft
            hit = self._draft.similar_belief(vec, thr)
            if hit is not None and not same_belief(hit.content, content, old_vector=hit.vector, new_vector=vec):
                hit = None  # it only reads alike: both are kept
            if hit is not None:
                known = len(hit.history)
                self._draft.absorb_into(hit.id, d)
                mind._claims.claim(key, self, hit.id)
                return Believed("updated_draft", hit.id, hit.history[-1] if len(hit.history) > known else None)
            # 2. another live run of this mind holds the same text
            other = mind._claims.holder(key, self)
            if other is not None:
                d.id = other
                self._draft.put_belief(d)
                return Believed("updated_draft", other)
            # 3. the committed store
            snap = mind._repo.snapshot()
            d.seen_version = snap.version
            sid = snap.similar_belief(vec, thr, now)
            if sid is not None and not same_belief(getattr(snap.entries.get(sid), "content", ""), content,
                                                   old_vector=snap.vectors.get(sid), new_vector=vec):
                sid = None  # it only reads alike: both are kept
            if sid is not None:
                d.id = sid
                held = self._draft.put_belief(d)
                mind._claims.claim(key, self, sid)
                stored = snap.entries.get(sid)
                # What the flush will record (it re-checks against the row it then reads).
                change = None if stored is None or held is not d else replaced(
                    getattr(stored, "content", ""), content, at=now, old_vector=snap.vectors.get(sid),
                    new_vector=vec)
                return Believed("updated_store", sid, change)
            # 4. new
            self._draft.put_belief(d)
            mind._claims.claim(key, self, d.id)
            return Believed("created", d.id)

    def _replace(self, target: str, d: DraftBelief, key: str) -> Believed:
        """``d`` replaces the held belief ``target`` (the agent said so). The caller holds the lock."""
        mind = self.mind
        d.chosen = True
        held = self._draft.beliefs.get(target)
        if held is not None:
            known = len(held.history)
            self._draft.absorb_into(target, d)
            mind._claims.claim(key, self, target)
            return Believed("updated_draft", target, held.history[-1] if len(held.history) > known else None)
        snap = mind._repo.snapshot()
        stored = snap.entries.get(target)
        if not isinstance(stored, Belief) or (stored.expires_at is not None and stored.expires_at <= d.created_at):
            raise MindError(f"replaces: no belief with id {target!r} is held; mind_recall lists the beliefs and "
                            "their ids")
        d.id = target
        d.seen_version = snap.version
        self._draft.put_belief(d)
        mind._claims.claim(key, self, target)
        change = replaced(stored.content, d.content, at=d.created_at, old_vector=snap.vectors.get(target),
                          new_vector=d.vector, chosen=True)
        return Believed("updated_store", target, change)

    def reflect(
        self,
        content: str,
        *,
        pin: bool = False,
        tags: Sequence[str] | None = None,
        related_to: str | None = None,
    ) -> Reflected:
        """Append a reflection (never deduplicated). ``pin=True`` makes it a standing rule shown
        in every header, up to ``max_pinned_reflections``; the result carries a warning when the
        rules pinned before this one are within 2 of that cap. Expires after ``ttl_defaults.reflection`` if set."""
        check_text(content, "content")
        check_text(related_to, "related_to", optional=True)
        check_bool(pin, "pin")
        return self._reflect(content, pin, tags, related_to)

    def _reflect(self, content: str, pin: bool, tags: Sequence[str] | None, related_to: str | None) -> Reflected:
        from mindcore.store import new_id

        tag_list = check_tags(tags or [])
        self._live()
        mind, cfg = self.mind, self.mind.config
        content = cfg.secrets.screen(content, "content")
        tag_list = cfg.secrets.screen_all(tag_list, "tags")
        related_to = cfg.secrets.screen_optional(related_to, "relatedTo")
        now = mind.now()
        vec = mind._embed([content])[0]
        ttl = cfg.ttl_defaults.reflection_ms
        with self._lock:
            self._live()
            warning = None
            if pin:
                n = self._pinned_in_use(now)
                cap = cfg.max_pinned_reflections
                if n >= cap:
                    raise MindError(_PIN_CAP.format(cap=cap))
                if n >= cap - 2:  # the seed's rule: the count before this pin is within 2 of the cap
                    warning = _PIN_WARNING.format(n=n + 1, cap=cap)
            rid = new_id()
            self._draft.reflections[rid] = DraftReflection(
                rid, content, pin, tag_list, related_to, None if ttl is None else now + ttl, vec, now
            )
            self._sync_pending()
            return Reflected(rid, warning)

    def unpin_reflection(self, id: str) -> None:
        """Unpin a standing rule (applied at a clean flush; a crashed run keeps it pinned)."""
        rid = check_id(id)
        with self._lock:
            self._live()
            draft = self._draft.reflections.get(rid)
            if draft is not None:
                draft.pinned = False
                self._sync_pending()
                return
            entry = self.mind.get(rid)
            if not isinstance(entry, Reflection):
                raise MindError(f"id: no reflection with id {rid!r}")
            if entry.pinned:
                self._draft.unpins[rid] = None

    def set_goal(
        self,
        description: str,
        *,
        priority: Priority = "normal",
        tags: Sequence[str] | None = None,
        due_by: str | None = None,
    ) -> str:
        """Add an active goal (written at a clean flush); fails at ``max_goals`` active goals.
        ``due_by`` is an ISO date or a duration turned into a date. Returns the goal's id.

        A description the same as an active goal's, or one this run already set (compared
        ignoring case and spacing), adds nothing: the existing goal's id is returned and that
        goal is left as it is (change it with :meth:`update_goal`)."""
        check_text(description, "description")
        check_choice(priority, "priority", PRIORITIES)
        return self._set_goal(description, priority, tags, due_by, "due_by")

    def _set_goal(self, description: str, priority: Priority, tags: Sequence[str] | None, due_by: str | None,
                  due_name: str) -> str:
        from mindcore.store import new_id

        secrets = self.mind.config.secrets
        description = secrets.screen(description, "description")
        tag_list = secrets.screen_all(check_tags(tags or []), "tags")
        now = self.mind.now()
        due = None
        if due_by is not None:
            try:
                due = parse_due_by(due_by, now_ms=now, arg=due_name)
            except ValueError as e:
                raise MindError(str(e)) from None
        with self._lock:
            self._live()
            same = self._same_goal(goal_key(description))
            if same is not None:
                return same
            cap = self.mind.config.max_goals
            others, _ = self.mind._claims.others_pending(self)
            n = self.mind._repo.snapshot().active_goal_count() + len(self._draft.goals) + others
            if n >= cap:
                raise MindError(_GOAL_CAP.format(cap=cap))
            gid = new_id()
            self._draft.goals[gid] = DraftGoal(gid, description, priority, tag_list, due, now, now)
            self._sync_pending()
            return gid

    def _same_goal(self, key: str) -> str | None:
        """The id of this run's new goal or of the active stored goal whose description has ``key``."""
        for g in self._draft.goals.values():
            if goal_key(g.description) == key:
                return g.id
        for stored in self.mind._repo.snapshot().header.goals:
            if goal_key(stored.description) == key:
                return stored.id
        return None

    def update_goal(
        self,
        id: str,
        *,
        description: str | None = None,
        priority: Priority | None = None,
        progress: str | None = None,
    ) -> None:
        """Change an active goal's description or priority and/or append a progress note
        (written at a clean flush)."""
        gid = check_id(id)
        check_text(description, "description", optional=True)
        check_text(progress, "progress", optional=True)
        if priority is not None:
            check_choice(priority, "priority", PRIORITIES)
        if description is None and priority is None and progress is None:
            raise MindError("give at least one of description, priority, progress")
        secrets = self.mind.config.secrets
        description = secrets.screen_optional(description, "description")
        progress = secrets.screen_optional(progress, "progress")
        now = self.mind.now()
        with self._lock:
            self._live()
            g = self._draft.goals.get(gid)
            if g is not None:
                g.description = description or g.description
                g.priority = priority or g.priority
                if progress is not None:
                    g.progress.append(progress)
                g.updated_at = now
                return
            entry = self.mind.get(gid)
            if not isinstance(entry, Goal):
                raise MindError(f"id: no goal with id {gid!r}")
            if entry.status != "active":
                raise MindError(f"id: goal {gid!r} is {entry.status}; only active goals can be updated")
            u = self._draft.goal_updates.setdefault(gid, GoalUpdate())
            if description is not None:
                u.description = description
            if priority is not None:
                u.priority = priority
            if progress is not None:
                u.progress.append(progress)
            u.updated_at = now

    def complete_goal(self, id: str, outcome: str | None = None) -> None:
        """Mark an active goal completed, committed at once (not through the draft buffer).
        This run's pending updates of the goal are written with it."""
        gid = check_id(id)
        check_text(outcome, "outcome", optional=True)
        mind = self.mind
        outcome = mind.config.secrets.screen_optional(outcome, "outcome")
        with self._lock:
            self._live()
            repo = mind._repo
            draft_goal = self._draft.goals.get(gid)
            if draft_goal is None:
                entry = mind.get(gid)
                if not isinstance(entry, Goal):
                    raise MindError(f"id: no goal with id {gid!r}")
                if entry.status != "active":
                    raise MindError(f"id: goal {gid!r} is already {entry.status}")
            with repo.locked():
                now = mind.now()
                if draft_goal is not None:
                    row = goal_row(draft_goal, now=now, status="completed", outcome=outcome)
                else:
                    row = repo.snapshot(exact=True).rows([gid]).get(gid)  # type: ignore[assignment]
                    if row is None or row.get("status") != "active":
                        raise MindError(f"id: goal {gid!r} is no longer active")
                    u = self._draft.goal_updates.get(gid)
                    if u is not None:
                        row = apply_goal_update(row, u, now=now)
                    row.update(status="completed", outcome=outcome, updated_at=now)
                repo.commit([row])
            self._draft.goals.pop(gid, None)
            self._draft.goal_updates.pop(gid, None)
            self._sync_pending()

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def flush(self, *, error: bool = False) -> FlushReport:
        """End the run: commit the draft as one unit (see the flush rules in
        :mod:`mindcore.mind.draft`). Idempotent: later calls return the first report.

        ``with mind.run() as run:`` calls it when the block ends; code that cannot use ``with``
        calls it (or :meth:`close`) itself. A run dropped with pending writes and never flushed
        loses them, with a :class:`ResourceWarning` that names them."""
        with self._lock:
            if self._closed:
                assert self.report is not None
                return self.report
            self._closed = True
            self._unflushed.detach()
            mind = self.mind
            try:
                if len(self._draft) == 0:
                    self.report = FlushReport(error=error)
                    return self.report
                cfg = mind.config
                with mind._repo.locked():
                    now = mind.now()
                    plan = plan_flush(
                        self._draft, StoreView(mind._repo), clean=not error, now=now, max_goals=cfg.max_goals,
                        max_pinned=cfg.max_pinned_reflections, dedup_threshold=cfg.deduplication_threshold,
                    )
                    version = mind._repo.commit(plan.rows)
                self.report = FlushReport(error, version, plan.created, plan.updated, plan.dropped)
                for why in plan.dropped:
                    log.warning("mind %s: %s", mind.namespace, why)
                return self.report
            finally:
                mind._claims.release(self)

    async def aflush(self, *, error: bool = False) -> FlushReport:
        return await asyncio.to_thread(lambda: self.flush(error=error))

    def close(self) -> FlushReport:
        """End the run, committing its pending writes (:meth:`flush`); later calls of its tools
        and methods are errors. Idempotent."""
        return self.flush()

    async def aclose(self) -> FlushReport:
        return await asyncio.to_thread(self.close)

    def _exit(self, et: type[BaseException] | None, ev: BaseException | None) -> None:
        if et is None:
            self.flush()
            return
        try:
            self.flush(error=True)
        except Exception as e:  # the run's own exception matters more than a failed error flush
            log.exception("mind %s: error flush failed", self.mind.namespace)
            if ev is not None:
                ev.add_note(f"mindcore: the mind's error flush failed too: {e!r}")

    def __enter__(self) -> MindRun:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._exit(et, ev)

    # -- helpers --------------------------------------------------------------------------------

    def _live(self) -> None:
        if self._closed:
            raise MindError("this run has ended; start a new one with mind.run()")

    def _pinned_in_use(self, now: int) -> int:
        snap = self.mind._repo.snapshot()
        committed = snap.pinned_ids(now) - set(self._draft.unpins)
        _, others = self.mind._claims.others_pending(self)
        return len(committed) + self._draft.pinned_count() + others

    def _sync_pending(self) -> None:
        self.mind._claims.set_pending(self, goals=len(self._draft.goals), pins=self._draft.pinned_count())


def _warn_unflushed(draft: DraftBuffer, namespace: str) -> None:
    pending = draft.summary()
    if pending:
        warnings.warn(
            f"a run of mind {namespace!r} was dropped without a flush; its writes are lost: {pending}. "
            "Use `with mind.run() as run:`, or call run.flush() or run.close() when done",
            ResourceWarning, stacklevel=2,
        )


class _AsyncRun:
    """``async with mind.arun() as run``: a :class:`MindRun` started and flushed off the loop."""

    def __init__(self, mind: Mind) -> None:
        self._mind = mind
        self._run: MindRun | None = None

    async def __aenter__(self) -> MindRun:
        self._run = await asyncio.to_thread(MindRun, self._mind)
        return self._run

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._run is not None
        await asyncio.to_thread(self._run._exit, et, ev)
