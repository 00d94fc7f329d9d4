"""How many tokens a history costs: the seed's estimate (through the Rust token kernel) and exact
o200k counts on request.

The estimate adds up, per message, the length of its string content, of each tool call's
``arguments`` (the string as given, or compact JSON when it is a dict) and, for content parts,
the text, the JSON of the arguments and of the results; then 20 per message, and
``ceil(total / 4)``.

>>> estimate_tokens([{"role": "user", "content": "abcd"}])
6
>>> estimate_tokens([{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
...     "function": {"name": "send", "arguments": {"text": "hi"}}}]}])
9
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.consciousness.messages import compact_json
from mindcore.errors import ConsciousnessError
from mindcore.kernels import count_tokens, estimate_message_tokens
from mindcore.validation import describe

__all__ = ["estimate_tokens", "message_text"]

# OpenAI's documented framing of chat messages for its recent models: 3 tokens a message, and 3
# that prime the reply.
_EXACT_PER_MESSAGE = 3
_EXACT_REPLY = 3


def message_text(message: Mapping[str, Any]) -> str:
    """The text of ``message`` the estimate counts (content, tool-call arguments, parts)."""
    content = message.get("content")
    calls = message.get("tool_calls")
    text = content if isinstance(content, str) else _parts_text(content) if isinstance(content, list) else ""
    if not calls:
        return text
    pieces = [text]
    for call in calls:
        fn = call.get("function") if isinstance(call, Mapping) else None
        args = fn.get("arguments") if isinstance(fn, Mapping) else None
        if args is not None:
            pieces.append(args if isinstance(args, str) else compact_json(args))
    return "".join(pieces)


def _parts_text(parts: list[Any]) -> str:
    pieces = []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("text"), str):
            pieces.append(part["text"])
        for key in ("args", "result"):
            if key in part:
                pieces.append(compact_json(part[key]))
    return "".join(pieces)


def estimate_tokens(messages: Sequence[Mapping[str, Any]], *, exact: bool = False) -> int:
    """The seed's token estimate of ``messages`` (OpenAI chat dicts or content-part form).

    ``exact=True`` counts o200k_base tokens instead (GPT-4o and later): each message's texts
    (content, tool names and arguments) plus 3 tokens a message and 3 for the reply, OpenAI's
    documented framing.

    >>> estimate_tokens([{"role": "user", "content": "Hello, world!"}], exact=True)
    10
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ConsciousnessError(f"messages: expected a list of messages, got {describe(messages)}")
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise ConsciousnessError(f"messages[{i}]: expected a message dict, got {describe(m)}")
    if not exact:
        return estimate_message_tokens([message_text(m) for m in messages])
    if not messages:
        return 0
    texts = [message_text(m) + "".join(_names(m)) for m in messages]
    return sum(count_tokens(texts)) + _EXACT_PER_MESSAGE * len(messages) + _EXACT_REPLY


def _names(message: Mapping[str, Any]) -> list[str]:
    calls = message.get("tool_calls") or []
    return [str(c["function"].get("name", "")) for c in calls
            if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)]
