"""Per-turn context: :class:`ContextBuilder` (``session.context``) and :class:`AssembledContext`.

``session.context.tools({...}).messages(...).recall(...).limit_tokens(n).assemble()`` gives the
tools to offer and the messages to send for one turn:

- **tools**: the explicit ones, the always-included ones and every tool the session holds
  (found by its discoveries and recalls); ``recall`` first discovers tools for the last user
  message (with the context's default strategy) and the session keeps them.
- **messages** by strategy, within ``max_tokens`` (less the recalled tools' cost when
  ``limit_tokens`` is set): ``recent`` (newest first, output in order; ``keep_first`` puts the
  first user message in front), ``full`` (oldest first) or ``compacted`` (the recent window gets
  60% of the budget, everything older is summarised by the LLM, or the ``compaction`` callable,
  within the rest, and the summary comes back as one assistant message). Every message is
  counted as ``floor(utf-8 bytes / 4)`` tokens, or exactly (o200k) with ``exact=True``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from mindcore.context import selection
from mindcore.context._blocking import LoopRunning, run_to_completion
from mindcore.context.events import ContextAssembledEvent, RecallEvent
from mindcore.context.messages import stored, wire
from mindcore.context.types import RankedTool, Recalled, StoredMessage, SummaryRange
from mindcore.errors import ContextError, UnsupportedStrategyError
from mindcore.kernels import count_tokens, estimate_tokens
from mindcore.validation import check_bool, check_int, check_number, describe

if TYPE_CHECKING:
    from mindcore.context.session import Session
    from mindcore.store.messages import LogView

__all__ = ["MESSAGE_STRATEGIES", "SUMMARY_PROMPT", "AssembledContext", "ContextBuilder", "MessageStrategy"]

log = logging.getLogger("mindcore.context")

MessageStrategy = Literal["recent", "full", "compacted"]
MESSAGE_STRATEGIES: tuple[MessageStrategy, ...] = ("recent", "full", "compacted")
#: The instruction the LLM summarises older messages with (the agentified server's).
SUMMARY_PROMPT = "Summarize this conversation concisely. Focus on key decisions, facts, and action items."
PRUNED = "[pruned]"
DEFAULT_RECALL_LIMIT = 5

#: ``compaction(older_messages) -> summary``: a str, a dict with ``"summary"``, or an awaitable of either.
Compaction = Callable[[list[StoredMessage]], Any]


@dataclass(frozen=True)
class AssembledContext:
    """One turn's context.

    ``tools``: name -> tool to offer (explicit, always-included and held tools). ``messages``: the
    messages to send, a ``compacted`` summary included (seq 0, after the pinned first user
    message, else first). ``recalled.tools``: what recall returned. ``token_estimate``: the
    messages' tokens plus the summary's (tools not counted). ``total_messages``: stored in the
    session; ``included_messages``: stored messages in ``messages``; ``conversation_messages``:
    what the summary and messages cover together under ``compacted``, else ``included_messages``.
    """

    tools: dict[str, Any]
    messages: list[StoredMessage]
    recalled: Recalled
    strategy_used: MessageStrategy
    fallback: bool
    token_estimate: int
    conversation_messages: int
    total_messages: int
    included_messages: int
    summary: str | None = None
    summary_range: SummaryRange | None = None

    def to_wire(self) -> dict[str, Any]:
        """The agentified server's context response (the summary travels in ``summary`` and
        ``summary_range``, not among the messages)."""
        return _wire_answer(self, [m.to_wire() for m in self.messages if m.seq])


def _wire_answer(result: AssembledContext | _Outcome, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agentified server's context response of ``result``, its ``messages`` already in wire form."""
    out: dict[str, Any] = {
        "messages": messages,
        "strategy_used": result.strategy_used,
        "total_messages": result.total_messages,
        "included_messages": result.included_messages,
        "recalled": result.recalled.to_wire(),
        "token_estimate": result.token_estimate,
        "conversation_messages": result.conversation_messages,
        "fallback": result.fallback,
    }
    if result.summary is not None and result.summary_range is not None:
        out["summary"] = result.summary
        out["summary_range"] = result.summary_range.to_wire()
    return out


@dataclass(frozen=True)
class _Options:
    strategy: MessageStrategy = "recent"
    max_tokens: int = 4000
    keep_first: bool = False
    prune_threshold: int = 500
    compaction: Compaction | None = None
    exact: bool = False


_NONE = np.empty(0, dtype=np.int64)


@dataclass
class _Plan:
    """Everything an assembly decides before the summary (if any) is written: the messages to
    send as ranks of ``view``."""

    started: float
    options: _Options
    recall: dict[str, Any] | None
    recalled: list[RankedTool]
    total: int
    view: LogView | None = None
    ranks: np.ndarray = field(default_factory=lambda: _NONE)
    tokens: int = 0
    pinned: bool = False
    older: list[StoredMessage] = field(default_factory=list)
    summary_budget: int = 0
    fallback: Callable[[], tuple[np.ndarray, int]] | None = None


@dataclass(frozen=True)
class _Outcome:
    """What an assembly sends, once the summary (if any) is written: the stored messages at
    ``ranks`` of the plan's view, with the summary's ``note`` at position ``at``; the other
    fields are :class:`AssembledContext`'s."""

    ranks: np.ndarray
    note: StoredMessage | None
    at: int
    recalled: Recalled
    strategy_used: MessageStrategy
    fallback: bool
    token_estimate: int
    conversation_messages: int
    total_messages: int
    included_messages: int
    summary: str | None
    summary_range: SummaryRange | None


class ContextBuilder:
    """Builds one turn's context for a session (``session.context`` gives a fresh one). Each
    method returns the builder; :meth:`assemble` (or ``await`` :meth:`aassemble`) runs it."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._explicit: dict[str, Any] = {}
        self._options = _Options()
        self._recall: dict[str, Any] | None = None
        self._limit: int | None = None

    def tools(self, tools: Mapping[str, Any]) -> ContextBuilder:
        """Offer these tools (name -> tool, any object) whatever discovery says."""
        if not isinstance(tools, Mapping) or not all(isinstance(k, str) for k in tools):
            raise ContextError(f"tools: expected a dict of name -> tool, got {describe(tools)}")
        self._explicit.update(tools)
        return self

    def messages(
        self,
        strategy: str = "recent",
        max_tokens: int = 4000,
        keep_first: bool = False,
        prune_threshold: int = 500,
        compaction: Compaction | None = None,
        exact: bool = False,
    ) -> ContextBuilder:
        """How to pick messages (every call replaces all of these). ``compaction``, for
        ``compacted``, summarises the older messages instead of the context's LLM: it is called
        with them (long tool results already ``[pruned]``) and returns the summary."""
        if strategy not in MESSAGE_STRATEGIES:
            raise ContextError(f"unknown strategy: {strategy}")
        check_int(max_tokens, "max_tokens", minimum=0, error=ContextError)
        check_bool(keep_first, "keep_first", error=ContextError)
        check_int(prune_threshold, "prune_threshold", minimum=0, error=ContextError)
        check_bool(exact, "exact", error=ContextError)
        if compaction is not None and not callable(compaction):
            raise ContextError(f"compaction: expected a callable, got {describe(compaction)}")
        self._options = _Options(strategy, max_tokens, keep_first, prune_threshold, compaction, exact)
        return self

    def recall(self, tools: bool | Mapping[str, Any] | None = True) -> ContextBuilder:
        """Recall tools for the last user message: ``True`` (5 tools), ``{"limit": n,
        "min_similarity": s}`` (``min_similarity`` filters the new finds by score), ``False``
        (none)."""
        if tools is None or tools is False:
            self._recall = None
            return self
        limit, minimum = DEFAULT_RECALL_LIMIT, None
        if isinstance(tools, Mapping):
            unknown = set(tools) - {"limit", "min_similarity"}
            if unknown:
                raise ContextError(f"recall.tools: unknown fields {sorted(unknown)} (limit, min_similarity)")
            if tools.get("limit") is not None:
                limit = check_int(tools["limit"], "recall.tools.limit", minimum=0, error=ContextError)
            if tools.get("min_similarity") is not None:
                minimum = check_number(tools["min_similarity"], "recall.tools.min_similarity", error=ContextError)
        elif tools is not True:
            raise ContextError(f"recall.tools: expected true, false or an object, got {describe(tools)}")
        self._recall = {"limit": limit, "min_similarity": minimum}
        return self

    def limit_tokens(self, budget: int) -> ContextBuilder:
        """Cap tools and messages together: the recalled tools' cost comes off the message budget."""
        self._limit = check_int(budget, "limit_tokens", minimum=0, error=ContextError)
        return self

    # -- running --------------------------------------------------------------------------------

    def assemble(self) -> AssembledContext:
        """Assemble the context (blocking); events fire before it returns."""
        plan = self._plan()
        outcome = self._finish(plan, self._summarise(plan) if plan.older else None)
        result = self._result(plan, outcome)
        self._emit(plan, outcome)
        return result

    def assemble_wire(self) -> dict[str, Any]:
        """``assemble().to_wire()``, the agentified server's context response, with its messages
        taken from the wire form kept per stored message (none built anew, and the tools to
        offer, which the response leaves out, not looked up)."""
        plan = self._plan()
        outcome = self._finish(plan, self._summarise(plan) if plan.older else None)
        rows = _wire_rows(plan, outcome)
        self._emit(plan, outcome)
        return _wire_answer(outcome, rows)

    async def aassemble(self) -> AssembledContext:
        """The async twin of :meth:`assemble` (the LLM through ``acomplete``; async listeners and
        compaction callables awaited)."""
        plan = await asyncio.to_thread(self._plan)
        summary = await self._asummarise(plan) if plan.older else None
        outcome = self._finish(plan, summary)
        result = await asyncio.to_thread(self._result, plan, outcome)
        ctx = self._session.ctx
        for name, event in self._events(plan, outcome):
            await ctx._emitter.aemit(name, event)
        return result

    async def aassemble_wire(self) -> dict[str, Any]:
        """The async twin of :meth:`assemble_wire`, as :meth:`aassemble` is of :meth:`assemble`."""
        plan = await asyncio.to_thread(self._plan)
        summary = await self._asummarise(plan) if plan.older else None
        outcome = self._finish(plan, summary)
        rows = await asyncio.to_thread(_wire_rows, plan, outcome)
        ctx = self._session.ctx
        for name, event in self._events(plan, outcome):
            await ctx._emitter.aemit(name, event)
        return _wire_answer(outcome, rows)

    def _emit(self, plan: _Plan, outcome: _Outcome) -> None:
        ctx = self._session.ctx
        for name, event in self._events(plan, outcome):
            ctx._emitter.emit(name, event)

    # -- the steps ------------------------------------------------------------------------------

    def _plan(self) -> _Plan:
        started = time.perf_counter()
        opts = self._options
        session = self._session
        if opts.strategy == "compacted" and opts.compaction is None and session.ctx.llm is None:
            raise UnsupportedStrategyError(
                "Compacted strategy requires LLM configuration (give the Context an llm, "
                "or .messages(compaction=...) a summariser)"
            )
        view = session._view()
        total = view.max_seq
        if len(view) == 0:
            return _Plan(started, opts, self._recall, [], 0, view)
        recalled = session._recall(view, **self._recall) if self._recall is not None else []
        budget = opts.max_tokens
        if self._limit is not None:
            cost = sum(t.tool.token_cost for t in recalled)
            budget = min(max(self._limit - cost, 0), budget)
        tokens = _tokens(view, opts.exact)
        pinned = _first_user(view) if opts.keep_first else None
        plan = _Plan(started, opts, self._recall, recalled, total, view, pinned=pinned is not None)

        def recent_over(room: int) -> tuple[np.ndarray, int]:
            ranks = selection.recent(tokens, room, pinned)
            if pinned is not None:
                ranks = np.concatenate([[pinned], ranks])
            return ranks, int(tokens[ranks].sum())

        if opts.strategy == "full":
            ranks = selection.full(tokens, budget)
            plan.ranks, plan.tokens = ranks, int(tokens[ranks].sum())
        elif opts.strategy == "recent":
            plan.ranks, plan.tokens = recent_over(budget)
        else:
            split = selection.compact(tokens, budget, pinned)
            window = split.window if pinned is None else np.concatenate([[pinned], split.window])
            plan.ranks, plan.tokens = window, int(tokens[window].sum())
            if split.older.shape[0]:
                plan.older = stored(view, split.older)
                plan.summary_budget = split.summary_budget
                plan.fallback = lambda: recent_over(budget)
        return plan

    def _summarise(self, plan: _Plan) -> str | None:
        opts, older = plan.options, _pruned(plan.older, plan.options.prune_threshold)
        try:
            if opts.compaction is not None:
                result = opts.compaction(older)
                if inspect.isawaitable(result):
                    result = run_to_completion(result)
                return _summary_text(result)
            llm = self._session.ctx.llm
            assert llm is not None
            return _summary_text(llm.complete(_prompt(older), max_tokens=max(1, plan.summary_budget)))
        except LoopRunning:
            raise ContextError("the compaction callable is async: use `await ... .aassemble()`") from None
        except Exception:
            log.warning("summarising %d older messages failed; falling back to 'recent'", len(older), exc_info=True)
            return None

    async def _asummarise(self, plan: _Plan) -> str | None:
        opts, older = plan.options, _pruned(plan.older, plan.options.prune_threshold)
        try:
            if opts.compaction is not None:
                result = opts.compaction(older)
                if inspect.isawaitable(result):
                    result = await result
                return _summary_text(result)
            llm = self._session.ctx.llm
            assert llm is not None
            return _summary_text(await llm.acomplete(_prompt(older), max_tokens=max(1, plan.summary_budget)))
        except Exception:
            log.warning("summarising %d older messages failed; falling back to 'recent'", len(older), exc_info=True)
            return None

    def _finish(self, plan: _Plan, summary: str | None) -> _Outcome:
        opts = plan.options
        ranks, tokens = plan.ranks, plan.tokens
        included = conversation = len(ranks)
        fallback = False
        summary_range = None
        note = None
        at = 1 if plan.pinned else 0
        if plan.older:
            if summary is None:
                assert plan.fallback is not None
                ranks, tokens = plan.fallback()
                included = conversation = len(ranks)
                fallback = True
            else:
                first, last = plan.older[0].seq, plan.older[-1].seq
                summary_range = SummaryRange(first, last, len(plan.older))
                note = StoredMessage(
                    {"role": "assistant",
                     "content": f"[Summary of messages {first}\u2013{last} ({len(plan.older)} messages compacted)]\n{summary}"},
                    seq=0, id="summary", created_at=0,
                )
                tokens += _count(summary, opts.exact)
                conversation = len(plan.ranks) + len(plan.older)
        return _Outcome(
            ranks=ranks, note=note, at=at, recalled=Recalled(list(plan.recalled)), strategy_used=opts.strategy,
            fallback=fallback, token_estimate=tokens, conversation_messages=conversation, total_messages=plan.total,
            included_messages=included, summary=summary if summary_range is not None else None,
            summary_range=summary_range,
        )

    def _result(self, plan: _Plan, outcome: _Outcome) -> AssembledContext:
        messages = stored(plan.view, outcome.ranks) if plan.view is not None and len(outcome.ranks) else []
        if outcome.note is not None:
            messages.insert(outcome.at, outcome.note)
        return AssembledContext(
            tools=self._session._offered(self._explicit),
            messages=messages,
            recalled=outcome.recalled,
            strategy_used=outcome.strategy_used,
            fallback=outcome.fallback,
            token_estimate=outcome.token_estimate,
            conversation_messages=outcome.conversation_messages,
            total_messages=outcome.total_messages,
            included_messages=outcome.included_messages,
            summary=outcome.summary,
            summary_range=outcome.summary_range,
        )

    def _events(self, plan: _Plan, result: _Outcome) -> list[tuple[str, Any]]:
        session = self._session
        took = (time.perf_counter() - plan.started) * 1000.0
        ids = {"session_id": session.id, "dataset_id": session.dataset, "namespace_id": session.namespace}
        events: list[tuple[str, Any]] = []
        if plan.recall is not None:
            config = {"tools": dict(plan.recall)}
            events.append(("recall", RecallEvent(**ids, config=config, matches=list(plan.recalled), duration_ms=took)))
        events.append(("context:assembled", ContextAssembledEvent(
            **ids, strategy_used=result.strategy_used, total_messages=result.total_messages,
            included_messages=result.included_messages, token_estimate=result.token_estimate,
            fallback=result.fallback, recalled=result.recalled, duration_ms=took,
        )))
        return events


# -- helpers ------------------------------------------------------------------------------------


def _wire_rows(plan: _Plan, outcome: _Outcome) -> list[dict[str, Any]]:
    """The stored messages ``outcome`` sends, in wire form (the summary travels apart)."""
    return wire(plan.view)[outcome.ranks].tolist() if plan.view is not None and len(outcome.ranks) else []


def _tokens(view: LogView, exact: bool) -> np.ndarray:
    """Tokens of every message of the view (cached on the view)."""
    def compute(lo: int, hi: int) -> np.ndarray:
        contents = view.column("content")[lo:hi]
        return np.asarray(count_tokens(contents) if exact else estimate_tokens(contents, rule="bytes"), dtype=np.int64)

    return view.per_row("context.o200k" if exact else "context.bytes4", compute)


def _count(text: str, exact: bool) -> int:
    return count_tokens(text) if exact else estimate_tokens(text, rule="bytes")


def _first_user(view: LogView) -> int | None:
    try:
        return view.column("role").index("user")
    except ValueError:
        return None


def _pruned(older: list[StoredMessage], threshold: int) -> list[StoredMessage]:
    out = []
    for m in older:
        if m.role == "tool" and len(m.content) > threshold:
            m = StoredMessage({**m, "content": PRUNED}, seq=m.seq, id=m.id, created_at=m.created_at)
        out.append(m)
    return out


def _prompt(older: list[StoredMessage]) -> list[Any]:
    transcript = "\n".join(f"{m.role}: {m.content}" for m in older)
    return [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": transcript}]


def _summary_text(result: Any) -> str:
    if isinstance(result, Mapping):
        result = result.get("summary")
    if not isinstance(result, str) or not result.strip():
        raise ContextError(f"the summary is empty or not a string ({describe(result)})")
    return result


