"""`WorkingMemoryConfig`: the options of a :class:`~mindcore.working.WorkingMemory`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.policy import SecretPolicy
from mindcore.validation import check_bool, check_int

__all__ = ["DEFAULT_MAX_TOKENS", "Scope", "WorkingMemoryConfig"]

Scope = Literal["thread", "resource"]
DEFAULT_MAX_TOKENS = 1500


@dataclass(frozen=True)
class WorkingMemoryConfig:
    """Options of a :class:`~mindcore.working.WorkingMemory`; wrong types and values fail here,
    naming the option.

    ``scope``: ``"thread"`` (one state per thread) or ``"resource"`` (one state shared by every
    thread of a resource). ``schema``: a pydantic model class or a JSON Schema dict (the state is
    then a dict, updates deep-merge and must validate); ``None`` for free text. ``template``: the
    text shown while a text state is empty. ``read_only``: updates are refused (and the store need
    not be writable). ``max_tokens``: an update that would make the rendered block longer is
    refused. ``secrets``: the :class:`~mindcore.policy.SecretPolicy` every update goes through
    (refuse by default; ``SecretPolicy(action="redact")`` stores placeholders instead).

    >>> WorkingMemoryConfig(scope="resource", max_tokens=800).max_tokens
    800
    >>> WorkingMemoryConfig(read_only="yes")
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidTypeError: read_only: expected true or false, got str
    """

    scope: Scope = "thread"
    schema: type[Any] | Mapping[str, Any] | None = None
    template: str | None = None
    read_only: bool = False
    max_tokens: int = DEFAULT_MAX_TOKENS
    secrets: SecretPolicy = field(default_factory=SecretPolicy)

    def __post_init__(self) -> None:
        if self.scope not in ("thread", "resource"):
            raise InvalidInputError(f"scope: expected 'thread' or 'resource', got {self.scope!r}")
        if self.template is not None and not isinstance(self.template, str):
            raise InvalidTypeError(f"template: expected str, got {type(self.template).__name__}")
        check_bool(self.read_only, "read_only")
        check_int(self.max_tokens, "max_tokens", minimum=1)
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(self.secrets).__name__}")
