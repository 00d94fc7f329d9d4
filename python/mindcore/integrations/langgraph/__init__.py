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
"""

from __future__ import annotations

from mindcore.integrations.langgraph.checkpoint import MindcoreSaver

__all__ = ["MindcoreSaver"]
