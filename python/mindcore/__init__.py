"""mindcore: memory and context for LLM agents, on a Rust core.

Everything starts from a store: a folder on disk (``mindcore.open("path")``), ``"memory://"``, or
``"s3://bucket/prefix"`` to share one memory between machines. Each capability takes the store (or a
path) first, exposes the tools a model calls as a :class:`Toolset` (``.tools``), and raises errors
under :class:`MindcoreError`.

**Agent Mind** (:class:`Mind`): goals, beliefs and reflections that persist across runs; a run's
writes land together when it ends, and ``run.header`` is the prompt block that shows them.

>>> import mindcore
>>> from mindcore.embed import HashEmbedder          # deterministic, no model files; omit for the bundled model
>>> store = mindcore.open("memory://tour")
>>> mind = mindcore.Mind(store, agent="tour", embedder=HashEmbedder())
>>> with mind.run() as run:
...     run.call("mind_believe", {"content": "The launch moved to May", "confidence": "high"})["status"]
'ok'
>>> [b.content for b in mind.beliefs()]
['The launch moved to May']

**Working memory** (:class:`WorkingMemory`): a scratchpad per thread, or per user across threads;
free text or a schema-checked dict, deep-merged on update.

>>> wm = mindcore.WorkingMemory(store, thread_id="t1")
>>> wm.update({"content": "step 1 done"})
'step 1 done'
>>> print(wm.render())
<working_memory>
step 1 done
</working_memory>

**Long-term memory** (:class:`LongTermMemory`): durable facts about a user, extracted by an LLM
from conversations or stored directly, recalled by meaning and by words; secrets are refused.

>>> ltm = mindcore.LongTermMemory.create(store, user_id="u1", enabled=True, embedder=HashEmbedder())
>>> ltm.remember("Prefers green tea over coffee", kind="preference").text
'Prefers green tea over coffee'
>>> [m.text for m in ltm.recall("what does the user drink?", k=1)]
['Prefers green tea over coffee']
>>> ltm.remember("my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789") is None
True
>>> ltm.close()

**Context assembly** (:class:`Context`): a dataset of tools ranked for each request (BM25,
semantic or hybrid, in Rust), and sessions whose history is fitted to a token budget every turn;
``mindcore serve`` speaks agentified's HTTP protocol over it.

>>> ctx = mindcore.Context(store, dataset="tour")
>>> ctx.register([mindcore.Tool("get_weather", "Current weather for a city"),
...               mindcore.Tool("send_email", "Send an email")])
2
>>> [t.name for t in ctx.discover("what is the weather in Paris?", limit=1)]
['get_weather']
>>> chat = ctx.session("chat-1")
>>> chat.append([{"role": "user", "content": "Weather in Paris?"}])
(1, 1)
>>> [m.seq for m in chat.context.messages(strategy="recent", max_tokens=1000).assemble().messages]
[1]

**Consciousness** (:class:`Consciousness`): an agent's own history across think cycles; events
wait in a durable :class:`Inbox` until the cycle that handled them is saved, and the history is
compacted to the agent's self-summaries when it outgrows its token budget.

>>> inbox = mindcore.Inbox(store, agent="tour")
>>> _ = inbox.push({"kind": "plan", "text": "Daily report"})
>>> c = mindcore.Consciousness(store, agent="tour")
>>> with c.cycle(system_prompt="You are a helpful agent.", inbox=inbox) as cycle:
...     cycle.append([{"role": "assistant", "content": "Wrote the daily report."}])
>>> c.cycle_count, len(c.messages), len(inbox)
(1, 3, 0)

Below the capabilities: :mod:`mindcore.kernels` (Rust: hybrid top-k, exact token counts, secret
scanning, budget packing, BM25, a hashing embedder), :mod:`mindcore.store` (LanceDB tables,
filters, units of work), :mod:`mindcore.embed` and :mod:`mindcore.llm` (model protocols and
clients). Capabilities and the store load on first use, so ``import mindcore`` stays fast, and
``mindcore.open`` returns at once: LanceDB loads in a background thread, as does the default
embedder's model, while the caller goes on; the first operation that needs either waits for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mindcore._core import __version__
from mindcore.errors import MindcoreError
from mindcore.kernels import looks_like_secret

if TYPE_CHECKING:  # the lazy names, for type checkers and IDEs
    from mindcore import batch as batch
    from mindcore.agent import Agent as Agent
    from mindcore.agent import AgentResult as AgentResult
    from mindcore.consciousness import Consciousness as Consciousness
    from mindcore.consciousness import ConsciousnessConfig as ConsciousnessConfig
    from mindcore.consciousness import Inbox as Inbox
    from mindcore.context import Context as Context
    from mindcore.context import ContextConfig as ContextConfig
    from mindcore.context import RankedTool as RankedTool
    from mindcore.context import Tool as Tool
    from mindcore.ltm import LongTermMemory as LongTermMemory
    from mindcore.ltm import Memory as Memory
    from mindcore.mind import Belief as Belief
    from mindcore.mind import Goal as Goal
    from mindcore.mind import Mind as Mind
    from mindcore.mind import MindConfig as MindConfig
    from mindcore.mind import RecallResult as RecallResult
    from mindcore.mind import Reflection as Reflection
    from mindcore.store import Store as Store
    from mindcore.store import StoreConfig as StoreConfig
    from mindcore.store import aopen as aopen
    from mindcore.store import open as open
    from mindcore.toolspec import Toolset as Toolset
    from mindcore.toolspec import ToolSpec as ToolSpec
    from mindcore.working import WorkingMemory as WorkingMemory
    from mindcore.working import WorkingMemoryConfig as WorkingMemoryConfig

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "open": "mindcore.store",
    "aopen": "mindcore.store",
    "Store": "mindcore.store",
    "StoreConfig": "mindcore.store",
    "WorkingMemory": "mindcore.working",
    "WorkingMemoryConfig": "mindcore.working",
    "LongTermMemory": "mindcore.ltm",
    "Memory": "mindcore.ltm",
    "Mind": "mindcore.mind",
    "MindConfig": "mindcore.mind",
    "Goal": "mindcore.mind",
    "Belief": "mindcore.mind",
    "Reflection": "mindcore.mind",
    "RecallResult": "mindcore.mind",
    "Context": "mindcore.context",
    "ContextConfig": "mindcore.context",
    "Tool": "mindcore.context",
    "RankedTool": "mindcore.context",
    "Toolset": "mindcore.toolspec",
    "Consciousness": "mindcore.consciousness",
    "ConsciousnessConfig": "mindcore.consciousness",
    "Inbox": "mindcore.consciousness",
    "ToolSpec": "mindcore.toolspec",
    "Agent": "mindcore.agent",
    "AgentResult": "mindcore.agent",
}

__all__ = ["MindcoreError", "__version__", "looks_like_secret", *sorted(_LAZY)]


# subpackages reachable as attributes without importing them first (``mindcore.batch.recall``)
_SUBPACKAGES = frozenset({"batch"})


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"mindcore.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mindcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBPACKAGES)
