"""`Toolset`: iterable, sized, combinable, and a `call` that never raises."""

from __future__ import annotations

import asyncio
import doctest
import operator
from typing import Any

import pytest

import mindcore
import mindcore.toolspec
from mindcore.errors import MindcoreError, ToolError, ToolNameClashError
from mindcore.toolspec import Toolset, ToolSpec


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name, f"The {name} tool.", {"type": "object", "properties": {"x": {"type": "integer"}}})


def _echo(name: str) -> Toolset:
    return Toolset([(_spec(name), lambda args: {"status": "ok", "tool": name, **args})])


def test_top_level_names() -> None:
    assert mindcore.Toolset is Toolset and mindcore.ToolSpec is ToolSpec
    assert {"Toolset", "ToolSpec"} <= set(mindcore.__all__)


def test_iterable_sized_and_in_every_format() -> None:
    tools = _echo("a") + _echo("b")
    assert [t.name for t in tools] == ["a", "b"] == tools.names
    assert len(tools) == 2 and len(Toolset()) == 0
    assert [t.to_openai() for t in tools] == tools.openai()
    assert [t["name"] for t in tools.anthropic()] == ["a", "b"]
    assert tools.mcp()[1] == {"name": "b", "description": "The b tool.", "inputSchema": _spec("b").parameters}


def test_merge_dispatches_each_call_to_its_own_handler_and_keeps_aliases() -> None:
    seed = Toolset([(_spec("c"), lambda args: {"status": "ok", "tool": "c"})], aliases={"legacy-c": "c"})
    tools = Toolset.merge(_echo("a"), _echo("b"), seed)
    assert tools.call("a", {"x": 1}) == {"status": "ok", "tool": "a", "x": 1}
    assert tools.call("b", "{}") == {"status": "ok", "tool": "b"}
    assert tools.call("legacy-c") == {"status": "ok", "tool": "c"}
    assert "legacy-c" in tools and len(tools) == 3


@pytest.mark.parametrize(
    ("combine", "needle"),
    [
        (lambda: _echo("a") + _echo("a"), "'a'"),
        (lambda: Toolset.merge(_echo("a"), _echo("b"), _echo("b")), "'b'"),
        (lambda: Toolset([(_spec("a"), lambda a: {}), (_spec("b"), lambda a: {})], aliases={"a": "b"}), "'a'"),
        (
            lambda: Toolset([(_spec("a"), lambda a: {})], aliases={"x": "a"})
            + Toolset([(_spec("b"), lambda a: {})], aliases={"x": "b"}),
            "'x'",
        ),
    ],
)
def test_a_name_clash_is_a_clear_error_naming_the_tool(combine: Any, needle: str) -> None:
    with pytest.raises(ToolNameClashError, match=needle) as e:
        combine()
    assert isinstance(e.value, MindcoreError) and isinstance(e.value, ValueError)


def test_merge_refuses_what_is_not_a_toolset() -> None:
    with pytest.raises(MindcoreError, match="expected Toolsets, got list"):
        Toolset.merge(_echo("a"), [_spec("b")])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        operator.add(_echo("a"), [_spec("b")])


def _raising(exc: BaseException) -> Toolset:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        raise exc

    return Toolset([(_spec("boom"), handler)])


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (ToolError("13 is unlucky"), "13 is unlucky"),
        (mindcore.errors.MindError("content: must not be blank"), "content: must not be blank"),
        (KeyError("missing"), "KeyError: 'missing'"),
        (RuntimeError("disk on fire"), "RuntimeError: disk on fire"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
    ],
)
def test_call_never_raises(exc: Exception, message: str) -> None:
    assert _raising(exc).call("boom", {}) == {"status": "error", "error": message}


def test_acall() -> None:
    assert asyncio.run(_echo("a").acall("a", {"x": 2})) == {"status": "ok", "tool": "a", "x": 2}
    assert asyncio.run(_raising(OSError("gone")).acall("boom"))["error"] == "OSError: gone"


def test_docstring_examples_run() -> None:
    result = doctest.testmod(mindcore.toolspec)
    assert result.attempted > 0 and result.failed == 0
