"""Messages on their way into a session: checked, converted to OpenAI chat form, screened.

Sessions store OpenAI chat messages: ``role`` (system, developer, user, assistant, tool),
``content`` (a string), and ``tool_calls`` / ``tool_call_id`` when present. Messages in content-part
form convert on the way in, as :func:`mindcore.llm.messages.normalize_messages` says (text parts
join, tool-call parts become ``tool_calls``, tool-result parts become ``tool`` messages; images and
files are refused, naming the part). Every text then goes through the context's
:class:`~mindcore.policy.SecretPolicy`.

>>> from mindcore.policy import SecretPolicy
>>> normalize([{"role": "assistant", "content": [{"type": "text", "text": "Checking."},
...     {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Paris"}}]},
...     {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": {"temp": 22}}]}],
...     SecretPolicy(), max_chars=1000, max_messages=10)
... # doctest: +NORMALIZE_WHITESPACE
[{'role': 'assistant', 'content': 'Checking.', 'tool_calls': [{'id': 'c1', 'type': 'function',
  'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]},
 {'role': 'tool', 'content': '{"temp": 22}', 'tool_call_id': 'c1'}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.errors import ContextError
from mindcore.llm.messages import ROLES, normalize_messages
from mindcore.policy import SecretPolicy

__all__ = ["ROLES", "normalize"]


def normalize(
    messages: Sequence[Mapping[str, Any]], policy: SecretPolicy, *, max_chars: int, max_messages: int
) -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat dicts ready to store, or a :class:`ContextError` naming the
    first bad one (``messages[i]...``); secrets are refused or redacted by ``policy``."""
    converted = normalize_messages(messages, max_chars=max_chars, max_messages=max_messages, error=ContextError)
    # One parallel scan of every message; each is screened on its own only when it finds something
    # (for the message naming the field, or to redact under a redacting policy).
    # A plain text message is screened as its text alone (the same strings, fewer to walk).
    parts = [m["content"] if len(m) == 2 else [m["content"], m.get("tool_calls"), m.get("tool_call_id")]
             for m in converted]
    if policy.first_refused(parts) is None:
        return converted
    return [_screen(m, f"messages[{i}]", policy) for i, m in enumerate(converted)]


def _screen(message: dict[str, Any], where: str, policy: SecretPolicy) -> dict[str, Any]:
    out = dict(message)
    out["content"] = policy.screen(message["content"], f"{where}.content")
    if "tool_calls" in message:
        out["tool_calls"] = policy.screen_value(message["tool_calls"], f"{where}.tool_calls")
    if "tool_call_id" in message:
        out["tool_call_id"] = policy.screen(message["tool_call_id"], f"{where}.tool_call_id")
    return out
