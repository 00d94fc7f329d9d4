"""`MindConfig` (the seed's options in snake_case) and the duration / due-date parsers."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.policy import SecretPolicy

__all__ = [
    "CAP_CEILING",
    "DURATION_FORMS",
    "MindConfig",
    "TtlDefaults",
    "parse_due_by",
    "parse_duration",
]

#: ``max_goals`` and ``max_pinned_reflections`` are clamped to this, whatever is passed.
CAP_CEILING = 10

#: How the accepted duration forms are quoted in error messages.
DURATION_FORMS = "<n>d, <n>h, <n>m or <n>s (e.g. '30d', '12h', '45m', '90s')"

_UNIT_MS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000}
_DURATION = re.compile(r"^(\d{1,9})([dhms])\Z")
# 1,000 years: anything longer is a typo, and it keeps now + duration far inside int64 ms.
_MAX_DURATION_MS = 1000 * 366 * 86_400_000


def parse_duration(text: object, *, arg: str = "duration") -> int:
    """Milliseconds in a ``<n>d|h|m|s`` duration (``n`` a positive integer).

    Raises ``ValueError`` naming ``arg`` and quoting the accepted forms.

    >>> parse_duration("30d"), parse_duration("12h"), parse_duration(" 90s ")
    (2592000000, 43200000, 90000)
    >>> parse_duration("2 weeks")
    Traceback (most recent call last):
    ...
    ValueError: duration: '2 weeks' is not a duration; use <n>d, <n>h, <n>m or <n>s (e.g. '30d', '12h', '45m', '90s')
    """
    if not isinstance(text, str):
        raise ValueError(f"{arg}: expected a duration string such as '30d', got {type(text).__name__}")
    m = _DURATION.match(text.strip())
    if m is None:
        raise ValueError(f"{arg}: {_quote(text)} is not a duration; use {DURATION_FORMS}")
    n = int(m.group(1))
    if n <= 0:
        raise ValueError(f"{arg}: {_quote(text)} must be a positive duration; use {DURATION_FORMS}")
    ms = n * _UNIT_MS[m.group(2)]
    if ms > _MAX_DURATION_MS:
        raise ValueError(f"{arg}: {_quote(text)} is longer than 1000 years")
    return ms


def parse_due_by(text: object, *, now_ms: int, arg: str = "dueBy") -> str:
    """A goal deadline as stored: an ISO 8601 date (``'2026-06-01'``) or date-time is kept (in
    ISO form); a duration (``'30d'``) becomes the UTC date that far from ``now_ms``.

    >>> parse_due_by("2026-06-01", now_ms=0)
    '2026-06-01'
    >>> parse_due_by("30d", now_ms=0)
    '1970-01-31'
    """
    if not isinstance(text, str):
        raise ValueError(f"{arg}: expected a string, got {type(text).__name__}")
    s = text.strip()
    if _DURATION.match(s):
        ms = parse_duration(s, arg=arg)
        return datetime.fromtimestamp((now_ms + ms) / 1000, tz=UTC).date().isoformat()
    try:
        return date.fromisoformat(s).isoformat() if len(s) <= 10 else datetime.fromisoformat(s).isoformat()
    except ValueError:
        pass
    raise ValueError(
        f"{arg}: {_quote(text)} is neither an ISO 8601 date (e.g. '2026-06-01' or "
        f"'2026-06-01T17:00:00Z') nor a duration ({DURATION_FORMS})"
    )


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


@dataclass(frozen=True)
class TtlDefaults:
    """Default lifetimes as duration strings; ``None`` means no expiry.

    >>> TtlDefaults(belief="60d", reflection="90d").reflection_ms
    7776000000
    """

    belief: str | None = "30d"
    reflection: str | None = None

    def __post_init__(self) -> None:
        for name in ("belief", "reflection"):
            value = getattr(self, name)
            if value is not None:
                parse_duration(value, arg=f"ttl_defaults.{name}")

    @property
    def belief_ms(self) -> int | None:
        return None if self.belief is None else parse_duration(self.belief)

    @property
    def reflection_ms(self) -> int | None:
        return None if self.reflection is None else parse_duration(self.reflection)


def _ttl(value: TtlDefaults | Mapping[str, Any] | None) -> TtlDefaults:
    if value is None:
        return TtlDefaults()
    if isinstance(value, TtlDefaults):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"belief", "reflection"}
        if unknown:
            raise InvalidInputError(f"ttl_defaults: unknown keys {sorted(unknown)} (expected 'belief', 'reflection')")
        return TtlDefaults(**dict(value))
    raise InvalidTypeError(f"ttl_defaults: expected TtlDefaults or a dict, got {type(value).__name__}")


@dataclass(frozen=True)
class MindConfig:
    """Options of a :class:`~mindcore.mind.Mind` (the seed's ``AgentMindConfig``).

    ``max_goals`` and ``max_pinned_reflections`` are clamped to 10 whatever is passed.
    ``token_budget`` bounds the header's beliefs and recent reflections; goals and pinned rules,
    which the seed always shows, get budgets of their own (``goals_token_budget``,
    ``pinned_token_budget``), and no entry renders longer than ``max_entry_chars``: a handful of
    huge goals or pins cannot blow up every prompt. ``secrets`` is the
    :class:`~mindcore.policy.SecretPolicy` every text the mind stores goes through (refuse by
    default).
    ``namespace`` defaults to ``mind/<agent>``. ``ttl_defaults`` takes a :class:`TtlDefaults`
    or a dict such as ``{"belief": "60d", "reflection": "90d"}``.

    >>> cfg = MindConfig(token_budget=400, max_goals=25, ttl_defaults={"reflection": "90d"})
    >>> cfg.max_goals, cfg.ttl_defaults.belief, cfg.ttl_defaults.reflection
    (10, '30d', '90d')
    """

    token_budget: int = 300
    goals_token_budget: int = 600
    pinned_token_budget: int = 600
    max_entry_chars: int = 500
    recency_window_days: float = 7
    max_goals: int = 10
    max_pinned_reflections: int = 10
    deduplication_threshold: float = 0.85
    retrieval_threshold: float = 0.35
    ttl_defaults: TtlDefaults = field(default_factory=TtlDefaults)
    namespace: str | None = None
    secrets: SecretPolicy = field(default_factory=SecretPolicy)

    def __post_init__(self) -> None:
        for name in ("token_budget", "goals_token_budget", "pinned_token_budget"):
            _int_at_least(getattr(self, name), name, 0)
        _int_at_least(self.max_entry_chars, "max_entry_chars", 20)
        for name in ("max_goals", "max_pinned_reflections"):
            value = _int_at_least(getattr(self, name), name, 0)
            object.__setattr__(self, name, min(value, CAP_CEILING))
        w = self.recency_window_days
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
            raise InvalidInputError(f"recency_window_days: expected a positive number, got {w!r}")
        for name in ("deduplication_threshold", "retrieval_threshold"):
            t = getattr(self, name)
            if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 <= t <= 1.0:
                raise InvalidInputError(f"{name}: expected a number in [0, 1], got {t!r}")
            object.__setattr__(self, name, float(t))
        object.__setattr__(self, "ttl_defaults", _ttl(self.ttl_defaults))
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(self.secrets).__name__}")
        ns = self.namespace
        if ns is not None and (not isinstance(ns, str) or not ns.strip()):
            raise InvalidInputError(f"namespace: expected a non-empty str or None, got {ns!r}")

    def namespace_for(self, agent: str) -> str:
        """The storage namespace: ``namespace`` if set, else ``mind/<agent>``."""
        return self.namespace if self.namespace is not None else f"mind/{agent}"


def _int_at_least(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < low:
        raise InvalidInputError(f"{name}: expected an int >= {low}, got {value}")
    return value
