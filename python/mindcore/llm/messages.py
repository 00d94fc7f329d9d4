"""Chat messages in OpenAI form, checked and converted: the one reader every capability, the
runner and the LLM clients use.

A message is a dict with ``role`` (system, developer, user, assistant, tool) and ``content`` (a
string), plus ``tool_calls`` on an assistant message and ``tool_call_id`` on a tool message.
Messages in content-part form (the AI SDK's, which agentified and the consciousness seed write)
convert on the way in:

- text parts (``{"type": "text", "text": ...}``) join into the content;
- tool-call parts (``{"type": "tool-call", "toolCallId", "toolName", "args"}``) become OpenAI
  ``tool_calls`` of the same message;
- tool-result parts (``{"type": "tool-result", "toolCallId", "result"}``) become one ``tool``
  message each, with the result as its content (JSON text unless it is a string).

Anything else (images, files) cannot be kept as text and is refused, naming the part.

>>> normalize_messages([{"role": "assistant", "content": [{"type": "text", "text": "Checking."},
...     {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Paris"}}]},
...     {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": {"temp": 22}}]}],
...     max_chars=1000)
... # doctest: +NORMALIZE_WHITESPACE
[{'role': 'assistant', 'content': 'Checking.', 'tool_calls': [{'id': 'c1', 'type': 'function',
  'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]},
 {'role': 'tool', 'content': '{"temp": 22}', 'tool_call_id': 'c1'}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.errors import InvalidMessageError, MindcoreError
from mindcore.validation import check_text, describe

__all__ = ["ROLES", "check_tool_pairs", "normalize_messages"]

ROLES = ("system", "developer", "user", "assistant", "tool")

ErrorType = type[MindcoreError]


def normalize_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_chars: int,
    max_messages: int | None = None,
    strict: bool = False,
    json_arguments: bool = True,
    error: ErrorType = InvalidMessageError,
) -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat dicts, or ``error`` naming the first bad one (``messages[i]...``).

    ``max_chars`` caps each text (and each JSON value, as text); ``max_messages`` the list.
    ``strict`` also checks each tool call's shape, as a model API would: ``id``, ``type``
    ``"function"``, ``function.name`` and ``function.arguments`` (JSON text of an object, or an
    object, kept as given; with ``json_arguments=False`` any text, as a model may have written
    malformed arguments that the conversation must still carry).
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise error(f"messages: expected a list of messages, got {describe(messages)}")
    if max_messages is not None and len(messages) > max_messages:
        raise error(f"messages: {len(messages):,} messages at once; the limit is {max_messages:,}")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        converted = _one(message, where, max_chars, error)
        if strict:
            for m in converted:
                for j, call in enumerate(m.get("tool_calls") or ()):
                    _check_call(call, f"{where}.tool_calls[{j}]", error, json_arguments)
        out += converted
    return out


def check_tool_pairs(messages: Sequence[Mapping[str, Any]], *, error: ErrorType = InvalidMessageError) -> None:
    """Every ``tool`` message answers a call of an earlier assistant message, once.

    >>> check_tool_pairs([{"role": "tool", "content": "22", "tool_call_id": "c9"}])
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidMessageError: messages[0]: a tool result for call 'c9', which no earlier assistant message made
    """
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            open_calls.update(str(c.get("id")) for c in m.get("tool_calls") or () if isinstance(c, Mapping))
        elif m.get("role") == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str):
                raise error(f"messages[{i}]: a tool message needs tool_call_id")
            if call_id not in open_calls:
                raise error(f"messages[{i}]: a tool result for call {call_id!r}, which no earlier assistant "
                            "message made")
            open_calls.discard(call_id)


def _one(message: Any, where: str, max_chars: int, error: ErrorType) -> list[dict[str, Any]]:
    if not isinstance(message, Mapping):
        raise error(f"{where}: expected an object with role and content, got {describe(message)}")
    role = message.get("role")
    if role not in ROLES:
        raise error(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
    content = message.get("content")
    tool_calls = message.get("tool_calls")
    extra: list[dict[str, Any]] = []
    if content is None:
        if tool_calls is None:
            raise error(f"{where}.content: required (a string or a list of content parts)")
        content = ""
    elif isinstance(content, list):
        content, parts_calls, extra = _parts(content, where, role, max_chars, error)
        if parts_calls:
            tool_calls = [*(tool_calls or []), *parts_calls]
    check_text(content, f"{where}.content", max_chars=max_chars, allow_blank=True, error=error)
    out: dict[str, Any] = {"role": role, "content": content}
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise error(f"{where}.tool_calls: expected a list, got {describe(tool_calls)}")
        out["tool_calls"] = _json(tool_calls, f"{where}.tool_calls", max_chars, error)
    call_id = message.get("tool_call_id")
    if call_id is not None:
        out["tool_call_id"] = check_text(call_id, f"{where}.tool_call_id", max_chars=1000, error=error)
    # A message made only of tool results is replaced by its tool messages.
    keep = not (extra and not content and "tool_calls" not in out and role == "tool")
    return ([out] if keep else []) + extra


def _parts(
    parts: list[Any], where: str, role: str, max_chars: int, error: ErrorType
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(check_text(part.get("text"), f"{at}.text", max_chars=max_chars, allow_blank=True,
                                    error=error) or "")
        elif kind == "tool-call":
            call_id = check_text(part.get("toolCallId"), f"{at}.toolCallId", max_chars=1000, error=error)
            name = check_text(part.get("toolName"), f"{at}.toolName", max_chars=1000, error=error)
            args = part.get("args", part.get("input", {}))
            arguments = args if isinstance(args, str) else json.dumps(_json(args, f"{at}.args", max_chars, error),
                                                                      ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        elif kind == "tool-result":
            call_id = check_text(part.get("toolCallId"), f"{at}.toolCallId", max_chars=1000, error=error)
            result = part.get("result", part.get("output"))
            text = result if isinstance(result, str) else json.dumps(
                _json(result, f"{at}.result", max_chars, error), ensure_ascii=False)
            check_text(text, f"{at}.result", max_chars=max_chars, allow_blank=True, error=error)
            results.append({"role": "tool", "content": text, "tool_call_id": call_id})
        else:
            shown = repr(kind) if kind is not None else describe(part)
            raise error(f"{at}: unsupported content part {shown}; only text, tool calls and tool results are kept")
    if results and role != "tool":
        raise error(f"{where}: tool-result parts belong in a message with role 'tool', not {role!r}")
    return "".join(texts), calls, results


def _json(value: Any, where: str, max_chars: int, error: ErrorType) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise error(f"{where}: not a JSON value ({exc})") from None
    if len(text) > max_chars:
        raise error(f"{where}: is {len(text):,} characters as JSON; the limit is {max_chars:,}")
    return json.loads(text)


def _check_call(call: Any, where: str, error: ErrorType, json_arguments: bool) -> None:
    if not isinstance(call, Mapping):
        raise error(f"{where}: expected an object with id and function, got {describe(call)}")
    if not isinstance(call.get("id"), str) or not call["id"]:
        raise error(f"{where}.id: expected a non-empty string, got {describe(call.get('id'))}")
    if call.get("type", "function") != "function":
        raise error(f"{where}.type: only 'function' tool calls are supported, got {call.get('type')!r}")
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
        raise error(f"{where}.function: expected an object with a name and arguments, got {describe(function)}")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, str) and not json_arguments:
        return
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise error(f"{where}.function.arguments: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(arguments, Mapping):
        raise error(f"{where}.function.arguments: expected a JSON object, got {describe(arguments)}")
