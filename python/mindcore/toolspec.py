"""The one tool-spec format every capability uses to expose LLM-callable tools.

A :class:`ToolSpec` is a name, a description and a JSON-schema object for the arguments. It
converts to the OpenAI and Anthropic tool formats (and MCP's). A :class:`Toolset` dispatches a
model's raw call (a JSON string or a mapping) to a handler and always returns a result the model
can read: bad arguments become ``{"status": "error", "error": "..."}`` and never reach the handler,
so a malformed call cannot touch stored state. Toolsets combine (``a + b``), so an agent can offer
the tools of every capability in one list and dispatch every call through one object.

>>> spec = ToolSpec("echo", "Echo a word.", {"type": "object",
...     "properties": {"word": {"type": "string"}}, "required": ["word"]})
>>> tools = Toolset([(spec, lambda args: {"status": "ok", "word": args["word"]})])
>>> tools.call("echo", '{"word": "hi"}')
{'status': 'ok', 'word': 'hi'}
>>> tools.call("echo", {"word": 3})["status"]
'error'
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import types
import typing
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mindcore.errors import InvalidInputError, MindcoreError, ToolError, ToolNameClashError

__all__ = [
    "LoopRunning",
    "ToolError",
    "ToolNameClashError",
    "ToolSpec",
    "Toolset",
    "function_tool",
    "parse_arguments",
    "run_to_completion",
    "tool_error",
]

log = logging.getLogger("mindcore.tools")

ToolResult = dict[str, Any]
Handler = Callable[[dict[str, Any]], ToolResult]

# Models sometimes send megabytes of junk; nothing we accept is anywhere near this.
MAX_ARGUMENT_CHARS = 1_000_000


def tool_error(message: str) -> ToolResult:
    """The error result shape every mindcore tool returns."""
    return {"status": "error", "error": message}


def parse_arguments(raw: str | bytes | Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn a model's raw tool arguments into a dict, or raise :class:`ToolError` saying why not.

    >>> parse_arguments('{"a": 1}')
    {'a': 1}
    >>> parse_arguments(None)
    {}
    """
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, bytes | bytearray):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"arguments are not valid UTF-8: {exc}") from None
    if not isinstance(raw, str):
        raise ToolError(f"arguments must be a JSON object, got {type(raw).__name__}")
    if len(raw) > MAX_ARGUMENT_CHARS:
        raise ToolError(f"arguments are {len(raw):,} characters; the limit is {MAX_ARGUMENT_CHARS:,}")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise ToolError("arguments nest too deeply; send a flat JSON object") from None
    if not isinstance(value, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _path(parts: Iterable[Any]) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return text[1:] if text.startswith(".") else text or "(arguments)"


@dataclass(frozen=True)
class ToolSpec:
    """An LLM-callable tool: name, description and a JSON schema (``type: object``) for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON schema of type 'object'")
        # Built once; an invalid schema fails here, at definition time, not at call time.
        object.__setattr__(self, "_validator", _build_validator(self.parameters))

    def to_openai(self) -> dict[str, Any]:
        """OpenAI Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    def to_anthropic(self) -> dict[str, Any]:
        """Anthropic Messages ``tools`` entry."""
        return {"name": self.name, "description": self.description, "input_schema": dict(self.parameters)}

    def to_mcp(self) -> dict[str, Any]:
        """Model Context Protocol ``tools/list`` entry."""
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.parameters)}

    def validate(self, args: Mapping[str, Any]) -> None:
        """Raise :class:`ToolError` naming the first problem with ``args`` (path and reason)."""
        validator = self._validator  # type: ignore[attr-defined]
        errors = sorted(validator.iter_errors(dict(args)), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            first = errors[0]
            raise ToolError(
                f"invalid arguments for {self.name}: {_path(first.absolute_path)}: {first.message}"
            )


def _build_validator(schema: Mapping[str, Any]) -> Any:
    """A validator for ``schema``, checked once per distinct schema (capabilities rebuild their
    specs per run or per call; checking a schema is the costly part)."""
    key = json.dumps(schema, sort_keys=True, default=repr)
    with _VALIDATORS_LOCK:
        cached = _VALIDATORS.get(key)
        if cached is not None:
            _VALIDATORS.move_to_end(key)
            return cached
    import jsonschema  # imported on first tool definition: keeps `import mindcore` light

    as_dict = dict(schema)
    cls = jsonschema.validators.validator_for(as_dict, default=jsonschema.Draft202012Validator)
    cls.check_schema(as_dict)
    validator = cls(as_dict)
    with _VALIDATORS_LOCK:
        _VALIDATORS[key] = validator
        while len(_VALIDATORS) > 4096:
            _VALIDATORS.popitem(last=False)
    return validator


_VALIDATORS: OrderedDict[str, Any] = OrderedDict()
_VALIDATORS_LOCK = threading.Lock()


class Toolset:
    """Named tools with handlers; :meth:`call` is the single entry point for a model's tool call.

    Every capability's ``.tools`` is a ``Toolset``. Iterating it yields its tool specs
    (``[t.to_openai() for t in tools]``), ``len`` counts them, :meth:`openai`, :meth:`anthropic` and
    :meth:`mcp` list them in a provider's format, and toolsets combine with ``+`` or :meth:`merge`
    into one that dispatches each call to the tool's own handler. :meth:`call` never raises: whatever
    goes wrong comes back as ``{"status": "error", "error": "..."}`` for the model to read.

    ``aliases`` maps extra accepted names (legacy or provider-safe spellings) to a tool's name.

    >>> ping = Toolset([(ToolSpec("ping", "Answer pong."), lambda args: {"status": "ok", "reply": "pong"})])
    >>> clock = Toolset([(ToolSpec("now", "The time."), lambda args: {"status": "ok", "time": "noon"})])
    >>> both = ping + clock
    >>> len(both), [t.name for t in both]
    (2, ['ping', 'now'])
    >>> both.call("now")
    {'status': 'ok', 'time': 'noon'}
    >>> ping + ping
    Traceback (most recent call last):
    ...
    mindcore.errors.ToolNameClashError: duplicate tool name 'ping': two tools in one Toolset cannot share a name
    """

    def __init__(
        self,
        tools: Iterable[tuple[ToolSpec, Handler]] = (),
        *,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self._tools: dict[str, tuple[ToolSpec, Handler]] = {}
        for spec, handler in tools:
            if spec.name in self._tools:
                raise ToolNameClashError(
                    f"duplicate tool name {spec.name!r}: two tools in one Toolset cannot share a name"
                )
            self._tools[spec.name] = (spec, handler)
        self._aliases = dict(aliases or {})
        for alias, target in self._aliases.items():
            if alias in self._tools:
                raise ToolNameClashError(f"alias {alias!r} is also the name of a tool")
            if target not in self._tools:
                raise ValueError(f"alias {alias!r} points at unknown tool {target!r}")

    @classmethod
    def merge(cls, *toolsets: Toolset) -> Toolset:
        """One toolset with every tool and alias of ``toolsets``, in order. A name used by two of
        them raises :class:`~mindcore.errors.ToolNameClashError` naming it."""
        tools: list[tuple[ToolSpec, Handler]] = []
        aliases: dict[str, str] = {}
        for toolset in toolsets:
            if not isinstance(toolset, Toolset):
                raise InvalidInputError(f"Toolset.merge: expected Toolsets, got {type(toolset).__name__}")
            tools += toolset._tools.values()
            for alias, target in toolset._aliases.items():
                if alias in aliases:
                    raise ToolNameClashError(f"duplicate alias {alias!r}: two toolsets accept that name")
                aliases[alias] = target
        return cls(tools, aliases=aliases)

    def __add__(self, other: object) -> Toolset:
        if not isinstance(other, Toolset):
            return NotImplemented
        return Toolset.merge(self, other)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools or name in self._aliases

    def __repr__(self) -> str:
        return f"Toolset({list(self._tools)!r})"

    @property
    def specs(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    def without(self, names: Iterable[str]) -> Toolset:
        """This toolset less the tools called ``names`` (and the aliases of those)."""
        gone = set(names)
        return Toolset([entry for name, entry in self._tools.items() if name not in gone],
                       aliases={a: t for a, t in self._aliases.items() if t not in gone})

    @property
    def names(self) -> list[str]:
        """The tools' names, in order (aliases not included)."""
        return list(self._tools)

    def openai(self) -> list[dict[str, Any]]:
        """The OpenAI Chat Completions ``tools`` list."""
        return [spec.to_openai() for spec in self.specs]

    def anthropic(self) -> list[dict[str, Any]]:
        """The Anthropic Messages ``tools`` list."""
        return [spec.to_anthropic() for spec in self.specs]

    def mcp(self) -> list[dict[str, Any]]:
        """The Model Context Protocol ``tools/list`` entries."""
        return [spec.to_mcp() for spec in self.specs]

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> ToolResult:
        """Validate and run one tool call. Never raises: an unknown tool, bad arguments or any
        exception from the handler comes back as ``{"status": "error", "error": "..."}`` (mindcore's
        own errors with their message as is, others as ``"<type>: <message>"``)."""
        entry = self._tools.get(self._aliases.get(name, name))
        if entry is None:
            known = ", ".join(sorted(self._tools))
            return tool_error(f"unknown tool {name!r}; available tools: {known}")
        spec, handler = entry
        try:
            args = parse_arguments(arguments)
            spec.validate(args)
            result = handler(args)
            if inspect.isawaitable(result):  # an async handler: run it to completion here
                try:
                    result = run_to_completion(result)
                except LoopRunning:
                    return tool_error(f"tool {spec.name!r} is async: call it with `await toolset.acall(...)`")
            return result
        except MindcoreError as exc:
            return tool_error(str(exc))
        except Exception as exc:  # a handler's bug must not crash the agent loop; the model reads it
            log.warning("tool %s failed", spec.name, exc_info=True)
            return tool_error(f"{type(exc).__name__}: {exc}")

    async def acall(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> ToolResult:
        """:meth:`call` off the event loop (handlers may do I/O)."""
        return await asyncio.to_thread(self.call, name, arguments)


class LoopRunning(Exception):
    """The calling thread runs an event loop: a coroutine cannot be run to completion from it (it
    was closed); the caller should use the async twin of its call."""


def run_to_completion(awaitable: Any) -> Any:
    """The result of ``awaitable``, run on a fresh event loop: what a blocking call does with an
    async callback (a tool handler, a compaction function). :class:`LoopRunning` when this thread
    already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async def wait() -> Any:
            return await awaitable

        return asyncio.run(wait())
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise LoopRunning


_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"}, bool: {"type": "boolean"},
    dict: {"type": "object"}, list: {"type": "array"},
}


def _schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a parameter's type hint (``{}``, any value, for what has no simple one)."""
    if annotation in _JSON_TYPES:
        return dict(_JSON_TYPES[annotation])
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal and args and all(isinstance(a, str | int | bool) for a in args):
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset, Iterable) or origin is getattr(typing, "Sequence", None):
        return {"type": "array", "items": _schema_of(args[0])} if args else {"type": "array"}
    if origin in (dict, Mapping):
        return {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _schema_of(options[0])
        return {"anyOf": [_schema_of(a) for a in options]}
    return {}


def function_tool(fn: Callable[..., Any], *, name: str | None = None,
                  description: str | None = None) -> tuple[ToolSpec, Handler]:
    """A Python function (sync or async) as a tool: its name, its docstring's first paragraph as
    the description, and a JSON schema from its type hints (parameters without a default are
    required). The handler calls it with the model's arguments as keywords; a returned dict with
    a ``status`` is passed through, anything else comes back as ``{"status": "ok", "result": ...}``.

    >>> from typing import Literal
    >>> def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    ...     '''The weather in a city.'''
    ...     return f"20{unit} in {city}"
    >>> spec, handler = function_tool(get_weather)
    >>> spec.name, spec.description, spec.parameters["required"]
    ('get_weather', 'The weather in a city.', ['city'])
    >>> Toolset([(spec, handler)]).call("get_weather", {"city": "Oslo"})
    {'status': 'ok', 'result': '20C in Oslo'}
    """
    if not callable(fn):
        raise InvalidInputError(f"tool: expected a function, got {type(fn).__name__}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    doc = inspect.getdoc(fn) or ""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: describe the parameters without types
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        properties[param.name] = _schema_of(hints.get(param.name, Any))
        if param.default is param.empty:
            required.append(param.name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    summary: str = description or doc.split("\n\n")[0].strip() or tool_name
    spec = ToolSpec(tool_name, summary, parameters)

    def handler(args: dict[str, Any]) -> Any:
        result = fn(**args)
        if inspect.isawaitable(result):
            return _finish(result)
        return _as_result(result)

    return spec, handler


async def _finish(awaitable: Awaitable[Any]) -> ToolResult:
    return _as_result(await awaitable)


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, Mapping) and "status" in value:
        return dict(value)
    return {"status": "ok", "result": value}
