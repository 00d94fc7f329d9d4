"""The server's wire forms (``Session.get_messages_wire``, ``ContextBuilder.assemble_wire``), taken
from the wire rows kept per stored message, equal ``get_messages(...).to_wire()`` and
``assemble().to_wire()`` in every shape: tool calls, edited messages, pages by every cursor,
appends after a read (the kept rows extended), another writer's append, every strategy, a
summary, its fallback, and the events."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import mindcore
from mindcore.context import Context, Session, Tool
from mindcore.llm import ScriptedLLM

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def conversation(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        if i % 5 == 3:
            out.append({"role": "assistant", "content": f"calling {i}", "tool_calls": [CALL]})
        elif i % 5 == 4:
            out.append({"role": "tool", "content": f"result {i} " + "r" * (i % 7) * 100, "tool_call_id": "c1"})
        else:
            out.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "x" * (i % 11)})
    return out


@pytest.fixture
def ctx(store: mindcore.Store) -> Context:
    return Context(store, dataset="ds", llm=ScriptedLLM(lambda messages: "They talked."))


PAGES: list[dict[str, Any]] = [
    {}, {"limit": 0}, {"limit": 7}, {"limit": 1_000}, {"after_seq": 0}, {"after_seq": 5, "limit": 4},
    {"after_seq": 10_000}, {"around_seq": 12, "limit": 6}, {"around_seq": 1}, {"around_seq": -3, "limit": 2},
]


def check_pages(chat: Session) -> None:
    for page in PAGES:
        assert chat.get_messages_wire(**page) == chat.get_messages(**page).to_wire(), page


OPTIONS: list[dict[str, Any]] = [
    {"strategy": "recent"}, {"strategy": "recent", "max_tokens": 60, "keep_first": True},
    {"strategy": "recent", "max_tokens": 0}, {"strategy": "full"}, {"strategy": "full", "max_tokens": 90},
    {"strategy": "compacted", "max_tokens": 120}, {"strategy": "compacted", "max_tokens": 120, "keep_first": True},
    {"strategy": "compacted", "max_tokens": 100_000},
]


def check_contexts(chat: Session) -> None:
    for options in OPTIONS:
        assert chat.context.messages(**options).assemble_wire() == \
            chat.context.messages(**options).assemble().to_wire(), options


def test_pages_and_contexts_of_an_empty_session(ctx: Context) -> None:
    chat = ctx.session("empty")
    check_pages(chat)
    check_contexts(chat)


def test_pages_and_contexts_as_the_session_grows_and_is_edited(ctx: Context) -> None:
    chat = ctx.session("chat")
    chat.append(conversation(30))
    check_pages(chat)
    check_contexts(chat)
    chat.append(conversation(9, start=30))  # the kept wire rows are extended, not rebuilt
    check_pages(chat)
    check_contexts(chat)
    view = conversation(39)
    view[4] = {**view[4], "content": "an edited tool result"}
    view[20] = {**view[20], "content": "an edited message"}
    assert chat.update_conversation([*view, {"role": "user", "content": "one more"}]) == 3
    check_pages(chat)
    check_contexts(chat)
    assert chat.get_messages_wire(after_seq=20, limit=1)["messages"][0]["content"] == "an edited message"


def test_what_another_writer_appends_is_in_the_next_wire_page(tmp_path: Path) -> None:
    with mindcore.open(tmp_path / "s") as first, mindcore.open(tmp_path / "s") as second:
        reader = Context(first, dataset="ds").session("chat")
        writer = Context(second, dataset="ds").session("chat")
        writer.append(conversation(5))
        assert [m["seq"] for m in reader.get_messages_wire()["messages"]] == [1, 2, 3, 4, 5]
        writer.append(conversation(2, start=5))
        page = reader.get_messages_wire()
        assert [m["seq"] for m in page["messages"]] == [1, 2, 3, 4, 5, 6, 7] and page["max_seq"] == 7
        check_pages(reader)


def test_a_summary_and_its_fallback_travel_the_same_way(store: mindcore.Store) -> None:
    answers = iter(["They talked.", "They talked."])
    ctx = Context(store, dataset="ds", llm=ScriptedLLM(lambda messages: next(answers)))
    chat = ctx.session("chat")
    chat.append(conversation(40))
    options = {"strategy": "compacted", "max_tokens": 150, "keep_first": True}
    wire = chat.context.messages(**options).assemble_wire()
    assert wire == chat.context.messages(**options).assemble().to_wire()
    assert wire["summary"] == "They talked." and wire["summary_range"]["first_seq"] >= 1
    failing = Context(store, dataset="ds", llm=ScriptedLLM(lambda messages: ""))  # an empty summary fails
    fallen = failing.session("chat").context.messages(**options).assemble_wire()
    assert fallen["fallback"] is True and "summary" not in fallen
    assert fallen == failing.session("chat").context.messages(**options).assemble().to_wire()


def test_recall_and_events_are_the_same_for_the_wire_form(store: mindcore.Store) -> None:
    ctx = Context(store, dataset="ds")
    ctx.register([Tool(name="get_weather", description="Weather of a city"),
                  Tool(name="send_email", description="Send an email")])
    seen: list[Any] = []
    ctx.on("context:assembled", seen.append)
    ctx.on("recall", seen.append)
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    chat, twin = ctx.session("chat"), ctx.session("twin")  # recall changes what a session holds: one each
    chat.append(question)
    twin.append(question)
    wire = chat.context.messages("recent").recall({"limit": 1}).limit_tokens(10_000).assemble_wire()
    assert [t["name"] for t in wire["recalled"]["tools"]] == ["get_weather"]
    by_object = twin.context.messages("recent").recall({"limit": 1}).limit_tokens(10_000).assemble().to_wire()
    assert {k: v for k, v in wire.items() if k != "messages"} == {k: v for k, v in by_object.items() if k != "messages"}
    assert [(m["seq"], m["content"]) for m in wire["messages"]] == [(m["seq"], m["content"]) for m in by_object["messages"]]
    assert [type(e).__name__ for e in seen] == ["RecallEvent", "ContextAssembledEvent"] * 2
    first, second = seen[1], seen[3]
    assert (first.included_messages, first.token_estimate, first.strategy_used, first.recalled) == \
        (second.included_messages, second.token_estimate, second.strategy_used, second.recalled)


def test_the_async_twins_give_the_same(ctx: Context) -> None:
    chat = ctx.session("chat")
    chat.append(conversation(12))
    options = {"strategy": "recent", "max_tokens": 50}
    assert asyncio.run(chat.aget_messages_wire(limit=5)) == chat.get_messages(limit=5).to_wire()
    assert asyncio.run(chat.context.messages(**options).aassemble_wire()) == \
        chat.context.messages(**options).assemble().to_wire()
