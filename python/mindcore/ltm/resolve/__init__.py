"""Is a new memory a duplicate, an update, a contradiction of a stored one, or unrelated?

When a memory being written is close to a stored one, :func:`judge_pair` decides what a write may
do without a model (only a near-verbatim repeat or an explicit negation of the same statement is
acted on), :func:`classify_pair` gives the rules' best guess (negations, numbers, dates, names and
places, antonyms, update cues), and :func:`resolve_pairs` asks an LLM about a batch of pairs in
one call, falling back to :func:`judge_pair` for any pair its reply does not settle. The rules and the verdict types live in
:mod:`mindcore.relations` (the mind uses them too) and are re-exported here.

>>> from mindcore.ltm.resolve import classify_pair
>>> verdict = classify_pair("Lives in Lyon", "Lives in Berlin")
>>> verdict.relation, verdict.supersedes, verdict.reason
('contradiction', True, 'changed name or place lyon -> berlin')
"""

from __future__ import annotations

from mindcore.ltm.resolve._llm import (
    MAX_PAIRS_PER_CALL,
    RESOLVER_SYSTEM_PROMPT,
    aresolve_pairs,
    build_resolver_messages,
    parse_verdicts,
    resolve_pairs,
)
from mindcore.relations import (
    RELATIONS,
    MemoryPair,
    PairVerdict,
    Relation,
    classify_pair,
    classify_pairs,
    judge_pair,
    judge_pairs,
)

__all__ = [
    "MAX_PAIRS_PER_CALL",
    "RELATIONS",
    "RESOLVER_SYSTEM_PROMPT",
    "MemoryPair",
    "PairVerdict",
    "Relation",
    "aresolve_pairs",
    "build_resolver_messages",
    "classify_pair",
    "classify_pairs",
    "judge_pair",
    "judge_pairs",
    "parse_verdicts",
    "resolve_pairs",
]
