"""`mindcore.kernels.json_values`: one walk in Rust gives the standard library's answers,
``json.dumps(value, ensure_ascii=False, allow_nan=False)`` and ``json.loads`` of that text."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindcore.errors import KernelError, KernelTypeError
from mindcore.kernels.json_values import json_copy, json_dumps


def stdlib_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class Text(str):
    pass


class Number(int):
    def __repr__(self) -> str:  # json writes int.__repr__, not this
        return "Number!"


class Ratio(float):
    def __repr__(self) -> str:
        return "Ratio!"


class Colour(enum.IntEnum):
    RED = 1


class Table(dict):  # type: ignore[type-arg]
    pass


keys = st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none(),
                 st.floats(allow_nan=False, allow_infinity=False))
leaves = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
                   st.text(max_size=6).map(Text), st.integers().map(Number), st.floats(-1e6, 1e6).map(Ratio),
                   st.just(Colour.RED))
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(keys, inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=3).map(Table)),
    max_leaves=16)


@settings(max_examples=400, deadline=None)
@given(values)
def test_dumps_and_copy_are_the_standard_librarys(value: Any) -> None:
    text = stdlib_dumps(value)
    assert json_dumps(value) == text
    copied = json_copy(value)
    expected = json.loads(text)
    assert json.dumps(copied) == json.dumps(expected)  # NaN-free, so == on the text is exact
    assert type(copied) is type(expected)


def test_copies_are_new_containers_with_plain_leaves() -> None:
    inner = [1, 2]
    value = {"a": inner, "t": (Text("x"), Number(5), Ratio(0.5)), 1: None}
    copied = json_copy(value)
    assert copied == {"a": [1, 2], "t": ["x", 5, 0.5], "1": None}
    assert copied["a"] is not inner
    assert [type(v) for v in copied["t"]] == [str, int, float]
    inner.append(3)
    assert copied["a"] == [1, 2]
    assert json_dumps(OrderedDict([("b", 1), ("a", 2)])) == '{"b": 1, "a": 2}'


def test_escapes_and_numbers_are_written_as_json_writes_them() -> None:
    value = ["\"\\\n\r\t\b\f\x00\x1f\x7f é \u2028 😀", 1e16, 1e-5, -0.0, 2**70, True, None]
    assert json_dumps(value) == stdlib_dumps(value)


@pytest.mark.parametrize(("value", "error", "message"), [
    (math.nan, KernelError, "Out of range float values are not JSON compliant"),
    ({"x": [math.inf]}, ValueError, "Out of range float values"),
    ({1.5j: 1}, KernelTypeError, "keys must be str, int, float, bool or None, not complex"),
    ({"s": {1, 2}}, TypeError, "Object of type set is not JSON serializable"),
    ({"m": OrderedDict().keys()}, TypeError, "is not JSON serializable"),
])
def test_what_is_not_json_raises_as_the_standard_library_does(value: Any, error: type[Exception], message: str) -> None:
    for function in (json_dumps, json_copy):
        with pytest.raises(error, match=message):
            function(value)


def test_cycles_and_deep_nesting_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        json_copy(loop)
    deep: Any = "x"
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(KernelError, match="nested deeper than 1000 levels"):
        json_dumps(deep)
    shared = [1]
    assert json_copy([shared, shared]) == [[1], [1]]  # the same list twice is no cycle


def test_lone_surrogates_take_the_standard_librarys_path() -> None:
    value = {"k\ud800": ["\udfff"]}
    assert json_dumps(value) == stdlib_dumps(value)
    assert json_copy(value) == value
