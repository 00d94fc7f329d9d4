"""Checks of the arguments every capability's constructor shares (flags, sizes, models, clocks).

Each returns the value or raises :class:`~mindcore.errors.InvalidInputError` (its subclass
:class:`~mindcore.errors.InvalidTypeError` for a wrong type) naming the argument, so a mistake
fails where it was made, not at the first write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from mindcore.errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    from mindcore.embed.base import Embedder
    from mindcore.llm.base import LLM

__all__ = ["expect_bool", "expect_callable", "expect_embedder", "expect_int", "expect_llm", "expect_str"]

F = TypeVar("F", bound=Callable[..., object])


def expect_bool(value: object, name: str) -> bool:
    """``True`` or ``False`` (not a truthy string such as ``"yes"``)."""
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name}: expected True or False, got {_shown(value)}")
    return value


def expect_int(value: object, name: str, *, low: int) -> int:
    """An int (not a bool) of at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name}: expected an int >= {low}, got {_shown(value)}")
    if value < low:
        raise InvalidInputError(f"{name}: expected an int >= {low}, got {value}")
    return value


def expect_str(value: object, name: str) -> str:
    """A str with something other than whitespace in it."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name}: expected a non-empty str, got {_shown(value)}")
    if not value.strip():
        raise InvalidInputError(f"{name}: expected a non-empty str, got {value!r}")
    return value


def expect_callable(value: F, name: str) -> F:
    if not callable(value):
        raise InvalidTypeError(f"{name}: expected a callable, got {_shown(value)}")
    return value


def expect_embedder(value: object, name: str = "embedder") -> Embedder:
    """An :class:`~mindcore.embed.Embedder`. Checked by what is used (``embed``), so small test
    doubles without the async twin still pass."""
    if value is None or not callable(getattr(value, "embed", None)):
        raise InvalidTypeError(
            f"{name}: expected an Embedder (an object with dim and embed(texts)), got {_shown(value)}"
        )
    return value  # type: ignore[return-value]


def expect_llm(value: object, name: str) -> LLM:
    """An :class:`~mindcore.llm.LLM` (an object with ``complete(messages, ...)``)."""
    if value is None or not callable(getattr(value, "complete", None)):
        raise InvalidTypeError(f"{name}: expected an LLM (an object with complete(messages, ...)), got {_shown(value)}")
    return value  # type: ignore[return-value]


def _shown(value: object) -> str:
    # The value itself for the scalars people pass by mistake; the type for everything else.
    if value is None or isinstance(value, bool | int | float | str):
        text = repr(value)
        return text if len(text) <= 40 else type(value).__name__
    return type(value).__name__
