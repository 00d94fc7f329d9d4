"""mindcore.integrations.pydantic_ai: mindcore's tools as a Pydantic AI toolset used by an agent's
run, the message history given back exactly (tool calls and returns included) and shown as a chat,
secrets and bad input refused, and a conversation continued by a second process through
``Agent.run_sync`` with a scripted ``FunctionModel``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra (in the test extra) is not installed")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.integrations.pydantic_ai import MindcoreMessageHistory, mindcore_toolset

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _remembering_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``ltm_remember`` with the user's text once, then answers with what the tool said."""
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f"tool said {returns[0].content['status']}")])
    prompt = str(last.parts[-1].content)
    return ModelResponse(parts=[ToolCallPart("ltm_remember", {"text": prompt}, tool_call_id="call-1")])


def test_an_agent_uses_mindcore_tools_and_its_history_comes_back_exactly(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "store")
    memory = mindcore.LongTermMemory(store, user_id="ada", embedder=HashEmbedder())
    agent = Agent(FunctionModel(_remembering_model), toolsets=[mindcore_toolset(memory)], system_prompt="Be brief.")
    result = agent.run_sync("Ada keeps bees")
    assert result.output == "tool said ok"
    assert [m.text for m in memory.memories()] == ["Ada keeps bees"]

    history = MindcoreMessageHistory("chat-1", store)
    history.add(result.new_messages())
    assert history.messages() == result.new_messages()
    assert history.messages(limit=1) == result.new_messages()[-1:]
    assert history.messages(limit=0) == []
    chat = history.session.get_messages().messages
    assert [m.role for m in chat] == ["user", "assistant", "tool", "assistant"]
    assert chat[1]["tool_calls"][0]["function"]["name"] == "ltm_remember"
    assert chat[3].content == "tool said ok"
    # A second history object (another process's view) reads the same messages.
    assert MindcoreMessageHistory("chat-1", store).messages() == result.new_messages()
    history.clear()
    assert history.messages() == []
    memory.close()
    store.close()


def test_a_tool_call_gone_wrong_comes_back_to_the_model(tmp_path: Path) -> None:
    memory = mindcore.LongTermMemory(str(tmp_path / "store"), user_id="ada", embedder=HashEmbedder())
    agent = Agent(FunctionModel(_remembering_model), toolsets=[mindcore_toolset(memory)])
    assert agent.run_sync(f"my token is {SECRET}").output == "tool said refused"
    assert memory.memories() == []
    with pytest.raises(mindcore.errors.InvalidTypeError):
        mindcore_toolset(object())
    memory.close()


def test_messages_written_by_others_come_back_as_requests_and_responses(tmp_path: Path) -> None:
    history = MindcoreMessageHistory("chat-1", str(tmp_path / "store"))
    history.session.append([
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
        {"role": "assistant", "content": "It is noon."},
    ])
    got = history.messages()
    assert [type(m) for m in got] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    call = got[1].parts[0]
    assert isinstance(call, ToolCallPart) and (call.tool_name, call.tool_call_id) == ("now", "c1")
    assert isinstance(got[2].parts[0], ToolReturnPart) and got[2].parts[0].content == "noon"
    # An agent can go on from them.
    seen: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(len(messages))
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(model)).run_sync("And now?", message_history=got)
    assert seen == [5]


def test_secrets_and_bad_messages_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    history = MindcoreMessageHistory("chat-1", str(tmp_path / "store"))
    agent = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(f"key {SECRET}")])))
    with pytest.raises(SecretRefusedError, match="github-token"):
        history.add(agent.run_sync("hello").new_messages())
    with pytest.raises(InvalidInputError, match=r"messages\[0\]"):
        history.add(["not a message"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="limit"):
        history.messages(limit=-1)
    assert history.messages() == []


# -- two sessions through Agent.run_sync -----------------------------------------------------------

RUN = textwrap.dedent('''
    import sys
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel
    from mindcore.integrations.pydantic_ai import MindcoreMessageHistory

    def model(messages, info):
        said = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        if said[-1].endswith("?"):
            return ModelResponse(parts=[TextPart("Earlier: " + " | ".join(said[:-1]))])
        return ModelResponse(parts=[TextPart("Noted.")])

    history = MindcoreMessageHistory("ada-chat", sys.argv[1])
    result = Agent(FunctionModel(model)).run_sync(sys.argv[2], message_history=history.messages())
    history.add(result.new_messages())
    print(result.output)
    history.close()
''')


def _run(folder: Path, text: str) -> str:
    done = subprocess.run([sys.executable, "-c", RUN, str(folder), text], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.strip()


def test_a_second_process_answers_from_what_the_first_stored(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    assert _run(folder, "My cat is called Miso") == "Noted."
    assert _run(folder, "What is my cat called?") == "Earlier: My cat is called Miso"
    history = MindcoreMessageHistory("ada-chat", str(folder))
    assert [m.role for m in history.session.get_messages().messages] == ["user", "assistant"] * 2
    assert json.loads(json.dumps([m.kind for m in history.messages()])) == ["request", "response"] * 2
    history.close()
