"""The agent runner: the loop, its tools, its prompt under a budget, what it keeps after a turn,
and every way a turn can go wrong (against the scripted LLM and a real local HTTP server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import pytest
from _openai_server import FakeOpenAI, Fault

import mindcore
from mindcore.agent import Final, ModelCall, ToolCallEvent, ToolResultEvent
from mindcore.context import Tool
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.llm import OpenAICompatibleLLM, Reply, ScriptedLLM, ToolCall
from mindcore.store import Store


def call(name: str, args: dict[str, Any] | str, id: str = "c1") -> Reply:
    return Reply(tool_calls=(ToolCall(id, name, args if isinstance(args, str) else json.dumps(args)),))


def make(store: Store | str, llm: Any, **kw: Any) -> mindcore.Agent:
    """An agent on ``store``; its long-term memory extracts nothing unless ``extractor`` is given
    (the scripted model then answers only the agent's own calls)."""
    kw.setdefault("embedder", HashEmbedder())
    extractor = kw.pop("extractor", None)
    if kw.get("long_term_memory", True) is True:
        kw["long_term_memory"] = mindcore.LongTermMemory(store, user_id="user-7", namespace="support",
                                                         embedder=kw["embedder"], extractor=extractor)
    kw.setdefault("thread_id", "t-1")
    return mindcore.Agent(store, llm, name="support", user_id="user-7", **kw)


def test_a_turn_runs_tools_of_every_capability_and_the_users(store: Store) -> None:
    async def order_status(order_id: str) -> dict[str, Any]:
        """Where an order is."""
        return {"status": "ok", "order": order_id, "state": "lost in transit"}

    def refund(order_id: str, amount: float, reason: Literal["lost", "damaged"] = "lost") -> str:
        """Refund an order."""
        return f"refunded {amount} on {order_id} ({reason})"

    llm = ScriptedLLM([
        Reply(tool_calls=(ToolCall("a", "order_status", '{"order_id": "1234"}'),
                          ToolCall("b", "mind_believe", '{"content": "Order 1234 was lost", "confidence": "high"}'))),
        Reply(tool_calls=(ToolCall("c", "working_memory_update", '{"content": "Refund for #1234 in progress"}'),
                          ToolCall("d", "ltm_remember", '{"text": "Customer had order 1234 lost", "kind": "fact"}'),
                          ToolCall("e", "refund", '{"order_id": "1234", "amount": 20.5}'))),
        "Your order #1234 was lost; I refunded 20.5.",
    ])
    agent = make(store, llm, instructions="You are a support agent.", tools=[order_status, refund])
    result = agent.run("My order #1234 never arrived")
    assert result.ok and result.stop_reason == "final" and result.steps == 3
    assert result.text == "Your order #1234 was lost; I refunded 20.5."
    assert [t.name for t in result.tool_calls] == ["order_status", "mind_believe", "working_memory_update",
                                                   "ltm_remember", "refund"]
    assert all(t.ok for t in result.tool_calls), [t.result for t in result.tool_calls]
    assert result.tool_calls[0].result["state"] == "lost in transit"  # the async handler ran
    assert result.tool_calls[4].result == {"status": "ok", "result": "refunded 20.5 on 1234 (lost)"}
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "tool", "assistant", "tool", "tool",
                                                    "tool", "assistant"]
    # Each capability kept its write; the Mind run flushed clean.
    assert "Order 1234 was lost" in agent.mind.header()
    assert "Refund for #1234" in agent.working_memory.render()
    assert [m.text for m in agent.long_term_memory.memories()] == ["Customer had order 1234 lost"]
    # The model was offered everyone's tools and saw the instructions first in the system prompt.
    offered = [t["function"]["name"] for t in llm.calls[0].tools]
    assert {"order_status", "refund", "mind_believe", "working_memory_update", "ltm_recall"} <= set(offered)
    assert llm.calls[0].messages[0]["content"].startswith("You are a support agent.")
    # The next turn sees the header, the scratchpad and the thread's history.
    llm2 = ScriptedLLM(["Anything else?"])
    agent.llm = llm2
    agent.run("thanks")
    system = llm2.calls[0].messages[0]["content"]
    assert "Order 1234 was lost" in system and "Refund for #1234" in system and "<working_memory>" in system
    assert [m["content"] for m in llm2.calls[0].messages[1:3]] == ["My order #1234 never arrived", ""]


def test_a_preference_learned_in_session_one_is_used_in_session_three(tmp_path: Any) -> None:
    """Three sessions (three Agent objects, three threads, one store): the agent is told a
    preference once and acts on it two sessions later without being told again."""

    def model(messages: list[dict[str, Any]]) -> str | Reply:
        system, last = messages[0]["content"], messages[-1]
        if last["role"] == "user" and "oat milk" in last["content"] and "allergic" in last["content"]:
            return call("ltm_remember", {"text": "User is allergic to dairy; prefers oat milk",
                                         "kind": "preference", "importance": 0.9})
        if last["role"] == "tool":
            return "Noted."
        if "coffee" in last["content"]:
            return "One latte with oat milk, as you prefer." if "oat milk" in system else "One latte with milk."
        return "Hello!"

    replies = []
    for session, text in enumerate(["I'm allergic to dairy, so I use oat milk.", "What's the weather like?",
                                    "Order me a coffee please."], start=1):
        with mindcore.open(str(tmp_path / "store")) as store, \
                make(store, ScriptedLLM(model), thread_id=f"session-{session}") as agent:
            replies.append(agent.run(text).text)
    assert replies == ["Noted.", "Hello!", "One latte with oat milk, as you prefer."]


def test_long_term_memory_extracts_from_an_answered_turn_in_the_background(store: Store) -> None:
    def model(messages: list[dict[str, Any]]) -> str:
        if messages[-1]["content"].startswith("Conversation:") or "extract" in messages[0]["content"].lower():
            return json.dumps({"memories": [{"text": "User's dog is called Rex", "kind": "fact", "importance": 0.7}]})
        return "What a nice name!"

    llm = ScriptedLLM(model)
    agent = make(store, llm, extractor=llm)
    assert agent.run("My dog is called Rex").text == "What a nice name!"
    agent.long_term_memory.flush()  # waits for the background extraction
    assert [m.text for m in agent.long_term_memory.memories()] == ["User's dog is called Rex"]


def test_the_agents_model_judges_whether_a_new_memory_updates_a_stored_one(store: Store) -> None:
    def model(messages: list[dict[str, Any]]) -> str:
        if "<memory-pairs>" in str(messages[-1]["content"]):
            return json.dumps({"verdicts": [{"pair": 1, "relation": "update", "reason": "moved"}]})
        if messages[-1]["content"].startswith("Conversation:") or "extract" in messages[0]["content"].lower():
            return json.dumps({"memories": [{"text": "Lives in Berlin", "kind": "identity"}]})
        return "Noted."

    llm = ScriptedLLM(model)
    agent = mindcore.Agent(store, llm, name="support", user_id="user-7", thread_id="t-1", embedder=HashEmbedder())
    assert agent.long_term_memory.resolver is llm and agent.long_term_memory.extractor is llm
    agent.long_term_memory.remember("Lives in Lyon")
    agent.run("I moved to Berlin")
    agent.long_term_memory.flush()
    assert [m.text for m in agent.long_term_memory.memories()] == ["Lives in Berlin"]
    assert [m.text for m in agent.long_term_memory.retired()] == ["Lives in Lyon"]


def test_the_loop_against_a_local_openai_compatible_server(store: Store) -> None:
    def server_model(messages: list[dict[str, Any]], json_mode: bool) -> str | dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return "Saved: " + json.loads(messages[-1]["content"])["action"]
        return {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "mind_believe", "arguments": json.dumps({"content": "User is in Oslo", "confidence": "medium"})}}]}

    with FakeOpenAI(reply=server_model) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, api_key="k")
        result = make(store, llm, long_term_memory=False).run("I live in Oslo")
        assert result.text == "Saved: created" and result.usage.total_tokens == 26
        assert server.requests[0].body["tools"] and server.requests[1].body["messages"][-1]["role"] == "tool"


def test_malformed_tool_calls_come_back_to_the_model_as_tool_errors(store: Store) -> None:
    llm = ScriptedLLM([
        Reply(tool_calls=(ToolCall("a", "no_such_tool", "{}"), ToolCall("b", "mind_believe", "{not json"),
                          ToolCall("c", "mind_believe", '{"content": 42}'))),
        "Sorry, something went wrong.",
    ])
    agent = make(store, llm, long_term_memory=False)
    result = agent.run("hi")
    assert result.ok and [t.ok for t in result.tool_calls] == [False, False, False]
    errors = [t.result["error"] for t in result.tool_calls]
    assert "unknown tool 'no_such_tool'" in errors[0] and "not valid JSON" in errors[1] and "content" in errors[2]
    assert [json.loads(m["content"])["status"] for m in llm.calls[1].messages if m["role"] == "tool"] == ["error"] * 3


def test_a_raising_user_tool_is_an_error_the_model_reads(store: Store) -> None:
    def flaky() -> str:
        """Always fails."""
        raise RuntimeError("backend down")

    llm = ScriptedLLM([call("flaky", {}), "The backend is down."])
    result = make(store, llm, tools=[flaky], long_term_memory=False).run("try it")
    assert result.ok and result.tool_calls[0].result == {"status": "error", "error": "RuntimeError: backend down"}


def test_a_model_that_never_stops_calling_tools_ends_at_max_steps(store: Store) -> None:
    llm = ScriptedLLM(lambda messages: call("mind_set_goal", {"description": "loop forever"}, id=f"c{len(messages)}"))
    agent = make(store, llm, max_steps=3, long_term_memory=False)
    result = agent.run("go")
    assert result.stop_reason == "max_steps" and not result.ok and result.steps == 3 and len(llm.calls) == 3
    assert "max_steps" in (result.error or "") and result.text == ""
    # The run was error-flushed: its goal writes are dropped, and the thread's history is unchanged.
    assert agent.mind.goals() == [] and agent.history == []


@pytest.mark.parametrize("fault", [Fault.status(500), Fault.hang(5)])
def test_an_llm_endpoint_that_fails_ends_the_turn_with_llm_error(store: Store, fault: Fault) -> None:
    def model(messages: list[dict[str, Any]], json_mode: bool) -> dict[str, Any]:
        return {"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "mind_set_goal", "arguments": '{"description": "Refund order 1234"}'}}]}

    calls = 0

    def fail_the_second_call(messages: list[dict[str, Any]], json_mode: bool) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            server.fail(fault)  # the model's next call fails
        return model(messages, json_mode)

    with FakeOpenAI(reply=fail_the_second_call) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, api_key="k", timeout=0.5, max_retries=0)
        agent = make(store, llm, long_term_memory=False)
        result = agent.run("refund please")
        assert result.stop_reason == "llm_error" and not result.ok and result.steps == 2
        assert ("HTTP 500" in (result.error or "")) or ("timed out" in (result.error or ""))
        assert [t.name for t in result.tool_calls] == ["mind_set_goal"]
        assert agent.mind.goals() == []  # error flush: the run's goal is not kept
        assert agent.history == []


def test_the_budget_cuts_memories_and_history_never_instructions_or_the_message(store: Store) -> None:
    agent = make(store, ScriptedLLM(["ok"] * 3), instructions="RULES " * 50)
    for i in range(30):
        agent.long_term_memory.remember(f"Fact number {i} about the user's garden and roses", importance=0.5)
    agent.run("tell me about the garden roses " + "please " * 5)
    small = make(store, ScriptedLLM(["ok"]), instructions="RULES " * 50, prompt_budget=80)
    small._history = list(agent.history)
    result = small.run("tell me about the garden roses")
    sent = small.llm.calls[0].messages
    assert sent[0]["content"].startswith("RULES RULES") and sent[-1]["content"] == "tell me about the garden roses"
    assert result.dropped.get("memories", 0) > 0 and result.dropped.get("history", 0) > 0
    roomy = make(store, ScriptedLLM(["ok"]), prompt_budget=8000)
    assert "garden" in (roomy.llm.calls[0].messages[0]["content"] if roomy.run("garden roses?") else "")


def test_stream_events_and_arun(store: Store) -> None:
    llm = ScriptedLLM([call("mind_believe", {"content": "Sky is blue", "confidence": "high"}), "Done."])
    events = list(make(store, llm, long_term_memory=False).stream("note it"))
    assert [type(e) for e in events] == [ModelCall, ToolCallEvent, ToolResultEvent, ModelCall, Final]
    assert isinstance(events[-1], Final) and events[-1].result.text == "Done."
    llm2 = ScriptedLLM([call("mind_believe", {"content": "Grass is green", "confidence": "high"}), "Done too."])
    result = asyncio.run(make(store, llm2, long_term_memory=False, thread_id="t-2").arun("note that"))
    assert result.text == "Done too." and result.tool_calls[0].ok


def test_history_lives_in_a_context_session_when_given(store: Store) -> None:
    ctx = mindcore.Context(store, dataset="support", embedder=HashEmbedder())
    ctx.register([Tool(name="track_parcel", description="Track a parcel by its tracking number",
                       parameters={"type": "object", "properties": {"number": {"type": "string"}}},
                       handler=lambda args: f"parcel {args['number']}: in Oslo")])
    llm = ScriptedLLM([call("track_parcel", {"number": "X1"}), "It is in Oslo."])
    result = make(store, llm, context=ctx, long_term_memory=False).run("track parcel X1 please")
    assert result.tool_calls[0].result == {"status": "ok", "result": "parcel X1: in Oslo"}
    assert "track_parcel" in [t["function"]["name"] for t in llm.calls[0].tools]  # discovered for the turn
    # A new Agent object on the same thread reads the history back from the session.
    again = make(store, ScriptedLLM(["Still in Oslo."]), context=ctx, long_term_memory=False)
    assert [m["role"] for m in again.history] == ["user", "assistant", "tool", "assistant"]
    again.run("and now?")
    assert [m["content"] for m in again.llm.calls[0].messages[1:2]] == ["track parcel X1 please"]


def test_bad_arguments_are_clear_errors(store: Store) -> None:
    with pytest.raises(InvalidTypeError, match="chat model"):
        mindcore.Agent(store, object())
    with pytest.raises(InvalidInputError, match="max_steps"):
        make(store, ScriptedLLM([]), max_steps=0)
    with pytest.raises(InvalidInputError, match="mind_believe would shadow"):
        make(store, ScriptedLLM([]), tools=[(mindcore.ToolSpec("mind_believe", "mine"), lambda a: {"status": "ok"})])
    with pytest.raises(InvalidTypeError, match="tools\\[0\\]"):
        make(store, ScriptedLLM([]), tools=[42])
    agent = make(store, ScriptedLLM([]))
    with pytest.raises(InvalidInputError, match="message"):
        agent.run("bad \ud800")
    assert agent.llm.calls == []
