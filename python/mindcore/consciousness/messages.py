"""An agent's history as OpenAI chat messages: checked, converted from content-part form, screened.

A history holds ``system`` (message 0 only), ``user``, ``assistant`` (optionally with
``tool_calls``) and ``tool`` messages (with the ``tool_call_id`` of a call of the assistant message
just before them). The seed's content-part form converts on the way in, losslessly:

- text parts (``{"type": "text", "text": ...}``) join into the content;
- tool-call parts (``{"type": "tool-call", "toolCallId", "toolName", "args"}``) become OpenAI
  ``tool_calls`` of the same message, the arguments as compact JSON text;
- tool-result parts (``{"type": "tool-result", "toolCallId", "result"}``) become one ``tool``
  message each, the result as its content (compact JSON text unless it is a string).

A malformed message (an unknown role, a tool message answering no call, arguments that are not
JSON, a part that is not text) raises :class:`~mindcore.errors.ConsciousnessError` naming it. The
reading is :func:`mindcore.llm.messages.normalize_messages`'s, in its ``history`` form.

>>> normalize([{"role": "assistant", "content": [{"type": "text", "text": "Greeting."},
...     {"type": "tool-call", "toolCallId": "tc-1", "toolName": "send_message", "args": {"text": "Hi!"}}]},
...     {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "tc-1", "result": {"success": True}}]}])
... # doctest: +NORMALIZE_WHITESPACE
[{'role': 'assistant', 'content': 'Greeting.', 'tool_calls': [{'id': 'tc-1', 'type': 'function',
  'function': {'name': 'send_message', 'arguments': '{"text":"Hi!"}'}}]},
 {'role': 'tool', 'content': '{"success":true}', 'tool_call_id': 'tc-1'}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.errors import ConsciousnessError
from mindcore.llm.messages import compact_json, normalize_messages
from mindcore.policy import SecretPolicy

__all__ = ["INBOX_PREFIX", "ROLES", "check_sequence", "compact_json", "is_cycle_start", "normalize", "screen"]

ROLES = ("system", "user", "assistant", "tool")
#: A user message whose content starts with this begins a cycle (and nothing else does).
INBOX_PREFIX = "INBOX ("


def is_cycle_start(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is an INBOX user message, the first message of a cycle."""
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(INBOX_PREFIX)


def normalize(messages: Sequence[Mapping[str, Any]], *, max_chars: int = 1_000_000,
              where: str = "messages") -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat dicts (``role``, ``content`` str, and ``tool_calls`` /
    ``tool_call_id`` when present), or a :class:`ConsciousnessError` naming the first bad one.

    Only the form of each message is checked here; :func:`check_sequence` checks their order.
    """
    return normalize_messages(messages, max_chars=max_chars, error=ConsciousnessError, roles=ROLES, history=True,
                              compact=True, where=where)


def check_sequence(messages: Sequence[Mapping[str, Any]], *, where: str = "messages",
                   complete: bool = True) -> None:
    """Raise :class:`ConsciousnessError` unless ``messages`` (normalized) is a history a model
    API accepts: ``system`` only at index 0; each ``tool`` message answers a call of the assistant
    message before it (with only tool messages in between), once; with ``complete``, every call
    has its result."""
    open_calls: dict[str, int] = {}  # call id -> index of its assistant message
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "system" and i != 0:
            raise ConsciousnessError(f"{where}[{i}]: a system message may only be the first message of the history")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in open_calls:
                raise ConsciousnessError(
                    f"{where}[{i}]: tool message answers {call_id!r}, which no assistant tool call just before it made"
                )
            del open_calls[call_id]
            continue
        if open_calls and complete:
            missing = next(iter(open_calls))
            raise ConsciousnessError(f"{where}[{open_calls[missing]}]: tool call {missing!r} has no tool result")
        open_calls = {c["id"]: i for c in m.get("tool_calls") or ()} if role == "assistant" else {}
    if open_calls and complete:
        missing = next(iter(open_calls))
        raise ConsciousnessError(f"{where}[{open_calls[missing]}]: tool call {missing!r} has no tool result")


def screen(messages: list[dict[str, Any]], policy: SecretPolicy, where: str = "messages") -> list[dict[str, Any]]:
    """Every text of ``messages`` through ``policy`` (refused, or redacted into new dicts)."""
    out = []
    for i, m in enumerate(messages):
        at = f"{where}[{i}]"
        new = dict(m)
        new["content"] = policy.screen(m["content"], f"{at}.content")
        if "tool_calls" in m:
            new["tool_calls"] = policy.screen_value(m["tool_calls"], f"{at}.tool_calls")
        out.append(new)
    return out
