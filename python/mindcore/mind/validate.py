"""Argument checks shared by the Python API and the tool handlers.

Each raises :class:`MindError` naming the argument as the caller spells it (``expires_in`` from
Python, ``expiresIn`` from a model); tool handlers turn it into a tool error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from mindcore.errors import MindError
from mindcore.mind.config import parse_duration

__all__ = [
    "MAX_LIMIT",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TEXT_CHARS",
    "MindError",
    "check_bool",
    "check_choice",
    "check_duration",
    "check_id",
    "check_tags",
    "check_text",
]

T = TypeVar("T", bound=str)

#: Longest accepted free text (content, description, progress, outcome, query, relatedTo).
MAX_TEXT_CHARS = 4000
MAX_TAGS = 32
MAX_TAG_CHARS = 100
MAX_LIMIT = 100


def check_text(value: object, name: str, *, optional: bool = False) -> str | None:
    """Free text: a non-blank str of at most :data:`MAX_TEXT_CHARS` characters.

    >>> check_text("  hi ", "content")
    '  hi '
    >>> check_text("x" * 4001, "content")
    Traceback (most recent call last):
    ...
    mindcore.errors.MindError: content: is 4,001 characters; the limit is 4,000
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise MindError(f"{name}: expected a string, got {_kind(value)}")
    if not value.strip():
        raise MindError(f"{name}: must not be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise MindError(f"{name}: is {len(value):,} characters; the limit is {MAX_TEXT_CHARS:,}")
    return value


def check_choice(value: object, name: str, choices: Sequence[T]) -> T:
    """One of ``choices``."""
    for c in choices:
        if value == c and isinstance(value, str):
            return c
    allowed = ", ".join(repr(c) for c in choices)
    raise MindError(f"{name}: {value!r} is not one of {allowed}")


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise MindError(f"{name}: expected true or false, got {_kind(value)}")
    return value


def check_tags(value: object, name: str = "tags") -> list[str]:
    """A list of at most :data:`MAX_TAGS` non-empty tags (duplicates removed, order kept)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise MindError(f"{name}: expected a list of strings, got {_kind(value)}")
    if len(value) > MAX_TAGS:
        raise MindError(f"{name}: {len(value)} tags; the limit is {MAX_TAGS}")
    out: list[str] = []
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            raise MindError(f"{name}[{i}]: expected a string, got {_kind(tag)}")
        if not tag.strip():
            raise MindError(f"{name}[{i}]: must not be empty")
        if len(tag) > MAX_TAG_CHARS:
            raise MindError(f"{name}[{i}]: is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
        if tag not in out:
            out.append(tag)
    return out


def check_id(value: object, name: str = "id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise MindError(f"{name}: expected a non-empty string, got {value!r}")
    if len(value) > 200:
        raise MindError(f"{name}: is {len(value)} characters; ids are at most 200")
    return value.strip()


def check_duration(value: object, name: str) -> int:
    """A ``<n>d|h|m|s`` duration in milliseconds (see :func:`~mindcore.mind.parse_duration`)."""
    try:
        return parse_duration(value, arg=name)
    except ValueError as e:
        raise MindError(str(e)) from None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
