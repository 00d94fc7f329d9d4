"""mindcore inside the agent frameworks people already use, each through the framework's own
interfaces and each an optional extra:

- :mod:`mindcore.integrations.langgraph` (``pip install 'mindcore[langgraph]'``):
  :class:`~mindcore.integrations.langgraph.MindcoreSaver`, a LangGraph checkpointer that keeps a
  graph's state in a mindcore store (a folder or ``s3://``).
- :mod:`mindcore.integrations.langchain` (``pip install 'mindcore[langchain]'``):
  :class:`~mindcore.integrations.langchain.MindcoreChatMessageHistory`, a chat history over a
  context session, and :class:`~mindcore.integrations.langchain.MindcoreRetriever`, a retriever
  over a user's long-term memory.
- :mod:`mindcore.integrations.openai_agents` (``pip install 'mindcore[openai-agents]'``):
  :class:`~mindcore.integrations.openai_agents.MindcoreSession`, the Agents SDK's session over a
  context session, and :func:`~mindcore.integrations.openai_agents.mindcore_tools`.
- :mod:`mindcore.integrations.pydantic_ai` (``pip install 'mindcore[pydantic-ai]'``):
  :func:`~mindcore.integrations.pydantic_ai.mindcore_toolset` and
  :class:`~mindcore.integrations.pydantic_ai.MindcoreMessageHistory`.

Nothing here is imported by ``import mindcore``: importing an integration imports its framework.
"""
