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

``history=True`` reads a history a model API accepts, in one canonical form (the consciousness
keeps its histories so): a message carries only what its role allows (tool calls on assistant
messages, a call id on every tool message and on no other, no other keys), each tool call is
rebuilt as ``{"id", "type": "function", "function": {"name", "arguments"}}`` with its arguments as
JSON text, call ids are unique within a message, and text cannot sit beside tool results.
``compact=True`` writes JSON text as JavaScript's ``JSON.stringify`` does (no spaces).

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
from dataclasses import dataclass
from typing import Any

from mindcore.errors import InvalidMessageError, MindcoreError
from mindcore.validation import check_storable, check_text, describe, text_problem

__all__ = ["ROLES", "check_tool_pairs", "compact_json", "normalize_messages"]

ROLES = ("system", "developer", "user", "assistant", "tool")

ErrorType = type[MindcoreError]

_KEYS = ("role", "content", "tool_calls", "tool_call_id")
# Values that carry nothing (an OpenAI SDK's model_dump() writes its unused keys out with them).
_EMPTY: tuple[Any, ...] = (None, [], {}, "")
_MAX_ID = 1000


def compact_json(value: Any) -> str:
    """``value`` as JavaScript's ``JSON.stringify`` writes it (no spaces, non-ASCII kept).

    >>> compact_json({"text": "Hi ☺", "n": [1, 2]})
    '{"text":"Hi ☺","n":[1,2]}'
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class _Rules:
    max_chars: int
    error: ErrorType
    roles: tuple[str, ...]
    json_arguments: bool
    history: bool
    compact: bool


def normalize_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_chars: int,
    max_messages: int | None = None,
    strict: bool = False,
    json_arguments: bool = True,
    error: ErrorType = InvalidMessageError,
    roles: Sequence[str] = ROLES,
    history: bool = False,
    compact: bool = False,
    where: str = "messages",
) -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat dicts, or ``error`` naming the first bad one (``messages[i]...``).

    ``max_chars`` caps each text (and each JSON value, as text); ``max_messages`` the list;
    ``roles`` are the roles accepted. ``strict`` also checks each tool call's shape, as a model API
    would: ``id``, ``type`` ``"function"``, ``function.name`` and ``function.arguments`` (JSON text
    of an object, or an object, kept as given; with ``json_arguments=False`` any text, as a model
    may have written malformed arguments that the conversation must still carry). ``history`` and
    ``compact``: see the module docstring; ``where`` names the list in errors.
    """
    rules = _Rules(max_chars, error, tuple(roles), json_arguments, history, compact)
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise error(f"{where}: expected a list of messages, got {describe(messages)}")
    if max_messages is not None and len(messages) > max_messages:
        raise error(f"{where}: {len(messages):,} messages at once; the limit is {max_messages:,}")
    plain = _plain_contents(messages, rules)
    if plain and None not in plain:  # plain text throughout, checked: each message is its copy
        return [{"role": m["role"], "content": text} for m, text in zip(messages, plain, strict=True)]
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        text = plain[i]
        if text is not None:  # checked already, with the others: the message is its copy
            out.append({"role": message["role"], "content": text})
            continue
        at = f"{where}[{i}]"
        converted = _one(message, at, rules)
        if strict and not history:  # a history's calls were checked as they were rebuilt
            for m in converted:
                for j, call in enumerate(m.get("tool_calls") or ()):
                    _call(call, f"{at}.tool_calls[{j}]", rules)
        out += converted
    return out


def _plain_contents(messages: Sequence[Any], r: _Rules) -> list[str | None]:
    """The content of each message that is plain text (a dict of exactly ``role``, one of
    ``r.roles`` other than ``tool``, and a str ``content``), ``None`` for the others; all ``None``
    when one of those texts would fail its check (every message then takes the full path, which
    names the first bad one).

    Plain text is what a chat history mostly holds: its texts are checked together, one length
    scan and one UTF-8 encoding of them all, instead of one call per message.
    """
    roles = tuple(role for role in r.roles if role != "tool")  # a tool message names its call
    out: list[str | None] | None = None
    if set(map(type, messages)) == {dict} and set(map(len, messages)) == {2}:
        # The usual history, told by a few passes at C speed: pairs of str role and content.
        contents = [m.get("content") for m in messages]
        given = [m.get("role") for m in messages]
        if set(map(type, contents)) == {str} == set(map(type, given)) and set(given).issubset(roles):
            out = contents
    if out is None:
        out = [m["content"] if type(m) is dict and len(m) == 2 and type(m.get("content")) is str
               and m.get("role") in roles else None for m in messages]
    texts = [t for t in out if t is not None]
    if texts and (max(map(len, texts)) > r.max_chars or text_problem("".join(texts)) is not None):
        return [None] * len(out)
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


def _one(message: Any, where: str, r: _Rules) -> list[dict[str, Any]]:
    if not isinstance(message, Mapping):
        raise r.error(f"{where}: expected a message dict with role and content, got {describe(message)}")
    role = message.get("role")
    if role not in r.roles:
        raise r.error(f"{where}.role: {role!r} is not one of {', '.join(r.roles)}")
    given_calls = message.get("tool_calls")
    if r.history:
        extra_keys = [k for k, v in message.items() if k not in _KEYS and v not in _EMPTY]
        if extra_keys:
            raise r.error(f"{where}: unsupported key {extra_keys[0]!r} (a history keeps role, content, tool_calls "
                          "and tool_call_id)")
        if given_calls == []:
            given_calls = None
    content = message.get("content")
    parts_calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    if content is None:
        if given_calls is None:
            raise r.error(f"{where}.content: required (a string or a list of content parts)")
        content = ""
    elif isinstance(content, list):
        content, parts_calls, results = _parts(content, where, role, r)
    check_text(content, f"{where}.content", max_chars=r.max_chars, allow_blank=True, error=r.error)
    out: dict[str, Any] = {"role": role, "content": content}
    if given_calls is not None:
        if r.history and role != "assistant":
            raise r.error(f"{where}.tool_calls: only assistant messages make tool calls, not {role!r}")
        if not isinstance(given_calls, list):
            raise r.error(f"{where}.tool_calls: expected a list, got {describe(given_calls)}")
        if r.history:
            given_calls = [_call(c, f"{where}.tool_calls[{j}]", r) for j, c in enumerate(given_calls)]
        else:
            given_calls = _json(given_calls, f"{where}.tool_calls", r)
    if given_calls is not None or parts_calls:
        out["tool_calls"] = [*(given_calls or ()), *parts_calls]
    call_id = message.get("tool_call_id")
    if r.history:
        ids = [c["id"] for c in out.get("tool_calls", ())]
        if len(set(ids)) != len(ids):
            raise r.error(f"{where}.tool_calls: two calls share the id {_first_repeat(ids)!r}")
        if results:  # a message of tool-result parts is its tool messages
            if content:
                raise r.error(f"{where}.content: text parts cannot sit beside tool-result parts")
            return results
        if role == "tool":
            out["tool_call_id"] = _id(call_id, f"{where}.tool_call_id", r)
        elif call_id is not None:
            raise r.error(f"{where}.tool_call_id: only tool messages answer a call, not {role!r}")
        return [out]
    if call_id is not None:
        out["tool_call_id"] = _id(call_id, f"{where}.tool_call_id", r)
    # A message made only of tool results is replaced by its tool messages.
    keep = not (results and not content and "tool_calls" not in out and role == "tool")
    return ([out] if keep else []) + results


def _parts(
    parts: list[Any], where: str, role: str, r: _Rules
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(check_text(part.get("text"), f"{at}.text", max_chars=r.max_chars, allow_blank=True,
                                    error=r.error) or "")
        elif kind == "tool-call":
            if r.history and role != "assistant":
                raise r.error(f"{at}: tool-call parts belong in an assistant message, not {role!r}")
            args = part.get("args", part.get("input", {}))
            calls.append({"id": _id(part.get("toolCallId"), f"{at}.toolCallId", r), "type": "function",
                          "function": {"name": _id(part.get("toolName"), f"{at}.toolName", r),
                                       "arguments": _arguments(args, f"{at}.args", r)}})
        elif kind == "tool-result":
            if role != "tool":
                raise r.error(f"{at}: tool-result parts belong in a tool message, not {role!r}")
            result = part.get("result", part.get("output"))
            text = result if isinstance(result, str) else _json_text(result, f"{at}.result", r)
            check_text(text, f"{at}.result", max_chars=r.max_chars, allow_blank=True, error=r.error)
            results.append({"role": "tool", "content": text,
                            "tool_call_id": _id(part.get("toolCallId"), f"{at}.toolCallId", r)})
        else:
            shown = repr(kind) if kind is not None else describe(part)
            raise r.error(f"{at}: unsupported content part {shown}; only text, tool calls and tool results are kept")
    return "".join(texts), calls, results


def _call(call: Any, where: str, r: _Rules) -> dict[str, Any]:
    """A tool call in OpenAI form, checked; in a history, rebuilt in its canonical form."""
    if not isinstance(call, Mapping):
        raise r.error(f"{where}: expected an object with id and function, got {describe(call)}")
    if not isinstance(call.get("id"), str) or not call["id"]:
        raise r.error(f"{where}.id: expected a non-empty string, got {describe(call.get('id'))}")
    if call.get("type", "function") != "function":
        raise r.error(f"{where}.type: only 'function' tool calls are supported, got {call.get('type')!r}")
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
        raise r.error(f"{where}.function: expected an object with a name and arguments, got {describe(function)}")
    arguments = function.get("arguments", "{}")
    if r.history:
        return {"id": _id(call["id"], f"{where}.id", r), "type": "function",
                "function": {"name": _id(function["name"], f"{where}.function.name", r),
                             "arguments": _arguments(arguments, f"{where}.function.arguments", r)}}
    if isinstance(arguments, str) and r.json_arguments:
        arguments = _parse(arguments, f"{where}.function.arguments", r) if arguments.strip() else {}
    elif isinstance(arguments, str):
        return dict(call)
    if not isinstance(arguments, Mapping):
        raise r.error(f"{where}.function.arguments: expected a JSON object, got {describe(arguments)}")
    return dict(call)


def _arguments(args: Any, where: str, r: _Rules) -> str:
    """Tool-call arguments as JSON text: text is kept as given (in a history, once it parses as
    JSON), anything else is written as JSON."""
    if not isinstance(args, str):
        return _json_text(args, where, r)
    if r.history:
        _parse(args, where, r)
    return str(check_text(args, where, max_chars=r.max_chars, allow_blank=True, error=r.error))


def _parse(text: str, where: str, r: _Rules) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise r.error(f"{where}: not valid JSON ({exc.msg} at character {exc.pos})") from None


def _json_text(value: Any, where: str, r: _Rules) -> str:
    """``value`` as JSON text of at most ``max_chars`` characters, every string in it storable."""
    check_storable(value, where, error=r.error)
    try:
        text = compact_json(value) if r.compact else json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise r.error(f"{where}: not a JSON value ({exc})") from None
    if len(text) > r.max_chars:
        raise r.error(f"{where}: is {len(text):,} characters as JSON; the limit is {r.max_chars:,}")
    return text


def _json(value: Any, where: str, r: _Rules) -> Any:
    """``value`` checked as :func:`_json_text` does, as plain JSON data (lists, dicts, str keys)."""
    return json.loads(_json_text(value, where, r))


def _id(value: Any, where: str, r: _Rules) -> str:
    return str(check_text(value, where, max_chars=_MAX_ID, error=r.error))


def _first_repeat(ids: list[str]) -> str:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            return i
        seen.add(i)
    return ids[0]
