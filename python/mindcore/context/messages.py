"""Messages on their way into a session: checked, converted to OpenAI chat form, screened.

Sessions store OpenAI chat messages: ``role`` (system, developer, user, assistant, tool),
``content`` (a string), and ``tool_calls`` / ``tool_call_id`` when present. Messages in content-part
form convert on the way in:

- text parts (``{"type": "text", "text": ...}``) join into the content;
- tool-call parts (``{"type": "tool-call", "toolCallId", "toolName", "args"}``, the AI SDK's form)
  become OpenAI ``tool_calls`` of the same message;
- tool-result parts (``{"type": "tool-result", "toolCallId", "result"}``) become one ``tool``
  message each, with the result as its content (JSON text unless it is a string).

Anything else (images, files) cannot be kept as text and is refused, naming the part. Every text
then goes through the context's :class:`~mindcore.policy.SecretPolicy`.

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

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.errors import ContextError
from mindcore.policy import SecretPolicy
from mindcore.validation import check_text, describe

__all__ = ["ROLES", "normalize"]

ROLES = ("system", "developer", "user", "assistant", "tool")


def normalize(
    messages: Sequence[Mapping[str, Any]], policy: SecretPolicy, *, max_chars: int, max_messages: int
) -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat dicts ready to store, or a :class:`ContextError` naming the
    first bad one (``messages[i]...``); secrets are refused or redacted by ``policy``."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ContextError(f"messages: expected a list of messages, got {describe(messages)}")
    if len(messages) > max_messages:
        raise ContextError(f"messages: {len(messages):,} messages at once; the limit is {max_messages:,}")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        out += [_screen(m, where, policy) for m in _one(message, where, max_chars)]
    return out


def _one(message: Any, where: str, max_chars: int) -> list[dict[str, Any]]:
    if not isinstance(message, Mapping):
        raise ContextError(f"{where}: expected an object with role and content, got {describe(message)}")
    role = message.get("role")
    if role not in ROLES:
        raise ContextError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
    content = message.get("content")
    tool_calls = message.get("tool_calls")
    extra: list[dict[str, Any]] = []
    if content is None:
        if tool_calls is None:
            raise ContextError(f"{where}.content: required (a string or a list of content parts)")
        content = ""
    elif isinstance(content, list):
        content, parts_calls, extra = _parts(content, where, role, max_chars)
        if parts_calls:
            tool_calls = [*(tool_calls or []), *parts_calls]
    check_text(content, f"{where}.content", max_chars=max_chars, allow_blank=True, error=ContextError)
    out: dict[str, Any] = {"role": role, "content": content}
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise ContextError(f"{where}.tool_calls: expected a list, got {describe(tool_calls)}")
        out["tool_calls"] = _json(tool_calls, f"{where}.tool_calls", max_chars)
    call_id = message.get("tool_call_id")
    if call_id is not None:
        out["tool_call_id"] = check_text(call_id, f"{where}.tool_call_id", max_chars=1000, error=ContextError)
    # A message made only of tool results is replaced by its tool messages.
    keep = not (extra and not content and "tool_calls" not in out and role == "tool")
    return ([out] if keep else []) + extra


def _parts(
    parts: list[Any], where: str, role: str, max_chars: int
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(check_text(part.get("text"), f"{at}.text", max_chars=max_chars, allow_blank=True,
                                    error=ContextError) or "")
        elif kind == "tool-call":
            call_id = check_text(part.get("toolCallId"), f"{at}.toolCallId", max_chars=1000, error=ContextError)
            name = check_text(part.get("toolName"), f"{at}.toolName", max_chars=1000, error=ContextError)
            args = part.get("args", part.get("input", {}))
            arguments = args if isinstance(args, str) else json.dumps(_json(args, f"{at}.args", max_chars),
                                                                      ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        elif kind == "tool-result":
            call_id = check_text(part.get("toolCallId"), f"{at}.toolCallId", max_chars=1000, error=ContextError)
            result = part.get("result", part.get("output"))
            text = result if isinstance(result, str) else json.dumps(_json(result, f"{at}.result", max_chars),
                                                                     ensure_ascii=False)
            check_text(text, f"{at}.result", max_chars=max_chars, allow_blank=True, error=ContextError)
            results.append({"role": "tool", "content": text, "tool_call_id": call_id})
        else:
            shown = repr(kind) if kind is not None else describe(part)
            raise ContextError(f"{at}: unsupported content part {shown}; sessions store text, tool calls and tool results")
    if results and role != "tool":
        raise ContextError(f"{where}: tool-result parts belong in a message with role 'tool', not {role!r}")
    return "".join(texts), calls, results


def _json(value: Any, where: str, max_chars: int) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ContextError(f"{where}: not a JSON value ({exc})") from None
    if len(text) > max_chars:
        raise ContextError(f"{where}: is {len(text):,} characters as JSON; the limit is {max_chars:,}")
    return json.loads(text)


def _screen(message: dict[str, Any], where: str, policy: SecretPolicy) -> dict[str, Any]:
    out = dict(message)
    out["content"] = policy.screen(message["content"], f"{where}.content")
    if "tool_calls" in message:
        out["tool_calls"] = policy.screen_value(message["tool_calls"], f"{where}.tool_calls")
    if "tool_call_id" in message:
        out["tool_call_id"] = policy.screen(message["tool_call_id"], f"{where}.tool_call_id")
    return out
