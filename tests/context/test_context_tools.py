"""Tool registration: additive, upserts by name, persists in the store, the agentified server's
rules for mcp tools, secrets screened, a bad tool rejects the whole batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mindcore
from mindcore.context import Context, Tool, ToolFields
from mindcore.errors import ContextError, SecretRefusedError
from mindcore.policy import SecretPolicy

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def weather(args: dict) -> dict:
    return {"temp": 22, "city": args.get("city")}


def test_register_is_additive_and_upserts_by_name(store: mindcore.Store) -> None:
    ctx = Context(store, dataset="ds")
    assert ctx.register([Tool("a", "first"), Tool("b", "second")]) == 2
    assert ctx.register([Tool("c", "third"), Tool("a", "first, revised")]) == 2
    tools = {t.name: t for t in ctx.tools()}
    assert sorted(tools) == ["a", "b", "c"]
    assert tools["a"].description == "first, revised"
    assert tools["b"].description == "second"


def test_tools_persist_for_a_new_context_on_the_same_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Context(path, dataset="ds") as ctx:
        ctx.register([Tool("get_weather", "Weather for a city", {"type": "object"}, handler=weather,
                           metadata={"provides": ["temp"]}, fields=ToolFields("w", "weather", input_schema="{}"))])
    with Context(path, dataset="ds") as again:
        (tool,) = again.tools()
        assert tool.name == "get_weather" and tool.metadata == {"provides": ["temp"]}
        assert tool.fields == ToolFields("w", "weather", input_schema="{}")
        assert tool.handler is None  # handlers live in the process that registered them
        again.register([Tool("get_weather", "Weather for a city", {"type": "object"}, handler=weather,
                             metadata={"provides": ["temp"]}, fields=ToolFields("w", "weather", input_schema="{}"))])
        assert again.tools()[0].handler is weather


def test_datasets_do_not_share_tools(store: mindcore.Store) -> None:
    Context(store, dataset="a").register([Tool("only_in_a", "x")])
    assert Context(store, dataset="b").tools() == []
    assert Context(store, dataset="b").discover("x") == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"type": "mcp"}, "tool 't': mcp tools require server_uri"),
    ({"type": "mcp", "server_uri": "ftp://host/x"}, "tool 't': server_uri must be an http:// or https:// URL"),
    ({"server_uri": "https://host/mcp"}, "tool 't': server_uri is only valid for mcp tools"),
    ({"type": "client"}, "tool 't': type must be 'backend' or 'mcp', got 'client'"),
])
def test_server_uri_rules_and_texts(kwargs: dict, message: str) -> None:
    with pytest.raises(ContextError) as err:
        Tool("t", "d", **kwargs)
    assert str(err.value) == message


def test_an_mcp_tool_with_an_http_uri_registers(store: mindcore.Store) -> None:
    ctx = Context(store)
    ctx.register([Tool("remote", "d", type="mcp", server_uri="http://127.0.0.1:9/mcp")])
    wire = ctx.tools()[0].to_wire()
    assert wire["type"] == "mcp" and wire["server_uri"] == "http://127.0.0.1:9/mcp"


def test_a_bad_tool_rejects_the_whole_batch(store: mindcore.Store) -> None:
    ctx = Context(store)
    with pytest.raises(ContextError, match="mcp tools require server_uri"):
        ctx.register([{"name": "fine", "description": "ok", "parameters": {}},
                      {"name": "bad", "description": "x", "parameters": {}, "type": "mcp"}])
    assert ctx.tools() == []


def test_wire_form_defaults_and_to_wire() -> None:
    tool = Tool.from_wire({"name": "t", "description": "d", "unknown_key": 1})
    assert tool.parameters == {} and tool.type == "backend" and tool.always_include is False
    assert tool.to_wire() == {"name": "t", "description": "d", "parameters": {}, "always_include": False,
                              "type": "backend"}


def test_a_tool_from_a_parsed_body_equals_its_wire_form_and_keeps_the_handed_over_dicts() -> None:
    wire = {"name": "t", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            "metadata": {"k": [1, "v"]}, "always_include": True, "fields": {"name": "n", "description": "e"}}
    parsed = json.loads(json.dumps(wire))
    tool = Tool._from_parsed(parsed)
    assert tool == Tool.from_wire(wire) and tool.to_wire() == Tool.from_wire(wire).to_wire()
    assert tool.parameters is parsed["parameters"] and tool.metadata is parsed["metadata"]
    assert Tool.from_wire(wire).parameters is not wire["parameters"]  # from_wire copies what it is given
    with pytest.raises(ContextError, match="mcp tools require server_uri"):
        Tool._from_parsed({"name": "m", "description": "d", "type": "mcp"})
    with pytest.raises(ContextError, match="parameters: expected a JSON object"):
        Tool._from_parsed({"name": "m", "description": "d", "parameters": [1]})


@pytest.mark.parametrize("bad", [
    {"name": "", "description": "d"},
    {"name": "t", "description": 3},
    {"name": "t", "description": "d", "parameters": []},
    {"name": "t", "description": "d", "always_include": "yes"},
    {"name": "t\x00", "description": "d"},
    {"name": "t" * 300, "description": "d"},
    {"name": "t", "description": "d", "parameters": {"x": float("nan")}},
])
def test_malformed_tools_are_refused(store: mindcore.Store, bad: dict) -> None:
    ctx = Context(store)
    with pytest.raises(ContextError):
        ctx.register([bad])
    assert ctx.tools() == []


def test_tool_parameters_are_copied_not_shared() -> None:
    params = {"type": "object", "properties": {}}
    tool = Tool("t", "d", params)
    params["properties"]["x"] = {"type": "string"}
    assert tool.parameters == {"type": "object", "properties": {}}


def test_secrets_in_a_tool_are_refused_by_default(store: mindcore.Store) -> None:
    ctx = Context(store)
    with pytest.raises(SecretRefusedError, match="description"):
        ctx.register([Tool("t", f"use token {TOKEN}")])
    with pytest.raises(SecretRefusedError, match="parameters"):
        ctx.register([Tool("t", "d", {"type": "object", "default": TOKEN})])
    assert ctx.tools() == []


@pytest.mark.parametrize("action", ["refuse", "redact"])
def test_credentials_in_an_mcp_tools_server_uri_are_refused_whatever_the_action(
        store: mindcore.Store, action: str) -> None:
    ctx = Context(store, config=mindcore.ContextConfig(secrets=SecretPolicy(action=action)))  # type: ignore[arg-type]
    for uri in ("https://admin:hunter2secret@mcp.example.com/mcp", f"https://mcp.example.com/mcp?key={TOKEN}"):
        with pytest.raises(SecretRefusedError, match="server_uri"):
            ctx.register([Tool("search", "Web search", type="mcp", server_uri=uri)])
    assert ctx.tools() == []
    assert ctx.register([Tool("search", "Web search", type="mcp", server_uri="https://mcp.example.com/mcp")]) == 1


def test_what_is_screened_is_what_is_stored(store: mindcore.Store) -> None:
    """A tool's stored texts are written when it is registered, from its values then: a secret
    put into its parameters after it was built is refused, and one taken out is never stored."""
    ctx = Context(store)
    tool = Tool("t", "d", {"type": "object", "properties": {}})
    tool.parameters["properties"][TOKEN] = {"type": "string"}  # type: ignore[index]
    with pytest.raises(SecretRefusedError, match="parameters"):
        ctx.register([tool])
    hidden = Tool("u", "d", {"type": "object", "enum": ["".join(f"\\u{ord(c):04x}" for c in TOKEN)]})
    with pytest.raises(SecretRefusedError, match="parameters"):
        ctx.register([Tool("ok", "fine"), hidden])
    assert ctx.tools() == []
    del tool.parameters["properties"][TOKEN]  # type: ignore[attr-defined]
    assert ctx.register([tool, Tool.from_wire({"name": "w", "description": "x", "metadata": {"k": [1, "v"]}})]) == 2
    stored = {t.name: t for t in Context(store).tools()}
    assert stored["t"].parameters == {"type": "object", "properties": {}}
    assert stored["w"].metadata == {"k": [1, "v"]}


def test_the_long_texts_of_tools_are_stored_uncompressed(store: mindcore.Store) -> None:
    """Lance's string compression would cost a quarter of a 1,000-tool registration."""
    Context(store).register([Tool("t", "d", {"type": "object"})])
    schema = store.table("context_tools", {}).schema
    for column in ("description", "parameters", "document"):
        assert (schema.field(column).metadata or {}).get(b"lance-encoding:compression") == b"none", column


def test_secrets_in_a_tool_are_redacted_when_configured(store: mindcore.Store) -> None:
    ctx = Context(store, config=mindcore.ContextConfig(secrets=SecretPolicy(action="redact")))
    ctx.register([Tool("t", f"use token {TOKEN}")])
    assert TOKEN not in ctx.tools()[0].description
    assert "[REDACTED" in ctx.tools()[0].description


def test_registering_unchanged_tools_writes_nothing(store: mindcore.Store) -> None:
    ctx = Context(store, dataset="ds")
    tools = [Tool(f"t{i}", f"tool {i}") for i in range(5)]
    ctx.register(tools)
    table = store.table("context_tools", {})
    version = table.version
    ctx.register(tools)
    assert table.version == version


def test_bad_arguments_name_themselves(store: mindcore.Store) -> None:
    with pytest.raises(ContextError, match="dataset"):
        Context(store, dataset="")
    with pytest.raises(ContextError, match="default_strategy"):
        Context(store, default_strategy="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(mindcore.errors.InvalidTypeError, match="embedder"):
        Context(store, embedder=object())  # type: ignore[arg-type]
    with pytest.raises(ContextError, match="tools"):
        Context(store).register(Tool("t", "d"))  # type: ignore[arg-type]


def test_the_lazy_names_of_the_package_face() -> None:
    assert mindcore.Context is Context and mindcore.Tool is Tool
    assert mindcore.RankedTool is mindcore.context.RankedTool
