from __future__ import annotations

from typing import Any

import pytest

from mindcore.toolspec import ToolError, Toolset, ToolSpec, parse_arguments

SPEC = ToolSpec(
    "set_level",
    "Set a level.",
    {
        "type": "object",
        "properties": {
            "level": {"type": "string", "enum": ["low", "high"]},
            "note": {"type": "string", "maxLength": 10},
            "count": {"type": "integer"},
        },
        "required": ["level"],
        "additionalProperties": False,
    },
)


def _toolset(calls: list[dict[str, Any]]) -> Toolset:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        if args.get("count") == 13:
            raise ToolError("13 is unlucky")
        return {"status": "ok"}

    return Toolset([(SPEC, handler)], aliases={"setLevel": "set_level"})


def test_formats() -> None:
    assert SPEC.to_openai()["function"]["parameters"]["required"] == ["level"]
    assert SPEC.to_openai()["type"] == "function"
    assert SPEC.to_anthropic()["input_schema"]["properties"]["level"]["enum"] == ["low", "high"]
    assert SPEC.to_mcp()["inputSchema"] == SPEC.to_anthropic()["input_schema"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        ({}, "'level' is a required property"),
        ({"level": "medium"}, "level: 'medium' is not one of"),
        ({"level": "low", "note": "x" * 11}, "note: "),
        ({"level": "low", "count": "3"}, "count: '3' is not of type 'integer'"),
        ({"level": "low", "extra": 1}, "Additional properties"),
        (b"\xff\xfe", "not valid UTF-8"),
        ("x" * 1_000_001, "limit"),
    ],
)
def test_bad_arguments_are_tool_errors_and_never_reach_the_handler(raw: Any, needle: str) -> None:
    calls: list[dict[str, Any]] = []
    result = _toolset(calls).call("set_level", raw)
    assert result["status"] == "error"
    assert needle in result["error"]
    assert calls == []


def test_dispatch_aliases_and_handler_errors() -> None:
    calls: list[dict[str, Any]] = []
    tools = _toolset(calls)
    assert tools.call("setLevel", '{"level": "high"}') == {"status": "ok"}
    assert tools.call("set_level", {"level": "low", "count": 13}) == {
        "status": "error",
        "error": "13 is unlucky",
    }
    unknown = tools.call("nope", {})
    assert unknown["status"] == "error" and "set_level" in unknown["error"]
    assert "setLevel" in tools and "nope" not in tools
    assert len(calls) == 2


def test_spec_definition_errors() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec("x", "y", {"type": "string"})
    with pytest.raises(Exception, match="is not valid"):
        ToolSpec("x", "y", {"type": "object", "properties": {"a": {"type": "nonsense"}}})
    with pytest.raises(ValueError, match="duplicate"):
        Toolset([(SPEC, lambda a: {}), (SPEC, lambda a: {})])


def test_parse_arguments_accepts_mappings_and_empty() -> None:
    assert parse_arguments(None) == {}
    assert parse_arguments("  ") == {}
    assert parse_arguments({"a": 1}) == {"a": 1}
