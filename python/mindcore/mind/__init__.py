"""Agent Mind: goals, beliefs and reflections that persist across an agent's runs.

A :class:`Mind` keeps an agent's entries in a store (namespace ``mind/<agent>``). Each run
(:meth:`Mind.run`, or :meth:`Mind.arun` with ``async with``) gets the ``--- AGENT MIND ---``
header for its system prompt, the seven tools for the model (``run.tools``, a
:class:`~mindcore.toolspec.Toolset`: ``run.tools.openai()``, ``run.call(name, arguments)``), and
a draft buffer committed as one unit when the block ends. An exception inside the block makes it an error flush (beliefs and reflections kept
with ``error=True``, goal writes and unpins dropped), then propagates.

Tools (the seed's names, parameters and result shapes): ``mind_recall``, ``mind_believe``,
``mind_reflect``, ``mind_unpin_reflection``, ``mind_set_goal``, ``mind_update_goal``,
``mind_complete_goal``. ``mind_recall`` answers ``{"status": "ok", "results": [...]}``; a bad call
answers ``{"status": "error", "error": "..."}`` and leaves the store untouched. The same reads and
writes exist as methods (``mind.goals()``, ``mind.beliefs()``, ``mind.reflections()``,
``mind.recall(...)``; ``run.believe(...)``, ``run.set_goal(...)``, ...) for code that is not a model.

Concurrency: a flush reads what it merges into and commits under the mind's lock (a lock of the
store's kind, so it holds across processes and machines); caps are re-checked there, so
concurrent runs never exceed them, and no run's write is lost.

Examples
--------
>>> import mindcore
>>> from mindcore.embed import HashEmbedder
>>> mind = mindcore.Mind("memory://", agent="research-tracker", embedder=HashEmbedder(),
...                      config=mindcore.MindConfig(token_budget=400))
>>> with mind.run() as run:
...     run.header  # an empty store: no block at all
...     [t.name for t in run.tools][:2]
...     run.call("mind_believe", {"content": "TSMC Q2 capacity is booked", "confidence": "high"})["action"]
...     run.call("mind_set_goal", {"description": "Watch TSMC Q3", "priority": "high", "dueBy": "2026-09-30"})["status"]
''
['mind_recall', 'mind_believe']
'created'
'ok'
>>> print(mind.run().header)
--- AGENT MIND ---
<BLANKLINE>
## Goals
[high] Watch TSMC Q3 (due: 2026-09-30)
<BLANKLINE>
## Beliefs
- TSMC Q2 capacity is booked (high confidence)
<BLANKLINE>
---
>>> [r.content for r in mind.recall("TSMC capacity", type="belief")]
['TSMC Q2 capacity is booked']
>>> mind.run().call("mind_believe", {"content": "x", "confidence": "certain"})["status"]
'error'
"""

from __future__ import annotations

from mindcore.mind._repo import VECTOR_TEXTS
from mindcore.mind.config import MindConfig, TtlDefaults, parse_due_by, parse_duration
from mindcore.mind.entries import (
    Belief,
    BeliefChange,
    Confidence,
    Goal,
    GoalStatus,
    Priority,
    RecallResult,
    Reflection,
)
from mindcore.mind.mind import Believed, FlushReport, Mind, MindRun, Reflected
from mindcore.mind.tools import TOOL_NAMES, TOOL_SPECS
from mindcore.mind.validate import MindError

__all__ = [
    "TOOL_NAMES",
    "TOOL_SPECS",
    "VECTOR_TEXTS",
    "Belief",
    "BeliefChange",
    "Believed",
    "Confidence",
    "FlushReport",
    "Goal",
    "GoalStatus",
    "Mind",
    "MindConfig",
    "MindError",
    "MindRun",
    "Priority",
    "RecallResult",
    "Reflected",
    "Reflection",
    "TtlDefaults",
    "parse_due_by",
    "parse_duration",
]
