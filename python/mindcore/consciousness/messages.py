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
JSON, a part that is not text) raises :class:`~mindcore.errors.ConsciousnessError` naming it.

>>> normalize([{"role": "assistant", "content": [{"type": "text", "text": "Greeting."},
...     {"type": "tool-call", "toolCallId": "tc-1", "toolName": "send_message", "args": {"text": "Hi!"}}]},
...     {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "tc-1", "result": {"success": True}}]}])
... # doctest: +NORMALIZE_WHITESPACE
[{'role': 'assistant', 'content': 'Greeting.', 'tool_calls': [{'id': 'tc-1', 'type': 'function',
  'function': {'name': 'send_message', 'arguments': '{"text":"Hi!"}'}}]},
 {'role': 'tool', 'content': '{"success":true}', 'tool_call_id': 'tc-1'}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mindcore.errors import ConsciousnessError
from mindcore.policy import SecretPolicy
from mindcore.validation import check_storable, check_text, describe

__all__ = ["INBOX_PREFIX", "ROLES", "check_sequence", "compact_json", "is_cycle_start", "normalize", "screen"]

ROLES = ("system", "user", "assistant", "tool")
#: A user message whose content starts with this begins a cycle (and nothing else does).
INBOX_PREFIX = "INBOX ("
# Keys that carry nothing when empty (an OpenAI SDK's model_dump() writes them out).
_EMPTY_EXTRAS: tuple[Any, ...] = (None, [], {}, "")
_MAX_ID = 1000


def compact_json(value: Any) -> str:
    """``value`` as JavaScript's ``JSON.stringify`` writes it (no spaces, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ConsciousnessError(f"{where}: expected a list of messages, got {describe(messages)}")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        out += _one(message, f"{where}[{i}]", max_chars)
    return out


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


# -- one message ------------------------------------------------------------------------------------


def _one(message: Any, where: str, max_chars: int) -> list[dict[str, Any]]:
    if not isinstance(message, Mapping):
        raise ConsciousnessError(f"{where}: expected a message dict with role and content, got {describe(message)}")
    role = message.get("role")
    if role not in ROLES:
        raise ConsciousnessError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
    extra = [k for k, v in message.items()
             if k not in ("role", "content", "tool_calls", "tool_call_id") and v not in _EMPTY_EXTRAS]
    if extra:
        raise ConsciousnessError(f"{where}: unsupported key {extra[0]!r} (a history keeps role, content, "
                                 "tool_calls and tool_call_id)")
    content = message.get("content")
    tool_calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    if content is None:
        if not message.get("tool_calls"):
            raise ConsciousnessError(f"{where}.content: required (a string or a list of content parts)")
        content = ""
    elif isinstance(content, list):
        content, tool_calls, results = _parts(content, where, role, max_chars)
    content = str(check_text(content, f"{where}.content", max_chars=max_chars, allow_blank=True, error=ConsciousnessError))
    given_calls = message.get("tool_calls")
    if given_calls not in (None, []):
        if role != "assistant":
            raise ConsciousnessError(f"{where}.tool_calls: only assistant messages make tool calls, not {role!r}")
        if not isinstance(given_calls, list):
            raise ConsciousnessError(f"{where}.tool_calls: expected a list, got {describe(given_calls)}")
        tool_calls = [_openai_call(c, f"{where}.tool_calls[{j}]", max_chars)
                      for j, c in enumerate(given_calls)] + tool_calls
    out: dict[str, Any] = {"role": role, "content": content}
    if tool_calls:
        ids = [c["id"] for c in tool_calls]
        if len(set(ids)) != len(ids):
            raise ConsciousnessError(f"{where}.tool_calls: two calls share the id {_first_repeat(ids)!r}")
        out["tool_calls"] = tool_calls
    call_id = message.get("tool_call_id")
    if role == "tool" and not results:
        out["tool_call_id"] = _id(call_id, f"{where}.tool_call_id")
    elif call_id is not None and not results:
        raise ConsciousnessError(f"{where}.tool_call_id: only tool messages answer a call, not {role!r}")
    if results:  # a message of tool-result parts is its tool messages (text beside them is refused)
        if content:
            raise ConsciousnessError(f"{where}.content: text parts cannot sit beside tool-result parts")
        return results
    return [out]


def _parts(parts: list[Any], where: str, role: str,
           max_chars: int) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(check_text(part.get("text"), f"{at}.text", max_chars=max_chars, allow_blank=True,
                                    error=ConsciousnessError) or "")
        elif kind == "tool-call":
            if role != "assistant":
                raise ConsciousnessError(f"{at}: tool-call parts belong in an assistant message, not {role!r}")
            args = part.get("args", part.get("input", {}))
            calls.append({"id": _id(part.get("toolCallId"), f"{at}.toolCallId"), "type": "function",
                          "function": {"name": _id(part.get("toolName"), f"{at}.toolName"),
                                       "arguments": _arguments(args, f"{at}.args", max_chars)}})
        elif kind == "tool-result":
            if role != "tool":
                raise ConsciousnessError(f"{at}: tool-result parts belong in a tool message, not {role!r}")
            result = part.get("result", part.get("output"))
            text = result if isinstance(result, str) else _json_text(result, f"{at}.result", max_chars)
            check_text(text, f"{at}.result", max_chars=max_chars, allow_blank=True, error=ConsciousnessError)
            results.append({"role": "tool", "content": text,
                            "tool_call_id": _id(part.get("toolCallId"), f"{at}.toolCallId")})
        else:
            shown = repr(kind) if kind is not None else describe(part)
            raise ConsciousnessError(f"{at}: unsupported content part {shown}; a history keeps text, tool-call "
                                     "and tool-result parts")
    return "".join(texts), calls, results


def _openai_call(call: Any, where: str, max_chars: int) -> dict[str, Any]:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise ConsciousnessError(f"{where}: expected {{'id', 'type': 'function', 'function': {{'name', "
                                 f"'arguments'}}}}, got {describe(call)}")
    if call.get("type", "function") != "function":
        raise ConsciousnessError(f"{where}.type: {call.get('type')!r} is not 'function'")
    fn = call["function"]
    return {"id": _id(call.get("id"), f"{where}.id"), "type": "function",
            "function": {"name": _id(fn.get("name"), f"{where}.function.name"),
                         "arguments": _arguments(fn.get("arguments", "{}"), f"{where}.function.arguments",
                                                 max_chars)}}


def _arguments(args: Any, where: str, max_chars: int) -> str:
    """Arguments as JSON text: a string is kept as given once it parses as JSON, anything else is
    written as compact JSON."""
    if isinstance(args, str):
        try:
            json.loads(args)
        except ValueError:
            raise ConsciousnessError(f"{where}: not valid JSON: {args[:80]!r}") from None
        check_text(args, where, max_chars=max_chars, allow_blank=True, error=ConsciousnessError)
        return args
    return _json_text(args, where, max_chars)


def _json_text(value: Any, where: str, max_chars: int) -> str:
    check_storable(value, where, error=ConsciousnessError)
    try:
        text = compact_json(value)
    except (TypeError, ValueError) as exc:
        raise ConsciousnessError(f"{where}: not a JSON value ({exc})") from None
    if len(text) > max_chars:
        raise ConsciousnessError(f"{where}: is {len(text):,} characters as JSON; the limit is {max_chars:,}")
    return text


def _id(value: Any, where: str) -> str:
    return str(check_text(value, where, max_chars=_MAX_ID, error=ConsciousnessError))


def _first_repeat(ids: list[str]) -> str:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            return i
        seen.add(i)
    return ids[0]
