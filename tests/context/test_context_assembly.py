"""Per-turn assembly: recent, full and compacted exactly as the issue says (budget rule, keep_first,
the 60/40 split, pruning, the summary message and its place, the fallback), token estimates,
tool recall and limit_tokens, events, the async twin, and the session's tools."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

import mindcore
from mindcore.context import (
    AssembledContext,
    Context,
    ContextAssembledEvent,
    RecallEvent,
    Session,
    StoredMessage,
    Tool,
)
from mindcore.errors import ContextError, LLMError, UnsupportedStrategyError
from mindcore.kernels import count_tokens
from mindcore.llm import ScriptedLLM

X100 = "x" * 100  # 25 tokens


def msg(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def seqs(result: AssembledContext) -> list[int]:
    return [m.seq for m in result.messages]


@pytest.fixture
def ctx(store: mindcore.Store) -> Context:
    return Context(store, dataset="ds", llm=ScriptedLLM(lambda messages: "They talked."))


def session_with(ctx: Context, roles: list[str], content: str = X100, name: str = "s") -> Session:
    s = ctx.session(name)
    s.append([msg(r, content) for r in roles])
    return s


# -- recent and full --------------------------------------------------------------------------------


def test_recent_takes_the_newest_that_fit_in_order(ctx: Context) -> None:
    s = session_with(ctx, ["user"] * 5)
    r = s.context.messages(strategy="recent", max_tokens=60).assemble()
    assert seqs(r) == [4, 5]
    assert (r.strategy_used, r.total_messages, r.included_messages, r.conversation_messages) == ("recent", 5, 2, 2)
    assert r.token_estimate == 50 and r.fallback is False and r.summary is None


def test_at_least_one_message_even_over_budget(ctx: Context) -> None:
    s = session_with(ctx, ["user"] * 3)
    assert seqs(s.context.messages(max_tokens=0).assemble()) == [3]
    assert seqs(s.context.messages(strategy="full", max_tokens=10).assemble()) == [1]


def test_recent_keep_first_pins_the_first_user_message(ctx: Context) -> None:
    s = session_with(ctx, ["user", "assistant", "user", "assistant", "user"])
    assert seqs(s.context.messages(max_tokens=60, keep_first=True).assemble()) == [1, 5]
    # Already in the window: not repeated.
    assert seqs(s.context.messages(max_tokens=4000, keep_first=True).assemble()) == [1, 2, 3, 4, 5]
    # No user message: no effect.
    t = session_with(ctx, ["system", "assistant", "system", "assistant"], name="t")
    assert seqs(t.context.messages(max_tokens=60, keep_first=True).assemble()) == [3, 4]
    # A system message before it: the first user message still comes first.
    u = session_with(ctx, ["system", "user", "assistant"], content="hi", name="u")
    assert seqs(u.context.messages(keep_first=True).assemble()) == [2, 1, 3]


def test_full_takes_the_oldest_and_ignores_keep_first(ctx: Context) -> None:
    s = session_with(ctx, ["assistant", "user", "user", "user", "user"])
    assert seqs(s.context.messages(strategy="full", max_tokens=60, keep_first=True).assemble()) == [1, 2]
    assert seqs(s.context.messages(strategy="full").assemble()) == [1, 2, 3, 4, 5]


def test_assembled_messages_are_the_stored_messages(ctx: Context) -> None:
    """Assembly builds its messages straight from the session's columns: each is what
    get_messages gives (tool fields, ids, seq and created_at included), a fresh object each time."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    s = ctx.session("s")
    s.append([msg("user", "weather?"), msg("assistant", "", tool_calls=[call]), msg("tool", "22C", tool_call_id="c1"),
              *(msg("assistant" if i % 2 else "user", f"m{i}") for i in range(60))])
    stored = s.get_messages(limit=100).messages
    for strategy in ("full", "recent"):
        got = s.context.messages(strategy=strategy, max_tokens=10**6).assemble().messages
        assert got == stored and all(type(m) is StoredMessage for m in got)
        assert [(m.seq, m.id, m.created_at) for m in got] == [(m.seq, m.id, m.created_at) for m in stored]
        assert got[1] == {"role": "assistant", "content": "", "tool_calls": [call]} and "tool_calls" not in got[0]
    first = s.context.messages(strategy="full").assemble().messages
    first[1]["tool_calls"][0]["id"] = "changed"
    first[0]["content"] = "changed"
    assert s.context.messages(strategy="full").assemble().messages == stored


def test_tokens_are_floor_of_utf8_bytes_over_four_per_message(ctx: Context) -> None:
    s = ctx.session("s")
    s.append([msg("user", "é" * 10), msg("user", "abc"), msg("user", "abcdefgh")])  # 20 bytes, 3, 8
    assert s.context.messages().assemble().token_estimate == 5 + 0 + 2


def test_exact_counts_o200k_tokens(ctx: Context) -> None:
    texts = ["Hello, world!", "tiktoken is great!", "naïve café ☕ 東京"]
    s = ctx.session("s")
    s.append([msg("user", t) for t in texts])
    r = s.context.messages(exact=True).assemble()
    assert r.token_estimate == sum(count_tokens(texts))
    budget = count_tokens(texts[2])
    assert seqs(s.context.messages(exact=True, max_tokens=budget).assemble()) == [3]


def test_an_empty_session(ctx: Context) -> None:
    r = ctx.session("new").context.messages(strategy="full").recall().assemble()
    assert r.messages == [] and r.strategy_used == "full"
    assert (r.total_messages, r.included_messages, r.token_estimate, r.conversation_messages) == (0, 0, 0, 0)


@pytest.mark.parametrize("strategy", ["bm25", "summary", "recent+summary", ""])
def test_unknown_strategies(ctx: Context, strategy: str) -> None:
    with pytest.raises(ContextError, match=re.escape(f"unknown strategy: {strategy}")):
        ctx.session("s").context.messages(strategy=strategy)


@pytest.mark.parametrize("kwargs", [{"max_tokens": -1}, {"prune_threshold": -1}, {"keep_first": "yes"},
                                    {"exact": 1}, {"compaction": "summarise"}])
def test_bad_message_options(ctx: Context, kwargs: dict) -> None:
    with pytest.raises(ContextError):
        ctx.session("s").context.messages(**kwargs)


# -- compacted --------------------------------------------------------------------------------------


def ten_turns(ctx: Context) -> Session:
    s = ctx.session("long")
    s.append([msg("user" if i % 2 == 0 else "assistant", f"{i:02d}" + "y" * 38) for i in range(10)])  # 10 tokens each
    return s


def test_compacted_summarises_what_the_recent_window_leaves_out(store: mindcore.Store) -> None:
    llm = ScriptedLLM(["Decided to fly on Friday."])
    ctx = Context(store, llm=llm)
    s = ten_turns(ctx)
    s.append([msg("tool", "z" * 600, tool_call_id="c1"), msg("tool", "short", tool_call_id="c2")])
    s.append([msg("user", "a" * 40) for _ in range(6)])  # seq 13..18, 10 tokens each
    r = s.context.messages(strategy="compacted", max_tokens=100).assemble()
    # floor(0.6 * 100) = 60 tokens: the last six messages; the other twelve are summarised in 40.
    assert seqs(r) == [0, 13, 14, 15, 16, 17, 18]
    summary = r.messages[0]
    assert isinstance(summary, StoredMessage) and summary.id == "summary" and summary["role"] == "assistant"
    assert summary["content"] == "[Summary of messages 1\u201312 (12 messages compacted)]\nDecided to fly on Friday."
    assert r.summary == "Decided to fly on Friday." and (r.summary_range.first_seq, r.summary_range.last_seq,
                                                          r.summary_range.count) == (1, 12, 12)
    assert r.token_estimate == 60 + len(b"Decided to fly on Friday.") // 4
    assert (r.included_messages, r.conversation_messages, r.total_messages) == (6, 18, 18)
    assert r.strategy_used == "compacted" and r.fallback is False
    (call,) = llm.calls
    assert call.max_tokens == 40
    assert call.messages[0] == {"role": "system", "content": "Summarize this conversation concisely. Focus on key "
                                                               "decisions, facts, and action items."}
    lines = call.messages[1]["content"].split("\n")
    assert lines[0] == "user: 00" + "y" * 38 and lines[1].startswith("assistant: 01")
    assert lines[10:] == ["tool: [pruned]", "tool: short"]  # tool results over 500 characters are pruned
    assert r.to_wire()["summary_range"] == {"first_seq": 1, "last_seq": 12, "count": 12}
    assert [m["seq"] for m in r.to_wire()["messages"]] == [13, 14, 15, 16, 17, 18]


def test_compacted_with_keep_first_places_the_summary_after_the_pinned_message(ctx: Context) -> None:
    s = ten_turns(ctx)
    r = s.context.messages(strategy="compacted", max_tokens=100, keep_first=True).assemble()
    # The pinned first user message (10 tokens) counts against the 60: five more fit.
    assert seqs(r) == [1, 0, 6, 7, 8, 9, 10]
    assert r.summary_range is not None and (r.summary_range.first_seq, r.summary_range.last_seq) == (2, 5)
    assert r.summary_range.count == 4


def test_the_summary_goes_first_when_no_message_is_pinned(ctx: Context) -> None:
    s = ten_turns(ctx)  # the first message is a user message: the SDK would put the summary second
    r = s.context.messages(strategy="compacted", max_tokens=100).assemble()
    assert r.messages[0].id == "summary"


def test_a_compaction_callable_gets_the_pruned_older_messages(store: mindcore.Store) -> None:
    seen: list[list[StoredMessage]] = []

    def summarise(older: list[StoredMessage]) -> dict[str, str]:
        seen.append(older)
        return {"summary": f"{len(older)} earlier messages"}

    ctx = Context(store)  # no LLM: the callable is enough
    s = ctx.session("s")
    s.append([msg("tool", "z" * 30, tool_call_id="c")] + [msg("user", "a" * 40) for _ in range(6)])
    r = s.context.messages(strategy="compacted", max_tokens=100, prune_threshold=20, compaction=summarise).assemble()
    assert r.summary == "1 earlier messages" and seqs(r) == [0, 2, 3, 4, 5, 6, 7]
    assert [(m.seq, m["content"]) for m in seen[0]] == [(1, "[pruned]")]


def test_compacted_falls_back_to_recent_when_the_llm_fails(store: mindcore.Store) -> None:
    ctx = Context(store, llm=ScriptedLLM([LLMError("endpoint down"), ""]))
    s = ten_turns(ctx)
    for _ in range(2):  # an error, then an empty summary
        r = s.context.messages(strategy="compacted", max_tokens=100, keep_first=True).assemble()
        assert r.strategy_used == "compacted" and r.fallback is True and r.summary is None
        # recent over the full budget, keep_first honoured
        assert seqs(r) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] and r.included_messages == r.conversation_messages == 10
    assert seqs(s.context.messages(strategy="compacted", max_tokens=50, keep_first=False,
                                   compaction=lambda older: 1 / 0).assemble()) == [6, 7, 8, 9, 10]


def test_compacted_with_nothing_older_has_no_summary(ctx: Context) -> None:
    s = session_with(ctx, ["user", "assistant"], content="short")
    r = s.context.messages(strategy="compacted").assemble()
    assert seqs(r) == [1, 2] and r.summary is None and r.fallback is False


def test_compacted_needs_an_llm_or_a_callable(store: mindcore.Store) -> None:
    s = Context(store).session("s")
    s.append([msg("user", "hi")])
    with pytest.raises(UnsupportedStrategyError, match="Compacted strategy requires LLM configuration"):
        s.context.messages(strategy="compacted").assemble()


# -- recall and limit_tokens ------------------------------------------------------------------------


@pytest.fixture
def tooled(store: mindcore.Store) -> Context:
    ctx = Context(store, dataset="tools")
    ctx.register([
        Tool("get_weather", "Get the weather forecast for a city", {"type": "object", "properties": {}},
             handler=lambda args: {"temp": 22}),
        Tool("book_flight", "Book a flight to a city"),
        Tool("send_email", "Send an email"),
        Tool("escalate", "Escalate to a human", always_include=True),
    ])
    return ctx


def test_recall_finds_tools_for_the_last_user_message_and_the_session_keeps_them(tooled: Context) -> None:
    s = tooled.session("s")
    s.append([msg("user", "book a flight"), msg("assistant", "where to?"), msg("user", "weather forecast please")])
    r = s.context.recall({"limit": 1}).assemble()
    assert [(t.name, t.score) for t in r.recalled.tools] == [("get_weather", 1.0)]
    assert s.held_tools == ["get_weather"]
    assert list(r.tools) == ["escalate", "get_weather"]
    s.append([msg("user", "and book a flight")])
    r = s.context.tools({"custom": "anything"}).recall({"limit": 5, "min_similarity": 0.5}).assemble()
    # Held tools first with score 1, then new finds scoring at least min_similarity.
    assert [(t.name, t.score) for t in r.recalled.tools] == [("get_weather", 1.0), ("book_flight", 1.0)]
    assert list(r.tools) == ["escalate", "get_weather", "book_flight", "custom"]
    assert r.tools["get_weather"].handler is not None


def test_recall_uses_the_contexts_default_strategy(store: mindcore.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = Context(store, default_strategy="hybrid", embedder=mindcore.embed.HashEmbedder(dim=64))
    ctx.register([Tool("a", "alpha")])
    used: list[Any] = []
    real = ctx.discover
    monkeypatch.setattr(ctx, "discover", lambda *a, **kw: used.append(kw.get("strategy")) or real(*a, **kw))
    s = ctx.session("s")
    s.append([msg("user", "alpha")])
    s.context.recall().assemble()
    assert used == [None]  # None: the context's default, hybrid


def test_recall_without_a_user_message_returns_the_held_tools(tooled: Context) -> None:
    s = tooled.session("s")
    tooled.discover("email", limit=1, session="s")
    s.append([msg("assistant", "hello")])
    assert [t.name for t in s.context.recall().assemble().recalled.tools] == ["send_email"]


def test_limit_tokens_takes_the_recalled_tools_cost_off_the_message_budget(tooled: Context) -> None:
    s = tooled.session("s")
    s.append([msg("user", X100) for _ in range(5)] + [msg("user", "weather")])
    weather = tooled.tools()[0]
    cost = (len("get_weather") + len(weather.description) + len('{"type":"object","properties":{}}')) // 4
    assert weather.token_cost == cost
    r = s.context.messages(max_tokens=4000).recall({"limit": 1}).limit_tokens(cost + 50).assemble()
    assert seqs(r) == [5, 6] and r.token_estimate == 26  # tools are not counted
    r = s.context.messages(max_tokens=30).recall({"limit": 1}).limit_tokens(10_000).assemble()
    assert seqs(r) == [5, 6]  # max_tokens still caps
    r = s.context.recall({"limit": 1}).limit_tokens(1).assemble()
    assert seqs(r) == [6]  # nothing left: still one message


@pytest.mark.parametrize("tools", [{"limit": -1}, {"min_similarity": "high"}, {"colour": 1}, 5])
def test_bad_recall_options(ctx: Context, tools: Any) -> None:
    with pytest.raises(ContextError):
        ctx.session("s").context.recall(tools)


# -- events -----------------------------------------------------------------------------------------


def test_events_fire_after_assembly_with_the_seed_payload(tooled: Context) -> None:
    got: list[tuple[str, Any]] = []
    off_a = tooled.on("context:assembled", lambda e: got.append(("a", e)))
    tooled.on("context_assembled", lambda e: got.append(("b", e)))
    tooled.on("recall", lambda e: got.append(("r", e)))
    tooled.on("recall", lambda e: 1 / 0)  # a failing listener changes nothing
    s = tooled.session("s")
    s.append([msg("user", "weather")])
    result = s.context.recall({"limit": 1}).assemble()
    assert [k for k, _ in got] == ["r", "a", "b"]
    recall, assembled = got[0][1], got[1][1]
    assert isinstance(recall, RecallEvent) and [t.name for t in recall.matches] == ["get_weather"]
    assert recall.config == {"tools": {"limit": 1, "min_similarity": None}} and recall.session_id == "s"
    assert isinstance(assembled, ContextAssembledEvent)
    assert (assembled.dataset_id, assembled.strategy_used, assembled.total_messages, assembled.included_messages,
            assembled.token_estimate, assembled.fallback) == ("tools", "recent", 1, 1, 1, False)
    assert assembled.recalled == result.recalled and assembled.duration_ms >= 0
    off_a()
    got.clear()
    s.context.assemble()  # no recall configured: no recall event
    assert [k for k, _ in got] == ["b"]
    with pytest.raises(ContextError, match="event"):
        tooled.on("context:exploded", print)


def test_async_listeners_and_aassemble(ctx: Context) -> None:
    got: list[str] = []

    async def listener(event: ContextAssembledEvent) -> None:
        await asyncio.sleep(0)
        got.append(event.strategy_used)

    async def broken(event: ContextAssembledEvent) -> None:
        raise RuntimeError("listener bug")

    ctx.on("context:assembled", listener)
    ctx.on("context:assembled", broken)
    s = ten_turns(ctx)
    sync = s.context.messages(strategy="compacted", max_tokens=100).assemble()
    awaited = asyncio.run(s.context.messages(strategy="compacted", max_tokens=100).aassemble())
    assert got == ["compacted", "compacted"]
    assert seqs(sync) == seqs(awaited) and sync.summary == awaited.summary == "They talked."

    async def summarise(older: list[StoredMessage]) -> str:
        return "async summary"

    r = asyncio.run(s.context.messages(strategy="compacted", max_tokens=100, compaction=summarise).aassemble())
    assert r.summary == "async summary"
    assert s.context.messages(strategy="compacted", max_tokens=100, compaction=summarise).assemble().summary == "async summary"


# -- the session's tools ----------------------------------------------------------------------------


def test_session_tools_offer_discovery_history_and_held_tools(tooled: Context) -> None:
    s = tooled.session("s")
    s.append([msg("user", str(i)) for i in range(30)])
    assert tooled.session("s").tools.names == ["agentified_discover", "agentified_get_messages", "escalate"]
    found = s.call("agentified_discover", {"query": "weather forecast", "limit": 1})
    assert found["status"] == "ok" and [t["name"] for t in found["tools"]] == ["get_weather"]
    assert s.tools.names == ["agentified_discover", "agentified_get_messages", "escalate", "get_weather"]
    assert s.call("get_weather", {}) == {"status": "ok", "result": {"temp": 22}}
    assert s.call("escalate", {})["status"] == "error"  # registered without a handler
    page = s.call("agentified_get_messages", {})
    assert len(page["messages"]) == 20 and page["has_more"] and page["max_seq"] == 30
    page = s.call("agentified_get_messages", {"after_seq": 0, "limit": 3})
    assert [m["seq"] for m in page["messages"]] == [1, 2, 3]
    assert s.call("agentified_get_messages", {"after_seq": 1, "around_seq": 2})["status"] == "error"
    assert s.call("agentified_discover", {})["status"] == "error"  # query is required
    assert [spec["function"]["name"] for spec in s.tools.openai()][:2] == ["agentified_discover",
                                                                           "agentified_get_messages"]


def test_async_tool_handlers_run_from_call_and_acall(store: mindcore.Store) -> None:
    async def forecast(args: dict) -> dict:
        await asyncio.sleep(0)
        return {"temp": 21}

    ctx = Context(store)
    ctx.register([Tool("forecast", "weather forecast", handler=forecast, always_include=True)])
    s = ctx.session("s")
    assert s.call("forecast", {}) == {"status": "ok", "result": {"temp": 21}}
    assert asyncio.run(s.acall("forecast", {})) == {"status": "ok", "result": {"temp": 21}}

    async def inside_a_loop() -> dict:
        return s.call("forecast", {})  # blocking call on the loop's thread: a readable tool error

    assert "await session.acall" in asyncio.run(inside_a_loop())["error"]
