"""`MemoryService`: what ``mindcore mcp`` serves from one store, without the protocol.

One agent's Mind, one thread's working memory, one user's long-term memory and one context
session, all on one store opened once. Their tools are the capabilities' own
:class:`~mindcore.toolspec.Toolset`\\ s merged (never re-declared here); the resources are the
prompt blocks each capability renders. Everything here is plain Python, so it is tested and
usable without the ``mcp`` package; :mod:`mindcore.mcp.server` puts the protocol around it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote, unquote

from mindcore.context import Context
from mindcore.context.tools import DISCOVER_TOOL, GET_MESSAGES_TOOL
from mindcore.embed import Embedder
from mindcore.errors import InvalidInputError, UnknownResourceError
from mindcore.ltm import LongTermMemory
from mindcore.mind import Mind
from mindcore.store import Store, StoreLike, resolve_store
from mindcore.toolspec import Toolset
from mindcore.validation import check_text
from mindcore.working import WorkingMemory

__all__ = [
    "FAILED_STATUSES",
    "LTM_RECALL_TEMPLATE",
    "MIND_HEADER_URI",
    "RECALL_K",
    "WORKING_MEMORY_URI",
    "MemoryService",
    "ResourceInfo",
    "failed",
]


_Closable = TypeVar("_Closable", Mind, WorkingMemory, LongTermMemory, Context)

#: The context session's tools served: its built-ins (the tools it holds run in the agents that hold them).
SESSION_TOOLS = (DISCOVER_TOOL, GET_MESSAGES_TOOL)

MIND_HEADER_URI = "mindcore://mind/header"
WORKING_MEMORY_URI = "mindcore://working-memory"
LTM_RECALL_PREFIX = "mindcore://ltm/recall/"
LTM_RECALL_TEMPLATE = LTM_RECALL_PREFIX + "{query}"
#: Memories a ``mindcore://ltm/recall/{query}`` read returns (as many as the agent runner recalls).
RECALL_K = 5
#: Tool result statuses meaning the call did not do what it was asked (the result says why):
#: ``error`` (bad arguments, a refused value), ``refused`` (a secret) and ``not_stored`` (memory full).
FAILED_STATUSES = frozenset({"error", "refused", "not_stored"})


def failed(result: Mapping[str, Any]) -> bool:
    """Whether a tool result reports a failure (its ``status`` is one of :data:`FAILED_STATUSES`).

    >>> failed({"status": "error", "error": "unknown tool 'x'"}), failed({"status": "duplicate"})
    (True, False)
    """
    return result.get("status") in FAILED_STATUSES


@dataclass(frozen=True)
class ResourceInfo:
    """A resource (or, with ``{query}`` in ``uri``, a resource template) a server lists."""

    uri: str
    name: str
    description: str


class MemoryService:
    """The memory tools and prompt blocks of one store, for one agent, user and thread.

    ``store`` is a :class:`~mindcore.store.Store` or anything :func:`mindcore.open` takes (opened
    once here, and closed by :meth:`close`, when it is not a ``Store``). ``agent`` names the Mind
    and the long-term memory's namespace, as :class:`mindcore.Agent` does, so an agent and a
    server of the same name share memories; ``user_id`` is whose long-term memories are kept
    (and the namespace of the context session); ``thread_id`` names the working memory and the
    session; ``dataset`` is the context dataset tools are discovered in. ``embedder`` defaults to
    the store's, else the bundled offline model.

    >>> from mindcore.embed import HashEmbedder
    >>> service = MemoryService("memory://service-doc", agent="helper", embedder=HashEmbedder())
    >>> service.call("mind_believe", {"content": "The user prefers tea", "confidence": "high"})["status"]
    'ok'
    >>> "The user prefers tea" in service.read(MIND_HEADER_URI)
    True
    >>> service.call("ltm_remember", {"text": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"})["status"]
    'refused'
    >>> service.close()
    """

    def __init__(
        self,
        store: StoreLike | None = None,
        *,
        agent: str = "agent",
        user_id: str = "default",
        thread_id: str = "default",
        dataset: str = "default",
        embedder: Embedder | None = None,
    ) -> None:
        for label, value in (("agent", agent), ("user_id", user_id), ("thread_id", thread_id),
                             ("dataset", dataset)):
            check_text(value, label, max_chars=1000)
        self.agent, self.user_id, self.thread_id = agent, user_id, thread_id
        self.store: Store = resolve_store(store)
        self._owns_store = self.store is not store
        self._made: list[Mind | WorkingMemory | LongTermMemory | Context] = []  # closed in reverse order by close()
        try:
            if embedder is None:
                from mindcore.embed import default_embedder

                embedder = self.store.embedder or default_embedder()
            self.mind = self._keep(Mind(self.store, agent=agent, embedder=embedder))
            self.working_memory = self._keep(WorkingMemory(self.store, thread_id=thread_id))
            self.long_term_memory = self._keep(LongTermMemory(self.store, user_id=user_id, namespace=agent,
                                                              embedder=embedder))
            self.context = self._keep(Context(self.store, dataset=dataset, embedder=embedder))
            self.session = self.context.session(thread_id, namespace=user_id)
            session_tools = self.session.tools
            self.tools: Toolset = Toolset.merge(
                self.mind.tools,  # each call a run of its own, committed when it returns
                self.working_memory.tools,
                self.long_term_memory.tools,
                session_tools.without([n for n in session_tools.names if n not in SESSION_TOOLS]),
            )
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return (f"MemoryService(agent={self.agent!r}, user_id={self.user_id!r}, thread_id={self.thread_id!r}, "
                f"store={self.store.uri!r})")

    def _keep(self, capability: _Closable) -> _Closable:
        self._made.append(capability)
        return capability

    # -- tools ----------------------------------------------------------------------------------

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool call; never raises (problems come back as ``{"status": "error", ...}``)."""
        return self.tools.call(name, arguments)

    # -- resources ------------------------------------------------------------------------------

    @staticmethod
    def resources() -> list[ResourceInfo]:
        """The fixed resources: the Mind header and the working-memory block."""
        return [
            ResourceInfo(MIND_HEADER_URI, "mind-header",
                         "The agent's goals, beliefs and reflections: the AGENT MIND block of its prompt."),
            ResourceInfo(WORKING_MEMORY_URI, "working-memory",
                         "The thread's working memory: the <working_memory> block of its prompt."),
        ]

    @staticmethod
    def resource_templates() -> list[ResourceInfo]:
        """The resource templates: the user's long-term memories recalled for a query."""
        return [
            ResourceInfo(LTM_RECALL_TEMPLATE, "ltm-recall",
                         f"The user's long-term memories best matching {{query}} (URL-encoded), at most "
                         f"{RECALL_K}: the <recalled-memories> block of the prompt."),
        ]

    @staticmethod
    def recall_uri(query: str) -> str:
        """The ``mindcore://ltm/recall/...`` URI of ``query``.

        >>> MemoryService.recall_uri("tea or coffee?")
        'mindcore://ltm/recall/tea%20or%20coffee%3F'
        """
        return LTM_RECALL_PREFIX + quote(query, safe="")

    def read(self, uri: str) -> str:
        """The text of a resource: a prompt block, ``""`` when it has nothing to show.

        Reads change nothing: recalled memories are not marked as used (``touch=False``).
        Raises :class:`~mindcore.errors.UnknownResourceError` for a URI not served here and
        :class:`~mindcore.errors.InvalidInputError` for a blank recall query.
        """
        if uri == MIND_HEADER_URI:
            return self.mind.header()
        if uri == WORKING_MEMORY_URI:
            return self.working_memory.render()
        if uri.startswith(LTM_RECALL_PREFIX):
            query = unquote(uri[len(LTM_RECALL_PREFIX):])
            if not query.strip():
                raise InvalidInputError(f"{uri}: the recall query is blank; put it after {LTM_RECALL_PREFIX}")
            ltm = self.long_term_memory
            return ltm.render(ltm.recall(query, k=RECALL_K, touch=False))
        served = ", ".join([r.uri for r in self.resources()] + [t.uri for t in self.resource_templates()])
        raise UnknownResourceError(f"unknown resource {uri!r}; this server serves {served}")

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Finish background work and close the capabilities, then the store if it was opened here."""
        while self._made:
            self._made.pop().close()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
