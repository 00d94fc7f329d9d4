"""mindcore.integrations.openai_agents: the Agents SDK's session behaviour (order, ``limit``,
``pop_item`` on empty, ``clear_session``, concurrent ``add_items`` from 8 tasks losing nothing,
items given back exactly), secrets and bad input, mindcore's tools as ``FunctionTool``, and a
conversation continued by a second process through the SDK's own ``Runner`` against a local
OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra (in the test extra) is not installed")

from _openai_server import FakeOpenAI

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.integrations.openai_agents import MindcoreSession, mindcore_tools

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}],
     "encrypted_content": "gAAAAABoc2Vj"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": '{"city": "Paris"}', "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "21 degrees.", "annotations": []}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]},
]


def _session(tmp_path: Path, session_id: str = "chat-1", **kwargs: Any) -> MindcoreSession:
    return MindcoreSession(session_id, str(tmp_path / "store"), **kwargs)


def test_items_come_back_exactly_in_order_and_as_a_chat(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def run() -> None:
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=2) == ITEMS[-2:]
        assert await session.get_items(limit=100) == ITEMS
        assert await session.get_items(limit=0) == []

    asyncio.run(run())
    # The same conversation as the context session shows it (one message per item).
    chat = session.session.get_messages().messages
    assert [m.role for m in chat] == ["user", "assistant", "assistant", "tool", "assistant", "user"]
    assert chat[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert [chat[3]["tool_call_id"], chat[3].content] == ["call_1", '{"temp": 21}']
    assert [chat[1].content, chat[4].content, chat[5].content] == ["[reasoning] Look it up.", "21 degrees.", "Thanks!"]
    # Another process's view: a new session object on the same store.
    assert asyncio.run(_session(tmp_path).get_items()) == ITEMS
    assert asyncio.run(_session(tmp_path, "chat-2").get_items()) == []


def test_pop_item_clear_and_the_settings_limit(tmp_path: Path) -> None:
    from agents.memory.session_settings import SessionSettings

    session = _session(tmp_path, session_settings=SessionSettings(limit=2))

    async def run() -> None:
        assert await session.pop_item() is None  # on empty
        await session.add_items(ITEMS)
        assert await session.get_items() == ITEMS[-2:]  # the settings' limit
        assert await session.get_items(limit=3) == ITEMS[-3:]
        assert await session.pop_item() == ITEMS[-1]
        assert await session.pop_item() == ITEMS[-2]
        assert await session.get_items(limit=10) == ITEMS[:-2]
        await session.add_items([{"role": "user", "content": "again"}])
        assert (await session.get_items(limit=1)) == [{"role": "user", "content": "again"}]
        await session.clear_session()
        assert await session.get_items(limit=10) == []
        assert await session.pop_item() is None

    asyncio.run(run())


def test_add_items_from_eight_tasks_loses_nothing(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def writer(t: int) -> None:
        for i in range(10):
            await session.add_items([{"role": "user", "content": f"t{t}-q{i}"},
                                     {"role": "assistant", "content": f"t{t}-a{i}"}])

    async def run() -> list[Any]:
        await asyncio.gather(*(writer(t) for t in range(8)))
        return await session.get_items()

    got = [item["content"] for item in asyncio.run(run())]
    assert sorted(got) == sorted(f"t{t}-{x}{i}" for t in range(8) for i in range(10) for x in "qa")
    for t in range(8):
        for i in range(10):  # each call's items stay together, in order
            assert got.index(f"t{t}-a{i}") == got.index(f"t{t}-q{i}") + 1


def test_messages_written_by_others_come_back_as_items(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.session.append([
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
    ])
    assert asyncio.run(session.get_items()) == [
        {"role": "user", "content": "Hi"},
        {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "noon"},
    ]


def test_secrets_and_bad_items_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def run() -> None:
        await session.add_items([{"role": "user", "content": "hello"}])
        for bad in (
            [{"role": "user", "content": "fine"}, {"role": "user", "content": f"key {SECRET}"}],
            [{"type": "function_call", "call_id": "c", "name": "f", "arguments": json.dumps({"token": SECRET})}],
            [{"type": "reasoning", "summary": [], "note": f"{SECRET}"}],  # only in the kept item
        ):
            with pytest.raises(SecretRefusedError, match="github-token"):
                await session.add_items(bad)
        with pytest.raises(InvalidInputError, match=r"items\[1\]"):
            await session.add_items([{"role": "user", "content": "fine"}, "not an item"])
        assert await session.get_items() == [{"role": "user", "content": "hello"}]

    asyncio.run(run())
    with pytest.raises(SecretRefusedError):
        MindcoreSession(SECRET, str(tmp_path / "store"))


def test_mindcore_tools_are_function_tools_that_never_raise(tmp_path: Path) -> None:
    from agents import FunctionTool

    memory = mindcore.LongTermMemory(str(tmp_path / "store"), user_id="ada", embedder=HashEmbedder())
    working = mindcore.WorkingMemory(str(tmp_path / "store"), thread_id="t1")
    tools = {t.name: t for t in mindcore_tools(memory, working.tools)}
    assert all(isinstance(t, FunctionTool) for t in tools.values())
    assert {"ltm_remember", "ltm_recall", "working_memory_update"} <= set(tools)

    async def call(name: str, arguments: str) -> Any:
        return json.loads(await tools[name].on_invoke_tool(None, arguments))  # type: ignore[arg-type]

    assert asyncio.run(call("ltm_remember", json.dumps({"text": "Ada keeps bees"})))["status"] == "ok"
    recalled = asyncio.run(call("ltm_recall", json.dumps({"query": "bees"})))
    assert "Ada keeps bees" in json.dumps(recalled)
    assert asyncio.run(call("ltm_remember", json.dumps({"text": f"token {SECRET}"})))["status"] == "refused"
    assert asyncio.run(call("ltm_recall", "{not json"))["status"] == "error"
    with pytest.raises(mindcore.errors.InvalidTypeError):
        mindcore_tools(42)
    memory.close()


# -- two sessions through the SDK's Runner ---------------------------------------------------------

RUN = textwrap.dedent('''
    import asyncio, sys
    import mindcore
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI
    from mindcore.embed import HashEmbedder
    from mindcore.integrations.openai_agents import MindcoreSession, mindcore_tools

    set_tracing_disabled(True)
    folder, base_url, text = sys.argv[1:4]
    store = mindcore.open(folder)
    memory = mindcore.LongTermMemory(store, user_id="ada", embedder=HashEmbedder())
    model = OpenAIChatCompletionsModel(model="scripted", openai_client=AsyncOpenAI(base_url=base_url, api_key="k"))
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=mindcore_tools(memory))
    session = MindcoreSession("ada-chat", store)
    print(asyncio.run(Runner.run(agent, text, session=session)).final_output)
    memory.close()
    store.close()
''')


def _reply(messages: list[dict[str, Any]], json_mode: bool) -> str | dict[str, Any]:
    """The scripted model: it asks ``ltm_remember`` to keep what the user says to remember, and
    answers a question from the user messages it was sent (the stored history)."""
    last = messages[-1]
    if last["role"] == "tool":
        return "Saved."
    text = str(last["content"])
    if text.startswith("Remember "):
        call = {"id": "call-1", "type": "function",
                "function": {"name": "ltm_remember", "arguments": json.dumps({"text": text[len("Remember "):]})}}
        return {"content": None, "tool_calls": [call]}
    said = [str(m["content"]) for m in messages if m["role"] == "user"][:-1]
    return "Earlier: " + " | ".join(said)


def _run(folder: Path, base_url: str, text: str) -> str:
    env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    done = subprocess.run([sys.executable, "-c", RUN, str(folder), base_url, text],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.strip()


def test_a_second_process_answers_from_what_the_first_stored(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with FakeOpenAI(reply=_reply) as server:
        assert _run(folder, server.base_url, "Remember my cat is called Miso") == "Saved."
        assert _run(folder, server.base_url, "What do you know?") == "Earlier: Remember my cat is called Miso"
        # The second request carried the first run's tool call and its output, as the SDK sent them.
        second = server.requests[-1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "ltm_remember"
    memory = mindcore.LongTermMemory(str(folder), user_id="ada", embedder=HashEmbedder())
    assert [m.text for m in memory.memories()] == ["my cat is called Miso"]
    memory.close()
