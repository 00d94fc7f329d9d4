"""Pydantic AI on mindcore (``pip install 'mindcore[pydantic-ai]'``).

- :func:`mindcore_toolset`: the tools of mindcore's capabilities (a Mind run, working memory,
  long-term memory, any :class:`~mindcore.toolspec.Toolset`) as a Pydantic AI ``FunctionToolset``.
- :class:`MindcoreMessageHistory`: an agent's message history in and out of a mindcore context
  session: ``agent.run(..., message_history=history.messages())``, then
  ``history.add(result.new_messages())``.

>>> from pydantic_ai import Agent
>>> from pydantic_ai.messages import ModelResponse, TextPart
>>> from pydantic_ai.models.function import FunctionModel
>>> agent = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(f"{len(messages)} so far")])))
>>> history = MindcoreMessageHistory("chat-1", "memory://pydantic-ai-doc")
>>> history.add(agent.run_sync("Hi").new_messages())
>>> agent.run_sync("Again", message_history=history.messages()).output
'3 so far'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

from mindcore.context import Context, Session, StoredMessage
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.store import Store
from mindcore.toolspec import Toolset

__all__ = ["MindcoreMessageHistory", "mindcore_toolset"]

_PAGE = 1000
#: The metadata key a Pydantic AI message is kept under with its chat message.
_MESSAGE = "pydantic_ai_message"


def mindcore_toolset(*toolsets: Toolset | Any) -> FunctionToolset[Any]:
    """The tools of ``toolsets`` (each a :class:`~mindcore.toolspec.Toolset` or a capability with
    ``.tools``) as one Pydantic AI ``FunctionToolset``: each tool keeps its name, description and
    JSON schema, and a call returns the tool's JSON result (a bad call comes back to the model as
    an error it can read; a mindcore tool never raises).

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> memory = mindcore.LongTermMemory("memory://pydantic-ai-tools-doc", user_id="ada", embedder=HashEmbedder())
    >>> sorted(mindcore_toolset(memory).tools)
    ['ltm_recall', 'ltm_remember']
    """
    tools: list[Tool[Any]] = []
    for i, given in enumerate(toolsets):
        toolset = given if isinstance(given, Toolset) else getattr(given, "tools", None)
        if not isinstance(toolset, Toolset):
            raise InvalidTypeError(f"toolsets[{i}]: expected a Toolset or a capability with .tools, got {type(given).__name__}")
        for spec in toolset.specs:
            tools.append(Tool.from_schema(_caller(toolset, spec.name), spec.name, spec.description, dict(spec.parameters)))
    return FunctionToolset(tools)


def _caller(toolset: Toolset, name: str) -> Any:
    def call(**arguments: Any) -> dict[str, Any]:
        return dict(toolset.call(name, arguments))

    call.__name__ = name
    return call


class MindcoreMessageHistory:
    """A Pydantic AI agent's message history kept in the context session ``session_id`` of
    ``dataset`` (``store``: a :class:`~mindcore.store.Store`, a :class:`~mindcore.context.Context`,
    or where to open a store).

    Each message is stored as one chat message (a request as the user's prompt or the tool
    results it returns, a response as the assistant's text and tool calls), with the message
    itself kept beside it, so :meth:`messages` gives back exactly what :meth:`add` was given;
    messages another writer stored come back as requests and responses saying the same. Every
    string goes through the context's secret policy (:class:`~mindcore.errors.SecretRefusedError`,
    nothing of that call stored).
    """

    def __init__(
        self, session_id: str, store: Store | Context | str | None = None, *, dataset: str = "default",
        namespace: str = "default",
    ) -> None:
        ctx = store if isinstance(store, Context) else Context(store, dataset=dataset)
        self._owns_context = not isinstance(store, Context)
        self.session: Session = ctx.session(session_id, namespace)

    def messages(self, limit: int | None = None) -> list[ModelMessage]:
        """The history, oldest first: all of it, or the latest ``limit`` messages."""
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InvalidInputError(f"limit: expected a non-negative int or None, got {limit!r}")
            return _models(self.session.get_messages(limit=limit).messages) if limit else []
        stored: list[StoredMessage] = []
        after = 0
        while True:
            page = self.session.get_messages(limit=_PAGE, after_seq=after).messages
            stored += page
            if len(page) < _PAGE:
                return _models(stored)
            after = page[-1].seq

    def add(self, messages: Iterable[ModelMessage]) -> None:
        """Append ``messages`` (``result.new_messages()``) in one commit (all or none)."""
        given = list(messages)
        for i, message in enumerate(given):
            if not isinstance(message, ModelRequest | ModelResponse):
                raise InvalidInputError(f"messages[{i}]: expected a Pydantic AI message, got {type(message).__name__}")
        if not given:
            return
        kept = ModelMessagesTypeAdapter.dump_python(given, mode="json")
        self.session.append([_chat(m) for m in given], metadata=[{_MESSAGE: k} for k in kept])

    def clear(self) -> None:
        """Delete the whole history."""
        self.session.clear()

    def close(self) -> None:
        """Close the session's context (and its store, when the history opened it)."""
        if self._owns_context:
            self.session.ctx.close()


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "\n".join(v if isinstance(v, str) else f"[{type(v).__name__}]" for v in value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _chat(message: ModelMessage) -> dict[str, Any]:
    """The chat message one Pydantic AI message is stored as."""
    if isinstance(message, ModelResponse):
        texts = [p.content for p in message.parts if isinstance(p, TextPart)]
        calls = [{"id": p.tool_call_id, "type": "function",
                  "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                 for p in message.parts if isinstance(p, ToolCallPart)]
        out: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
        if calls:
            out["tool_calls"] = calls
        return out
    returns = [p for p in message.parts if isinstance(p, ToolReturnPart)]
    prompts = [_text(p.content) for p in message.parts if isinstance(p, UserPromptPart)]
    if returns and not prompts:
        content = _text(returns[0].content) if len(returns) == 1 else json.dumps(
            [{"tool_call_id": p.tool_call_id, "content": p.model_response_str()} for p in returns], ensure_ascii=False)
        return {"role": "tool", "tool_call_id": returns[0].tool_call_id, "content": content}
    system = [p.content for p in message.parts if isinstance(p, SystemPromptPart)]
    return {"role": "user", "content": "\n".join(prompts) if prompts else "\n".join(system)}


def _models(stored: Iterable[StoredMessage]) -> list[ModelMessage]:
    """The Pydantic AI messages stored messages stand for: the one kept with each, else what the
    chat message says."""
    out: list[ModelMessage] = []
    for m in stored:
        kept = m.metadata.get(_MESSAGE) if isinstance(m.metadata, dict) else None
        if kept is not None:
            out += ModelMessagesTypeAdapter.validate_python([kept])
        elif m.role == "assistant":
            parts: list[Any] = [TextPart(m.content)] if m.content else []
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                parts.append(ToolCallPart(fn.get("name") or "", fn.get("arguments"), tool_call_id=call.get("id") or ""))
            out.append(ModelResponse(parts=parts))
        elif m.role == "tool":
            out.append(ModelRequest(parts=[ToolReturnPart("", m.content, tool_call_id=m.get("tool_call_id") or "")]))
        elif m.role in ("system", "developer"):
            out.append(ModelRequest(parts=[SystemPromptPart(m.content)]))
        else:
            out.append(ModelRequest(parts=[UserPromptPart(m.content)]))
    return out
