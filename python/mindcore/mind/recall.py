"""``mind_recall`` parameters: the composite score and the keyword match used for goals.

Beliefs and reflections are scored ``0.6·cosine + 0.2·e^(-age_days/30) + 0.2·confidence``
(:data:`RECALL_WEIGHTS`, ranked by the store's one scorer, :func:`mindcore.store.rank`), age
counted from creation and the confidence term stored with each row (see
:func:`mindcore.mind.entries.recall_weight`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mindcore.mind.entries import PRIORITY_RANK, Goal
from mindcore.store.scoring import Weights

__all__ = [
    "RECALL_WEIGHTS", "TAU_MS", "W_CONFIDENCE", "W_RECENCY", "W_SIMILARITY", "goal_matches", "keywords", "match_goals",
]

W_SIMILARITY = 0.6
W_RECENCY = 0.2
W_CONFIDENCE = 0.2
#: Time constant of the recency term: e^(-age/30 days).
TAU_MS = 30 * 86_400_000
#: The weights above as the store's :class:`~mindcore.store.Weights` (the extra term is confidence).
RECALL_WEIGHTS = Weights(similarity=W_SIMILARITY, recency=W_RECENCY, extra=W_CONFIDENCE, tau_ms=TAU_MS)

_WORD = re.compile(r"\w+")
# Words that would make every goal match a question phrased as a sentence.
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with"]
)


def keywords(text: str) -> set[str]:
    """Lower-cased words of ``text`` without common stop words.

    >>> sorted(keywords("What is the status of the Postgres migration?"))
    ['migration', 'postgres', 'status']
    """
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def goal_matches(goal: Goal, words: set[str]) -> bool:
    """Whether any query word occurs as a word of the goal's description, progress notes,
    outcome or tags (case-insensitive)."""
    if not words:
        return False
    text = " ".join([goal.description, *goal.progress, goal.outcome or "", *goal.tags])
    return not words.isdisjoint(_WORD.findall(text.lower()))


def match_goals(
    goals: Iterable[Goal], query: str, *, status: str, tags: Sequence[str] | None, limit: int
) -> list[Goal]:
    """Goals of ``status`` having all ``tags`` and matching ``query`` by keyword, ordered like
    the header (priority, then creation), at most ``limit``.

    >>> g = [Goal("1", "Migrate DB to Postgres", created_at=2), Goal("2", "Write docs", "high", created_at=1)]
    >>> [x.id for x in match_goals(g, "postgres", status="active", tags=None, limit=5)]
    ['1']
    """
    words = keywords(query)
    want = set(tags or ())
    hits = [
        g for g in goals
        if g.status == status and want.issubset(g.tags) and goal_matches(g, words)
    ]
    hits.sort(key=lambda g: (PRIORITY_RANK[g.priority], g.created_at, g.id))
    return hits[:limit]
