"""The one secret policy every write path of every capability goes through.

A :class:`SecretPolicy` scans text before it is stored and either refuses it (the default: a
:class:`~mindcore.errors.SecretRefusedError` naming the field and the rule that fired, nothing
stored) or stores it with each secret replaced by a placeholder (``action="redact"``). The rules
are the Rust scanner's (:class:`~mindcore.kernels.SecretScanner`): the built-in ones, or a scanner
of your own with extra rules.

>>> policy = SecretPolicy()
>>> policy.screen("the weather is fine", "content")
'the weather is fine'
>>> policy.screen("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "content")
Traceback (most recent call last):
...
mindcore.errors.SecretRefusedError: content: not stored: it looks like a secret (rule github-token); leave credentials out
>>> SecretPolicy(action="redact").screen("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "content")
'token [REDACTED:github-token]'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.kernels.secrets import DEFAULT_PLACEHOLDER, SecretScanner

__all__ = ["SecretAction", "SecretPolicy"]

SecretAction = Literal["refuse", "redact"]


@dataclass(frozen=True)
class SecretPolicy:
    """What happens to text that looks like a secret: ``"refuse"`` it (default) or ``"redact"`` it.

    ``scanner`` defaults to the built-in rules; ``placeholder`` may use ``{rule_id}``.
    """

    action: SecretAction = "refuse"
    scanner: SecretScanner | None = None
    placeholder: str = DEFAULT_PLACEHOLDER

    def __post_init__(self) -> None:
        if self.action not in ("refuse", "redact"):
            raise InvalidInputError(f"action: expected 'refuse' or 'redact', got {self.action!r}")
        if self.scanner is not None and not isinstance(self.scanner, SecretScanner):
            raise InvalidInputError(f"scanner: expected a SecretScanner, got {type(self.scanner).__name__}")

    @property
    def _scanner(self) -> SecretScanner:
        return self.scanner if self.scanner is not None else _builtin_scanner()

    def screen(self, text: str, field: str) -> str:
        """``text`` as it may be stored; raises :class:`SecretRefusedError` when refusing."""
        findings = self._scanner.scan(text)
        if not findings:
            return text
        if self.action == "redact":
            return self._scanner.redact(text, self.placeholder)
        rules = ", ".join(sorted({f.rule_id for f in findings}))
        raise SecretRefusedError(
            f"{field}: not stored: it looks like a secret (rule {rules}); leave credentials out"
        )

    def screen_optional(self, text: str | None, field: str) -> str | None:
        return None if text is None else self.screen(text, field)

    def screen_batch(self, texts: Sequence[str]) -> list[str | None]:
        """Each of ``texts`` as :meth:`screen` would let it be stored, ``None`` where it refuses
        (no exception): one parallel scan of them all, for bulk writes.

        >>> SecretPolicy().screen_batch(["fine", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"])
        ['fine', None]
        """
        items = list(texts)
        out: list[str | None] = list(items)
        flagged = [i for i, hit in enumerate(self._scanner.contains_batch(items)) if hit]
        if flagged and self.action == "redact":
            redacted = self._scanner.redact_batch([items[i] for i in flagged], self.placeholder)
            for i, text in zip(flagged, redacted, strict=True):
                out[i] = text
        else:
            for i in flagged:
                out[i] = None
        return out

    def screen_all(self, texts: list[str], field: str) -> list[str]:
        """Each of ``texts`` screened (``field[i]`` names the one refused)."""
        return [self.screen(t, f"{field}[{i}]") for i, t in enumerate(texts)]

    def screen_value(self, value: Any, field: str) -> Any:
        """Every string inside a JSON-like value (dict keys too) screened; the value rebuilt when
        redacting."""
        if isinstance(value, str):
            return self.screen(value, field)
        if isinstance(value, Mapping):
            return {self.screen(str(k), f"{field} key"): self.screen_value(v, f"{field}.{k}") for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.screen_value(v, f"{field}[{i}]") for i, v in enumerate(value)]
        return value


@functools.cache
def _builtin_scanner() -> SecretScanner:
    return SecretScanner()
