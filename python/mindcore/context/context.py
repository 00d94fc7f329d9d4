"""`Context`: a dataset of tools an agent can be offered, its sessions, and discovery over both."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from mindcore.context._repo import ContextRepo, ToolRecord
from mindcore.context.config import ContextConfig
from mindcore.context.discovery import Catalog, FieldVectors
from mindcore.context.events import Emitter
from mindcore.context.session import Session
from mindcore.context.types import (
    SEARCH_STRATEGIES,
    EmbeddingWeights,
    RankedTool,
    SearchStrategy,
    Tool,
    ToolFields,
)
from mindcore.embed.base import check_embedder, check_vectors
from mindcore.errors import ContextError, InvalidTypeError, NotFoundError
from mindcore.llm.base import check_llm
from mindcore.store import StoreLike, resolve_store
from mindcore.tracing import traced
from mindcore.validation import check_choice, check_int, check_text, describe

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.llm import LLM
    from mindcore.store import Store

__all__ = ["MAX_DISCOVER_LIMIT", "MAX_ID_CHARS", "Context", "check_key", "embed_tool_texts"]

#: Discovery returns at most this many ranked tools, whatever ``limit`` asks.
MAX_DISCOVER_LIMIT = 100
#: Longest dataset, namespace, session or turn id (characters).
MAX_ID_CHARS = 256


def check_key(value: object, name: str) -> str:
    """A dataset, namespace or session id: a non-blank string of at most 256 characters that can
    be stored faithfully (any other character is fine: ids are data, never query syntax)."""
    checked = check_text(value, name, max_chars=MAX_ID_CHARS, error=ContextError)
    assert checked is not None
    return checked


class Context:
    """Context assembly for one dataset of tools: register tools, discover the ones a request
    needs, and keep sessions whose per-turn context (tools and messages) fits a token budget.

    ``store`` is a :class:`mindcore.store.Store` or anything :func:`mindcore.open` takes. Tools,
    sessions, their messages and captured turns persist there: another ``Context`` on the same
    store and dataset (in this process or another) sees them. ``embedder`` embeds tools and
    queries for ``semantic`` and ``hybrid`` discovery (default: the store's embedder, else the
    bundled offline model, loaded on first use). ``llm`` writes ``compacted`` summaries. The
    options live in ``config`` (:class:`~mindcore.context.ContextConfig`); ``default_strategy``
    given as a keyword overrides it.

    >>> import mindcore
    >>> ctx = mindcore.Context("memory://context-doc", dataset="support-agent")
    >>> ctx.register([
    ...     mindcore.Tool("get_weather", "Get the current weather for a city",
    ...                   {"type": "object", "properties": {"city": {"type": "string"}}}),
    ...     mindcore.Tool("book_flight", "Book a flight between two airports"),
    ...     mindcore.Tool("escalate", "Hand the conversation to a human", always_include=True),
    ... ])
    3
    >>> [(t.name, t.score) for t in ctx.discover("book a flight to Paris", limit=2)]
    [('book_flight', 1.0), ('get_weather', 0.0)]
    """

    def __init__(
        self,
        store: StoreLike | None = None,
        *,
        dataset: str = "default",
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        default_strategy: SearchStrategy | None = None,
        config: ContextConfig | None = None,
    ) -> None:
        self.dataset = check_key(dataset, "dataset")
        if config is not None and not isinstance(config, ContextConfig):
            raise InvalidTypeError(f"config: expected a ContextConfig, got {describe(config)}")
        cfg = config or ContextConfig()
        if default_strategy is not None:
            cfg = dataclasses.replace(cfg, default_strategy=default_strategy)
        cfg.secrets.screen_identifier(self.dataset, "dataset")
        self.config = cfg
        self._embedder = None if embedder is None else check_embedder(embedder)
        self.llm: LLM | None = None if llm is None else check_llm(llm, "llm")
        # Opened last: a bad argument opens nothing.
        self.store: Store = resolve_store(store)
        self._owns_store = self.store is not store
        self._repo = ContextRepo(self.store, self.dataset)
        self._handlers: dict[str, Callable[..., Any]] = {}
        self._emitter = Emitter()
        self._catalog_now: Catalog | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Context(dataset={self.dataset!r}, store={self.store.uri!r})"

    @property
    def default_strategy(self) -> SearchStrategy:
        return self.config.default_strategy

    @property
    def embedder(self) -> Embedder:
        """The embedder of semantic discovery (resolved, and the bundled model loaded, on first use)."""
        if self._embedder is None:
            from mindcore.embed import default_embedder

            self._embedder = self.store.embedder or default_embedder()
        return self._embedder

    # -- tools ----------------------------------------------------------------------------------

    @traced("context.register", dataset=lambda call: call["self"].dataset)
    def register(self, tools: Iterable[Tool | Mapping[str, Any]]) -> int:
        """Add tools to the dataset, or replace the ones with the same name; return how many
        were given. Every tool is checked (and screened for secrets) before anything is stored,
        and all are stored in one commit: a bad tool rejects the whole batch. ``tools`` are
        :class:`Tool` objects or the agentified wire form (dicts)."""
        if isinstance(tools, Mapping | str | bytes) or not isinstance(tools, Iterable):
            raise ContextError(f"tools: expected a list of tools, got {describe(tools)}")
        given = [t if isinstance(t, Tool) else Tool.from_wire(t) for t in tools]
        # Each tool's JSON texts are written once; one parallel scan reads every string in them
        # (so what is judged is what is stored). Only when it finds something is each tool
        # screened on its own (for the message naming the field, or to redact under a redacting
        # policy), and its texts written again from what may be stored.
        records = [ToolRecord.of(t) for t in given]
        if self.config.secrets.first_refused_json([r.screened_json() for r in records]) is not None:
            records = [ToolRecord.of(self._screened(t)) for t in given]
        checked = [r.tool for r in records]
        catalog = self._catalog()
        changed = [r for r in dict((r.tool.name, r) for r in records).values()
                   if not self._stored_as(catalog, r.tool)]
        if changed:
            self._repo.save_tools(changed)
        with self._lock:
            for tool in checked:
                if tool.handler is not None:
                    self._handlers[tool.name] = tool.handler
                else:
                    self._handlers.pop(tool.name, None)
        return len(checked)

    def _screened(self, tool: Tool) -> Tool:
        policy = self.config.secrets
        name = f"tool {tool.name!r}"
        screened = Tool._trusted(**{
            **vars(tool),
            "name": policy.screen_identifier(tool.name, "tool name"),
            "description": policy.screen(tool.description, f"{name}: description"),
            # Refused, never redacted: a redacted address would name another server.
            "server_uri": None if tool.server_uri is None else policy.screen_identifier(
                tool.server_uri, f"{name}: server_uri"),
            "parameters": policy.screen_value(dict(tool.parameters), f"{name}: parameters"),
            "metadata": policy.screen_value(None if tool.metadata is None else dict(tool.metadata), f"{name}: metadata"),
            "fields": None if tool.fields is None else ToolFields.of(
                policy.screen_value(tool.fields.to_wire(), f"{name}: fields")),
        })
        return screened

    @staticmethod
    def _stored_as(catalog: Catalog, tool: Tool) -> bool:
        row = catalog.position.get(tool.name)
        return row is not None and catalog.tool(row).to_wire() == tool.to_wire()

    def tools(self) -> list[Tool]:
        """Every registered tool of the dataset, in registration order."""
        catalog = self._catalog()
        return [self._with_handler(t) for t in catalog.tools()]

    def _with_handler(self, tool: Tool) -> Tool:
        return tool.with_handler(self._handlers.get(tool.name, tool.handler))

    def _catalog(self) -> Catalog:
        entry = self._repo.tools()
        catalog = self._catalog_now
        if catalog is None or catalog.serial != entry.serial:
            catalog = self._catalog_now = Catalog(entry)
        return catalog

    # -- discovery ------------------------------------------------------------------------------

    @traced("context.discover", dataset=lambda call: call["self"].dataset, strategy="strategy", limit="limit")
    def discover(
        self,
        query: str,
        limit: int = 5,
        *,
        strategy: SearchStrategy | None = None,
        exclude: Sequence[str] | None = None,
        turn_id: str | None = None,
        weights: EmbeddingWeights | Mapping[str, float] | None = None,
        namespace: str | None = None,
        session: str | None = None,
    ) -> list[RankedTool]:
        """The tools that best match ``query``, best first.

        ``strategy``: ``"bm25"``, ``"semantic"`` or ``"hybrid"`` (default: the context's).
        ``limit`` (default 5, at most 100) ranked tools, after the tools loaded in turn
        ``turn_id`` (score 1.0) and before the providers graph expansion adds (score 0,
        ``graph_expanded``). Never ranked: ``exclude``, the turn's tools, always-included tools
        and, with ``session`` (namespace ``"default"`` unless given), the tools that session
        holds; the session then holds what is returned. ``weights`` overrides the semantic field
        weights. An unknown ``turn_id`` raises :class:`~mindcore.errors.NotFoundError`.
        """
        check_text(query, "query", max_chars=self.config.max_query_chars, allow_blank=True, error=ContextError)
        limit = min(check_int(limit, "limit", minimum=0, error=ContextError), MAX_DISCOVER_LIMIT)
        chosen: SearchStrategy = self.default_strategy if strategy is None else check_choice(
            strategy, "strategy", SEARCH_STRATEGIES, error=ContextError)
        excluded = _names(exclude, "exclude")
        field_weights = self.config.weights if weights is None else EmbeddingWeights.of(weights)
        held_by: tuple[str, str] | None = None
        if session is not None:
            held_by = (check_key("default" if namespace is None else namespace, "namespace"),
                       check_key(session, "session"))
        loaded: list[str] = []
        if turn_id is not None:
            check_text(turn_id, "turn_id", max_chars=MAX_ID_CHARS, error=ContextError)
            found = self._repo.turn_tools(turn_id)
            if found is None:
                raise NotFoundError(f"turn not found: {turn_id}")
            loaded = found
        catalog = self._catalog()
        if catalog.n == 0:
            return []
        held = self._repo.session_tools(*held_by) if held_by else []
        base = catalog.rows_of(loaded)
        candidates = catalog.candidates(catalog.rows_of([*excluded, *loaded, *held]))
        ranked = catalog.rank(
            query, candidates, strategy=chosen, limit=limit, weights=field_weights.as_tuple(), fusion=self.config.fusion,
            query_vector=lambda: self._query_vector(query), vectors=lambda: self._field_vectors(catalog),
        )
        expanded = catalog.expand([r for r, _ in ranked], candidates, limit)
        out = [RankedTool(self._with_handler(catalog.tool(r)), 1.0) for r in base]
        out += [RankedTool(self._with_handler(catalog.tool(r)), score) for r, score in ranked]
        out += [RankedTool(self._with_handler(catalog.tool(r)), 0.0, graph_expanded=True) for r in expanded]
        if held_by is not None and out:
            self._repo.hold_tools(*held_by, [t.name for t in out])
        return out

    def embed_tools(self) -> None:
        """Embed what semantic discovery compares for every registered tool now (or read the
        vectors stored earlier), so a semantic or hybrid :meth:`discover` finds them at hand.
        Discovery does this itself on first use; call it from a background thread to keep that
        first discovery fast (``mindcore serve`` does so after each registration)."""
        self._field_vectors(self._catalog())

    def tools_embedded(self) -> bool:
        """Whether the tools registered now have their vectors at hand, so a semantic or hybrid
        :meth:`discover` would neither embed nor read stored vectors first."""
        return self._catalog().has_field_vectors(self.embedder.model_id)

    def _embed(self, texts: list[str]) -> np.ndarray:
        emb = self.embedder
        return check_vectors(emb.embed(texts), len(texts), emb.dim, f"embedder {emb.model_id!r}")

    def _query_vector(self, query: str) -> np.ndarray:
        v = self._embed([query])[0].astype(np.float64)
        norm = float(np.linalg.norm(v))
        return np.ascontiguousarray(v / norm if norm > 0 else v, dtype=np.float32)

    def _field_vectors(self, catalog: Catalog) -> FieldVectors:
        model = self.embedder.model_id
        return catalog.field_vectors(model, lambda texts: self._repo.vectors(model, texts, self._embed))

    # -- turns and sessions ---------------------------------------------------------------------

    def turn(self, tools_loaded: Sequence[str], message: str = "") -> str:
        """Capture a turn (the tools loaded for it and its message); return its id, which
        :meth:`discover` takes as ``turn_id`` to put those tools first."""
        names = _names(tools_loaded, "tools_loaded")
        check_text(message, "message", max_chars=self.config.max_message_chars, allow_blank=True, error=ContextError)
        message = self.config.secrets.screen(message, "message")
        turn_id = str(uuid.uuid4())
        self._repo.save_turn(turn_id, names, message)
        return turn_id

    def session(self, id: str, namespace: str = "default") -> Session:
        """The session ``id`` of ``namespace`` (created by its first message)."""
        policy = self.config.secrets
        return Session(self, policy.screen_identifier(check_key(id, "session"), "session"),
                       policy.screen_identifier(check_key(namespace, "namespace"), "namespace"))

    # -- events ---------------------------------------------------------------------------------

    def on(self, event: str, callback: Callable[[Any], Any]) -> Callable[[], None]:
        """Call ``callback(event)`` after every assembly of this context's sessions:
        ``"context:assembled"`` (or ``"context_assembled"``) with a
        :class:`~mindcore.context.ContextAssembledEvent`, ``"recall"`` with a
        :class:`~mindcore.context.RecallEvent` (when the assembly recalled tools). Returns the
        function that unsubscribes it. A listener that raises is logged and never breaks the
        assembly."""
        return self._emitter.on(event, callback)

    # -- async twins ----------------------------------------------------------------------------

    async def aregister(self, tools: Iterable[Tool | Mapping[str, Any]]) -> int:
        return await asyncio.to_thread(self.register, list(tools))

    async def adiscover(self, query: str, limit: int = 5, **kwargs: Any) -> list[RankedTool]:
        return await asyncio.to_thread(lambda: self.discover(query, limit, **kwargs))

    async def aturn(self, tools_loaded: Sequence[str], message: str = "") -> str:
        return await asyncio.to_thread(self.turn, tools_loaded, message)

    async def atools(self) -> list[Tool]:
        return await asyncio.to_thread(self.tools)

    async def aembed_tools(self) -> None:
        await asyncio.to_thread(self.embed_tools)

    async def atools_embedded(self) -> bool:
        return await asyncio.to_thread(self.tools_embedded)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this context opened it (it was given a path)."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def embed_tool_texts(
    store: Store, embedder: Embedder, *, chunk_size: int = 256,
    on_chunk: Callable[[int, int], None] | None = None,
) -> int:
    """Embed, with ``embedder``, every text semantic discovery embeds for the tools registered in
    ``store`` (every dataset), and store the vectors under ``embedder``'s model id, so contexts
    using that model embed nothing on their first discovery. Texts already stored for that model
    are skipped, so a rerun continues where one stopped; vectors of other models are kept (a
    context still using one reads its own). One model call and one commit per ``chunk_size``
    texts; ``on_chunk(done, total)`` after each. Returns how many texts were embedded.

    >>> import mindcore
    >>> from mindcore.embed import HashEmbedder
    >>> ctx = mindcore.Context("memory://tool-texts")
    >>> ctx.register([mindcore.Tool("get_weather", "Weather for a city")])
    1
    >>> embed_tool_texts(ctx.store, HashEmbedder(dim=64)), embed_tool_texts(ctx.store, HashEmbedder(dim=64))
    (2, 0)
    """
    from mindcore.context._repo import TOOLS

    check_embedder(embedder)
    check_int(chunk_size, "chunk_size", minimum=1)
    if TOOLS not in store.table_names():
        return 0
    datasets: dict[str, list[str]] = {}
    tools = store.open_table(TOOLS)
    for dataset in tools.namespaces():
        texts: list[str] = []
        for tool in Catalog(tools.cached(dataset)).tools():
            texts += [t for t in tool.embedding_texts() if t is not None]
        datasets[dataset] = list(dict.fromkeys(texts))
    model, dim = embedder.model_id, embedder.dim
    embedded = 0

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal embedded
        embedded += len(texts)
        return check_vectors(embedder.embed(texts), len(texts), dim, f"embedder {model!r}")

    total, done = sum(len(t) for t in datasets.values()), 0
    for dataset, texts in sorted(datasets.items()):
        repo = ContextRepo(store, dataset)
        for i in range(0, len(texts), chunk_size):
            chunk = texts[i:i + chunk_size]
            repo.vectors(model, chunk, embed)
            done += len(chunk)
            if on_chunk is not None:
                on_chunk(done, total)
    return embedded


def _names(values: Sequence[str] | None, name: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ContextError(f"{name}: expected a list of tool names, got {describe(values)}")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise ContextError(f"{name}[{i}]: expected a string, got {describe(v)}")
    return list(values)

