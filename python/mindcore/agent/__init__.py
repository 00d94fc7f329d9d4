"""The agent runner: :class:`Agent` ties a chat model to Mind, working memory, long-term memory
and context assembly, running the model's tool calls until it answers."""

from __future__ import annotations

from mindcore.agent.agent import Agent
from mindcore.agent.events import (
    AgentEvent,
    AgentResult,
    Final,
    ModelCall,
    StopReason,
    ToolCallEvent,
    ToolResultEvent,
    ToolRun,
)
from mindcore.agent.prompt import Prompt, PromptParts, build_prompt

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentResult",
    "Final",
    "ModelCall",
    "Prompt",
    "PromptParts",
    "StopReason",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolRun",
    "build_prompt",
]
