"""An LLM that answers from a script: for tests and the demo, no network, fully reproducible."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mindcore.errors import ScriptExhaustedError
from mindcore.llm.base import Message, check_max_tokens, check_messages

__all__ = ["ScriptExhaustedError", "ScriptedCall", "ScriptedLLM"]


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded call to a :class:`ScriptedLLM`."""

    messages: list[Message]
    max_tokens: int | None
    json: bool


Reply = str | Exception


def _excerpt(messages: list[Message]) -> str:
    last = messages[-1]
    text = " ".join(last["content"].split())
    return f"{last['role']}: {text[:80]!r}{'...' if len(text) > 80 else ''}"


class ScriptedLLM:
    """Replies from a list, in order, or from a function of the messages; records every call.

    Parameters
    ----------
    replies
        Either a sequence of replies, one per call (an ``Exception`` instance in it is raised for
        that call, to test failure handling), or a function ``messages -> str`` called each time.

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
    """

    model = "scripted"

    def __init__(self, replies: Sequence[Reply] | Callable[[list[Message]], str]) -> None:
        self._fn: Callable[[list[Message]], str] | None = None
        self._replies: list[Reply] = []
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
                if not isinstance(reply, str | Exception):
                    raise TypeError(f"replies[{i}]: expected str or an Exception instance, got {type(reply).__name__}")
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
        with self._lock:
            self.calls.append(ScriptedCall(msgs, max_tokens, json))  # msgs is already a private copy
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
            reply = self._fn([Message(role=m["role"], content=m["content"]) for m in msgs])
            if not isinstance(reply, str):
                raise TypeError(f"ScriptedLLM: the reply function returned {type(reply).__name__}, expected str")
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def acomplete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False
    ) -> str:
        """Async twin of :meth:`complete`."""
        return self.complete(messages, max_tokens=max_tokens, json=json)

    def __repr__(self) -> str:
        source = "function" if self._fn is not None else f"{self.remaining} of {len(self._replies)} replies left"
        return f"ScriptedLLM({source}, {len(self.calls)} calls)"
