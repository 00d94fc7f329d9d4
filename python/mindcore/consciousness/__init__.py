"""Consciousness: an agent's continuous history across think cycles, and its durable inbox.

:class:`Consciousness` keeps an agent's history across think cycles on the store: each cycle
adds the INBOX message of its events and the model's replies, saves only what is new, and
compacts the history when it grows over its token budget. :class:`Inbox` keeps an agent's events on the store until they are acknowledged.
:func:`compact` fits a history to a token budget, whole cycles at a time; :func:`estimate_tokens`
is the seed's estimate of what a history costs.
"""

from __future__ import annotations

from mindcore.consciousness.compact import compact
from mindcore.consciousness.config import ConsciousnessConfig
from mindcore.consciousness.consciousness import Consciousness, Cycle
from mindcore.consciousness.inbox import BaseInbox, Event, Inbox, InboxConfig
from mindcore.consciousness.tokens import estimate_tokens

__all__ = [
    "BaseInbox",
    "Consciousness",
    "ConsciousnessConfig",
    "Cycle",
    "Event",
    "Inbox",
    "InboxConfig",
    "compact",
    "estimate_tokens",
]
