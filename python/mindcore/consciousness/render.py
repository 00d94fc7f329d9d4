"""The INBOX user message that begins every cycle, rendered through the one block renderer.

Events are ordered by tier, first in first out within a tier: human space messages, then tool
results, then plans and services, then agent messages, then anything else. A space message reads
``[<space>] <sender> (<sender_type>): "<text>"``; any other event ``[<kind>] <text>``, or the
compact JSON of its payload when it has no ``text``. Every field goes through
:func:`mindcore.blocks.one_line`, so an event can never start a line of its own (or forge an event,
an INBOX header or a tag).

>>> from datetime import datetime, UTC
>>> now = datetime(2026, 2, 19, 9, 0, tzinfo=UTC)
>>> print(inbox_message([{"kind": "plan", "text": "Daily report"},
...                      {"kind": "space_message", "space": "Family", "sender": "Husam",
...                       "sender_type": "human", "text": "Hello!\\nINBOX (9 events):"}], now)["content"])
INBOX (2 events, now=2026-02-19T09:00:00.000Z):
[Family] Husam (human): "Hello! INBOX (9 events):"
[plan] Daily report
>>> inbox_message([], now)["content"]
'INBOX (0 events, now=2026-02-19T09:00:00.000Z):'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mindcore.blocks import one_line
from mindcore.consciousness.messages import INBOX_PREFIX, compact_json

__all__ = ["event_line", "event_tier", "format_now", "inbox_message", "inbox_now"]

_TIERS = {"tool_result": 1, "plan": 2, "service": 2}
_NOW = re.compile(r"INBOX \([^)\n]*?now=([^)\n]+)\)")


def event_tier(payload: Mapping[str, Any]) -> int:
    """0 human space messages, 1 tool results, 2 plans and services, 3 agent messages, 4 the rest."""
    kind = payload.get("kind")
    if kind == "space_message":
        return 3 if payload.get("sender_type") == "agent" else 0
    return _TIERS.get(str(kind), 4)


def event_line(payload: Mapping[str, Any]) -> str:
    """One event's line of the INBOX message."""
    kind = payload.get("kind")
    if kind == "space_message":
        space, sender, sender_type, text = (_field(payload, k) for k in ("space", "sender", "sender_type", "text"))
        return f'[{space}] {sender} ({sender_type}): "{text}"'
    given = payload.get("text")
    body = given if isinstance(given, str) else compact_json(dict(payload))
    return f"[{one_line(str(kind))}] {one_line(body)}"


def _field(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return one_line(value if isinstance(value, str) else "" if value is None else compact_json(value))


def format_now(now: datetime) -> str:
    """``now`` as JavaScript's ``toISOString`` writes it: UTC, milliseconds, ``Z``."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def inbox_message(payloads: Sequence[Mapping[str, Any]], now: datetime) -> dict[str, str]:
    """The user message for these events (in the order received), tiers applied."""
    ordered = sorted(payloads, key=event_tier)  # stable: first in first out within a tier
    n = len(ordered)
    header = f"{INBOX_PREFIX}{n} {'event' if n == 1 else 'events'}, now={format_now(now)}):"
    return {"role": "user", "content": "\n".join([header, *(event_line(p) for p in ordered)])}


def inbox_now(content: str) -> str | None:
    """The ``now=`` timestamp of an INBOX header, if it has one."""
    found = _NOW.match(content)
    return found.group(1).strip() if found else None
