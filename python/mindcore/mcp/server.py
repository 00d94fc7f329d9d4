"""The MCP protocol around a :class:`~mindcore.mcp.MemoryService`: tools, resources and the
two transports (stdio and streamable HTTP), on the official ``mcp`` package's low-level server.

Tool results are JSON text content (and the same object as structured content); a result whose
``status`` reports a failure (bad arguments, an unknown tool, a refused secret) is an MCP tool
error (``isError: true``) the model reads and can act on; missing arguments are such an error
too (naming the required field), while ``arguments`` that are not a JSON object never reach a
tool: the protocol layer answers them with JSON-RPC's invalid-params error. Capability calls run
in worker threads, so a slow recall never stalls the protocol.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import json
import os
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mindcore._core import __version__
from mindcore.errors import MindcoreError, UnknownResourceError
from mindcore.mcp.service import MemoryService, failed

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext

    from mindcore._http_guard import Limits

__all__ = ["RESOURCE_NOT_FOUND", "create_server", "mcp_installed", "serve_http", "serve_stdio"]

#: The JSON-RPC error code MCP gives a read of an unknown resource.
RESOURCE_NOT_FOUND = -32002
MIME_TYPE = "text/plain"
INSTRUCTIONS = (
    "Memory for this agent: mind_* tools keep goals, beliefs and reflections across runs; "
    "working_memory_update keeps the thread's scratchpad; ltm_recall / ltm_remember keep durable facts "
    "about the user (never secrets); agentified_discover finds more tools and agentified_get_messages "
    "reads earlier messages. The resources are the prompt blocks these make."
)


def mcp_installed() -> bool:
    """Whether the ``mcp`` package (2.x, with its low-level server) can be imported."""
    try:
        return importlib.util.find_spec("mcp.server.lowlevel") is not None
    except ImportError:  # no `mcp` at all (or a folder of that name that is not the package)
        return False


def _require_mcp() -> None:
    if not mcp_installed():
        raise ImportError("mindcore mcp needs the mcp package: pip install 'mindcore[mcp]'")


def create_server(service: MemoryService, *, name: str = "mindcore") -> Server[Any]:
    """An MCP server (``mcp.server.Server``) with ``service``'s tools and resources.

    >>> from mindcore.embed import HashEmbedder
    >>> service = MemoryService("memory://mcp-server-doc", embedder=HashEmbedder())
    >>> server = create_server(service)
    >>> server.name, server.get_capabilities().tools is not None
    ('mindcore', True)
    >>> service.close()
    """
    _require_mcp()
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    entries = service.tools.mcp()
    tools = [types.Tool.model_validate(entry) for entry in entries]
    resources = [types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=MIME_TYPE)
                 for r in service.resources()]
    templates = [types.ResourceTemplate(uri_template=t.uri, name=t.name, description=t.description,
                                        mime_type=MIME_TYPE) for t in service.resource_templates()]

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await asyncio.to_thread(service.call, params.name, params.arguments)
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=json.loads(text),
                                    is_error=failed(result))

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources)

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        try:
            text = await asyncio.to_thread(service.read, params.uri)
        except UnknownResourceError as exc:
            raise MCPError(RESOURCE_NOT_FOUND, str(exc), {"uri": params.uri}) from None
        except MindcoreError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=MIME_TYPE, text=text)])

    return Server(name, version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until the client closes stdin.

    A line that is not a JSON-RPC message the protocol accepts (not JSON, or JSON the strict
    parser refuses, such as an escaped lone surrogate) is answered with a JSON-RPC parse error
    (-32700) carrying the request's id when one can be read, so the client is not left waiting.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server(stdin=_stdin_lines()) as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        await write.send(_parse_error(item))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(forward)
            await server.run(receive, write, server.create_initialization_options())


class _StdinLines:
    """The lines of stdin when it is a pipe, a socket or a terminal, each read when the event loop
    sees it ready, so cancelling the server stops it at once (a worker thread blocked in a read of
    stdin could not be stopped before the client sends a line or closes the pipe). Decoded as UTF-8
    with replacement characters for invalid bytes, each line with its ``\\n``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lines: collections.deque[bytes] = collections.deque()
        self._partial = bytearray()
        self._ended = False
        self._watchable = True

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._ended:
                if not self._partial:
                    raise StopAsyncIteration
                self._lines.append(bytes(self._partial))  # a last line without its newline
                self._partial.clear()
                break
            chunk = await self._read()
            if chunk is None:
                continue
            if not chunk:
                self._ended = True
                continue
            *complete, tail = chunk.split(b"\n")
            if complete:
                complete[0] = bytes(self._partial) + complete[0]
                self._partial = bytearray(tail)
                self._lines.extend(line + b"\n" for line in complete)
            else:
                self._partial += tail
        return self._lines.popleft().decode("utf-8", errors="replace")

    async def _read(self) -> bytes | None:
        """The next bytes (empty at the end), or ``None`` when another reader took them first."""
        import anyio

        if self._watchable:
            try:
                await anyio.wait_readable(self._fd)
            except OSError:  # a device the loop cannot watch, such as /dev/null: its reads never block
                self._watchable = False
            else:
                try:
                    return os.read(self._fd, 1 << 16)
                except BlockingIOError:
                    return None
        return await anyio.to_thread.run_sync(os.read, self._fd, 1 << 16)


def _stdin_lines() -> Any:
    """Stdin as :class:`_StdinLines` where the event loop can watch it; otherwise (a regular file,
    which never blocks a read, or a platform without readiness on pipes) ``None``: the ``mcp``
    package then reads it in a worker thread."""
    if os.name != "posix" or sys.stdin is None:
        return None
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):  # no descriptor behind sys.stdin
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return None
    return _StdinLines(fd)


def _parse_error(exc: Exception) -> Any:
    """The JSON-RPC parse error answering the line ``exc`` was raised for (its id when readable)."""
    import json

    from mcp import types
    from mcp.shared.message import SessionMessage

    request_id: int | str | None = None
    errors = getattr(exc, "errors", None)
    line = errors()[0].get("input") if callable(errors) and errors() else None
    if isinstance(line, str):
        try:
            value = json.loads(line)  # lenient: lone surrogates are accepted here
        except (ValueError, RecursionError):
            value = None
        found = value.get("id") if isinstance(value, dict) else None
        if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
            request_id = found
    error = types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {str(exc).splitlines()[0][:200]}")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def serve_http(server: Server[Any], *, host: str, port: int, log_level: str = "warning",
               limits: Limits | None = None, commits: Callable[[], int] | None = None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (SIGINT or SIGTERM).
    On a loopback ``host`` only requests naming a loopback host are accepted (DNS rebinding).
    Slow and greedy clients are cut off as ``mindcore serve`` cuts them off (``limits``, default
    :class:`~mindcore._http_guard.Limits` with the connection cap under the open-file limit, which
    is raised to its hard limit first). ``GET /health`` and ``GET /metrics`` answer beside ``/mcp``
    (see :mod:`mindcore.mcp.http`; ``commits`` counts the store's commits for it), every answer
    carries an ``x-request-id`` and every request gets a line in the ``mindcore.mcp`` log (uvicorn's
    lines go to the root logger's handlers)."""
    try:
        import httptools  # noqa: F401  (the guarded protocol is uvicorn's httptools one)
        import uvicorn
    except ImportError:
        raise ImportError("mindcore mcp --http needs uvicorn and httptools: pip install 'mindcore[mcp]'") from None
    from mindcore._http_guard import (
        ConnectionStats,
        Limits,
        default_max_connections,
        guarded_protocol,
        raise_file_limit,
    )
    from mindcore._http_metrics import Metrics
    from mindcore.mcp.http import Observed

    raise_file_limit()
    if limits is None:
        limits = Limits(max_connections=default_max_connections())
    connections = ConnectionStats()
    app = Observed(server.streamable_http_app(host=host), Metrics(connections, commits=commits))
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on",
                http=guarded_protocol(limits, connections), timeout_keep_alive=5, log_config=None)
