"""`create_app(store)`: an ASGI app speaking the agentified server's HTTP protocol over
:mod:`mindcore.context`, so agentified's own SDKs (TypeScript and Python, 0.3.0) work against it.

======  =================================  ========================================================
method  path                               answer
======  =================================  ========================================================
GET     /health                            ``{"status": "ok"}``
GET     /metrics                           counters and latency histograms in Prometheus' text format
                                           (:mod:`mindcore.server.metrics`)
POST    /api/v1/datasets/{id}/tools        201 ``{"registered": n}``
GET     /api/v1/datasets/{id}/tools        ``{"tools": [...], "has_more"}`` in registration order
                                           (``limit``, at most 1,000; ``offset``)
POST    /api/v1/datasets/{id}/discover     ``{"tools": [ranked tool, ...], "strategy_used"}``
POST    /api/v1/turns                      201 ``{"turn_id": "..."}``
POST    /api/v1/messages                   ``{"appended", "first_seq", "last_seq"}``
GET     /api/v1/messages                   ``{"messages", "has_more", "max_seq"}`` (``limit``:
                                           default 50, at most 1,000)
POST    /api/v1/context                    the assembled context (``summary`` and ``summary_range``
                                           when a ``compacted`` summary was written)
======  =================================  ========================================================

Every answer carries an ``x-request-id`` header: the request's own when it sent a usable one (1 to
128 of ``A-Z a-z 0-9 . _ : -``), else a new one; the request's log line names it.

Errors are ``{"error": "..."}``: 400 for a bad request (malformed JSON included), 401 without the
bearer token when one is configured (on ``/api`` and ``/metrics``), 404 for an unknown turn or route, 413 for a body over the
size limit, 422 for ``compacted`` without an LLM, 502 when the embedding model fails. A page
asked for larger than :data:`MAX_PAGE` (messages, tools, a discovery's ``limit``) is cut to it, and
``has_more`` says what is left. Every request but ``/health`` runs in a worker thread, so a heavy
one never holds up the others. Everything is kept in the store: a restarted server has every tool,
turn and session.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from mindcore._http_logs import log_request, request_id_of
from mindcore._http_metrics import Metrics
from mindcore.context import Context, Session, Tool
from mindcore.errors import (
    EmbeddingError,
    InvalidInputError,
    LLMError,
    MindcoreError,
    NotFoundError,
    UnsupportedStrategyError,
)
from mindcore.server.http import (
    DEFAULT_MAX_BODY,
    ClientGone,
    HttpError,
    Receive,
    Request,
    Scope,
    Send,
    read_request,
    send_bytes,
    send_json,
)
from mindcore.server.metrics import route_of
from mindcore.server.pool import WorkerPool
from mindcore.store import StoreLike, resolve_store
from mindcore.tracing import span
from mindcore.validation import check_choice, check_int, describe

if TYPE_CHECKING:
    from mindcore.embed import Embedder
    from mindcore.llm import LLM

__all__ = ["DEFAULT_MAX_BODY", "MAX_PAGE", "ContextServer", "create_app"]

log = logging.getLogger("mindcore.server")

COMPACTED_NEEDS_LLM = "Compacted strategy requires LLM configuration"
EmbedTools = Literal["background", "on-demand"]
EMBED_TOOLS: tuple[EmbedTools, ...] = ("background", "on-demand")
# The routes whose POST writes (run on the write threads).
_WRITE_ROUTES = frozenset({"/api/v1/messages", "/api/v1/turns", "/api/v1/datasets/{id}/tools"})
#: The most messages, tools or discovered tools one answer holds; a larger ``limit`` is cut to it.
MAX_PAGE = 1_000
_PROMETHEUS = b"text/plain; version=0.0.4; charset=utf-8"


def create_app(
    store: StoreLike | None = None,
    *,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    embed_tools: EmbedTools = "background",
) -> ContextServer:
    """The ASGI app over ``store`` (a :class:`~mindcore.store.Store` or a path, created if
    missing). ``llm`` writes ``compacted`` summaries (without one, ``compacted`` answers 422);
    ``embedder`` serves semantic and hybrid discovery (default: the store's, else the bundled
    model); ``token``, when given, is required as ``Authorization: Bearer <token>`` on every
    ``/api`` request. ``embed_tools``: ``"background"`` (default) embeds a dataset's tools in a
    background thread after each registration; ``"on-demand"`` only once a semantic or hybrid
    discovery asks for them (a BM25-only server never loads the model). Either way no request
    waits for embeddings: until a dataset's vectors are ready its semantic and hybrid discoveries
    rank by BM25, and the answer's ``strategy_used`` says ``"bm25"``.

    >>> import uvicorn  # doctest: +SKIP
    >>> uvicorn.run(create_app("./memory"), host="127.0.0.1", port=9119)  # doctest: +SKIP
    """
    return ContextServer(store, llm=llm, embedder=embedder, token=token, max_body=max_body, embed_tools=embed_tools)


class ContextServer:
    """The ASGI app (see :func:`create_app`). One :class:`~mindcore.context.Context` per dataset,
    all on one store; requests run in worker threads."""

    def __init__(
        self,
        store: StoreLike | None,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        embed_tools: EmbedTools = "background",
    ) -> None:
        self.max_body = check_int(max_body, "max_body", minimum=1)
        check_choice(embed_tools, "embed_tools", EMBED_TOOLS)
        if token is not None and (not isinstance(token, str) or not token):
            raise InvalidInputError("token: expected a non-empty string")
        self._token = token.encode() if token else None
        self._llm = llm
        self._embedder = embedder
        self.store = resolve_store(store)
        self._owns_store = self.store is not store
        self._contexts: dict[str, Context] = {}
        self._sessions: dict[tuple[str, str, str], Session] = {}
        self._lock = threading.Lock()
        # Writes have threads of their own: a write waiting for a table's lock (held by another
        # process, or by maintenance folding rows into an index) never holds a thread reads need.
        self._workers = WorkerPool()
        self._writers = WorkerPool(name="mindcore-serve-write")
        self._embed_after_register = embed_tools == "background"
        # One thread embeds tools off the request path; a dataset is queued at most once at a time.
        self._embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mindcore-embed")
        self._embed_queued: set[str] = set()
        self._embed_failed: set[str] = set()
        #: What ``/metrics`` shows; ``mindcore serve`` hands ``metrics.connections`` to its connection guard.
        self.metrics = Metrics(commits=lambda: self.store.commits, embedding_queue=lambda: len(self._embed_queued),
                               inboxes=self._inbox_counts)

    def context(self, dataset: str) -> Context:
        got = self._contexts.get(dataset)
        if got is None:
            with self._lock:
                got = self._contexts.get(dataset)
                if got is None:
                    got = Context(self.store, dataset=dataset, llm=self._llm, embedder=self._embedder)
                    if len(self._contexts) > 10_000:  # many datasets: keep memory bounded
                        self._contexts.clear()
                        self._sessions.clear()
                    self._contexts[dataset] = got
        return got

    def session(self, dataset: str, session: str, namespace: str) -> Session:
        """The session of ``dataset`` (checked and screened once, then kept)."""
        key = (dataset, namespace, session)
        got = self._sessions.get(key)
        if got is None:
            got = self.context(dataset).session(session, namespace)
            with self._lock:
                if len(self._sessions) > 100_000:  # many sessions: keep memory bounded
                    self._sessions.clear()
                self._sessions[key] = got
        return got

    def _embed_later(self, dataset: str) -> None:
        """Embed ``dataset``'s tools in the background (once, however often it is asked meanwhile)."""
        with self._lock:
            if dataset in self._embed_queued:
                return
            self._embed_queued.add(dataset)
        with contextlib.suppress(RuntimeError):  # shutting down: nothing more to embed
            self._embedding.submit(self._embed_now, dataset)

    def _embed_now(self, dataset: str) -> None:
        with self._lock:
            self._embed_queued.discard(dataset)  # a registration from now on queues another pass
        try:
            self.context(dataset).embed_tools()
        except Exception as exc:  # the next semantic discovery embeds in the request and reports it
            log.warning("embedding the tools of dataset %r failed: %s", dataset, exc)
            with self._lock:
                self._embed_failed.add(dataset)

    def _inbox_counts(self) -> dict[str, tuple[int, int]]:
        from mindcore.consciousness import inbox_totals  # loaded at the first scrape, not at start-up

        return {agent: (t.pending, t.dead_letters) for agent, t in inbox_totals(self.store).items()}

    def close(self) -> None:
        self._workers.close()
        self._writers.close()
        self._embedding.shutdown(wait=True, cancel_futures=True)
        if self._owns_store:
            self.store.close()

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        route = route_of(scope["path"].split("/")[1:])
        body: bytes | None = None
        try:
            request = await read_request(scope, receive, self.max_body)
            self._authorize(request)
            if request.segments == ["health"]:  # answered on the event loop, whatever else is running
                status, payload = self.handle(request, route)
            elif request.segments == ["metrics"] and request.method == "GET":  # reads the store: off the loop
                status, body = 200, (await self._workers.run(self.metrics.render)).encode()
            else:
                self.metrics.worker(1)
                pool = self._writers if request.method == "POST" and route in _WRITE_ROUTES else self._workers
                try:
                    status, payload = await pool.run(self.handle, request, route)
                finally:
                    self.metrics.worker(-1)
        except ClientGone:
            return
        except HttpError as exc:
            status, payload = exc.status, {"error": exc.message}
        headers = [(b"x-request-id", request_id.encode())]
        if body is not None:
            await send_bytes(send, status, body, _PROMETHEUS, headers)
        else:
            await send_json(send, status, payload, headers)
        elapsed = time.perf_counter() - started
        self.metrics.observe(route, scope["method"], status, elapsed)
        log_request(log, scope, route, status, elapsed, request_id)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.to_thread(self.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _authorize(self, request: Request) -> None:
        if self._token is None or request.segments[:1] not in (["api"], ["metrics"]):
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self._token):
            raise HttpError(401, "missing or wrong bearer token")

    def handle(self, request: Request, route: str | None = None) -> tuple[int, Any]:
        """Answer one request: ``(status, JSON payload)`` (blocking). ``route``: the request's
        :func:`~mindcore.server.metrics.route_of`, when known."""
        try:
            with span("server.request", route=route or route_of(request.segments), method=request.method):
                return self._route(request)
        except HttpError as exc:
            return exc.status, {"error": exc.message}
        except NotFoundError as exc:
            return 404, {"error": str(exc)}
        except UnsupportedStrategyError:
            return 422, {"error": COMPACTED_NEEDS_LLM}
        except EmbeddingError as exc:
            return 502, {"error": f"embedding failed: {exc}"}
        except LLMError as exc:
            return 502, {"error": f"LLM failed: {exc}"}
        except (MindcoreError, ValueError, TypeError) as exc:
            return 400, {"error": str(exc)}
        except Exception:
            log.exception("%s /%s failed", request.method, "/".join(request.segments))
            return 500, {"error": "internal error"}

    # -- routes ---------------------------------------------------------------------------------

    def _route(self, request: Request) -> tuple[int, Any]:
        seg, method = request.segments, request.method
        if seg == ["health"]:
            return _only(method, "GET", lambda: (200, {"status": "ok"}))
        if seg == ["metrics"]:  # GET is answered before it gets here
            return _only(method, "GET", lambda: (200, {}))
        if seg[:2] == ["api", "v1"]:
            rest = seg[2:]
            if len(rest) == 3 and rest[0] == "datasets" and rest[2] == "tools":
                if method == "GET":
                    return self._list_tools(rest[1], request.query)
                return _only(method, "POST", lambda: self._register(rest[1], request.json()))
            if len(rest) == 3 and rest[0] == "datasets" and rest[2] == "discover":
                return _only(method, "POST", lambda: self._discover(rest[1], request.json()))
            if rest == ["turns"]:
                return _only(method, "POST", lambda: self._turn(request.json()))
            if rest == ["messages"]:
                if method == "GET":
                    return self._get_messages(request.query)
                return _only(method, "POST", lambda: self._append(request.json()))
            if rest == ["context"]:
                return _only(method, "POST", lambda: self._assemble(request.json()))
        raise HttpError(404, f"not found: {method} /{'/'.join(seg)}")

    def _register(self, dataset: str, body: dict[str, Any]) -> tuple[int, Any]:
        tools = body.get("tools")
        if not isinstance(tools, list):
            raise HttpError(400, f"tools: expected a list of tools, got {describe(tools)}")
        ctx = self.context(dataset)
        registered = ctx.register([Tool._from_parsed(t) for t in tools])  # the body is ours
        if self._embed_after_register:
            self._embed_later(dataset)
        return 201, {"registered": registered}

    def _list_tools(self, dataset: str, query: dict[str, str]) -> tuple[int, Any]:
        limit = _page(_query_int(query, "limit"), MAX_PAGE)
        offset = _query_int(query, "offset") or 0
        if offset < 0:
            raise HttpError(400, f"offset: expected 0 or more, got {offset}")
        tools = self.context(dataset).tools()
        page = tools[offset:offset + limit]
        return 200, {"tools": [t.to_wire() for t in page], "has_more": offset + limit < len(tools)}

    def _discover(self, dataset: str, body: dict[str, Any]) -> tuple[int, Any]:
        namespace, session = _opt_str(body, "namespace"), _opt_str(body, "session")
        limit = 5 if body.get("limit") is None else body["limit"]  # Context.discover checks its type
        ctx = self.context(dataset)
        strategy = ctx.default_strategy if body.get("strategy") is None else body["strategy"]
        if strategy in ("semantic", "hybrid") and not self._vectors_at_hand(ctx):
            strategy = "bm25"  # until the tools' vectors are ready, rather than wait for the model
        found = ctx.discover(
            _str(body, "query"),
            min(limit, MAX_PAGE) if type(limit) is int else limit,
            strategy=strategy,
            exclude=body.get("exclude"),
            turn_id=_opt_str(body, "turn_id"),
            weights=body.get("embedding_weights"),
            # Only both name a session (the agentified server ignores one alone).
            namespace=namespace if session is not None else None,
            session=session if namespace is not None else None,
        )
        return 200, {"tools": [t.to_wire() for t in found], "strategy_used": strategy}

    def _vectors_at_hand(self, ctx: Context) -> bool:
        """Whether semantic discovery over ``ctx`` can answer now; if not, its tools are queued
        for embedding. After a failed background pass it answers yes, so the request embeds
        itself and reports the error (502)."""
        with self._lock:
            if ctx.dataset in self._embed_failed:
                self._embed_failed.discard(ctx.dataset)
                return True
        if ctx.tools_embedded():
            return True
        self._embed_later(ctx.dataset)
        return False

    def _turn(self, body: dict[str, Any]) -> tuple[int, Any]:
        tools = body.get("tools_loaded")
        if not isinstance(tools, list):
            raise HttpError(400, f"tools_loaded: expected a list of tool names, got {describe(tools)}")
        return 201, {"turn_id": self.context("default").turn(tools, _str(body, "message"))}

    def _session(self, fields: dict[str, Any]) -> Session:
        return self.session(_str(fields, "dataset"), _str(fields, "session"), _str(fields, "namespace"))

    def _append(self, body: dict[str, Any]) -> tuple[int, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise HttpError(400, f"messages: expected a list of messages, got {describe(messages)}")
        first, last = self._session(body).append(messages)
        return 200, {"appended": last - first + 1, "first_seq": first, "last_seq": last}

    def _get_messages(self, query: dict[str, str]) -> tuple[int, Any]:
        return 200, self._session(query).get_messages_wire(
            limit=_page(_query_int(query, "limit"), 50),
            after_seq=_query_int(query, "after_seq"),
            around_seq=_query_int(query, "around_seq"),
        )

    def _assemble(self, body: dict[str, Any]) -> tuple[int, Any]:
        session = self._session(body)
        options = body.get("messages") or {}
        if not isinstance(options, dict):
            raise HttpError(400, f"messages: expected an object, got {describe(options)}")
        given = {k: options[k] for k in ("strategy", "max_tokens", "keep_first", "prune_threshold")
                 if options.get(k) is not None}
        builder = session.context.messages(**given)
        recall = body.get("recall")
        if recall is not None:
            if not isinstance(recall, dict):
                raise HttpError(400, f"recall: expected an object, got {describe(recall)}")
            if recall.get("tools") is not None:
                builder.recall(recall["tools"])
        if body.get("limit_tokens") is not None:
            builder.limit_tokens(body["limit_tokens"])
        return 200, builder.assemble_wire()


def _page(limit: int | None, default: int) -> int:
    """A page size as asked (``default`` when not), cut to :data:`MAX_PAGE`; 400 below 0."""
    if limit is None:
        return default
    if limit < 0:
        raise HttpError(400, f"limit: expected 0 or more, got {limit}")
    return min(limit, MAX_PAGE)


def _only(method: str, allowed: str, answer: Any) -> tuple[int, Any]:
    if method != allowed:
        raise HttpError(405, f"method not allowed: {method} (use {allowed})")
    result: tuple[int, Any] = answer()
    return result


def _str(fields: dict[str, Any], key: str) -> str:
    value = fields.get(key)
    if not isinstance(value, str):
        raise HttpError(400, f"{key}: expected a string, got {describe(value)}")
    return value


def _opt_str(fields: dict[str, Any], key: str) -> str | None:
    return None if fields.get(key) is None else _str(fields, key)


def _query_int(query: dict[str, str], key: str) -> int | None:
    raw = query.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise HttpError(400, f"{key}: expected an integer, got {raw!r}") from None
