"""`chat` with tools: the OpenAI-compatible client against a real local HTTP server (tool calls,
parallel calls, retries, timeouts, malformed answers) and the scripted LLM."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _openai_server import FakeOpenAI, Fault

from mindcore.errors import InvalidInputError, InvalidMessageError, LLMError
from mindcore.llm import ChatLLM, OpenAICompatibleLLM, Reply, ScriptedLLM, ToolCall, Usage
from mindcore.toolspec import Toolset, ToolSpec

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def weather_agent(messages: list[dict[str, Any]], json_mode: bool) -> str | dict[str, Any]:
    """Calls get_weather for each city named in the last user message, then answers from the results."""
    if messages[-1]["role"] == "tool":
        results = [m["content"] for m in messages if m["role"] == "tool"]
        return "Weather: " + "; ".join(results)
    cities = [w.strip(" ?") for w in messages[-1]["content"].split(" and ")]
    return {"content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": c})}}
        for i, c in enumerate(cities)]}


def client(server: FakeOpenAI, **kw: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("m", base_url=server.base_url, api_key="k", **kw)


def test_a_tool_calling_round_trip_over_http() -> None:
    with FakeOpenAI(reply=weather_agent) as server:
        llm = client(server)
        assert isinstance(llm, ChatLLM)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Paris and Oslo"}]
        first = llm.chat(messages, tools=[WEATHER], parallel_tool_calls=True)
        assert first.tool_calls == (ToolCall("call_0", "get_weather", '{"city": "Paris"}'),
                                    ToolCall("call_1", "get_weather", '{"city": "Oslo"}'))
        assert first.content == "" and first.finish_reason == "tool_calls"
        assert first.usage == Usage(10, 3)
        sent = server.requests[-1].body
        assert sent["tools"] == [WEATHER] and sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is True
        messages.append(first.message())
        messages += [{"role": "tool", "tool_call_id": c.id, "content": f"{c.parsed()['city']}: 20C"}
                     for c in first.tool_calls]
        second = llm.chat(messages, tools=[WEATHER])
        assert second.content == "Weather: Paris: 20C; Oslo: 20C" and second.tool_calls == ()
        # The assistant message with tool calls went back as the API expects it.
        assert server.requests[-1].body["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


def test_a_toolset_and_a_forced_tool() -> None:
    toolset = Toolset([(ToolSpec("get_weather", "Weather in a city.",
                                 {"type": "object", "properties": {"city": {"type": "string"}}}),
                        lambda args: {"status": "ok", "temp": 20})])
    with FakeOpenAI(reply=weather_agent) as server:
        reply = client(server).chat([{"role": "user", "content": "Rome"}], tools=toolset, tool_choice="get_weather")
        assert reply.tool_calls[0].parsed() == {"city": "Rome"}
        body = server.requests[-1].body
        assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]


def test_retries_on_429_and_5xx_then_answers() -> None:
    with FakeOpenAI(reply=weather_agent) as server:
        server.fail(Fault.status(429, headers={"retry-after-ms": "10"}), Fault.status(503))
        reply = client(server, max_retries=2).chat([{"role": "user", "content": "Paris"}], tools=[WEATHER])
        assert reply.tool_calls[0].name == "get_weather"
        assert len(server.requests) == 3


def test_failures_are_llm_errors_naming_the_endpoint() -> None:
    with FakeOpenAI(reply=weather_agent) as server:
        server.fail(Fault.status(500), Fault.status(500))
        with pytest.raises(LLMError, match=r"HTTP 500.*2 attempts"):
            client(server, max_retries=1).chat([{"role": "user", "content": "Paris"}], tools=[WEATHER])
        server.fail(Fault.hang(5))
        with pytest.raises(LLMError, match="timed out"):
            client(server, timeout=0.3, max_retries=0).chat([{"role": "user", "content": "Paris"}])
        server.fail(Fault.empty_choices())
        with pytest.raises(LLMError, match="malformed response"):
            client(server).chat([{"role": "user", "content": "Paris"}])


def test_a_malformed_tool_call_from_the_model_is_kept_for_the_runner_to_report() -> None:
    def bad(messages: list[dict[str, Any]], json_mode: bool) -> dict[str, Any]:
        return {"content": None, "tool_calls": [{"id": "c", "type": "function",
                                                 "function": {"name": "get_weather", "arguments": "{city: Paris"}}]}

    with FakeOpenAI(reply=bad) as server:
        call = client(server).chat([{"role": "user", "content": "Paris"}], tools=[WEATHER]).tool_calls[0]
        assert call.arguments == "{city: Paris"
        with pytest.raises(InvalidInputError, match="arguments are not JSON"):
            call.parsed()


def test_bad_input_is_refused_before_any_request() -> None:
    with FakeOpenAI() as server:
        llm = client(server)
        with pytest.raises(InvalidMessageError, match="not one of"):
            llm.chat([{"role": "robot", "content": "x"}])
        with pytest.raises(InvalidMessageError, match=r"tool_calls\[0\]\.id"):
            llm.chat([{"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}])
        with pytest.raises(InvalidInputError, match="not one of the offered tools"):
            llm.chat([{"role": "user", "content": "x"}], tools=[WEATHER], tool_choice="nope")
        with pytest.raises(InvalidInputError, match="needs tools"):
            llm.chat([{"role": "user", "content": "x"}], tool_choice="required")
        with pytest.raises(InvalidInputError, match="tools\\[0\\]"):
            llm.chat([{"role": "user", "content": "x"}], tools=[{"name": "flat"}])
        with pytest.raises(InvalidInputError, match="at least one"):
            llm.chat([])
        assert server.requests == []


def test_achat_over_http() -> None:
    with FakeOpenAI(reply=weather_agent) as server:
        reply = asyncio.run(client(server).achat([{"role": "user", "content": "Lima"}], tools=[WEATHER]))
        assert reply.tool_calls[0].parsed() == {"city": "Lima"}


def test_scripted_tool_calls_and_recorded_offers() -> None:
    llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "get_weather", '{"city": "Paris"}'),)), "20C in Paris."])
    assert isinstance(llm, ChatLLM)
    first = llm.chat([{"role": "user", "content": "Paris?"}], tools=[WEATHER])
    assert first.tool_calls[0].name == "get_weather"
    second = llm.chat([{"role": "user", "content": "Paris?"}, first.message(),
                       {"role": "tool", "tool_call_id": "c1", "content": "20C"}], tools=[WEATHER])
    assert second == Reply("20C in Paris.", finish_reason="stop")
    assert llm.calls[0].tools == [WEATHER] and llm.calls[0].tool_choice == "auto"
    assert llm.calls[1].messages[2] == {"role": "tool", "content": "20C", "tool_call_id": "c1"}
    # complete() still answers text, also from a Reply item.
    assert ScriptedLLM([Reply("plain")]).complete([{"role": "user", "content": "x"}]) == "plain"
    with pytest.raises(TypeError, match="a Reply"):
        ScriptedLLM([42])  # type: ignore[list-item]
