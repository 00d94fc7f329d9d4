"""`Session`: one conversation of a context (``ctx.session("chat-1")``): its message history,
the tools it holds, and its per-turn :attr:`~Session.context`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.context._merge import plan_update
from mindcore.context.assembly import ContextBuilder
from mindcore.context.messages import normalize, stored, wire
from mindcore.context.tools import build_toolset
from mindcore.context.types import MessagePage, MessageVersion, RankedTool, SearchStrategy, StoredMessage
from mindcore.errors import ContextError, SecretRefusedError
from mindcore.store.messages import LogChange, message_key
from mindcore.validation import check_int, check_storable

if TYPE_CHECKING:
    from mindcore.context.context import Context
    from mindcore.context.types import EmbeddingWeights
    from mindcore.store.messages import LogView, LogWindow
    from mindcore.toolspec import Toolset

__all__ = ["Session"]


class Session:
    """A conversation: messages with ``seq`` 1, 2, 3... (contiguous, also with several writers
    in several processes), the tools it holds, and the context of each turn.

    >>> import mindcore
    >>> ctx = mindcore.Context("memory://session-doc", dataset="support")
    >>> chat = ctx.session("chat-1")
    >>> chat.append([{"role": "user", "content": "Where is my order?"}])
    (1, 1)
    >>> chat.update_conversation([{"role": "user", "content": "Where is my order?"},
    ...                           {"role": "assistant", "content": "Let me check."}])  # appends only the new one
    1
    >>> [(m.seq, m["role"]) for m in chat.get_messages().messages]
    [(1, 'user'), (2, 'assistant')]
    """

    def __init__(self, ctx: Context, id: str, namespace: str) -> None:
        self.ctx = ctx
        self.id = id
        self.namespace = namespace
        self._log = ctx._repo.log_key(namespace, id)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, namespace={self.namespace!r}, dataset={self.dataset!r})"

    @property
    def dataset(self) -> str:
        return self.ctx.dataset

    @property
    def context(self) -> ContextBuilder:
        """A fresh builder for this turn's context: ``.tools(...)``, ``.messages(...)``,
        ``.recall(...)``, ``.limit_tokens(...)``, then ``.assemble()``."""
        return ContextBuilder(self)

    # -- messages -------------------------------------------------------------------------------

    def _normalize(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        cfg = self.ctx.config
        return normalize(messages, cfg.secrets, max_chars=cfg.max_message_chars, max_messages=cfg.max_messages)

    def append(
        self, messages: Sequence[Mapping[str, Any]], *, metadata: Sequence[Any] | None = None
    ) -> tuple[int, int]:
        """Store ``messages`` (OpenAI chat messages, or content-part form) as the next ``seq``
        numbers, all or none; return ``(first_seq, last_seq)``. A bad message raises
        :class:`~mindcore.errors.ContextError` and a secret
        :class:`~mindcore.errors.SecretRefusedError` (unless the policy redacts); nothing is then
        stored.

        ``metadata``: one JSON value per message, kept with it and read back as
        :attr:`StoredMessage.metadata` (an adapter keeps a framework's own form of the message
        there). Its strings go through the secret policy too, which refuses them whatever its
        action. Each message must then store as one message (content parts that become several
        messages are refused).

        >>> import mindcore
        >>> chat = mindcore.Context("memory://append-doc").session("chat")
        >>> chat.append([{"role": "user", "content": "Hi"}], metadata=[{"source": "web"}])
        (1, 1)
        >>> chat.get_messages().messages[0].metadata
        {'source': 'web'}
        """
        rows = self._normalize(messages)
        if metadata is not None:
            rows = self._with_metadata(messages, rows, metadata)
        return self.ctx._repo.log.append(self._log, rows)

    def _with_metadata(
        self, messages: Sequence[Mapping[str, Any]], rows: list[dict[str, Any]], metadata: Sequence[Any]
    ) -> list[dict[str, Any]]:
        if isinstance(metadata, str | bytes | Mapping) or not isinstance(metadata, Sequence):
            raise ContextError(f"metadata: expected a list with one value per message, got {type(metadata).__name__}")
        if len(metadata) != len(messages):
            raise ContextError(f"metadata: {len(metadata)} values for {len(messages)} messages")
        if len(rows) != len(messages):
            raise ContextError("metadata: each message must store as one message (these content parts make several)")
        values = list(metadata)
        for i, value in enumerate(values):
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ContextError(f"metadata[{i}]: expected a JSON value ({e})") from None
            check_storable(value, f"metadata[{i}]", error=ContextError)
        at = self.ctx.config.secrets.first_refused(values)
        if at is not None:  # refused whatever the action: the caller's own form cannot be redacted
            self.ctx.config.secrets.screen_object(values[at], f"metadata[{at}]")
            raise SecretRefusedError(f"metadata[{at}]: not stored: it looks like a secret; leave credentials out")
        return [{**row, "metadata": value} for row, value in zip(rows, values, strict=True)]

    def pop(self) -> StoredMessage | None:
        """Delete the session's last message and return it (``None`` when it has none); the next
        message appended takes its ``seq``.

        >>> import mindcore
        >>> chat = mindcore.Context("memory://pop-doc").session("chat")
        >>> chat.append([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
        (1, 2)
        >>> chat.pop().content, [m.content for m in chat.get_messages().messages]
        ('Hello', ['Hi'])
        """
        row = self.ctx._repo.log.pop(self._log)
        if row is None:
            return None
        message = StoredMessage.from_row({**row, "metadata": None})
        message.metadata = row["metadata"]
        return message

    def update_conversation(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Store what is new in ``messages``, the whole conversation as the caller sees it (an
        older, retried or trimmed view included), in one commit under the session's lock, and
        return how many messages were appended or edited: the view is matched against the stored
        history in order, run by run (its longest prefix found as a run, then the longest run of
        the rest found after that, ...; messages are equal when ``role``, ``content``,
        ``tool_calls`` and ``tool_call_id`` are, after the normalisation :meth:`append` does, which
        keeps no ``name``), and what follows the last match is appended, so a view that is a run
        of the history stores nothing. A view not matched whole that lines up with the history
        from its first message, same roles and tool calls, with only the content of some messages
        changed (at least one unchanged and, unless the view goes beyond the history, its last
        one, or it is a new turn) gives those messages a new version (:meth:`history`) and
        appends what follows the history.

        >>> import mindcore
        >>> chat = mindcore.Context("memory://update-doc").session("chat")
        >>> sys, hi = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}
        >>> chat.update_conversation([sys, hi, {"role": "assistant", "content": "Hello!"}])
        3
        >>> chat.update_conversation([sys, hi])  # a late retry of an older view
        0
        >>> chat.update_conversation([sys, {"role": "user", "content": "Hi there"},  # an edit, then a new turn
        ...                           {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}])
        2
        >>> [m.content for m in chat.get_messages().messages], [v.content for v in chat.history(2)]
        (['Be brief.', 'Hi there', 'Hello!', 'Bye'], ['Hi', 'Hi there'])
        """
        given = self._normalize(messages)
        if not given:
            return 0
        keys = [message_key(m) for m in given]

        def change(view: LogView) -> LogChange:
            stored = view.keys()
            plan = plan_update(stored, keys, shape=lambda k: k.shape)
            return LogChange(append=given[plan.append_from:],
                             edits={int(view.seq[i]): given[i] for i in plan.edits})

        done = self.ctx._repo.log.write(self._log, change)
        return done.appended + len(done.edited)

    def clear(self) -> None:
        """Delete every message of this session (and their earlier versions); the next one
        appended is ``seq`` 1 again.

        >>> import mindcore
        >>> chat = mindcore.Context("memory://clear-doc").session("chat")
        >>> chat.append([{"role": "user", "content": "Hi"}])
        (1, 1)
        >>> chat.clear()
        >>> chat.get_messages().messages, chat.append([{"role": "user", "content": "Again"}])
        ([], (1, 1))
        """
        self.ctx._repo.log.clear(self._log)

    def history(self, seq: int) -> list[MessageVersion]:
        """The versions of message ``seq``, oldest first: each edit by :meth:`update_conversation`
        adds one, and the last is the message as :meth:`get_messages` shows it (``[]`` when the
        session has no message ``seq``).

        >>> import mindcore
        >>> chat = mindcore.Context("memory://history-doc").session("chat")
        >>> chat.append([{"role": "user", "content": "Hi"}])
        (1, 1)
        >>> [(v.content, v.replaced_at is None) for v in chat.history(1)]
        [('Hi', True)]
        """
        seq = check_int(seq, "seq", error=ContextError)
        return [MessageVersion(StoredMessage.from_row(r), int(r["written_at"] or 0), r["replaced_at"])
                for r in self.ctx._repo.log.versions(self._log, seq)]

    def get_messages(
        self, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> MessagePage:
        """A page of messages in ascending ``seq``: the latest ``limit`` (``has_more``: older ones
        exist), or the first ``limit`` after ``after_seq``, or from ``around_seq - limit // 2``
        (``has_more``: later ones exist)."""
        window = self._window(limit, after_seq, around_seq)
        return MessagePage(stored(window.view, window.ranks), window.has_more, window.view.max_seq)

    def get_messages_wire(
        self, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> dict[str, Any]:
        """``get_messages(...).to_wire()``, the page as the agentified server writes it, with its
        messages taken from the wire form kept per stored message (none built anew).

        >>> import mindcore
        >>> chat = mindcore.Context("memory://wire-doc").session("chat")
        >>> chat.append([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
        (1, 2)
        >>> page = chat.get_messages_wire(limit=1)
        >>> [(m["seq"], m["content"]) for m in page["messages"]], page["has_more"], page["max_seq"]
        ([(2, 'Hello!')], True, 2)
        """
        window = self._window(limit, after_seq, around_seq)
        return {"messages": wire(window.view)[window.start:window.stop].tolist(), "has_more": window.has_more,
                "max_seq": window.view.max_seq}

    def _window(self, limit: int, after_seq: int | None, around_seq: int | None) -> LogWindow:
        check_int(limit, "limit", minimum=0, error=ContextError)
        if after_seq is not None and around_seq is not None:
            raise ContextError("cannot specify both after_seq and around_seq")
        for name, value in (("after_seq", after_seq), ("around_seq", around_seq)):
            if value is not None:
                check_int(value, name, error=ContextError)
        return self.ctx._repo.log.window(self._log, limit=limit, after_seq=after_seq, around_seq=around_seq)

    def _view(self) -> LogView:
        return self.ctx._repo.log.view(self._log)

    # -- tools ----------------------------------------------------------------------------------

    @property
    def held_tools(self) -> list[str]:
        """Names of the tools this session holds (found by its discoveries and recalls)."""
        return self.ctx._repo.session_tools(self.namespace, self.id)

    def discover(
        self,
        query: str,
        limit: int = 5,
        *,
        strategy: SearchStrategy | None = None,
        exclude: Sequence[str] | None = None,
        turn_id: str | None = None,
        weights: EmbeddingWeights | Mapping[str, float] | None = None,
    ) -> list[RankedTool]:
        """:meth:`Context.discover` for this session: tools it already holds are not ranked again,
        and the session keeps what is found."""
        return self.ctx.discover(query, limit, strategy=strategy, exclude=exclude, turn_id=turn_id,
                                 weights=weights, namespace=self.namespace, session=self.id)

    def _recall(self, view: LogView, *, limit: int, min_similarity: float | None) -> list[RankedTool]:
        """The session's held tools (score 1), then tools found for the last user message; the
        session keeps them all."""
        ctx = self.ctx
        catalog = ctx._catalog()
        held = self.held_tools
        base = [RankedTool(catalog.tool(r), 1.0) for r in catalog.rows_of(held) if not catalog.always[r]]
        roles = view.column("role")
        query = view.column("content")[len(roles) - 1 - roles[::-1].index("user")] if "user" in roles else ""
        found: list[RankedTool] = []
        if query:
            found = ctx.discover(query[: ctx.config.max_query_chars], limit, exclude=held)
            if min_similarity is not None:
                found = [t for t in found if t.score >= min_similarity]
        merged = [RankedTool(ctx._with_handler(t.tool), t.score, t.graph_expanded) for t in base + found]
        if merged:
            ctx._repo.hold_tools(self.namespace, self.id, [t.name for t in merged])
        return merged

    def _offered(self, explicit: Mapping[str, Any]) -> dict[str, Any]:
        """Always-included tools, held tools, then ``explicit`` (which wins a name)."""
        ctx = self.ctx
        catalog = ctx._catalog()
        rows = [int(r) for r in np.flatnonzero(catalog.always)] + catalog.rows_of(self.held_tools)
        offered: dict[str, Any] = {}
        for row in dict.fromkeys(rows):
            tool = ctx._with_handler(catalog.tool(row))
            offered[tool.name] = tool
        offered.update(explicit)
        return offered

    @property
    def tools(self) -> Toolset:
        """``agentified_discover``, ``agentified_get_messages``, the always-included tools and the
        tools this session holds, as a :class:`~mindcore.toolspec.Toolset`."""
        from mindcore.context.types import Tool

        return build_toolset(self, [t for t in self._offered({}).values() if isinstance(t, Tool)])

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run a model's tool call (never raises: problems come back as a tool error)."""
        return self.tools.call(name, arguments)

    # -- async twins ----------------------------------------------------------------------------

    async def aappend(self, messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        return await asyncio.to_thread(self.append, messages)

    async def aupdate_conversation(self, messages: Sequence[Mapping[str, Any]]) -> int:
        return await asyncio.to_thread(self.update_conversation, messages)

    async def ahistory(self, seq: int) -> list[MessageVersion]:
        return await asyncio.to_thread(self.history, seq)

    async def aget_messages(
        self, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> MessagePage:
        return await asyncio.to_thread(self.get_messages, limit, after_seq, around_seq)

    async def aget_messages_wire(
        self, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> dict[str, Any]:
        return await asyncio.to_thread(self.get_messages_wire, limit, after_seq, around_seq)

    async def adiscover(self, query: str, limit: int = 5, **kwargs: Any) -> list[RankedTool]:
        return await asyncio.to_thread(lambda: self.discover(query, limit, **kwargs))

    async def acall(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.call, name, arguments)
