"""The tools a session offers a model: ``agentified_discover`` (find more tools),
``agentified_get_messages`` (read history a summary or the window left out) and every tool the
session holds or always includes, dispatched to its handler.

A registered tool whose handler lives in another process (or that was registered over HTTP) is
still offered; calling it here returns a tool error saying so.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mindcore.context._blocking import LoopRunning, run_to_completion
from mindcore.context.types import Tool
from mindcore.toolspec import ToolError, Toolset, ToolSpec

if TYPE_CHECKING:
    from mindcore.context.session import Session

__all__ = ["DISCOVER_TOOL", "GET_MESSAGES_TOOL", "build_toolset", "tool_spec"]

log = logging.getLogger("mindcore.context")

DISCOVER_TOOL = "agentified_discover"
GET_MESSAGES_TOOL = "agentified_get_messages"
#: What ``agentified_get_messages`` returns when the model gives no limit (as the agentified SDKs do).
GET_MESSAGES_DEFAULT_LIMIT = 20

DISCOVER_SPEC = ToolSpec(
    DISCOVER_TOOL,
    "Find tools for a task you cannot do with the tools you have. Describe the task; the best "
    "matching tools become available on your next step.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you need a tool for."},
            "limit": {"type": "integer", "minimum": 0, "maximum": 100, "description": "How many tools (default 5)."},
        },
        "required": ["query"],
    },
)
GET_MESSAGES_SPEC = ToolSpec(
    GET_MESSAGES_TOOL,
    "Read earlier messages of this conversation, e.g. the ones a '[Summary of messages a\u2013b ...]' "
    "note stands for. Without a cursor you get the latest messages.",
    {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 0, "description": "How many messages (default 20)."},
            "after_seq": {"type": "integer", "description": "Messages after this sequence number."},
            "around_seq": {"type": "integer", "description": "Messages around this sequence number."},
        },
    },
)
BUILTIN = (DISCOVER_TOOL, GET_MESSAGES_TOOL)


def _whole(value: Any) -> Any:
    """5.0 as 5 (JSON numbers a model sends for integers), anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def build_toolset(session: Session, tools: Iterable[Tool]) -> Toolset:
    """The two built-in tools, then ``tools`` (names clashing with a built-in are left out)."""

    def discover(args: dict[str, Any]) -> dict[str, Any]:
        found = session.discover(args["query"], limit=_whole(args.get("limit", 5)))
        return {"status": "ok", "tools": [t.to_wire() for t in found]}

    def get_messages(args: dict[str, Any]) -> dict[str, Any]:
        limit = args.get("limit")
        page = session.get_messages(
            limit=GET_MESSAGES_DEFAULT_LIMIT if limit is None else _whole(limit),
            after_seq=_whole(args.get("after_seq", args.get("afterSeq"))),
            around_seq=_whole(args.get("around_seq", args.get("aroundSeq"))),
        )
        return {"status": "ok", **page.to_wire()}

    entries = [(DISCOVER_SPEC, discover), (GET_MESSAGES_SPEC, get_messages)]
    for tool in tools:
        if tool.name in BUILTIN:
            log.warning("tool %r is not offered: the name belongs to a built-in tool", tool.name)
            continue
        entries.append((tool_spec(tool), _handler(tool)))
    return Toolset(entries)


def tools_toolset(tools: Sequence[Tool]) -> Toolset:
    """Registered tools with handlers as a :class:`~mindcore.toolspec.Toolset` (a call runs the
    handler in this process and answers ``{"status": "ok", "result": ...}``)."""
    return Toolset([(tool_spec(t), _handler(t)) for t in tools])


def _handler(tool: Tool) -> Any:
    def call(args: dict[str, Any]) -> dict[str, Any]:
        if tool.handler is None:
            raise ToolError(f"tool {tool.name!r} has no handler in this process")
        result = tool.handler(args)
        if inspect.isawaitable(result):
            try:
                result = run_to_completion(result)
            except LoopRunning:
                raise ToolError("this tool's handler is async: call it with `await session.acall(...)`") from None
        return {"status": "ok", "result": result}

    return call


_SPECS: OrderedDict[tuple[str, str, str], ToolSpec] = OrderedDict()
_SPECS_LOCK = threading.Lock()


def tool_spec(tool: Tool) -> ToolSpec:
    """``tool`` as a :class:`~mindcore.toolspec.ToolSpec` (cached). A schema without ``type``
    gets ``"type": "object"``; one that is not a valid object schema is offered as a plain
    object schema, with a warning."""
    import json

    key = (tool.name, tool.description, json.dumps(tool.parameters, sort_keys=True))
    with _SPECS_LOCK:
        spec = _SPECS.get(key)
        if spec is not None:
            _SPECS.move_to_end(key)
            return spec
    parameters = dict(tool.parameters)
    parameters.setdefault("type", "object")
    try:
        spec = ToolSpec(tool.name, tool.description, parameters)
    except Exception as exc:  # jsonschema's SchemaError or a non-object type
        log.warning("tool %r: its parameters are not a valid object schema (%s); offering it without one",
                    tool.name, exc)
        spec = ToolSpec(tool.name, tool.description, {"type": "object"})
    with _SPECS_LOCK:
        _SPECS[key] = spec
        while len(_SPECS) > 2048:
            _SPECS.popitem(last=False)
    return spec
