"""Agent Mind: goals, beliefs and reflections that persist across an agent's runs.

A :class:`Mind` keeps an agent's entries in a store (namespace ``mind/<agent>``). Each run gets
the ``--- AGENT MIND ---`` header for its system prompt, seven tools for the model, and a draft
buffer that is committed as one unit when the run ends::

    import mindcore
    from mindcore.embed import HashEmbedder

    mind = mindcore.Mind(mindcore.open(), agent="research-tracker", embedder=HashEmbedder(),
                         config=mindcore.MindConfig(token_budget=400))
    with mind.run() as run:                      # flushed on exit (an exception: error flush)
        system_prompt = run.header + "\\n\\n" + base_prompt
        tools = [t.to_openai() for t in run.tools]
        result = run.call("mind_believe", {"content": "TSMC Q2 is booked", "confidence": "high"})
    async with mind.arun() as run: ...           # the same, async

Tools (names, parameters and result shapes as in the seed): ``mind_recall``,
``mind_believe``, ``mind_reflect``, ``mind_unpin_reflection``, ``mind_set_goal``,
``mind_update_goal``, ``mind_complete_goal``. ``mind_recall`` returns
``{"status": "ok", "results": [...]}``; every bad call returns ``{"status": "error", "error": ...}``
and leaves the store untouched. The same operations exist as methods (``run.believe(...)``,
``mind.goals()``, ``mind.recall(...)``) for code that is not a model.

Concurrency: a flush reads what it merges into and commits under the mind's lock (a lock of the
store's kind, so it holds across processes and machines); caps are re-checked there, so
concurrent runs never exceed them, and no run's write is lost.
"""

from __future__ import annotations

from mindcore.mind.config import MindConfig, TtlDefaults, parse_due_by, parse_duration
from mindcore.mind.entries import Belief, Confidence, Goal, GoalStatus, Priority, RecallResult, Reflection
from mindcore.mind.mind import Believed, FlushReport, Mind, MindRun, Reflected
from mindcore.mind.tools import TOOL_NAMES, TOOL_SPECS
from mindcore.mind.validate import MindError

__all__ = [
    "TOOL_NAMES",
    "TOOL_SPECS",
    "Belief",
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
