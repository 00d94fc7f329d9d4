"""Long-term memory: durable, private, per-user facts.

:class:`LongTermMemory` recalls them by meaning, recency and importance, mines them from finished
conversations with an LLM, keeps them true over time (a new fact that updates or contradicts a
stored one retires it, :meth:`LongTermMemory.history` keeps every version and
:meth:`LongTermMemory.restore` brings a retired one back), never stores anything that looks like a
credential, and is off unless the caller or ``MINDCORE_MEMORY_ENABLED`` turns it on.
"""

from __future__ import annotations

from mindcore.errors import MemoryNotFoundError
from mindcore.ltm._repo import VECTOR_TEXTS
from mindcore.ltm.config import LongTermMemoryConfig, RecallOptions, resolve_enabled, resolve_max_items
from mindcore.ltm.extract import ExtractionParseError, parse_candidates, render_conversation
from mindcore.ltm.memory import DUPLICATE_THRESHOLD, LongTermMemory, RecallWeights
from mindcore.ltm.render import render_memories
from mindcore.ltm.types import HISTORY_ACTIONS, KINDS, ExtractionReport, Memory, MemoryVersion, RememberResult

__all__ = [
    "DUPLICATE_THRESHOLD",
    "HISTORY_ACTIONS",
    "KINDS",
    "VECTOR_TEXTS",
    "ExtractionParseError",
    "ExtractionReport",
    "LongTermMemory",
    "LongTermMemoryConfig",
    "Memory",
    "MemoryNotFoundError",
    "MemoryVersion",
    "RecallOptions",
    "RecallWeights",
    "RememberResult",
    "parse_candidates",
    "render_conversation",
    "render_memories",
    "resolve_enabled",
    "resolve_max_items",
]
