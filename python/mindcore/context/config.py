"""`ContextConfig`: the options of a :class:`~mindcore.context.Context`."""

from __future__ import annotations

from dataclasses import dataclass, field

from mindcore.context.types import FUSIONS, SEARCH_STRATEGIES, EmbeddingWeights, Fusion, SearchStrategy
from mindcore.errors import ContextError, InvalidTypeError
from mindcore.policy import SecretPolicy
from mindcore.validation import check_choice, check_int

__all__ = ["ContextConfig"]


@dataclass(frozen=True)
class ContextConfig:
    """Options of a :class:`~mindcore.context.Context`; wrong values fail here, naming the option.

    ``default_strategy``: how :meth:`~mindcore.context.Context.discover` and tool recall rank when
    no strategy is given (``"bm25"``, ``"semantic"`` or ``"hybrid"``). ``fusion``: how ``hybrid``
    adds its two scores: ``"weighted"`` (``0.7·semantic + 0.3·bm25``, BM25 min-max normalised over the
    candidates: the agentified server's scores) or ``"zscore"`` (each score standardised over the
    candidates first, so neither side's spread decides; its scores are in standard deviations,
    not 0..1). ``weights``: the default
    :class:`~mindcore.context.EmbeddingWeights` of semantic ranking. ``secrets``: the
    :class:`~mindcore.policy.SecretPolicy` every stored text goes through (session messages, tools,
    turns): refuse by default, ``SecretPolicy(action="redact")`` to store placeholders instead.
    ``max_message_chars`` bounds one message's content (and its tool calls as JSON),
    ``max_messages`` the messages of one append, ``max_query_chars`` a discovery query (a recall
    query, the last user message, is cut to it).

    >>> ContextConfig(default_strategy="hybrid").default_strategy
    'hybrid'
    >>> ContextConfig(default_strategy="fuzzy")
    Traceback (most recent call last):
    ...
    mindcore.errors.ContextError: default_strategy: 'fuzzy' is not one of 'bm25', 'semantic', 'hybrid'
    """

    default_strategy: SearchStrategy = "bm25"
    fusion: Fusion = "weighted"
    weights: EmbeddingWeights = field(default_factory=EmbeddingWeights)
    secrets: SecretPolicy = field(default_factory=SecretPolicy)
    max_message_chars: int = 1_000_000
    max_messages: int = 10_000
    max_query_chars: int = 100_000

    def __post_init__(self) -> None:
        check_choice(self.default_strategy, "default_strategy", SEARCH_STRATEGIES, error=ContextError)
        check_choice(self.fusion, "fusion", FUSIONS, error=ContextError)
        if not isinstance(self.weights, EmbeddingWeights):
            raise InvalidTypeError(f"weights: expected EmbeddingWeights, got {type(self.weights).__name__}")
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(self.secrets).__name__}")
        check_int(self.max_message_chars, "max_message_chars", minimum=1)
        check_int(self.max_messages, "max_messages", minimum=1)
        check_int(self.max_query_chars, "max_query_chars", minimum=1)
