"""The shared argument checks (mindcore.validation): types, bounds, storable text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mindcore.errors import InvalidInputError, MindcoreError, MindError
from mindcore.validation import (
    check_bool,
    check_choice,
    check_id,
    check_int,
    check_number,
    check_tags,
    check_text,
    text_problem,
)


@pytest.mark.parametrize("bad", [True, 2.0, "3", None, [1]])
def test_check_int_refuses_what_is_not_an_integer(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="k: expected an integer"):
        check_int(bad, "k")


def test_check_int_bounds_and_numpy() -> None:
    assert check_int(np.int64(7), "k", minimum=1, maximum=10) == 7
    with pytest.raises(InvalidInputError, match="k: must be at least 1, got 0"):
        check_int(0, "k", minimum=1)
    with pytest.raises(InvalidInputError, match="k: must be at most 10, got 11"):
        check_int(11, "k", maximum=10)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_number_refuses_non_finite(bad: float) -> None:
    with pytest.raises(InvalidInputError, match="finite"):
        check_number(bad, "w")


def test_check_number_accepts_ints_floats_numpy() -> None:
    assert check_number(1, "w") == 1.0
    assert check_number(np.float32(0.5), "w", minimum=0, maximum=1) == 0.5
    with pytest.raises(InvalidInputError, match="expected a number, got bool"):
        check_number(False, "w")


def test_check_bool_refuses_truthy_stand_ins() -> None:
    assert check_bool(True, "read_only") is True
    for bad in ("yes", 1, None):
        with pytest.raises(InvalidInputError, match="read_only: expected true or false"):
            check_bool(bad, "read_only")


@pytest.mark.parametrize(
    ("text", "problem"),
    [("a\ud800b", "lone surrogate (U+D800) at position 1"), ("\udfffx", "lone surrogate (U+DFFF) at position 0"),
     ("ab\x00", "NUL character at position 2")],
)
def test_text_that_cannot_be_stored_is_refused(text: str, problem: str) -> None:
    assert text_problem(text) is not None and problem in text_problem(text)  # type: ignore[operator]
    with pytest.raises(InvalidInputError, match="content: contains"):
        check_text(text, "content", max_chars=100)
    with pytest.raises(InvalidInputError, match="contains"):
        check_id(text, "user_id")


def test_check_text_length_blank_optional() -> None:
    assert check_text("🎉 fine", "content", max_chars=10) == "🎉 fine"
    assert check_text(None, "content", max_chars=10, optional=True) is None
    assert check_text("  ", "content", max_chars=10, allow_blank=True) == "  "
    with pytest.raises(InvalidInputError, match="must not be empty"):
        check_text("  ", "content", max_chars=10)
    with pytest.raises(InvalidInputError, match="is 11 characters; the limit is 10"):
        check_text("x" * 11, "content", max_chars=10)


def test_check_id_strips_and_caps() -> None:
    assert check_id("  u1 ", "user_id") == "u1"
    with pytest.raises(InvalidInputError, match="ids are at most 200"):
        check_id("x" * 201, "user_id")


def test_choice_and_tags() -> None:
    assert check_choice("high", "priority", ("low", "high")) == "high"
    with pytest.raises(InvalidInputError, match="'urgent' is not one of 'low', 'high'"):
        check_choice("urgent", "priority", ("low", "high"))
    assert check_tags(["a", "b", "a"], max_tags=5, max_chars=10) == ["a", "b"]
    with pytest.raises(InvalidInputError, match=r"tags\[1\]: must not be empty"):
        check_tags(["a", " "], max_tags=5, max_chars=10)
    with pytest.raises(InvalidInputError, match="expected a list of strings, got str"):
        check_tags("ab", max_tags=5, max_chars=10)


def test_the_error_class_is_the_callers() -> None:
    with pytest.raises(MindError):
        check_int("x", "limit", error=MindError)
    assert issubclass(InvalidInputError, MindcoreError) and issubclass(InvalidInputError, ValueError)
