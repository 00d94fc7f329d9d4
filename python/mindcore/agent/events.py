"""What an agent's turn reports: step events while it runs, and its :class:`AgentResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mindcore.llm.reply import Usage

__all__ = ["AgentEvent", "AgentResult", "Final", "ModelCall", "StopReason", "ToolCallEvent", "ToolResultEvent",
           "ToolRun"]

#: Why a turn ended: the model answered (``"final"``), it was still calling tools after
#: ``max_steps`` model calls (``"max_steps"``), or the model call failed (``"llm_error"``).
#: Why a turn ended: the model answered (``final``), ran out of ``max_steps``, its call failed
#: (``llm_error``), or the message looked like a secret and nothing ran (``refused``).
StopReason = Literal["final", "max_steps", "llm_error", "refused"]


@dataclass(frozen=True)
class ToolRun:
    """One tool call the model made and what it got back (``result["status"]`` is ``"ok"`` or
    ``"error"``: a failing tool is an error the model reads, never an exception)."""

    id: str
    name: str
    arguments: str
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.get("status") != "error"


@dataclass(frozen=True)
class ModelCall:
    """The model is about to be called (``step`` counts from 1) with ``tokens`` estimated prompt tokens."""

    step: int
    tokens: int
    kind: Literal["model_call"] = "model_call"


@dataclass(frozen=True)
class ToolCallEvent:
    """The model asked for a tool call."""

    step: int
    id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call came back."""

    step: int
    run: ToolRun
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class AgentResult:
    """A finished turn.

    ``text`` is the final answer (``""`` if the turn stopped otherwise: see ``stop_reason`` and
    ``error``); ``messages`` the turn's messages (the user's, the assistant's with their tool calls,
    the tool results and the answer); ``tool_calls`` every tool run in order; ``usage`` the tokens
    of all the turn's model calls; ``steps`` the model calls made.
    """

    text: str
    messages: list[dict[str, Any]]
    tool_calls: list[ToolRun]
    usage: Usage
    steps: int
    stop_reason: StopReason
    error: str | None = None
    prompt_tokens: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the model gave a final answer."""
        return self.stop_reason == "final"


@dataclass(frozen=True)
class Final:
    """The turn is over."""

    result: AgentResult
    kind: Literal["final"] = "final"


AgentEvent = ModelCall | ToolCallEvent | ToolResultEvent | Final
