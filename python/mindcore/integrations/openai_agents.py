"""The OpenAI Agents SDK on mindcore (``pip install 'mindcore[openai-agents]'``).

- :class:`MindcoreSession`: the SDK's ``Session`` protocol over a mindcore context session, so
  ``Runner.run(agent, input, session=...)`` keeps its history in a mindcore store (a folder,
  ``s3://``), shared by every process that opens it, and visible to mindcore's context assembly
  and server as an ordinary chat.
- :func:`mindcore_tools`: the tools of mindcore's capabilities (a Mind run, working memory,
  long-term memory, any :class:`~mindcore.toolspec.Toolset`) as the SDK's ``FunctionTool``.

>>> import asyncio
>>> session = MindcoreSession("chat-1", "memory://agents-doc")
>>> asyncio.run(session.add_items([{"role": "user", "content": "Hi"},
...                                {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"}]))
>>> [m["role"] for m in session.session.get_messages().messages]
['user', 'assistant']
>>> asyncio.run(session.get_items(limit=1))
[{'type': 'function_call', 'call_id': 'c1', 'name': 'now', 'arguments': '{}'}]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

from agents import FunctionTool
from agents.memory.session_settings import SessionSettings, resolve_session_limit
from agents.tool_context import ToolContext

from mindcore.context import Context, Session, StoredMessage
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.store import Store
from mindcore.toolspec import Toolset

__all__ = ["MindcoreSession", "mindcore_tools"]

#: Messages read per page when the whole history is read.
_PAGE = 1000
#: The metadata key an item is kept under with its chat message.
_ITEM = "openai_agents_item"
_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


class MindcoreSession:
    """The Agents SDK's ``Session`` (``get_items``, ``add_items``, ``pop_item``,
    ``clear_session``) over the context session ``session_id`` of ``dataset``.

    ``store`` is a :class:`~mindcore.store.Store`, a :class:`~mindcore.context.Context` (the
    session is then one of its sessions) or where to open a store (a folder, ``s3://...``,
    ``memory://name``). Each item is stored as one chat message (a user or assistant text, a
    function call as an assistant tool call, its output as a tool message; reasoning and hosted
    tool items as an assistant note naming them) with the item itself kept beside it, so
    ``get_items`` gives back exactly the items added, in order. Messages another writer stored in
    the session (a server, ``Session.append``) come back as the items they stand for.

    Every string of every item goes through the context's secret policy: an item holding a
    credential raises :class:`~mindcore.errors.SecretRefusedError` and nothing of that call is
    stored. ``add_items`` from several tasks or processes at once lose nothing: each call's items
    are stored together, in order.
    """

    def __init__(
        self,
        session_id: str,
        store: Store | Context | str | None = None,
        *,
        dataset: str = "default",
        namespace: str = "default",
        session_settings: SessionSettings | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInputError(f"session_id: expected a non-empty str, got {session_id!r}")
        ctx = store if isinstance(store, Context) else Context(store, dataset=dataset)
        self._owns_context = not isinstance(store, Context)
        self.session: Session = ctx.session(session_id, namespace)
        self.session_id = session_id
        self.session_settings = session_settings

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items in order: all of them, or the latest ``limit`` (``limit`` 0: none).
        ``None`` uses ``session_settings.limit`` when set."""
        return await asyncio.to_thread(self._get_items, resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` in one commit (all or none)."""
        await asyncio.to_thread(self._add_items, items)

    async def pop_item(self) -> Any | None:
        """Remove the latest item and return it; ``None`` when the session is empty."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        await asyncio.to_thread(self.session.clear)

    def close(self) -> None:
        """Close the session's context (and its store, when the session opened it)."""
        if self._owns_context:
            self.session.ctx.close()

    # -- the work, in a worker thread --------------------------------------------------------

    def _get_items(self, limit: int | None) -> list[Any]:
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise InvalidInputError(f"limit: expected an int or None, got {limit!r}")
            if limit <= 0:
                return []
            return _items(self.session.get_messages(limit=limit).messages)[-limit:]
        messages: list[StoredMessage] = []
        after = 0
        while True:
            page = self.session.get_messages(limit=_PAGE, after_seq=after).messages
            messages += page
            if len(page) < _PAGE:
                return _items(messages)
            after = page[-1].seq

    def _add_items(self, items: list[Any]) -> None:
        if isinstance(items, Mapping | str | bytes) or not isinstance(items, Iterable):
            raise InvalidTypeError(f"items: expected a list of items, got {type(items).__name__}")
        given = list(items)
        if not given:
            return
        messages = [_message(item, f"items[{i}]") for i, item in enumerate(given)]
        self.session.append(messages, metadata=[{_ITEM: item} for item in given])

    def _pop_item(self) -> Any | None:
        message = self.session.pop()
        if message is None:
            return None
        return _items([message])[-1]


def mindcore_tools(*toolsets: Toolset | Any) -> list[FunctionTool]:
    """The tools of ``toolsets`` as the Agents SDK's ``FunctionTool`` list: each a
    :class:`~mindcore.toolspec.Toolset` or a capability with one (``run.tools`` of a Mind run,
    ``WorkingMemory``, ``LongTermMemory``). A call returns the tool's JSON result; a bad call comes
    back to the model as an error it can read (a mindcore tool never raises).

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> memory = mindcore.LongTermMemory("memory://agents-tools-doc", user_id="ada", embedder=HashEmbedder())
    >>> [t.name for t in mindcore_tools(memory)][:2]
    ['ltm_recall', 'ltm_remember']
    """
    out: list[FunctionTool] = []
    for i, given in enumerate(toolsets):
        toolset = given if isinstance(given, Toolset) else getattr(given, "tools", None)
        if not isinstance(toolset, Toolset):
            raise InvalidTypeError(f"toolsets[{i}]: expected a Toolset or a capability with .tools, got {type(given).__name__}")
        for spec in toolset.specs:
            out.append(FunctionTool(
                name=spec.name,
                description=spec.description,
                params_json_schema=dict(spec.parameters),
                on_invoke_tool=_invoker(toolset, spec.name),
                strict_json_schema=False,
            ))
    return out


def _invoker(toolset: Toolset, name: str) -> Any:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        result = await asyncio.to_thread(toolset.call, name, arguments)
        return json.dumps(result, ensure_ascii=False, default=str)

    return invoke


# -- items <-> chat messages -----------------------------------------------------------------------


def _message(item: Any, where: str) -> dict[str, Any]:
    """The chat message one item is stored as."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"{where}: expected an item (a dict), got {type(item).__name__}")
    kind = item.get("type")
    if kind == "function_call":
        call = {"id": str(item.get("call_id") or item.get("id") or ""), "type": "function",
                "function": {"name": str(item.get("name") or ""), "arguments": str(item.get("arguments") or "")}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    if kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": str(item.get("call_id") or ""), "content": text}
    role = item.get("role")
    if kind in (None, "message") and role in ("user", "system", "developer", "assistant"):
        return {"role": role, "content": _text(item.get("content"))}
    # Reasoning, hosted tool calls and the like: a note naming the item (the item itself is kept).
    summary = _text(item.get("summary")) if kind == "reasoning" else ""
    return {"role": "assistant", "content": f"[{kind or 'item'}] {summary}".strip()}


def _text(content: Any) -> str:
    """The text of an item's content: a string, or its text parts joined (others named)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else str(content)
    out: list[str] = []
    for part in content:
        if isinstance(part, Mapping):
            kind = part.get("type")
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                out.append(part["refusal"])
            else:
                out.append(f"[{kind or 'part'}]")
    return "\n".join(out)


def _items(messages: Iterable[StoredMessage]) -> list[Any]:
    """The items the messages stand for: the item kept with each, else what the chat message
    says (a text message, an assistant's tool calls as function calls, a tool message as the
    call's output)."""
    out: list[Any] = []
    for m in messages:
        kept = m.metadata.get(_ITEM) if isinstance(m.metadata, Mapping) else None
        if kept is not None:
            out.append(kept)
            continue
        calls = m.get("tool_calls")
        if m.role == "tool":
            out.append({"type": "function_call_output", "call_id": m.get("tool_call_id") or "", "output": m.content})
            continue
        if m.content or not calls:
            out.append({"role": m.role, "content": m.content})
        for call in calls or ():
            fn = call.get("function") or {}
            out.append({"type": "function_call", "call_id": call.get("id") or "", "name": fn.get("name") or "",
                        "arguments": fn.get("arguments") if isinstance(fn.get("arguments"), str)
                        else json.dumps(fn.get("arguments"))})
    return out
