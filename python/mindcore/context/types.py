"""The values context assembly takes and gives: tools, ranked tools, stored messages, pages.

Each value converts to the JSON the agentified server writes (``to_wire``), so the HTTP server
and the in-process API share one shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

from mindcore.errors import ContextError
from mindcore.kernels import estimate_tokens
from mindcore.kernels.json_values import json_copy
from mindcore.validation import check_number, check_text, describe

__all__ = [
    "EmbeddingWeights",
    "MessagePage",
    "MessageVersion",
    "RankedTool",
    "Recalled",
    "SearchStrategy",
    "StoredMessage",
    "SummaryRange",
    "Tool",
    "ToolFields",
    "ToolType",
]

SearchStrategy = Literal["bm25", "semantic", "hybrid"]
SEARCH_STRATEGIES: tuple[SearchStrategy, ...] = ("bm25", "semantic", "hybrid")
#: How hybrid discovery adds its semantic and BM25 scores (see :class:`~mindcore.context.ContextConfig`).
Fusion = Literal["weighted", "zscore"]
FUSIONS: tuple[Fusion, ...] = ("weighted", "zscore")
ToolType = Literal["backend", "mcp"]
TOOL_TYPES: tuple[ToolType, ...] = ("backend", "mcp")

#: Longest tool name and description accepted (characters).
MAX_NAME_CHARS = 256
MAX_DESCRIPTION_CHARS = 100_000


def _json_copy(value: Any, name: str) -> Any:
    """A deep copy of a JSON value (so later changes by the caller cannot reach the stored one),
    or a :class:`ContextError` naming ``name`` when it is not JSON."""
    try:
        return json_copy(value)
    except (TypeError, ValueError) as exc:
        raise ContextError(f"{name}: not a JSON value ({exc})") from None


def _mapping(value: Any, name: str, *, optional: bool = False, copy: bool = True) -> dict[str, Any] | None:
    """``value`` as a JSON object of the tool's own: a deep copy, or itself when ``copy`` is off
    (a dict the caller hands over, parsed from JSON text)."""
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise ContextError(f"{name}: expected a JSON object, got {describe(value)}")
    if not copy and type(value) is dict:
        return value
    copied: dict[str, Any] = _json_copy(dict(value), name)
    return copied


@dataclass(frozen=True)
class ToolFields:
    """What semantic discovery embeds for a tool instead of its own name and description, and
    the optional input and output schema texts (embedded only when given here).

    >>> ToolFields("get_weather", "Current weather for a city", input_schema='{"city": "string"}').to_wire()
    {'name': 'get_weather', 'description': 'Current weather for a city', 'input_schema': '{"city": "string"}'}
    """

    name: str
    description: str
    input_schema: str | None = None
    output_schema: str | None = None

    def __post_init__(self) -> None:
        check_text(self.name, "fields.name", max_chars=MAX_DESCRIPTION_CHARS, allow_blank=True, error=ContextError)
        check_text(self.description, "fields.description", max_chars=MAX_DESCRIPTION_CHARS, allow_blank=True,
                   error=ContextError)
        for key in ("input_schema", "output_schema"):
            check_text(getattr(self, key), f"fields.{key}", max_chars=MAX_DESCRIPTION_CHARS, optional=True,
                       allow_blank=True, error=ContextError)

    @classmethod
    def of(cls, value: ToolFields | Mapping[str, Any]) -> ToolFields:
        """``value`` itself, or built from a dict (``input_schema`` or ``inputSchema``, ...)."""
        if isinstance(value, ToolFields):
            return value
        if not isinstance(value, Mapping):
            raise ContextError(f"fields: expected a JSON object, got {describe(value)}")
        return cls(
            name=value.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            description=value.get("description"),  # type: ignore[arg-type]
            input_schema=value.get("input_schema", value.get("inputSchema")),
            output_schema=value.get("output_schema", value.get("outputSchema")),
        )

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            out["input_schema"] = self.input_schema
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        return out


@dataclass(frozen=True)
class Tool:
    """A tool the context can offer a model: what discovery ranks and what a session dispatches.

    ``parameters`` is the JSON schema of the arguments. ``handler(arguments)`` runs a call in this
    process (handlers are not stored: a tool read back from the store has the handler registered
    for its name in this process, if any). ``always_include`` tools are never ranked and always
    offered. ``metadata`` may say what a tool ``requires`` and ``provides`` (lists of strings):
    discovery then adds the providers of what the found tools require. ``fields`` replaces the
    name and description semantic discovery embeds and adds schema texts. ``type`` is
    ``"backend"`` (the default) or ``"mcp"``, which needs an ``http(s)://`` ``server_uri``.

    >>> weather = Tool("get_weather", "Current weather for a city",
    ...                {"type": "object", "properties": {"city": {"type": "string"}}})
    >>> weather.to_wire()["always_include"]
    False
    >>> Tool("search", "Search the docs", type="mcp")
    Traceback (most recent call last):
    ...
    mindcore.errors.ContextError: tool 'search': mcp tools require server_uri
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    handler: Callable[..., Any] | None = field(default=None, compare=False)
    always_include: bool = False
    metadata: Mapping[str, Any] | None = None
    fields: ToolFields | None = None
    type: ToolType = "backend"
    server_uri: str | None = None

    def __post_init__(self) -> None:
        self._check(copy=True)

    def _check(self, *, copy: bool) -> None:
        """Check every field; ``copy``: make ``parameters`` and ``metadata`` the tool's own."""
        check_text(self.name, "tool name", max_chars=MAX_NAME_CHARS, error=ContextError)
        label = f"tool {self.name!r}"
        check_text(self.description, f"{label}: description", max_chars=MAX_DESCRIPTION_CHARS, allow_blank=True,
                   error=ContextError)
        object.__setattr__(self, "parameters", _mapping(self.parameters, f"{label}: parameters", copy=copy))
        object.__setattr__(self, "metadata", _mapping(self.metadata, f"{label}: metadata", optional=True, copy=copy))
        if self.fields is not None:
            object.__setattr__(self, "fields", ToolFields.of(self.fields))
        if self.handler is not None and not callable(self.handler):
            raise ContextError(f"{label}: handler must be callable, got {describe(self.handler)}")
        if not isinstance(self.always_include, bool):
            raise ContextError(f"{label}: always_include must be true or false, got {describe(self.always_include)}")
        if self.type not in TOOL_TYPES:
            raise ContextError(f"{label}: type must be 'backend' or 'mcp', got {self.type!r}")
        # The agentified server's rules and texts, which its clients may match on.
        if self.type == "mcp":
            if self.server_uri is None:
                raise ContextError(f"tool '{self.name}': mcp tools require server_uri")
            if not isinstance(self.server_uri, str) or not self.server_uri.startswith(("http://", "https://")):
                raise ContextError(f"tool '{self.name}': server_uri must be an http:// or https:// URL")
            check_text(self.server_uri, f"{label}: server_uri", max_chars=4096, error=ContextError)
        elif self.server_uri is not None:
            raise ContextError(f"tool '{self.name}': server_uri is only valid for mcp tools")

    @classmethod
    def _trusted(cls, **values: Any) -> Tool:
        """A tool from values already checked (read back from the store): no checks, no copies."""
        tool = object.__new__(cls)
        for key, value in values.items():
            object.__setattr__(tool, key, value)
        return tool

    def with_handler(self, handler: Callable[..., Any] | None) -> Tool:
        """This tool with another handler (the rest is shared, not copied)."""
        if handler is self.handler:
            return self
        return Tool._trusted(**{**vars(self), "handler": handler})

    @classmethod
    def from_wire(cls, value: Mapping[str, Any], handler: Callable[..., Any] | None = None) -> Tool:
        """A tool from the JSON the agentified SDKs send (snake_case keys; ``parameters`` defaults
        to ``{}``; unknown keys are ignored)."""
        return cls(**cls._wire_fields(value, handler))

    @classmethod
    def _from_parsed(cls, value: Mapping[str, Any]) -> Tool:
        """:meth:`from_wire` of a value ``json.loads`` made (NaN and infinities refused) that the
        caller hands over: its ``parameters`` and ``metadata`` dicts, JSON already, are kept
        rather than copied."""
        tool = object.__new__(cls)
        for key, field_value in cls._wire_fields(value, None).items():
            object.__setattr__(tool, key, field_value)
        tool._check(copy=False)
        return tool

    @staticmethod
    def _wire_fields(value: Mapping[str, Any], handler: Callable[..., Any] | None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ContextError(f"tool: expected a JSON object, got {describe(value)}")
        fields = value.get("fields")
        tool_type = value.get("type")
        return {
            "name": value.get("name"),
            "description": value.get("description"),
            "parameters": value["parameters"] if value.get("parameters") is not None else {},
            "handler": handler,
            "always_include": value.get("always_include", False) if value.get("always_include") is not None else False,
            "metadata": value.get("metadata"),
            "fields": None if fields is None else ToolFields.of(fields),
            "type": tool_type if tool_type is not None else "backend",
            "server_uri": value.get("server_uri"),
        }

    def to_wire(self) -> dict[str, Any]:
        """The JSON the agentified server writes for a tool (``metadata``, ``fields`` and
        ``server_uri`` only when set)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": _json_copy(self.parameters, "parameters"),
            "always_include": self.always_include,
            "type": self.type,
        }
        if self.metadata is not None:
            out["metadata"] = _json_copy(self.metadata, "metadata")
        if self.fields is not None:
            out["fields"] = self.fields.to_wire()
        if self.server_uri is not None:
            out["server_uri"] = self.server_uri
        return out

    @property
    def token_cost(self) -> int:
        """What offering this tool costs a prompt, as the agentified server counts it:
        ``floor(utf-8 bytes of name + description + compact JSON of parameters / 4)``."""
        text = self.name + self.description + json.dumps(self.parameters, ensure_ascii=False, separators=(",", ":"))
        return estimate_tokens(text, rule="bytes")

    def document(self) -> str:
        """The text BM25 indexes: name and description (those of ``fields`` when given), then each
        parameter's name and description."""
        name, description = (self.fields.name, self.fields.description) if self.fields else (self.name, self.description)
        parts = [name, description]
        properties = self.parameters.get("properties")
        if isinstance(properties, Mapping):
            for key, prop in properties.items():
                parts.append(str(key))
                if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
                    parts.append(prop["description"])
        return " ".join(parts)

    def embedding_texts(self) -> tuple[str, str, str | None, str | None]:
        """What semantic discovery embeds: name, description, input schema, output schema (the
        schemas only when ``fields`` gives them)."""
        if self.fields is None:
            return self.name, self.description, None, None
        f = self.fields
        return f.name, f.description, f.input_schema, f.output_schema


@dataclass(frozen=True)
class RankedTool:
    """A tool as discovery returns it: its ``score`` (higher is better; tools of a turn and
    held tools 1.0, graph-expanded providers 0.0) and whether graph expansion added it."""

    tool: Tool
    score: float
    graph_expanded: bool = False

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.tool.parameters

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        return self.tool.metadata

    def to_wire(self) -> dict[str, Any]:
        out = self.tool.to_wire()
        out["score"] = self.score
        if self.graph_expanded:
            out["graph_expanded"] = True
        return out


@dataclass(frozen=True)
class EmbeddingWeights:
    """How semantic discovery weighs the cosine of the query with each embedded field of a tool:
    ``score = Σ wᵢ·cos(query, fieldᵢ) / Σ wᵢ`` over the fields the tool has.

    >>> EmbeddingWeights.of({"name": 0.5}).description
    0.5
    """

    name: float = 0.1
    description: float = 0.5
    input_schema: float = 0.3
    output_schema: float = 0.1

    def __post_init__(self) -> None:
        for key in ("name", "description", "input_schema", "output_schema"):
            value = check_number(getattr(self, key), f"weights.{key}", minimum=0, error=ContextError)
            object.__setattr__(self, key, value)

    @classmethod
    def of(cls, value: EmbeddingWeights | Mapping[str, Any] | None) -> EmbeddingWeights:
        """``value`` itself, the defaults for ``None``, or the defaults overridden by a dict's keys."""
        if value is None:
            return cls()
        if isinstance(value, EmbeddingWeights):
            return value
        if not isinstance(value, Mapping):
            raise ContextError(f"weights: expected EmbeddingWeights or a JSON object, got {describe(value)}")
        unknown = set(value) - {"name", "description", "input_schema", "output_schema"}
        if unknown:
            raise ContextError(f"weights: unknown fields {sorted(unknown)} (name, description, input_schema, output_schema)")
        return cls(**{k: v for k, v in value.items() if v is not None})

    def as_tuple(self) -> tuple[float, float, float, float]:
        return self.name, self.description, self.input_schema, self.output_schema


class StoredMessage(dict[str, Any]):
    """A message of a session: the OpenAI chat message itself (``role``, ``content``, and
    ``tool_calls`` / ``tool_call_id`` when present), so a list of them goes to a model as is,
    with its place in the session as attributes: ``seq`` (1-based, contiguous), ``id`` and
    ``created_at`` (unix ms). A summary inserted by the ``compacted`` strategy has ``seq`` 0 and
    id ``"summary"``.

    >>> m = StoredMessage({"role": "user", "content": "hi"}, seq=1, id="m1", created_at=0)
    >>> m == {"role": "user", "content": "hi"}, m.seq, m["content"]
    (True, 1, 'hi')
    """

    __slots__ = ("created_at", "id", "metadata", "seq")

    def __init__(
        self, message: Mapping[str, Any], *, seq: int, id: str, created_at: int, metadata: Any = None
    ) -> None:
        super().__init__(message)
        self.seq = seq
        self.id = id
        self.created_at = created_at
        #: What the writer kept with the message (:meth:`Session.append`'s ``metadata``), else ``None``.
        self.metadata = metadata

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredMessage:
        message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
        if row.get("tool_calls") is not None:
            message["tool_calls"] = row["tool_calls"]
        if row.get("tool_call_id") is not None:
            message["tool_call_id"] = row["tool_call_id"]
        raw = row.get("metadata")
        return cls(message, seq=int(row["seq"]), id=str(row["id"]), created_at=int(row["created_at"] or 0),
                   metadata=None if raw is None else json.loads(raw))

    @property
    def role(self) -> str:
        return str(self["role"])

    @property
    def content(self) -> str:
        return str(self["content"])

    def __repr__(self) -> str:
        return f"StoredMessage(seq={self.seq}, {dict.__repr__(self)})"

    def to_wire(self) -> dict[str, Any]:
        """The JSON the agentified server writes: ``id``, ``role``, ``content``, ``tool_call_id``
        and ``tool_calls`` when set, ``created_at`` (RFC 3339, empty for a summary) and ``seq``."""
        out: dict[str, Any] = {"id": self.id, "role": self["role"], "content": self["content"]}
        if "tool_call_id" in self:
            out["tool_call_id"] = self["tool_call_id"]
        if "tool_calls" in self:
            out["tool_calls"] = self["tool_calls"]
        out["created_at"] = rfc3339(self.created_at) if self.seq else ""
        out["seq"] = self.seq
        return out


@lru_cache(maxsize=65_536)  # a session's messages are answered again and again, timestamps unchanged
def rfc3339(ms: int) -> str:
    """Unix milliseconds as an RFC 3339 UTC timestamp.

    >>> rfc3339(1_700_000_000_123)
    '2023-11-14T22:13:20.123000+00:00'
    """
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


@dataclass(frozen=True)
class MessagePage:
    """A page of a session's messages, in ascending ``seq``: ``has_more`` says whether messages
    lie beyond it (older ones for the latest page, later ones after a cursor); ``max_seq`` is the
    session's last ``seq`` (0 when empty)."""

    messages: list[StoredMessage]
    has_more: bool
    max_seq: int

    def to_wire(self) -> dict[str, Any]:
        return {"messages": [m.to_wire() for m in self.messages], "has_more": self.has_more, "max_seq": self.max_seq}


@dataclass(frozen=True)
class MessageVersion:
    """One version of a session's message (:meth:`Session.history`): the ``message`` as it read
    then (a :class:`StoredMessage`), ``written_at`` (unix ms it was stored) and ``replaced_at``
    (unix ms an edit replaced it; ``None`` for the current version)."""

    message: StoredMessage
    written_at: int
    replaced_at: int | None

    @property
    def seq(self) -> int:
        return self.message.seq

    @property
    def content(self) -> str:
        return self.message.content


@dataclass(frozen=True)
class SummaryRange:
    """The messages a ``compacted`` summary stands for: ``first_seq``..``last_seq``, ``count`` of them."""

    first_seq: int
    last_seq: int
    count: int

    def to_wire(self) -> dict[str, int]:
        return {"first_seq": self.first_seq, "last_seq": self.last_seq, "count": self.count}


@dataclass(frozen=True)
class Recalled:
    """What an assembly recalled: ``tools`` (the session's held tools first, then new
    discoveries) and ``memories`` (reserved; always empty)."""

    tools: list[RankedTool] = field(default_factory=list)
    memories: list[Any] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {"tools": [t.to_wire() for t in self.tools], "memories": list(self.memories)}
