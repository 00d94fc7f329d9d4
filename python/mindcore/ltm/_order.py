"""The order recalled memories are shown to a model in: as ranked, except that of two related
memories both shown (a newer one kept beside an older one it may update or contradict, see
:attr:`~mindcore.ltm.Memory.related`), the newer comes first: the two trade places, so the
memories shown, and every other one's place, stay as ranked. Recall itself ranks by score
(moving related memories up there cost 2 to 4 points of LoCoMo recall@5); the prompt block
(:func:`mindcore.ltm.render_memories`) applies this order.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["TIE_MARGIN", "by_score_then_id", "newer_first"]

#: Hits fetched past ``k`` so that equal scores at the cut can be ordered by id (more are fetched
#: when the run of equal scores is longer).
TIE_MARGIN = 8


def by_score_then_id(ids: Sequence[str], scores: Sequence[float], k: int, *, complete: bool) -> list[int] | None:
    """Positions of the best ``k`` hits, best first, equal scores in id order: the one order single
    and batch recall share, whatever order the rows are stored in. ``complete``: the hits are every
    row there is (the kernel returned fewer than asked). ``None`` when they are not and end inside
    a run of scores equal to the ``k``-th: ask the kernel for more.

    >>> by_score_then_id(["b", "a", "c"], [0.5, 0.5, 0.1], 2, complete=False)
    [1, 0]
    >>> by_score_then_id(["b", "a"], [0.5, 0.5], 1, complete=False) is None  # a third hit may tie too
    True
    >>> by_score_then_id(["b", "a"], [0.5, 0.5], 1, complete=True)
    [1]
    """
    if not complete and len(ids) > k and scores[-1] == scores[k - 1]:
        return None
    return sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:k]


def newer_first(ids: Sequence[str], related: Sequence[Sequence[str]]) -> list[int]:
    """A permutation of ``range(len(ids))``: the hits by rank, except that a memory ranked below an
    older memory it is related to (``related[i]``: the older ids of hit ``i``) trades places with
    the highest-ranked of them. The hits shown stay the same; only the pair's order changes.

    >>> newer_first(["lyon", "cello", "berlin"], [(), (), ("lyon",)])
    [2, 1, 0]
    >>> newer_first(["a", "b"], [(), ()])
    [0, 1]
    """
    order = list(range(len(ids)))
    if not any(related):
        return order
    pos = {memory_id: p for p, memory_id in enumerate(ids)}
    for _ in range(len(order)):  # a swap can put a memory below another older one: go again
        swapped = False
        for p in range(len(order)):
            i = order[p]
            above = [pos[o] for o in related[i] if o in pos and pos[o] < p]
            if above:
                t = min(above)
                j = order[t]
                order[t], order[p] = i, j
                pos[ids[i]], pos[ids[j]] = t, p
                swapped = True
        if not swapped:
            break
    return order
