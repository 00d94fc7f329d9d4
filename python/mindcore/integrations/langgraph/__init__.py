"""LangGraph on a mindcore store (``pip install 'mindcore[langgraph]'``).

:class:`MindcoreSaver` is a LangGraph checkpointer (``BaseCheckpointSaver``, sync and async): a
graph compiled with it keeps its state, pending writes and history in a mindcore store, on a
folder or on object storage, so a conversation survives restarts and is shared by every process
that opens the same store::

    from langgraph.graph import StateGraph
    from mindcore.integrations.langgraph import MindcoreSaver

    with MindcoreSaver.open("./agent-state") as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "user-42"}})

:class:`MindcoreStore` is LangGraph's long-term memory store (``BaseStore``): items under
namespaces, TTLs, and search through mindcore's hybrid recall (vector and BM25), for
``builder.compile(store=...)`` and LangMem-style memory tools.
"""

from __future__ import annotations

from mindcore.integrations.langgraph.checkpoint import MindcoreSaver
from mindcore.integrations.langgraph.store import MindcoreStore

__all__ = ["MindcoreSaver", "MindcoreStore"]
