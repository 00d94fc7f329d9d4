"""`ConsciousnessConfig`: the options of a :class:`~mindcore.consciousness.Consciousness`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mindcore.consciousness.compact import STRATEGIES, Compactor, Strategy, check_layers
from mindcore.errors import ConsciousnessError, InvalidTypeError
from mindcore.policy import SecretPolicy
from mindcore.validation import check_int, describe

__all__ = ["ConsciousnessConfig"]


@dataclass(frozen=True)
class ConsciousnessConfig:
    """Options of a :class:`~mindcore.consciousness.Consciousness`; wrong types and values fail
    here, naming the option.

    ``max_tokens``: the history's budget (the seed's estimate); a cycle that ends over it compacts
    the history before it is saved. ``min_recent_cycles``: the newest cycles compaction keeps in
    full when they fit. ``compaction``: ``"self_summary"``, ``"semantic"``, ``"layered"`` or a
    callable ``(messages, max_tokens) -> messages`` (see :func:`~mindcore.consciousness.compact`),
    with ``top_k`` and ``layers`` for the semantic and layered strategies. ``max_message_chars``:
    the longest text one message may hold. ``remembered_events``: how many of the latest event ids
    a snapshot keeps, so an event delivered again long after it was saved is still recognised.
    ``secrets``: the :class:`~mindcore.policy.SecretPolicy` every appended message goes through
    (refuse by default); INBOX messages are always redacted with its rules, since refusing an
    event would block the agent on it forever.

    >>> ConsciousnessConfig(max_tokens=50_000, compaction="layered").compaction
    'layered'
    >>> ConsciousnessConfig(compaction="newest")
    Traceback (most recent call last):
    ...
    mindcore.errors.ConsciousnessError: compaction: 'newest' is not one of self_summary, semantic, layered or a callable
    """

    max_tokens: int = 200_000
    min_recent_cycles: int = 10
    compaction: Strategy | Compactor = "self_summary"
    top_k: int = 5
    layers: tuple[int, ...] = (10, 50)
    max_message_chars: int = 1_000_000
    remembered_events: int = 10_000
    secrets: SecretPolicy = field(default_factory=SecretPolicy)

    def __post_init__(self) -> None:
        check_int(self.max_tokens, "max_tokens", minimum=1, error=ConsciousnessError)
        check_int(self.min_recent_cycles, "min_recent_cycles", minimum=1, error=ConsciousnessError)
        check_int(self.top_k, "top_k", minimum=0, error=ConsciousnessError)
        check_int(self.max_message_chars, "max_message_chars", minimum=1, error=ConsciousnessError)
        check_int(self.remembered_events, "remembered_events", minimum=0, error=ConsciousnessError)
        check_layers(self.layers)
        if not callable(self.compaction) and self.compaction not in STRATEGIES:
            raise ConsciousnessError(
                f"compaction: {self.compaction!r} is not one of {', '.join(STRATEGIES)} or a callable")
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {describe(self.secrets)}")

    @property
    def event_policy(self) -> SecretPolicy:
        """The policy for INBOX messages: this one's rules, redacting."""
        return SecretPolicy(action="redact", scanner=self.secrets.scanner, placeholder=self.secrets.placeholder)


def strategy_name(compaction: Any) -> str:
    """How a strategy reads in ``repr`` and logs."""
    return compaction if isinstance(compaction, str) else getattr(compaction, "__name__", "callable")
