"""Consciousness: an agent's continuous history across think cycles, and its durable inbox.

:class:`Consciousness` keeps an agent's history across think cycles on the store: each cycle
adds the INBOX message of its events and the model's replies, saves only what is new, and
compacts the history when it grows over its token budget. :func:`compact` fits a history to a
token budget, whole cycles at a time; :func:`estimate_tokens` is the seed's estimate of what a
history costs.

:class:`Inbox` keeps an agent's events on the store until they are acknowledged;
:class:`RedisInbox` does the same over Redis Streams (``pip install 'mindcore[redis]'``). An event
that fails ``max_attempts`` times moves to the inbox's dead letters (:class:`DeadLetter`), which an
operator requeues or discards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mindcore.consciousness.compact import compact
from mindcore.consciousness.config import ConsciousnessConfig
from mindcore.consciousness.consciousness import Consciousness, Cycle, OnError
from mindcore.consciousness.inbox import (
    BaseInbox,
    DeadLetter,
    Event,
    Inbox,
    InboxConfig,
    InboxTotals,
    inbox_totals,
)
from mindcore.consciousness.tokens import estimate_tokens

if TYPE_CHECKING:
    from mindcore.consciousness.redis_inbox import RedisInbox

__all__ = [
    "BaseInbox",
    "Consciousness",
    "ConsciousnessConfig",
    "Cycle",
    "DeadLetter",
    "Event",
    "Inbox",
    "InboxConfig",
    "InboxTotals",
    "OnError",
    "RedisInbox",
    "compact",
    "estimate_tokens",
    "inbox_totals",
]


def __getattr__(name: str) -> Any:
    # RedisInbox needs the optional `redis` package: imported only when asked for.
    if name == "RedisInbox":
        from mindcore.consciousness.redis_inbox import RedisInbox

        return RedisInbox
    raise AttributeError(f"module 'mindcore.consciousness' has no attribute {name!r}")
