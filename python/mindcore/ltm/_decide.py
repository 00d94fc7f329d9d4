"""What a write does with each new memory: the one decision every write path shares
(``remember``, ``remember_many``, extraction, the ``ltm_remember`` tool, bulk ingest).

A new memory is compared with the memories near it: the stored ones of its scope and the earlier
items of the same write whose vectors have at least ``related_threshold`` cosine with its own
(the nearest ``related_candidates``), unless their contexts attribute them to different speakers
(the contexts' last lines differ: "Caroline:" / "Melanie:"). Each pair is judged on the two texts,
never on their contexts, by a ``judge``: without a model, :func:`mindcore.relations.judge_pairs`,
which acts only on certainty (a near-verbatim repeat, an explicit negation of the same
statement); with a resolver LLM, its verdicts (see :mod:`mindcore.ltm.resolve`). Then, item by
item in order (as if remembered one after the other):

* a duplicate of a live memory is not stored; that memory's last access is bumped;
* otherwise every live memory it updates or contradicts is retired (moved to history, linked to
  the new one), and it is stored; a conversation turn (a memory with a ``context``) never
  retires another turn;
* a pair kept side by side that may be related (an update or a contradiction the judge was not
  certain of) is linked in history (``related``), so both stay and the model sees their dates.

Eviction then runs over what stays live; retired memories count against nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from mindcore.kernels import RowShadow
from mindcore.ltm._repo import HistoryEvent, MemoryRepo, NewMemory
from mindcore.ltm.resolve import MemoryPair, PairVerdict, judge_pairs
from mindcore.ltm.types import Memory, RememberResult
from mindcore.store import new_ids
from mindcore.store.scoring import Weights, rank

if TYPE_CHECKING:
    from mindcore.ltm.config import LongTermMemoryConfig
    from mindcore.ltm.types import Row

__all__ = ["Decision", "Judge", "Ref", "ScopePlan", "Stored", "conservative_judge", "decide", "plan_scope"]

#: A memory a new one is compared with: ``(True, i)`` the scope's ``i``-th stored memory (in
#: :class:`Stored` order), ``(False, j)`` the ``j``-th item of the same write.
Ref = tuple[bool, int]

_COSINE = Weights(similarity=1.0)

#: Verdicts for a write's pairs, one per pair in order.
Judge = Callable[[list[MemoryPair]], list[PairVerdict]]


def conservative_judge(config: LongTermMemoryConfig) -> Judge:
    """The judgement a write acts on without a model (:func:`mindcore.relations.judge_pairs`)."""

    def judge(pairs: list[MemoryPair]) -> list[PairVerdict]:
        return judge_pairs([(p.old, p.new) for p in pairs], similarities=[p.similarity for p in pairs],
                           duplicate_cosine=config.duplicate_threshold)

    return judge


@dataclass(frozen=True, slots=True)
class Stored:
    """The live memories of a scope as a write reads them under the scope's lock: ids and vectors
    aligned, the memories themselves read by position when needed, and their retention scores
    (:func:`mindcore.ltm.pipeline.retention_weights`, aligned with ``ids``) when eviction runs."""

    ids: Sequence[str]
    matrix: np.ndarray
    read: Callable[[Sequence[int]], list[Memory]]
    retention: Callable[[], np.ndarray]
    #: The cache's inverse norms and int8 shadow of ``matrix``, when it keeps them: a large scope
    #: is then judged in a fraction of the time, with the same neighbours.
    inv_norms: np.ndarray | None = None
    shadow: RowShadow | None = None


@dataclass(slots=True)
class Decision:
    """What one new memory does: ``created``, ``duplicate`` of ``twin``, or ``updated`` /
    ``superseded`` (it retires ``retires``: ``(ref, action, reason)``, nearest first); ``related``:
    the memories kept beside it that it may update or contradict, ``(ref, reason)``."""

    action: Literal["created", "duplicate", "updated", "superseded"] = "created"
    reason: str | None = None
    twin: Ref | None = None
    retires: list[tuple[Ref, str, str]] = field(default_factory=list)
    related: list[tuple[Ref, str]] = field(default_factory=list)


def _candidates(vectors: np.ndarray, stored: Stored, *, threshold: float, k: int) -> list[list[tuple[float, Ref]]]:
    """For each new vector, the nearest ``k`` stored memories and earlier new ones at cosine >= ``threshold``."""
    out: list[list[tuple[float, Ref]]] = []
    earlier = np.zeros(len(vectors), dtype=bool)
    for j, vector in enumerate(vectors):
        found: list[tuple[float, Ref]] = []
        if len(stored.ids):
            top = rank(vector, stored.matrix, _COSINE, k=k, min_score=threshold, inv_norms=stored.inv_norms,
                       shadow=stored.shadow)
            found += [(float(s), (True, int(i))) for i, s in zip(top.indices, top.similarities, strict=True)]
        if j:
            earlier[j - 1] = True
            top = rank(vector, vectors, _COSINE, k=k, mask=earlier, min_score=threshold)
            found += [(float(s), (False, int(i))) for i, s in zip(top.indices, top.similarities, strict=True)]
        found.sort(key=lambda f: -f[0])
        out.append(found[:k])
    return out


def _speaker(context: str | None) -> str:
    """Who a memory is attributed to: its context's last line (as :func:`~mindcore.ltm.types.embedded_text` reads it)."""
    return context.strip().rsplit("\n", 1)[-1].strip() if context else ""


def _same_speaker(a: str | None, b: str | None) -> bool:
    first, second = _speaker(a), _speaker(b)
    return not first or not second or first == second


def decide(rows: Sequence[Row], vectors: np.ndarray, stored: Stored, *, config: LongTermMemoryConfig,
           embed: Callable[[list[str]], np.ndarray], judge: Judge) -> tuple[list[Decision], dict[int, Memory]]:
    """One :class:`Decision` per row (``vectors``: what recall embeds for each), and the stored
    memories the decisions name (by position in ``stored``). See the module docstring."""
    cands = _candidates(vectors, stored, threshold=config.related_threshold, k=config.related_candidates)
    positions = sorted({ref[1] for found in cands for _, ref in found if ref[0]})
    known = dict(zip(positions, stored.read(positions), strict=True))

    # The texts' own vectors: what recall embeds, unless a context was embedded with the text.
    def text_of(ref: Ref) -> tuple[str, str | None]:
        if ref[0]:
            memory = known[ref[1]]
            return memory.text, memory.context
        return rows[ref[1]][0], rows[ref[1]][4]

    needed = {ref for j, found in enumerate(cands) if found for ref in [(False, j), *(r for _, r in found)]
              if text_of(ref)[1]}
    order = sorted(needed)
    extra = dict(zip(order, embed([text_of(ref)[0] for ref in order]), strict=True)) if order else {}

    def text_vector(ref: Ref) -> np.ndarray:
        if ref in extra:
            return np.asarray(extra[ref], dtype=np.float32)
        return np.asarray(stored.matrix[ref[1]] if ref[0] else vectors[ref[1]], dtype=np.float32)

    # Two memories attributed to different speakers (their contexts' last lines, e.g. "Caroline:" and
    # "Melanie:") are about different people: neither repeats nor replaces the other.
    cands = [[(c, ref) for c, ref in found if _same_speaker(text_of((False, j))[1], text_of(ref)[1])]
             for j, found in enumerate(cands)]
    pairs: list[MemoryPair] = []
    owners: list[tuple[int, Ref]] = []
    for j, found in enumerate(cands):
        if not found:
            continue
        others = np.stack([text_vector(ref) for _, ref in found]).astype(np.float32)
        top = rank(text_vector((False, j)), others, _COSINE, k=len(found))
        cosine = dict(zip(top.indices.tolist(), top.similarities.tolist(), strict=True))
        for n, (_, ref) in enumerate(found):
            pairs.append(MemoryPair(text_of(ref)[0], rows[j][0], float(cosine.get(n, 0.0))))
            owners.append((j, ref))
    # Two conversation turns are judged without a model: only a verbatim repeat is acted on (a
    # model's "duplicate" must not drop a turn), and neither retires the other (below).
    turns = [bool(rows[j][4]) and bool(text_of(ref)[1]) for j, ref in owners]
    asked = [p for p, turn in zip(pairs, turns, strict=True) if not turn]
    said = [p for p, turn in zip(pairs, turns, strict=True) if turn]
    by_judge = iter(judge(asked) if asked else [])
    by_rules = iter(conservative_judge(config)(said) if said else [])
    verdicts = [next(by_rules) if turn else next(by_judge) for turn in turns]
    judged: dict[int, list[tuple[Ref, PairVerdict]]] = {}
    for (j, ref), verdict, turn in zip(owners, verdicts, turns, strict=True):
        if verdict.supersedes and turn:
            # Two conversation turns: what was said stays said, whatever a later turn says.
            verdict = PairVerdict("unrelated", f"both kept: conversation turns ({verdict.reason})", verdict.source,
                                  possible=verdict.relation)
        judged.setdefault(j, []).append((ref, verdict))

    decisions: list[Decision] = []
    live = np.zeros(len(rows), dtype=bool)  # items of this write stored and not retired so far
    retired: set[int] = set()  # stored positions retired so far
    for j in range(len(rows)):
        alive = [(ref, v) for ref, v in judged.get(j, []) if (ref[1] not in retired if ref[0] else live[ref[1]])]
        decision = Decision()
        for ref, verdict in alive:
            if verdict.relation == "duplicate":
                decision = Decision("duplicate", verdict.reason, twin=ref)
                break
        else:
            for ref, verdict in alive:
                if verdict.supersedes:
                    action = "updated" if verdict.relation == "update" else "superseded"
                    decision.retires.append((ref, action, verdict.reason))
                    if ref[0]:
                        retired.add(ref[1])
                    else:
                        live[ref[1]] = False
                elif verdict.possible is not None:
                    decision.related.append((ref, verdict.reason))
            if decision.retires:
                first = decision.retires[0]
                decision.action = "updated" if first[1] == "updated" else "superseded"
                decision.reason = first[2]
            live[j] = True
        decisions.append(decision)
    return decisions, known


@dataclass(slots=True)
class ScopePlan:
    """What one write does to one scope, before it commits: the memories to insert (with their
    vectors), the stored ids to delete (retired and evicted), the stored memories whose last access
    is bumped, the history events, and how to report each row once the commit says what landed."""

    new: list[Memory]
    vectors: np.ndarray
    delete: list[str]
    touch: list[Memory]
    touch_vectors: np.ndarray
    events: list[HistoryEvent]
    evicted: int
    _rows: list[tuple[str, int | None, Memory | None, Memory | None, str | None]]

    def results(self, written: set[str]) -> list[RememberResult]:
        """One result per row, given the ids the commit wrote."""
        out = []
        for kind, _, memory, replaced, reason in self._rows:
            if kind == "duplicate":
                out.append(RememberResult("duplicate", memory, "duplicate", None, reason))
            elif kind == "evicted":
                out.append(RememberResult("evicted", None))
            elif memory is None or (memory.id not in written and kind != "retired"):
                out.append(RememberResult("secret", None))  # refused by the repository's own check
            else:
                action = "created" if kind == "retired" else kind
                out.append(RememberResult("stored", memory, action, replaced, reason))  # type: ignore[arg-type]
        return out


def plan_scope(rows: Sequence[Row], vectors: np.ndarray, decisions: Sequence[Decision], known: dict[int, Memory],
               stored: Stored, *, now: int, source: str, max_items: int,
               cut: Callable[[np.ndarray, list[Memory], np.ndarray], tuple[np.ndarray, set[int]]]) -> ScopePlan:
    """The :class:`ScopePlan` of ``decisions`` (see :func:`decide`); ``cut(stored retention scores,
    new memories, their vectors)`` picks what eviction drops when over ``max_items`` (0: no cap)."""
    memory_of: dict[int, Memory] = {}
    stored_rows = [j for j, d in enumerate(decisions) if d.action != "duplicate"]
    for j, memory_id in zip(stored_rows, new_ids(len(stored_rows)), strict=True):
        row = rows[j]
        memory_of[j] = MemoryRepo.new_memory(NewMemory(
            text=row.text, kind=row.kind, importance=row.importance,
            created_at=now if row.created_at is None else row.created_at, source=source, context=row.context,
            thread=row.thread, position=row.position), memory_id)

    def memory(ref: Ref) -> Memory:
        return known[ref[1]] if ref[0] else memory_of[ref[1]]

    for j, d in enumerate(decisions):
        if d.related and j in memory_of:
            ids = tuple(dict.fromkeys(memory(ref).id for ref, _ in d.related))
            memory_of[j] = dataclasses.replace(memory_of[j], related=ids)

    events: list[HistoryEvent] = []
    gone: set[int] = set()  # stored positions retired
    retired_rows: set[int] = set()
    bumps: dict[int, Memory] = {}
    for j, d in enumerate(decisions):
        for ref, action, reason in d.retires:
            events.append(HistoryEvent(memory(ref), action, now, reason, successor_id=memory_of[j].id))
            (gone if ref[0] else retired_rows).add(ref[1])
        for ref, reason in d.related:
            events.append(HistoryEvent(memory(ref), "related", now, reason, successor_id=memory_of[j].id))
        if d.twin is not None:
            twin = memory(d.twin)
            events.append(HistoryEvent(twin, "duplicate", now, d.reason, text=rows[j][0]))
            if d.twin[0]:
                created_at = rows[j][3]
                seen = now if created_at is None else created_at
                current = bumps.get(d.twin[1], twin)
                if seen > current.last_accessed_at:
                    bumps[d.twin[1]] = dataclasses.replace(current, last_accessed_at=seen)
    fresh = [j for j in memory_of if j not in retired_rows]
    new = [memory_of[j] for j in fresh]
    new_vectors = vectors[fresh]
    n_alive = len(stored.ids) - len(gone)
    victims: list[int] = []
    dropped: set[int] = set()
    if max_items and n_alive + len(new) > max_items:
        # Only a full scope needs the surviving positions (an O(n) array built per write otherwise).
        alive = np.delete(np.arange(len(stored.ids), dtype=np.int64), np.fromiter(gone, dtype=np.int64, count=len(gone)))
        scores = stored.retention()[alive] if len(alive) else np.empty(0, dtype=np.float64)
        cut_at, dropped = cut(scores, new, new_vectors)
        victims = [int(alive[int(i)]) for i in cut_at]
        for m in stored.read(victims):
            events.append(HistoryEvent(m, "evicted", now, "lowest by recency and importance over max_items"))
    evicted_at = set(victims)
    keep = [n for n in range(len(new)) if n not in dropped]
    touch = [m for p, m in bumps.items() if p not in evicted_at]
    touch_at = [p for p in bumps if p not in evicted_at]
    dim = vectors.shape[1] if vectors.ndim == 2 else stored.matrix.shape[1]

    report: list[tuple[str, int | None, Memory | None, Memory | None, str | None]] = []
    dropped_rows = {fresh[n] for n in dropped}
    for j, d in enumerate(decisions):
        if d.twin is not None:
            twin_memory: Memory | None = memory(d.twin)
            if d.twin[0]:
                twin_memory = None if d.twin[1] in evicted_at else bumps.get(d.twin[1], twin_memory)
            report.append(("duplicate", j, twin_memory, None, d.reason))
        elif j in dropped_rows:
            report.append(("evicted", j, None, None, None))
        else:
            replaced = memory(d.retires[0][0]) if d.retires else None
            kind = "retired" if j in retired_rows else d.action
            report.append((kind, j, memory_of[j], replaced, d.reason))
    return ScopePlan(
        new=[new[n] for n in keep],
        vectors=new_vectors[keep] if len(keep) else np.zeros((0, dim), np.float32),
        delete=[stored.ids[p] for p in sorted(gone | evicted_at)],
        touch=touch,
        touch_vectors=stored.matrix[touch_at] if touch_at else np.zeros((0, dim), np.float32),
        events=events,
        evicted=len(victims) + len(dropped),
        _rows=report,
    )
