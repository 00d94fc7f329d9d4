"""`WorkingMemory`: a per-thread or per-resource scratchpad the model reads each turn and updates
with a tool call."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from mindcore.blocks import multiline, render_block
from mindcore.errors import InvalidInputError, InvalidTypeError, ReadOnlyError, WorkingMemoryError
from mindcore.kernels import estimate_tokens
from mindcore.store import Store, StoreLike, resolve_store
from mindcore.toolspec import Toolset, ToolSpec
from mindcore.validation import check_bool, check_storable
from mindcore.working._repo import StateRepo
from mindcore.working.config import Scope, WorkingMemoryConfig
from mindcore.working.merge import MergeError, deep_merge
from mindcore.working.schema import StateSchema
from mindcore.working.tools import LEGACY_TOOL_NAME, build_toolset, call_legacy
from mindcore.working.tools import SEED_TOOL_NAME as SEED_TOOL_NAME  # where these names used to live
from mindcore.working.tools import TOOL_NAME as TOOL_NAME

__all__ = ["ReadOnlyError", "WorkingMemory", "WorkingMemoryError"]

log = logging.getLogger("mindcore.working")

State = str | dict[str, Any]



class WorkingMemory:
    """A scratchpad scoped to one thread or to one resource (shared by all its threads).

    ``store`` is a :class:`mindcore.store.Store` or anything :func:`mindcore.open` takes (a path,
    ``memory://...``, an object-storage URI). The options live in ``config``
    (:class:`~mindcore.working.WorkingMemoryConfig`); the same options given as keywords
    (``scope=``, ``schema=``, ``template=``, ``read_only=``, ``max_tokens=``) override it. Unless
    ``read_only``, a store that cannot be written raises
    :class:`~mindcore.errors.StoreNotWritableError` here, not at the first update.

    Without ``schema`` the state is free text, replaced by each update. With ``schema`` (a pydantic
    model class or a JSON Schema dict) the state is a dict, updates are deep-merged (objects merge,
    arrays and primitives replace) and the merged state must validate.

    >>> import mindcore
    >>> store = mindcore.open("memory://wm-doc")
    >>> wm = WorkingMemory(store, thread_id="t1", schema={"type": "object",
    ...     "properties": {"goal": {"type": "string"}, "done": {"type": "array"}}})
    >>> wm.update({"goal": "ship v2"})
    {'goal': 'ship v2'}
    >>> wm.call("working_memory_update", '{"done": ["tests"]}')["state"]
    {'goal': 'ship v2', 'done': ['tests']}
    >>> print(wm.render())
    <working_memory>
    {
      "goal": "ship v2",
      "done": [
        "tests"
      ]
    }
    </working_memory>
    """

    def __init__(
        self,
        store: StoreLike,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        config: WorkingMemoryConfig | None = None,
        scope: Scope | None = None,
        schema: type[Any] | Mapping[str, Any] | None = None,
        template: str | None = None,
        read_only: bool | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if config is not None and not isinstance(config, WorkingMemoryConfig):
            raise InvalidTypeError(f"config: expected a WorkingMemoryConfig, got {type(config).__name__}")
        options = {"scope": scope, "schema": schema, "template": template, "read_only": read_only,
                   "max_tokens": max_tokens}
        given = {name: value for name, value in options.items() if value is not None}
        cfg = dataclasses.replace(config or WorkingMemoryConfig(), **given)  # type: ignore[arg-type]
        key = thread_id if cfg.scope == "thread" else resource_id
        if not isinstance(key, str) or not key:
            needed = "thread_id" if cfg.scope == "thread" else "resource_id"
            raise InvalidInputError(f"{needed}: a non-empty string is required for scope={cfg.scope!r}")
        for field_name, ident in (("thread_id", thread_id), ("resource_id", resource_id)):
            if isinstance(ident, str):
                cfg.secrets.screen_identifier(ident, field_name)
        self.config = cfg
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.scope: Scope = cfg.scope
        self.schema = StateSchema(cfg.schema) if cfg.schema is not None else None
        self.template = cfg.template
        self.read_only = cfg.read_only
        self.max_tokens = cfg.max_tokens
        # Opened (and checked writable unless read-only) last: a bad argument opens nothing.
        self._store = resolve_store(store, writes=not cfg.read_only)
        self._owns_store = self._store is not store
        self._repo = StateRepo(self._store, scope=cfg.scope, key=key)
        # (stored text, its state, its rendered block) for the text last read or written: reads
        # of an unchanged state cost neither a decode, a validation nor a render.
        self._memo: tuple[str, State, str] | None = None
        self._toolset = build_toolset(self)

    # -- reading --------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store this working memory lives in."""
        return self._store

    @property
    def state(self) -> State:
        """The current state (a deep copy: mutating it changes nothing stored)."""
        return _fresh(self._view(self._repo.load())[0])

    def render(self) -> str:
        """The ``<working_memory>`` block for the prompt, or ``""`` when the state is empty."""
        return self._view(self._repo.load())[1]

    async def astate(self) -> State:
        return await asyncio.to_thread(lambda: self.state)

    async def arender(self) -> str:
        return await asyncio.to_thread(self.render)

    # -- writing --------------------------------------------------------------------------------

    def update(self, patch: Mapping[str, Any]) -> State:
        """Apply one update and return the new state.

        Schema mode: deep-merge ``patch``. Text mode: ``{"content": "..."}`` replaces the text.
        Raises :class:`WorkingMemoryError` (state untouched) when the update is invalid, would not
        validate, or would make the rendered block exceed ``max_tokens``.
        """
        if self.read_only:
            raise ReadOnlyError("working memory is read-only; updates are disabled")
        if not isinstance(patch, Mapping):
            raise WorkingMemoryError(f"update must be an object, got {type(patch).__name__}")
        if self.schema is None:
            content = patch.get("content")
            if not isinstance(content, str) or set(patch) - {"content"}:
                raise WorkingMemoryError('text working memory takes exactly {"content": "<text>"}')
        check_storable(dict(patch), "update", error=WorkingMemoryError)
        patch = self.config.secrets.screen_value(dict(patch), "update")
        return _fresh(self._repo.modify(lambda current: self._apply(current, patch)))

    async def aupdate(self, patch: Mapping[str, Any]) -> State:
        return await asyncio.to_thread(self.update, patch)

    def clear(self, *, purge: bool = False) -> None:
        """Forget the stored state (the template, if any, shows again).

        ``purge=True`` also erases it, and every earlier state of this memory, from the files of
        the store at once (see ``Table.purge``): when this returns no file holds them. Without
        it they stay until compaction and ``StoreConfig.cleanup_grace`` remove them.
        """
        if self.read_only:
            raise ReadOnlyError("working memory is read-only; updates are disabled")
        check_bool(purge, "purge")
        self._repo.delete(purge=purge)

    async def aclear(self, *, purge: bool = False) -> None:
        await asyncio.to_thread(lambda: self.clear(purge=purge))

    # -- tools ----------------------------------------------------------------------------------

    @property
    def tool(self) -> ToolSpec:
        """The update tool's spec (``.to_openai()`` / ``.to_anthropic()`` for a provider)."""
        return self._toolset.specs[0]

    @property
    def tools(self) -> Toolset:
        """The update tool as a :class:`~mindcore.toolspec.Toolset` (``.openai()``, ``.call()``,
        ``+`` to combine with another capability's tools)."""
        return self._toolset

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Dispatch a model's tool call. ``working_memory_update`` and ``working-memory/update`` return
        a tool error the model can read on a bad update; the legacy ``updateWorkingMemory`` call logs a
        warning and leaves the state unchanged, as the seed's legacy path does."""
        if name == LEGACY_TOOL_NAME:
            return call_legacy(self, arguments)
        return self._toolset.call(name, arguments)

    async def acall(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.call, name, arguments)

    def spawn(self, *, thread_id: str) -> WorkingMemory:
        """A working memory for a child thread with the same settings.

        Resource scope: the child reads the resource's state (every read is a deep copy, and its
        updates go to the state the resource's threads share). Thread scope: the child has its own,
        initially empty, state.
        """
        return WorkingMemory(self._store, thread_id=thread_id, resource_id=self.resource_id, config=self.config)

    def close(self) -> None:
        """Close the store if this working memory opened it (it was given a path)."""
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> WorkingMemory:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------------

    def _empty(self) -> State:
        if self.schema is not None:
            return {}
        return self.template or ""

    def _view(self, raw: str | None) -> tuple[State, str]:
        """The state stored as ``raw`` and its rendered block (never to be mutated: shared)."""
        if raw is None:
            empty = self._empty()
            return empty, _render(empty)
        memo = self._memo
        if memo is not None and memo[0] == raw:
            return memo[1], memo[2]
        state = self._decode(raw)
        rendered = _render(state)
        self._memo = (raw, state, rendered)
        return state, rendered

    def _decode(self, raw: str) -> State:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            log.warning("stored working memory is not valid JSON; starting from empty")
            return self._empty()
        if self.schema is None:
            # Opened without the schema it was written with (a reader, the CLI): the state is shown
            # as stored; `update` refuses to replace it with text (see `_apply`).
            return dict(value) if isinstance(value, dict) else value if isinstance(value, str) else self._empty()
        error = self.schema.error(value) if isinstance(value, dict) else "(state): not an object"
        if error is not None:
            # The schema changed under stored state: discard it rather than crash the agent.
            log.warning("stored working memory no longer validates (%s); discarding it for {}", error)
            return {}
        return dict(value)

    def _apply(self, current_raw: str | None, patch: Mapping[str, Any]) -> tuple[str, State]:
        current = self._view(current_raw)[0]
        new: State
        if self.schema is None:
            if isinstance(current, dict) and current:
                raise WorkingMemoryError(
                    "update rejected, state unchanged: this working memory holds structured state; "
                    "open it with its schema to update it"
                )
            new = str(patch["content"])
        else:
            try:
                new = deep_merge(current if isinstance(current, dict) else {}, patch)
            except MergeError as exc:
                raise WorkingMemoryError(str(exc)) from None
            error = self.schema.error(new)
            if error is not None:
                raise WorkingMemoryError(f"update rejected, state unchanged: {error}")
        rendered = _render(new)
        tokens = estimate_tokens(rendered)
        if tokens > self.max_tokens:
            raise WorkingMemoryError(
                f"update rejected: working memory would be ~{tokens} tokens, over the limit of "
                f"{self.max_tokens}; condense it (summarise or drop stale entries) and try again"
            )
        raw = json.dumps(new, ensure_ascii=False)
        self._memo = (raw, new, rendered)  # keyed by the text: harmless if the commit then fails
        return raw, new


def _fresh(state: State) -> State:
    """A copy the caller may mutate. States are JSON values, and a JSON round trip copies them
    several times faster than ``copy.deepcopy``."""
    if isinstance(state, str):
        return state
    fresh: dict[str, Any] = json.loads(json.dumps(state, ensure_ascii=False))
    return fresh


def _render(state: State) -> str:
    if isinstance(state, str):
        body = state.strip()
    else:
        body = json.dumps(state, indent=2, ensure_ascii=False) if state else ""
    # One renderer for every block: no stored text can close or forge <working_memory>.
    return render_block("working_memory", [multiline(body)] if body else [])

