"""Consciousness: an agent's continuous history across think cycles, and its durable inbox.

:class:`Inbox` keeps an agent's events on the store until they are acknowledged.
"""

from __future__ import annotations

from mindcore.consciousness.inbox import BaseInbox, Event, Inbox, InboxConfig

__all__ = ["BaseInbox", "Event", "Inbox", "InboxConfig"]
