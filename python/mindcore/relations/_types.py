"""The verdict on a pair of memories and the pair itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["RELATIONS", "MemoryPair", "PairVerdict", "Relation"]

Relation = Literal["duplicate", "update", "contradiction", "unrelated"]

#: Every relation, in the order the resolver prompt lists them.
RELATIONS: tuple[Relation, ...] = ("duplicate", "update", "contradiction", "unrelated")


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """How a new memory relates to an existing one, and why.

    ``relation`` is one of :data:`RELATIONS`:

    - ``"duplicate"``: the same fact (paraphrases included): keep the old memory;
    - ``"update"``: the same subject with a new detail or a change over time: store the new one,
      retire the old;
    - ``"contradiction"``: the new text denies the old one or gives a conflicting value (negation,
      number, date, place, name, antonym): the new one supersedes the old;
    - ``"unrelated"``: distinct facts that happen to read alike: store the new one, keep both.

    ``reason`` is a short sentence for history and logs; ``source`` says who decided (``"rules"``
    or ``"llm"``). ``possible`` is set on an ``"unrelated"`` verdict of the conservative
    judgement (:func:`~mindcore.relations.judge_pair`) when the rules suspect another relation
    they are not certain of: both memories are kept, linked as related.
    """

    relation: Relation
    reason: str
    source: Literal["rules", "llm"] = "rules"
    possible: Relation | None = field(default=None, repr=False)

    @property
    def supersedes(self) -> bool:
        """True when the new memory replaces the old one (an update or a contradiction)."""
        return self.relation in ("update", "contradiction")


@dataclass(frozen=True, slots=True)
class MemoryPair:
    """An existing memory (``old``), the one being written (``new``) and, when known, the cosine
    similarity of their embeddings."""

    old: str
    new: str
    similarity: float | None = None
