"""The argument checks every capability shares: ids, text, numbers, flags, choices and tags.

Each check returns the value (normalised where said) or raises ``error`` (by default
:class:`~mindcore.errors.InvalidInputError`, a ``ValueError``) with a message that names the
argument as the caller spelled it and says what was wrong, so a tool handler can hand it to the
model as is. Text is refused when it cannot be stored faithfully: lone surrogates (not encodable
as UTF-8) and NUL characters.

>>> check_int(5, "k", minimum=1)
5
>>> check_int(True, "k")
Traceback (most recent call last):
...
mindcore.errors.InvalidTypeError: k: expected an integer, got bool
>>> check_text("caf\\ud800", "content", max_chars=100)
Traceback (most recent call last):
...
mindcore.errors.InvalidInputError: content: contains a lone surrogate (U+D800) at position 3
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat, SupportsIndex, TypeVar, cast

from mindcore.errors import InvalidInputError, InvalidTypeError

__all__ = [
    "check_bool",
    "check_callable",
    "check_choice",
    "check_id",
    "check_int",
    "check_number",
    "check_storable",
    "check_tags",
    "check_text",
    "describe",
    "text_problem",
]

T = TypeVar("T", bound=str)
F = TypeVar("F", bound=Callable[..., object])
ErrorType = type[Exception]


def _type_error(error: ErrorType) -> ErrorType:
    # A wrong type is also a TypeError for callers that kept the default error class.
    return InvalidTypeError if error is InvalidInputError else error


def describe(value: Any) -> str:
    """How a value's type reads in an error message (``null`` for None, JSON's word for it)."""
    return "null" if value is None else type(value).__name__


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored faithfully, or ``None`` when it can.

    >>> text_problem("fine"), text_problem("a\\x00b")
    (None, 'contains a NUL character at position 1')
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(text[exc.start]):04X}) at position {exc.start}"
    nul = text.find("\x00")
    if nul >= 0:
        return f"contains a NUL character at position {nul}"
    return None


def check_text(
    value: object,
    name: str,
    *,
    max_chars: int,
    optional: bool = False,
    allow_blank: bool = False,
    error: ErrorType = InvalidInputError,
) -> str | None:
    """A str of at most ``max_chars`` characters, not blank unless ``allow_blank``, storable as UTF-8."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _type_error(error)(f"{name}: expected a string, got {describe(value)}")
    if not allow_blank and not value.strip():
        raise error(f"{name}: must not be empty")
    if len(value) > max_chars:
        raise error(f"{name}: is {len(value):,} characters; the limit is {max_chars:,}")
    problem = text_problem(value)
    if problem:
        raise error(f"{name}: {problem}")
    return value


def check_storable(value: Any, name: str, *, error: ErrorType = InvalidInputError) -> None:
    """Every string inside a JSON-like value (keys too) can be stored faithfully (see
    :func:`text_problem`); raises ``error`` naming the path of the first that cannot.

    >>> check_storable({"notes": ["ok", "bad\\x00"]}, "update")
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidInputError: update.notes[1]: contains a NUL character at position 3
    """
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise error(f"{name}: {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable(key, f"{name} key", error=error)
            check_storable(item, f"{name}.{key}", error=error)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_storable(item, f"{name}[{i}]", error=error)


def check_id(value: object, name: str = "id", *, max_chars: int = 200, error: ErrorType = InvalidInputError) -> str:
    """A non-blank id of at most ``max_chars`` characters, returned stripped of surrounding space."""
    if not isinstance(value, str) or not value.strip():
        raise error(f"{name}: expected a non-empty string, got {value!r}")
    if len(value) > max_chars:
        raise error(f"{name}: is {len(value)} characters; ids are at most {max_chars}")
    problem = text_problem(value)
    if problem:
        raise error(f"{name}: {problem}")
    return value.strip()


def check_bool(value: object, name: str, *, error: ErrorType = InvalidInputError) -> bool:
    """``True`` or ``False``, nothing truthy in their place (``"yes"``, ``1``)."""
    if not isinstance(value, bool):
        raise _type_error(error)(f"{name}: expected true or false, got {describe(value)}")
    return value


def check_int(
    value: object,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: ErrorType = InvalidInputError,
) -> int:
    """An integer (numpy integers too; never a bool or a float such as ``2.0``) within the bounds."""
    if isinstance(value, bool) or (not isinstance(value, int) and not _is_numpy_integer(value)):
        raise _type_error(error)(f"{name}: expected an integer, got {describe(value)}")
    number = operator.index(cast(SupportsIndex, value))
    _check_bounds(number, name, minimum, maximum, error)
    return number


def check_number(
    value: object,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    error: ErrorType = InvalidInputError,
) -> float:
    """A finite real number (int or float, never a bool) within the bounds."""
    if isinstance(value, bool) or (not isinstance(value, int | float) and not _is_numpy_number(value)):
        raise _type_error(error)(f"{name}: expected a number, got {describe(value)}")
    number = float(cast(SupportsFloat, value))
    if not math.isfinite(number):
        raise error(f"{name}: must be a finite number, got {number}")
    _check_bounds(number, name, minimum, maximum, error)
    return number


def check_choice(value: object, name: str, choices: Sequence[T], *, error: ErrorType = InvalidInputError) -> T:
    """One of ``choices`` (strings)."""
    for c in choices:
        if value == c and isinstance(value, str):
            return c
    allowed = ", ".join(repr(c) for c in choices)
    raise error(f"{name}: {value!r} is not one of {allowed}")


def check_tags(
    value: object,
    name: str = "tags",
    *,
    max_tags: int,
    max_chars: int,
    error: ErrorType = InvalidInputError,
) -> list[str]:
    """A list of at most ``max_tags`` non-empty tags (duplicates removed, order kept)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _type_error(error)(f"{name}: expected a list of strings, got {describe(value)}")
    if len(value) > max_tags:
        raise error(f"{name}: {len(value)} tags; the limit is {max_tags}")
    out: list[str] = []
    for i, tag in enumerate(value):
        checked = check_text(tag, f"{name}[{i}]", max_chars=max_chars, error=error)
        if checked not in out:
            out.append(checked)  # type: ignore[arg-type]
    return out


def check_callable(value: F, name: str) -> F:
    """Something to call (a clock, a handler)."""
    if not callable(value):
        raise InvalidTypeError(f"{name}: expected a callable, got {describe(value)}")
    return value


def _check_bounds(number: float, name: str, minimum: float | None, maximum: float | None, error: ErrorType) -> None:
    if minimum is not None and number < minimum:
        raise error(f"{name}: must be at least {minimum}, got {number:g}")
    if maximum is not None and number > maximum:
        raise error(f"{name}: must be at most {maximum}, got {number:g}")


def _is_numpy_integer(value: object) -> bool:
    import numpy as np

    return isinstance(value, np.integer)


def _is_numpy_number(value: object) -> bool:
    import numpy as np

    return isinstance(value, np.integer | np.floating)
