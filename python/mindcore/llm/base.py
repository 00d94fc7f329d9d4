"""The `LLM` protocol, the `Message` type and the checks every client applies to its input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from typing_extensions import Protocol, runtime_checkable  # isinstance() never evaluates attributes

from mindcore.errors import InvalidTypeError, LLMError
from mindcore.validation import describe

__all__ = ["LLM", "ROLES", "LLMError", "Message", "check_llm", "check_messages"]

#: Roles a message may have. ``developer`` is OpenAI's newer name for ``system``.
ROLES = frozenset({"system", "developer", "user", "assistant"})


class Message(TypedDict):
    """One chat message: ``{"role": "user", "content": "..."}``."""

    role: str
    content: str


@runtime_checkable
class LLM(Protocol):
    """A chat model: messages in, the assistant's text out.

    Examples
    --------
    >>> from mindcore.llm import LLM, ScriptedLLM
    >>> llm = ScriptedLLM(["Hello!"])
    >>> isinstance(llm, LLM)
    True
    >>> llm.complete([{"role": "user", "content": "Hi"}])
    'Hello!'
    """

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False) -> str:
        """The model's reply; `json=True` asks for a JSON object."""
        ...

    async def acomplete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, json: bool = False
    ) -> str:
        """Async twin of :meth:`complete`."""
        ...


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """`messages` as a list of plain ``{role, content}`` dicts, or a TypeError/ValueError naming the bad item."""
    if isinstance(messages, str | bytes | Mapping):
        raise TypeError(
            f"messages: expected a sequence of {{'role', 'content'}} dicts, got {type(messages).__name__} "
            "(wrap a single message in a list)"
        )
    try:
        items = list(messages)
    except TypeError:
        raise TypeError(f"messages: expected a sequence of messages, got {type(messages).__name__}") from None
    if not items:
        raise ValueError("messages: at least one message is needed")
    out: list[Message] = []
    for i, msg in enumerate(items):
        if not isinstance(msg, Mapping):
            raise TypeError(f"messages[{i}]: expected a dict with 'role' and 'content', got {type(msg).__name__}")
        role, content = msg.get("role"), msg.get("content")
        if not isinstance(role, str):
            raise TypeError(f"messages[{i}]['role']: expected str, got {type(role).__name__}")
        if role not in ROLES:
            raise ValueError(f"messages[{i}]['role']: must be one of {sorted(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise TypeError(f"messages[{i}]['content']: expected str, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    return out


def check_max_tokens(max_tokens: int | None) -> int | None:
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TypeError(f"max_tokens: expected int or None, got {type(max_tokens).__name__}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens: must be >= 1, got {max_tokens}")
    return max_tokens


def check_llm(value: object, name: str) -> LLM:
    """An :class:`~mindcore.llm.LLM` (an object with ``complete(messages, ...)``)."""
    if value is None or not callable(getattr(value, "complete", None)):
        raise InvalidTypeError(f"{name}: expected an LLM (an object with complete(messages, ...)), got {describe(value)}")
    return value  # type: ignore[return-value]
