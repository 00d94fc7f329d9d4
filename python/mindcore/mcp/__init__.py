"""``mindcore mcp``: a store's memory tools and prompt blocks over the Model Context Protocol.

Any MCP client (Claude Desktop, an IDE, an agent framework) gets the agent's memory: the Mind's
``mind_*`` tools, ``working_memory_update``, ``ltm_recall`` / ``ltm_remember``,
``agentified_discover`` and ``agentified_get_messages``, and read-only resources for the prompt
blocks (``mindcore://mind/header``, ``mindcore://working-memory`` and the template
``mindcore://ltm/recall/{query}``). On stdio (what a desktop client launches) or streamable HTTP::

    mindcore mcp --store ~/.mindcore --agent support --user-id user-7 --thread-id t-1
    mindcore mcp --store ~/.mindcore --agent support --http --port 8765    # http://127.0.0.1:8765/mcp

In Python, :class:`MemoryService` is what is served (no protocol needed) and
:func:`create_server` wraps it in an ``mcp`` server (``pip install 'mindcore[mcp]'``).

>>> from mindcore.embed import HashEmbedder
>>> with MemoryService("memory://mcp-doc", agent="support", embedder=HashEmbedder()) as service:
...     service.call("working_memory_update", {"content": "Order #1234: refund approved"})["status"]
...     print(service.read("mindcore://working-memory"))
'ok'
<working_memory>
Order #1234: refund approved
</working_memory>
"""

from __future__ import annotations

from mindcore.mcp.server import create_server, serve_http, serve_stdio
from mindcore.mcp.service import MemoryService, ResourceInfo

__all__ = ["MemoryService", "ResourceInfo", "create_server", "serve_http", "serve_stdio"]
