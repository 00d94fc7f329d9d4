"""mindcore inside the agent frameworks people already use, each through the framework's own
interfaces and each an optional extra:

- :mod:`mindcore.integrations.langgraph` (``pip install 'mindcore[langgraph]'``):
  :class:`~mindcore.integrations.langgraph.MindcoreSaver`, a LangGraph checkpointer that keeps a
  graph's state in a mindcore store (a folder or ``s3://``).

Nothing here is imported by ``import mindcore``: importing an integration imports its framework.
"""
