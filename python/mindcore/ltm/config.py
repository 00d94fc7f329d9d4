"""Opt-in and size settings, resolved from arguments and the environment.

Long-term memory is a trust boundary, so it is off unless someone turns it on:

* ``enabled=False`` is a veto, whatever the environment says;
* ``MINDCORE_MEMORY_ENABLED`` = ``0``/``false``/``no``/``off`` is a global veto, even over ``enabled=True``;
* ``enabled=True`` or ``MINDCORE_MEMORY_ENABLED`` = ``1``/``true``/``yes``/``on`` turns it on;
* with neither, it stays off.

>>> resolve_enabled(None, env={"MINDCORE_MEMORY_ENABLED": "yes"})
True
>>> resolve_enabled(True, env={"MINDCORE_MEMORY_ENABLED": "0"})
False
>>> resolve_max_items(None, env={"MINDCORE_MEMORY_MAX_ITEMS": "0"})
0
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.llm.base import check_llm
from mindcore.policy import SecretPolicy
from mindcore.store.scoring import Weights
from mindcore.validation import check_number

__all__ = [
    "DEFAULT_DUPLICATE_THRESHOLD",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_RELATED_THRESHOLD",
    "ENV_ENABLED",
    "ENV_MAX_ITEMS",
    "LongTermMemoryConfig",
    "RecallOptions",
    "RecallWeights",
    "resolve_enabled",
    "resolve_max_items",
]

log = logging.getLogger("mindcore.ltm")

ENV_ENABLED = "MINDCORE_MEMORY_ENABLED"
ENV_MAX_ITEMS = "MINDCORE_MEMORY_MAX_ITEMS"
DEFAULT_MAX_ITEMS = 500
DAY_MS = 86_400_000
#: The most neighbours on each side :class:`RecallOptions` adds to a hit.
MAX_NEIGHBOURS = 8
#: The largest :attr:`RecallOptions.time_boost` (a dated memory scoring up to 5 times its score).
MAX_TIME_BOOST = 4.0
#: Default of :attr:`LongTermMemoryConfig.duplicate_threshold`.
DEFAULT_DUPLICATE_THRESHOLD = 0.92
#: Default of :attr:`LongTermMemoryConfig.related_threshold`. With the bundled embedder, 127 of the
#: 130 contradictions and 61 of the 66 updates of ``tests/data/ltm_pairs.jsonl`` sit at or above it
#: (0.6: 114 and 48; 0.75: 98 and 22), and "Lives in Lyon" / "Moved to Berlin" sits at 0.42: a
#: changed city or name reads far apart to the model. The rules keep the unrelated pairs it lets
#: through apart (11 of the 348 pairs are wrongly judged to replace the old memory at 0.4, 10 at
#: 0.6, nearly all paraphrases taken for updates); each new memory meets at most
#: ``related_candidates`` stored ones.
DEFAULT_RELATED_THRESHOLD = 0.4

if TYPE_CHECKING:
    from mindcore.llm import LLM

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})


def resolve_enabled(enabled: bool | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether long-term memory is on for a session (see the module docstring for the rules).

    An unrecognised value of ``MINDCORE_MEMORY_ENABLED`` is logged and treated as unset: a typo must
    not switch memory on.
    """
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"enabled: expected True, False or None, got {type(enabled).__name__}")
    if enabled is False:
        return False
    raw = (os.environ if env is None else env).get(ENV_ENABLED, "").strip().lower()
    if raw in _FALSY:
        return False
    if enabled is True or raw in _TRUTHY:
        return True
    if raw:
        log.warning("%s=%r is not one of 1/true/yes/on or 0/false/no/off; treating it as unset", ENV_ENABLED, raw)
    return False


def resolve_max_items(max_items: int | None, env: Mapping[str, str] | None = None) -> int:
    """The per-collection cap: the argument, else ``MINDCORE_MEMORY_MAX_ITEMS``, else 500; 0 disables eviction."""
    if max_items is None:
        raw = (os.environ if env is None else env).get(ENV_MAX_ITEMS, "").strip()
        if not raw:
            return DEFAULT_MAX_ITEMS
        try:
            max_items = int(raw)
        except ValueError:
            raise ValueError(f"{ENV_MAX_ITEMS}: expected a non-negative integer, got {raw!r}") from None
        source = ENV_MAX_ITEMS
    else:
        source = "max_items"
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
        raise ValueError(f"{source}: expected a non-negative integer (0 disables eviction), got {max_items!r}")
    return max_items


@dataclass(frozen=True, slots=True)
class RecallWeights:
    """How recall ranks: ``similarity·cosine + recency·2^(-age/half_life) + importance·importance``.

    The defaults are the seed's (0.7 / 0.2 / 0.1, 30-day half-life); age runs from the later of a
    memory's creation and its last recall. ``lexical`` adds ``lexical·bm25/max(bm25)``: BM25 over the
    stored texts (the Rust BM25 kernel), scaled so the query's best lexical match gets 1 (unless that
    match is weak, raw BM25 < 2). ``lexical=0`` is the seed's pure hybrid score. How these defaults
    were chosen, measured on LoCoMo, is in ``BENCHMARKS.md``.
    """

    similarity: float = 0.7
    recency: float = 0.2
    importance: float = 0.1
    half_life_days: float = 30.0
    lexical: float = 1.0

    def __post_init__(self) -> None:
        for name in ("similarity", "recency", "importance", "lexical"):
            check_number(getattr(self, name), name, minimum=0, error=ValueError)
        if not self.half_life_days > 0 or not math.isfinite(self.half_life_days):
            raise ValueError(f"half_life_days: expected a positive number, got {self.half_life_days!r}")

    @property
    def hybrid(self) -> Weights:
        """The similarity, recency and importance weights as the store's :class:`~mindcore.store.Weights`
        (importance is the per-row extra; the lexical term is added on top of it).

        >>> RecallWeights().hybrid
        Weights(similarity=0.7, recency=0.2, extra=0.1, half_life_ms=2592000000.0, tau_ms=None)
        """
        return Weights(similarity=self.similarity, recency=self.recency, extra=self.importance,
                       half_life_ms=self.half_life_days * DAY_MS)


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """What recall adds around its hits.

    ``neighbours``: a memory stored with a ``thread`` (the conversation or session it came from,
    see :meth:`~mindcore.ltm.LongTermMemory.remember`) brings the memories up to this many places
    before and after it in that thread, each scored ``neighbour_decay ** distance`` times the hit's
    score (or its own score, if higher), so the turns around an answer ("Where did you go?" /
    "Lisbon, last May") are recalled together; :meth:`~mindcore.ltm.LongTermMemory.render` shows a
    thread's memories in their order. Memories without a thread are unaffected. ``0`` turns it off.

    ``time_boost``: a query that names a time ("in May 2023", "on October 13, 2023", "in 2022",
    "in June", "last year") favours the memories whose ``created_at`` falls then (pass the date a
    fact describes as ``created_at`` when you store it): each scores ``s + time_boost·|s|`` (the
    default doubles it). A query naming no time ranks exactly as without it; one that does costs a
    second ranking pass over the memories dated then. ``0`` turns it off.

    >>> RecallOptions().neighbours
    1
    >>> RecallOptions(neighbours=-1)
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidInputError: neighbours: expected an int in 0..8, got -1
    """

    neighbours: int = 1
    neighbour_decay: float = 0.8
    time_boost: float = 1.0

    def __post_init__(self) -> None:
        n = self.neighbours
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_NEIGHBOURS:
            raise InvalidInputError(f"neighbours: expected an int in 0..{MAX_NEIGHBOURS}, got {n!r}")
        check_number(self.neighbour_decay, "neighbour_decay", minimum=0, maximum=1)
        check_number(self.time_boost, "time_boost", minimum=0, maximum=MAX_TIME_BOOST)


@dataclass(frozen=True)
class LongTermMemoryConfig:
    """Options of a :class:`~mindcore.ltm.LongTermMemory`; wrong types and values fail here.

    ``max_items``: the most memories a scope keeps (``None``: ``MINDCORE_MEMORY_MAX_ITEMS``, else
    500; 0 disables eviction). ``weights``: how recall ranks (:class:`RecallWeights`);
    ``recall``: what it adds around its hits (:class:`RecallOptions`).
    ``touch_delay``: seconds after a recall before its last-access bumps are written (one write
    for a burst of recalls). ``secrets``: the :class:`~mindcore.policy.SecretPolicy` every write
    path goes through: a refused item is reported as ``secret`` and nothing of it is stored; with
    ``action="redact"`` it is stored with placeholders instead.

    ``related_threshold``: a stored memory whose vector has at least this cosine with a new one's
    is compared with it (up to ``related_candidates`` of them, nearest first). Without a model, a
    write acts only on certainty (:func:`mindcore.relations.judge_pair`): a near-verbatim repeat is
    not stored again, an explicit negation of the same statement retires it, and every other pair
    is kept side by side (linked as ``related`` in history when it may be an update or a
    contradiction). ``duplicate_threshold``: two texts with the same content words, values and
    polarity are duplicates at this cosine of their own vectors (without their contexts).

    ``resolver``: an LLM that judges each write's pairs (duplicate, update, contradiction or
    unrelated, as mem0's NONE / UPDATE / DELETE / ADD) in one call per write, before the scope's
    lock is taken; its update and contradiction verdicts retire the old memory (restorable with
    :meth:`~mindcore.ltm.LongTermMemory.restore`). ``None``: the extractor LLM judges what
    extraction writes, nothing else does; ``False``: no model ever judges. A call that fails,
    times out (``resolver_timeout`` seconds) or answers no usable verdict leaves the conservative
    judgement to decide: it never retires on a model's silence.

    ``query_rewriter``: an LLM that recall asks, once per question, for up to three search
    queries that would find its answer (the names, places, dates and facts it implies); each is
    ranked as the question is and every memory keeps its best score
    (:mod:`mindcore.ltm.rewrite`). Off (``None``) by default. A question that looks like a secret
    is never sent; a call that fails or takes over ``query_rewriter_timeout`` seconds leaves the
    question to rank alone. :func:`mindcore.batch.recall` does not rewrite.

    ``key_writer``: an LLM that :meth:`~mindcore.ltm.LongTermMemory.remember` and ``remember_many``
    ask, once per write, for a short fact line per memory (what it tells, with the names and dates
    its context resolves), kept as the first line of the memory's ``context``: searched, never
    rendered, the text stored as given (:mod:`mindcore.ltm.keys`). Off (``None``) by default. Only
    text the secret policy let through is sent, and a line it refuses is dropped; a call that
    fails or takes over ``key_writer_timeout`` seconds stores the memories without keys.
    Extraction and :func:`mindcore.batch.remember` write no keys.

    >>> LongTermMemoryConfig(max_items=50).max_items
    50
    >>> LongTermMemoryConfig(touch_delay=-1)
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidInputError: touch_delay: must be at least 0, got -1
    """

    max_items: int | None = None
    weights: RecallWeights = field(default_factory=RecallWeights)
    recall: RecallOptions = field(default_factory=RecallOptions)
    touch_delay: float = 2.0
    secrets: SecretPolicy = field(default_factory=SecretPolicy)
    related_threshold: float = DEFAULT_RELATED_THRESHOLD
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD
    related_candidates: int = 3
    resolver: LLM | Literal[False] | None = None
    resolver_timeout: float | None = 60.0
    query_rewriter: LLM | None = None
    query_rewriter_timeout: float | None = 10.0
    key_writer: LLM | None = None
    key_writer_timeout: float | None = 60.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_items", resolve_max_items(self.max_items))
        if not isinstance(self.weights, RecallWeights):
            raise InvalidTypeError(f"weights: expected RecallWeights, got {type(self.weights).__name__}")
        if not isinstance(self.recall, RecallOptions):
            raise InvalidTypeError(f"recall: expected RecallOptions, got {type(self.recall).__name__}")
        object.__setattr__(self, "touch_delay", check_number(self.touch_delay, "touch_delay", minimum=0))
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(self.secrets).__name__}")
        for name in ("related_threshold", "duplicate_threshold"):
            object.__setattr__(self, name, check_number(getattr(self, name), name, minimum=0, maximum=1))
        if self.related_threshold > self.duplicate_threshold:
            raise InvalidInputError(f"related_threshold: {self.related_threshold} is above duplicate_threshold "
                                    f"{self.duplicate_threshold}; lower it or raise duplicate_threshold")
        n = self.related_candidates
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidInputError(f"related_candidates: expected a positive int, got {n!r}")
        if self.resolver is not None and self.resolver is not False:
            check_llm(self.resolver, "resolver")
        for name in ("query_rewriter", "key_writer"):
            if getattr(self, name) is not None:
                check_llm(getattr(self, name), name)
        for name in ("query_rewriter_timeout", "key_writer_timeout"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_number(getattr(self, name), name, minimum=0))
        if self.resolver_timeout is not None:
            object.__setattr__(self, "resolver_timeout", check_number(self.resolver_timeout, "resolver_timeout",
                                                                      minimum=0))
