"""Argument checks shared by the Python API and the tool handlers.

Each raises :class:`MindError` naming the argument as the caller spells it (``expires_in`` from
Python, ``expiresIn`` from a model); tool handlers turn it into a tool error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from mindcore import validation
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
    return validation.check_text(value, name, max_chars=MAX_TEXT_CHARS, optional=optional, error=MindError)


def check_choice(value: object, name: str, choices: Sequence[T]) -> T:
    """One of ``choices``."""
    return validation.check_choice(value, name, choices, error=MindError)


def check_bool(value: object, name: str) -> bool:
    return validation.check_bool(value, name, error=MindError)


def check_tags(value: object, name: str = "tags") -> list[str]:
    """A list of at most :data:`MAX_TAGS` non-empty tags (duplicates removed, order kept)."""
    return validation.check_tags(value, name, max_tags=MAX_TAGS, max_chars=MAX_TAG_CHARS, error=MindError)


def check_id(value: object, name: str = "id") -> str:
    return validation.check_id(value, name, error=MindError)


def check_duration(value: object, name: str) -> int:
    """A ``<n>d|h|m|s`` duration in milliseconds (see :func:`~mindcore.mind.parse_duration`)."""
    try:
        return parse_duration(value, arg=name)
    except ValueError as e:
        raise MindError(str(e)) from None
