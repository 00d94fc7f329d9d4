"""Consciousness: an agent's continuous history across think cycles, and its durable inbox.

:class:`Inbox` keeps an agent's events on the store until they are acknowledged;
:class:`RedisInbox` does the same over Redis Streams (``pip install 'mindcore[redis]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mindcore.consciousness.inbox import BaseInbox, Event, Inbox, InboxConfig

if TYPE_CHECKING:
    from mindcore.consciousness.redis_inbox import RedisInbox

__all__ = ["BaseInbox", "Event", "Inbox", "InboxConfig", "RedisInbox"]


def __getattr__(name: str) -> Any:
    # RedisInbox needs the optional `redis` package: imported only when asked for.
    if name == "RedisInbox":
        from mindcore.consciousness.redis_inbox import RedisInbox

        return RedisInbox
    raise AttributeError(f"module 'mindcore.consciousness' has no attribute {name!r}")
