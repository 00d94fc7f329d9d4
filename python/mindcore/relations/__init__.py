"""How two statements relate: the same fact, an update, a contradiction, or unrelated.

Long-term memory asks this of a memory being written and a stored one that reads alike; the mind
asks it of a new belief and a held one. :func:`classify_pair` decides by rules over both texts
(negations, numbers, dates, names and places, antonyms, update cues), without a model: a best
guess. :func:`judge_pair` is what a write acts on without a model: only a near-verbatim repeat or an
explicit negation of the same statement is certain; every other pair is kept side by side.
``mindcore.ltm.resolve`` adds the LLM resolver on top.

>>> from mindcore.relations import classify_pair
>>> verdict = classify_pair("The staging server is up", "The staging server is down")
>>> verdict.relation, verdict.supersedes
('contradiction', True)
"""

from __future__ import annotations

from mindcore.relations._rules import (
    JUDGE_DUPLICATE_COSINE,
    classify_pair,
    classify_pairs,
    judge_pair,
    judge_pairs,
)
from mindcore.relations._types import RELATIONS, MemoryPair, PairVerdict, Relation

__all__ = [
    "JUDGE_DUPLICATE_COSINE",
    "RELATIONS",
    "MemoryPair",
    "PairVerdict",
    "Relation",
    "classify_pair",
    "classify_pairs",
    "judge_pair",
    "judge_pairs",
]
