"""What a chat model answers when it may call tools: :class:`Reply` (text, tool calls, usage),
and the :class:`ChatLLM` protocol of the clients that give it.

>>> reply = Reply("", (ToolCall("c1", "get_weather", '{"city": "Paris"}'),), Usage(12, 7))
>>> reply.tool_calls[0].parsed(), reply.usage.total_tokens
({'city': 'Paris'}, 19)
>>> reply.message()  # doctest: +NORMALIZE_WHITESPACE
{'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'c1', 'type': 'function',
 'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from typing_extensions import Protocol, runtime_checkable

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.validation import describe

__all__ = ["ChatLLM", "OpenAISpecs", "Reply", "ToolCall", "ToolChoice", "Tools", "Usage", "openai_tool_choice",
           "openai_tools"]

#: ``"auto"`` (the model decides), ``"none"``, ``"required"`` (at least one call), or a tool's name.
ToolChoice = Literal["auto", "none", "required"] | str


@runtime_checkable
class OpenAISpecs(Protocol):
    """Anything that lists its tools in OpenAI's form, as a :class:`~mindcore.toolspec.Toolset` does."""

    def openai(self) -> list[dict[str, Any]]: ...


#: A :class:`~mindcore.toolspec.Toolset`, or tool specs in OpenAI's form (``{"type": "function",
#: "function": {"name", "description", "parameters"}}``).
Tools: TypeAlias = OpenAISpecs | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply: ``arguments`` is the JSON text exactly as the model wrote it
    (possibly malformed: :meth:`parsed` says so, and the runner hands that back to the model)."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed(self) -> dict[str, Any]:
        """The arguments as a dict; :class:`~mindcore.errors.InvalidInputError` when they are not
        a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"tool call {self.id!r} ({self.name}): arguments are not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise InvalidInputError(f"tool call {self.id!r} ({self.name}): arguments must be a JSON object, "
                                    f"got {describe(value)}")
        return value

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Usage:
    """Tokens a call (or a run, summed with ``+``) used, as the server reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class Reply:
    """A chat model's answer: its text (``""`` when it only called tools), its tool calls, the
    tokens used and why it stopped (``"stop"``, ``"tool_calls"``, ``"length"``, ...)."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The reply as the assistant message to append to the conversation."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return out


@runtime_checkable
class ChatLLM(Protocol):
    """A chat model that can call tools: ``chat(messages, tools=..., tool_choice=...) -> Reply``.
    :class:`~mindcore.llm.OpenAICompatibleLLM`, :class:`~mindcore.llm.AnthropicLLM` and
    :class:`~mindcore.llm.ScriptedLLM` are ones."""

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply: ...

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply: ...


def openai_tools(tools: Tools | None) -> list[dict[str, Any]]:
    """Tool specs in OpenAI's form, from a Toolset or a list of OpenAI specs (checked)."""
    if tools is None:
        return []
    if isinstance(tools, OpenAISpecs):
        return tools.openai()
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise InvalidTypeError(f"tools: expected a Toolset or a list of OpenAI tool specs, got {describe(tools)}")
    out = []
    for i, spec in enumerate(tools):
        function = spec.get("function") if isinstance(spec, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise InvalidInputError(f"tools[{i}]: expected {{'type': 'function', 'function': {{'name', ...}}}}, "
                                    f"got {describe(spec)}")
        out.append(dict(spec))
    return out


def openai_tool_choice(choice: ToolChoice, names: Sequence[str]) -> str | dict[str, Any]:
    """``tool_choice`` as OpenAI's API takes it (a tool's name becomes a forced call of it)."""
    if not isinstance(choice, str):
        raise InvalidTypeError(f"tool_choice: expected 'auto', 'none', 'required' or a tool name, got {describe(choice)}")
    if choice in ("auto", "none", "required"):
        return choice
    if choice not in names:
        raise InvalidInputError(f"tool_choice: {choice!r} is not one of the offered tools")
    return {"type": "function", "function": {"name": choice}}
