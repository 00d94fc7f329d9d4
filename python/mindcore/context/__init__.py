"""Context assembly: the right tools and history for each turn of an agent.

:class:`Context` keeps a dataset of tools (:class:`Tool`) and ranks them for a request
(:meth:`Context.discover`: BM25, semantic or hybrid, in Rust); a :class:`Session` keeps a
conversation's messages (``seq`` 1, 2, 3... per session) and the tools it found, and
``session.context`` assembles one turn: the tools to offer and the messages that fit a token
budget (``recent``, ``full`` or ``compacted`` with a summary of the rest). Everything persists in
the store; ``mindcore serve`` speaks the agentified HTTP protocol over the same objects.
"""

from __future__ import annotations

from mindcore.context.assembly import AssembledContext, ContextBuilder
from mindcore.context.config import ContextConfig
from mindcore.context.context import Context, embed_tool_texts
from mindcore.context.events import ContextAssembledEvent, RecallEvent
from mindcore.context.session import Session
from mindcore.context.types import (
    EmbeddingWeights,
    MessagePage,
    MessageVersion,
    RankedTool,
    Recalled,
    StoredMessage,
    SummaryRange,
    Tool,
    ToolFields,
)
from mindcore.errors import ContextError, NotFoundError, UnsupportedStrategyError

__all__ = [
    "AssembledContext",
    "Context",
    "ContextAssembledEvent",
    "ContextBuilder",
    "ContextConfig",
    "ContextError",
    "EmbeddingWeights",
    "MessagePage",
    "MessageVersion",
    "NotFoundError",
    "RankedTool",
    "RecallEvent",
    "Recalled",
    "Session",
    "StoredMessage",
    "SummaryRange",
    "Tool",
    "ToolFields",
    "UnsupportedStrategyError",
    "embed_tool_texts",
]
