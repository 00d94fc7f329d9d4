"""An LLM that answers from a script: for tests and the demo, no network, fully reproducible."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindcore.errors import InvalidInputError, ScriptExhaustedError
from mindcore.llm.base import Message, check_max_tokens, check_messages
from mindcore.llm.messages import normalize_messages
from mindcore.llm.reply import Reply, ToolChoice, Tools, openai_tool_choice, openai_tools

__all__ = ["ScriptExhaustedError", "Scripted", "ScriptedCall", "ScriptedLLM"]


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded call to a :class:`ScriptedLLM`."""

    messages: list[Message]
    max_tokens: int | None
    json: bool
    #: The tools offered (OpenAI specs) and ``tool_choice``, for :meth:`ScriptedLLM.chat` calls.
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None


#: One scripted answer: text, a :class:`~mindcore.llm.Reply` (tool calls), or an exception to raise.
Scripted = str | Reply | Exception


def _excerpt(messages: Sequence[Mapping[str, Any]]) -> str:
    last = messages[-1]
    text = " ".join(str(last.get("content") or "").split())
    return f"{last['role']}: {text[:80]!r}{'...' if len(text) > 80 else ''}"


class ScriptedLLM:
    """Replies from a list, in order, or from a function of the messages; records every call.

    Parameters
    ----------
    replies
        Either a sequence of replies, one per call (an ``Exception`` instance in it is raised for
        that call, to test failure handling), or a function ``messages -> str`` called each time.
        :meth:`chat` also takes :class:`~mindcore.llm.Reply` items (scripted tool calls; a
        function may return one too); :meth:`complete` answers a ``Reply`` item with its text.

    Attributes
    ----------
    calls
        Every call so far, as :class:`ScriptedCall` (messages, max_tokens, json), including calls
        that raised.

    Raises
    ------
    ScriptExhaustedError
        (an :class:`~mindcore.llm.LLMError`) when called after the last scripted reply.

    Examples
    --------
    >>> llm = ScriptedLLM(['{"facts": []}', "Done."])
    >>> llm.complete([{"role": "user", "content": "Extract facts as JSON"}], json=True)
    '{"facts": []}'
    >>> llm.calls[0].json, llm.remaining
    (True, 1)
    >>> shout = ScriptedLLM(lambda messages: messages[-1]["content"].upper())
    >>> shout.complete([{"role": "user", "content": "hi"}])
    'HI'

    Tool calls, for an agent's loop:

    >>> from mindcore.llm import Reply, ToolCall
    >>> agent_llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "get_weather", '{"city": "Paris"}'),)), "22C."])
    >>> agent_llm.chat([{"role": "user", "content": "Weather in Paris?"}]).tool_calls[0].name
    'get_weather'
    """

    model = "scripted"

    def __init__(self, replies: Sequence[Scripted] | Callable[[list[Message]], str | Reply]) -> None:
        self._fn: Callable[[list[Message]], str | Reply] | None = None
        self._replies: list[Scripted] = []
        if callable(replies):
            self._fn = replies
        elif isinstance(replies, str | bytes):
            raise TypeError("replies: expected a sequence of str or a function, got a bare str (wrap it in a list)")
        else:
            try:
                self._replies = list(replies)
            except TypeError:
                raise TypeError(
                    f"replies: expected a sequence of str or a function, got {type(replies).__name__}"
                ) from None
            for i, reply in enumerate(self._replies):
                if not isinstance(reply, str | Reply | Exception):
                    raise TypeError(f"replies[{i}]: expected str, a Reply or an Exception instance, "
                                    f"got {type(reply).__name__}")
        self.calls: list[ScriptedCall] = []
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int | None:
        """Replies left in the script (None when replies come from a function)."""
        return None if self._fn is not None else len(self._replies) - self._next

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False) -> str:
        """The next scripted reply (checks `messages` exactly as a real client does)."""
        msgs = check_messages(messages)
        max_tokens = check_max_tokens(max_tokens)
        if not isinstance(json, bool):
            raise TypeError(f"json: expected bool, got {type(json).__name__}")
        reply = self._answer(ScriptedCall(msgs, max_tokens, json), msgs)
        return reply.content if isinstance(reply, Reply) else reply

    async def acomplete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False
    ) -> str:
        """Async twin of :meth:`complete`."""
        return self.complete(messages, max_tokens=max_tokens, json=json)

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply:
        """The next scripted reply as a :class:`~mindcore.llm.Reply` (checks `messages`, `tools` and
        `tool_choice` as a real client does; text replies carry no tool calls)."""
        msgs = normalize_messages(messages, max_chars=4_000_000, strict=True, json_arguments=False)
        if not msgs:
            raise InvalidInputError("messages: at least one message is needed")
        specs = openai_tools(tools)
        choice = openai_tool_choice(tool_choice, [s["function"]["name"] for s in specs]) if specs else None
        max_tokens = check_max_tokens(max_tokens)
        reply = self._answer(ScriptedCall(msgs, max_tokens, False, specs, choice), msgs)  # type: ignore[arg-type]
        return reply if isinstance(reply, Reply) else Reply(reply, finish_reason="stop")

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Tools | None = None,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
    ) -> Reply:
        """Async twin of :meth:`chat`."""
        return self.chat(messages, tools=tools, tool_choice=tool_choice, max_tokens=max_tokens)

    def _answer(self, call: ScriptedCall, msgs: Sequence[Mapping[str, Any]]) -> str | Reply:
        with self._lock:
            self.calls.append(call)  # the messages are already a private copy
            number = len(self.calls)
            if self._fn is None:
                if self._next >= len(self._replies):
                    raise ScriptExhaustedError(
                        f"ScriptedLLM: call #{number} but the script has only {len(self._replies)} "
                        f"repl{'y' if len(self._replies) == 1 else 'ies'}; last message: {_excerpt(msgs)}"
                    )
                reply = self._replies[self._next]
                self._next += 1
        if self._fn is not None:
            reply = self._fn([dict(m) for m in msgs])  # type: ignore[misc]
            if not isinstance(reply, str | Reply):
                raise TypeError(f"ScriptedLLM: the reply function returned {type(reply).__name__}, "
                                "expected str or a Reply")
        if isinstance(reply, Exception):
            raise reply
        return reply

    def __repr__(self) -> str:
        source = "function" if self._fn is not None else f"{self.remaining} of {len(self._replies)} replies left"
        return f"ScriptedLLM({source}, {len(self.calls)} calls)"
