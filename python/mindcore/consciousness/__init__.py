"""Consciousness: an agent's continuous history across think cycles, and its durable inbox.

:class:`Inbox` keeps an agent's events on the store until they are acknowledged.
:func:`compact` fits a history to a token budget, whole cycles at a time; :func:`estimate_tokens`
is the seed's estimate of what a history costs.
"""

from __future__ import annotations

from mindcore.consciousness.compact import compact
from mindcore.consciousness.inbox import BaseInbox, Event, Inbox, InboxConfig
from mindcore.consciousness.tokens import estimate_tokens

__all__ = ["BaseInbox", "Event", "Inbox", "InboxConfig", "compact", "estimate_tokens"]
