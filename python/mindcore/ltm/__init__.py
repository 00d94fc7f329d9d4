"""Long-term memory: durable, private, per-user facts (see ``LongTermMemory``)."""

from __future__ import annotations

from mindcore.ltm.config import resolve_enabled, resolve_max_items
from mindcore.ltm.extract import ExtractionParseError, parse_candidates, render_conversation
from mindcore.ltm.render import render_memories
from mindcore.ltm.types import KINDS, ExtractionReport, Memory, RememberResult

__all__ = [
    "KINDS",
    "ExtractionParseError",
    "ExtractionReport",
    "Memory",
    "RememberResult",
    "parse_candidates",
    "render_conversation",
    "render_memories",
    "resolve_enabled",
    "resolve_max_items",
]
