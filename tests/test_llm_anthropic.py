"""AnthropicLLM against a local Messages API server: OpenAI-form messages and tools converted,
tool calls and usage read back, retries and errors; and as the agent runner's model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _anthropic_server import FakeAnthropic

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, LLMError
from mindcore.llm import LLM, AnthropicLLM, ChatLLM, ToolCall, Usage

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def weather(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    last = body["messages"][-1]
    if isinstance(last["content"], list) and last["content"][0]["type"] == "tool_result":
        return "It is " + "; ".join(b["content"] for b in last["content"])
    return [{"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": last["content"]}}]


def client(server: FakeAnthropic, **kw: Any) -> AnthropicLLM:
    return AnthropicLLM("claude-test", api_key="k", base_url=server.base_url, **kw)


def test_a_tool_round_trip_in_the_messages_api_form() -> None:
    with FakeAnthropic(weather) as server:
        llm = client(server)
        assert isinstance(llm, ChatLLM) and isinstance(llm, LLM)
        messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Oslo"}]
        first = llm.chat(messages, tools=[WEATHER], tool_choice="required")
        assert first.content == "Checking." and first.finish_reason == "tool_calls"
        assert first.tool_calls == (ToolCall("toolu_1", "get_weather", '{"city": "Oslo"}'),)
        assert first.usage == Usage(11, 5)
        sent = server.requests[0]
        assert sent["system"] == "Be brief." and sent["messages"] == [{"role": "user", "content": "Oslo"}]
        assert sent["tools"][0]["input_schema"]["properties"] == {"city": {"type": "string"}}
        assert sent["tool_choice"] == {"type": "any"} and sent["max_tokens"] == 4096
        messages += [first.message(), {"role": "tool", "tool_call_id": "toolu_1", "content": "5C"}]
        second = llm.chat(messages, tools=[WEATHER])
        assert second.content == "It is 5C" and second.finish_reason == "stop"
        assert server.requests[1]["messages"][1]["content"][1] == {"type": "tool_use", "id": "toolu_1",
                                                                   "name": "get_weather", "input": {"city": "Oslo"}}
        assert llm.complete([{"role": "user", "content": "Rome"}]).startswith("Checking.")


def test_retries_then_a_clear_error() -> None:
    with FakeAnthropic(weather) as server:
        server.fail(529)
        assert client(server, max_retries=1).chat([{"role": "user", "content": "Lima"}]).tool_calls
        server.fail(500, 500)
        with pytest.raises(LLMError, match=r"claude-test.*HTTP 500"):
            client(server, max_retries=1).chat([{"role": "user", "content": "Lima"}])
        with pytest.raises(InvalidInputError, match="not one of the offered tools"):
            client(server).chat([{"role": "user", "content": "x"}], tools=[WEATHER], tool_choice="other")


def test_the_agent_runs_on_claude() -> None:
    def model(body: dict[str, Any]) -> str | list[dict[str, Any]]:
        last = body["messages"][-1]
        if isinstance(last["content"], list):
            return "Noted."
        return [{"type": "tool_use", "id": "toolu_9", "name": "mind_believe",
                 "input": {"content": "User likes jazz", "confidence": "high"}}]

    with FakeAnthropic(model) as server:
        agent = mindcore.Agent("memory://agent-claude", client(server), embedder=HashEmbedder(),
                               long_term_memory=False, instructions="Remember what matters.")
        result = asyncio.run(agent.arun("I love jazz"))
        assert result.text == "Noted." and result.tool_calls[0].ok
        assert "User likes jazz" in agent.mind.header()
        assert server.requests[0]["system"].startswith("Remember what matters.")
        assert json.loads(json.dumps(server.requests[1]["messages"][-1]))["content"][0]["tool_use_id"] == "toolu_9"
