"""Messages on their way into a session (checked, converted to OpenAI chat form, screened) and
out of it (:func:`stored`, and :func:`wire` for the agentified server's JSON).

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

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.context.types import StoredMessage
from mindcore.errors import ContextError
from mindcore.llm.messages import ROLES, normalize_messages
from mindcore.policy import SecretPolicy

if TYPE_CHECKING:
    from mindcore.store.messages import LogView

__all__ = ["ROLES", "normalize", "stored", "wire"]


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


def stored(view: LogView, ranks: Sequence[int] | np.ndarray) -> list[StoredMessage]:
    """The messages at ``ranks`` of ``view`` (0 is the oldest), built straight from its records
    (what :meth:`StoredMessage.from_row` makes of a row, without a dict per row in between)."""
    out = []
    kept = view.column("metadata")
    for rank, (id_, seq, role, content, call_id, calls, created_at) in zip(ranks, view.records(ranks), strict=True):
        message: dict[str, Any] = {"role": role, "content": content}
        if calls is not None:
            message["tool_calls"] = calls
        if call_id is not None:
            message["tool_call_id"] = call_id
        raw = kept[rank]
        out.append(StoredMessage(message, seq=seq, id=id_, created_at=created_at or 0,
                                 metadata=None if raw is None else json.loads(raw)))
    return out


def wire(view: LogView) -> np.ndarray:
    """Every message of ``view`` as :meth:`StoredMessage.to_wire` gives it (an object array by
    rank), built once per row and kept with the view: a page or a context picks its messages
    from it instead of building them anew. Shared: never modify them."""

    def compute(lo: int, hi: int) -> np.ndarray:
        out = np.empty(hi - lo, dtype=object)
        out[:] = [m.to_wire() for m in stored(view, range(lo, hi))]
        return out

    return view.per_row("context.wire", compute)
