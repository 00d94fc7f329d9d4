"""The one tool-spec format every capability uses to expose LLM-callable tools.

A :class:`ToolSpec` is a name, a description and a JSON-schema object for the arguments. It
converts to the OpenAI and Anthropic tool formats (and MCP's). A :class:`Toolset` dispatches a
model's raw call (a JSON string or a mapping) to a handler and always returns a result the model
can read: bad arguments become ``{"status": "error", "error": "..."}`` and never reach the handler,
so a malformed call cannot touch stored state.

>>> spec = ToolSpec("echo", "Echo a word.", {"type": "object",
...     "properties": {"word": {"type": "string"}}, "required": ["word"]})
>>> tools = Toolset([(spec, lambda args: {"status": "ok", "word": args["word"]})])
>>> tools.call("echo", '{"word": "hi"}')
{'status': 'ok', 'word': 'hi'}
>>> tools.call("echo", {"word": 3})["status"]
'error'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mindcore.errors import ToolError

__all__ = ["ToolError", "ToolSpec", "Toolset", "parse_arguments", "tool_error"]

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
    import jsonschema  # imported on first tool definition: keeps `import mindcore` light

    as_dict = dict(schema)
    cls = jsonschema.validators.validator_for(as_dict, default=jsonschema.Draft202012Validator)
    cls.check_schema(as_dict)
    return cls(as_dict)


class Toolset:
    """Named tools with handlers; :meth:`call` is the single entry point for a model's tool call.

    ``aliases`` maps extra accepted names (legacy or provider-safe spellings) to a tool's name.
    """

    def __init__(
        self,
        tools: Iterable[tuple[ToolSpec, Handler]],
        *,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self._tools: dict[str, tuple[ToolSpec, Handler]] = {}
        for spec, handler in tools:
            if spec.name in self._tools:
                raise ValueError(f"duplicate tool name {spec.name!r}")
            self._tools[spec.name] = (spec, handler)
        self._aliases = dict(aliases or {})
        for alias, target in self._aliases.items():
            if target not in self._tools:
                raise ValueError(f"alias {alias!r} points at unknown tool {target!r}")

    @property
    def specs(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools or name in self._aliases

    def openai(self) -> list[dict[str, Any]]:
        return [spec.to_openai() for spec in self.specs]

    def anthropic(self) -> list[dict[str, Any]]:
        return [spec.to_anthropic() for spec in self.specs]

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> ToolResult:
        """Validate and run one tool call; every failure the model caused comes back as a tool error."""
        entry = self._tools.get(self._aliases.get(name, name))
        if entry is None:
            known = ", ".join(sorted(self._tools))
            return tool_error(f"unknown tool {name!r}; available tools: {known}")
        spec, handler = entry
        try:
            args = parse_arguments(arguments)
            spec.validate(args)
            return handler(args)
        except ToolError as exc:
            return tool_error(str(exc))
