"""A turn's inputs pass the secret policy before anything acts on them: a message that looks like
a secret ends the turn with ``stop_reason="refused"`` before the model is called, a tool runs or
anything is written; a tool result reaches the model (and the history) redacted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import SecretRefusedError
from mindcore.llm import Reply, ScriptedLLM, ToolCall
from mindcore.policy import SecretPolicy

TOKEN = "ghp_R8fKq2Lm9Xv4Tz7Wn3Yb6Pc1Hd5Js0Ga2Ue4"


def make(tmp_path: Path, llm: Any, **kw: Any) -> mindcore.Agent:
    kw.setdefault("long_term_memory", False)
    return mindcore.Agent(str(tmp_path / "store"), llm, name="helper", thread_id="t-1", embedder=HashEmbedder(), **kw)


def test_a_secret_in_the_message_is_refused_before_anything_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    def deploy(target: str) -> str:
        """Deploy to a target."""
        ran.append(target)
        return "deployed"

    llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "deploy", '{"target": "prod"}'),)), "Done."])
    agent = make(tmp_path, llm, tools=[deploy])
    result = agent.run(f"Deploy to prod, my token is {TOKEN}")
    assert (result.stop_reason, result.text, result.steps) == ("refused", "", 0)
    assert result.error is not None and "secret" in result.error and TOKEN not in result.error
    assert llm.calls == [] and ran == [] and agent.history == []
    assert agent.mind is not None and agent.mind.beliefs() == [] and not result.ok
    # The next, clean turn runs as usual.
    assert agent.run("Deploy to prod").stop_reason == "final" and ran == ["prod"]


def test_with_a_consciousness_nothing_reaches_the_inbox(tmp_path: Path) -> None:
    llm = ScriptedLLM([])
    agent = make(tmp_path, llm, consciousness=True)
    assert agent.run(f"token {TOKEN}").stop_reason == "refused"
    assert llm.calls == [] and len(agent.inbox) == 0 and agent.consciousness.cycle_count == 0


def test_redact_sends_the_message_on_without_the_secret(tmp_path: Path) -> None:
    llm = ScriptedLLM(["Noted."])
    agent = make(tmp_path, llm, secrets=SecretPolicy(action="redact"))
    assert agent.run(f"my token is {TOKEN}").stop_reason == "final"
    sent = json.dumps([c.messages for c in llm.calls])
    assert TOKEN not in sent and "[REDACTED:github-token]" in sent
    assert TOKEN not in json.dumps(agent.history)


def test_a_tool_result_reaches_the_model_redacted_and_is_never_stored(tmp_path: Path) -> None:
    def read_config() -> str:
        """Read the deployment config."""
        return f"region=eu-west-1 token={TOKEN}"

    llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "read_config", "{}"),)), "The region is eu-west-1."])
    agent = make(tmp_path, llm, tools=[read_config])
    result = agent.run("Which region do we deploy to?")
    assert result.stop_reason == "final"
    seen = json.dumps(llm.calls[1].messages)
    assert "eu-west-1" in seen and TOKEN not in seen
    assert TOKEN not in json.dumps(agent.history) and TOKEN not in json.dumps(result.messages)
    assert TOKEN not in json.dumps(result.tool_calls[0].result)


def test_instructions_with_a_secret_are_refused_when_the_agent_is_made(tmp_path: Path) -> None:
    with pytest.raises(SecretRefusedError, match="instructions"):
        make(tmp_path, ScriptedLLM([]), instructions=f"Use the token {TOKEN} for GitHub.")


def test_the_async_twin_refuses_too(tmp_path: Path) -> None:
    llm = ScriptedLLM([])
    agent = make(tmp_path, llm)
    result = asyncio.run(agent.arun(f"token {TOKEN}"))
    assert result.stop_reason == "refused" and llm.calls == []
