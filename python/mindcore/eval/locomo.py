"""LoCoMo turn-level recall@k for long-term memory (the evaluation behind ``benches/bench_locomo.py``).

Scoring follows the shared data README exactly: every turn (``text``, plus ``blip_caption`` when
present) is one memory stamped with its session date (with, by default, the previous turn of the
session and the speaker as the memory's ``context``: see :func:`evaluate_locomo`); each question with at least one evidence id
that matches a turn is a query; recall = |evidence ∩ top-k| / |evidence| (ids that match no turn are
skipped), averaged over questions, for k = 5, 10, 25, 50, overall, per category and without
category 5. "Now" is the conversation's last session date. Recall does not bump last access here,
so every question sees the same memory.

The data (CC BY-NC 4.0) is read from a path and never shipped with the package.

>>> report = evaluate_locomo(data_dir() / "locomo" / "locomo10.json", embedder=HashEmbedder())  # doctest: +SKIP
>>> report.overall[10]                                            # doctest: +SKIP
0.41
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from mindcore.embed import Embedder
from mindcore.ltm import LongTermMemory, RecallOptions, RecallWeights
from mindcore.store import open as open_store

__all__ = [
    "CATEGORIES",
    "KS",
    "RETRIEVERS",
    "BatchRecall",
    "Conversation",
    "LocomoReport",
    "Question",
    "Retriever",
    "Turn",
    "bm25_rankings",
    "evaluate_locomo",
    "load_locomo",
    "score_rankings",
]

KS: tuple[int, ...] = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    text: str
    timestamp_ms: int
    speaker: str = ""
    # The previous turn of the same session with its speaker, then this turn's speaker
    # ("Melanie: How are you?\nCaroline:"): the memory's context (see LongTermMemory.remember).
    context: str = ""
    # The session ("D3") and the turn's index in it: the memory's thread and position.
    session: str = ""
    position: int = 0


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    evidence: frozenset[str]  # only ids that match a turn
    category: int


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    now_ms: int  # the last session's date


def _parse_date(raw: str) -> int:
    moment = datetime.strptime(raw.strip(), _DATE_FORMAT).replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [image: {caption.strip()}]"
    return text


def _fixed(now_ms: int) -> Callable[[], int]:
    return lambda: now_ms


def load_locomo(path: str | Path) -> list[Conversation]:
    """The conversations of ``locomo10.json`` as turns (with session dates) and resolvable questions."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    conversations = []
    for sample in raw:
        conv = sample["conversation"]
        turns: list[Turn] = []
        session = 1
        last_ms = 0
        while f"session_{session}" in conv:
            when = _parse_date(conv[f"session_{session}_date_time"])
            last_ms = max(last_ms, when)
            previous = ""
            for position, t in enumerate(conv[f"session_{session}"]):
                speaker, text = str(t.get("speaker", "")).strip(), _turn_text(t)
                context = f"{previous}\n{speaker}:" if previous else f"{speaker}:"
                turns.append(Turn(t["dia_id"], text, when, speaker, context if speaker else previous,
                                  f"D{session}", position))
                previous = f"{speaker}: {text}" if speaker else text
            session += 1
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            evidence = frozenset(e for e in qa.get("evidence", []) if e in known)
            if evidence:
                questions.append(Question(str(qa["question"]), evidence, int(qa["category"])))
        conversations.append(Conversation(str(sample["sample_id"]), turns, questions, last_ms))
    return conversations


@dataclass(slots=True)
class LocomoReport:
    """Mean recall@k (0..1) overall, without category 5, and per category; ``n`` questions each."""

    overall: dict[int, float] = field(default_factory=dict)
    without_adversarial: dict[int, float] = field(default_factory=dict)
    by_category: dict[int, dict[int, float]] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: What the writes did with the turns (:func:`evaluate_locomo`): how many were stored, not
    #: stored as duplicates, and retired by a later turn.
    writes: dict[str, int] = field(default_factory=dict)

    def table(self) -> str:
        """A markdown table of recall@k in percent."""
        head = "| questions | n | " + " | ".join(f"R@{k}" for k in KS) + " |"
        rows = [head, "|---|---:|" + "---:|" * len(KS)]

        def row(name: str, n: int, values: dict[int, float]) -> str:
            return f"| {name} | {n} | " + " | ".join(f"{100 * values[k]:.1f}" for k in KS) + " |"

        rows.append(row("all", self.n["all"], self.overall))
        rows.append(row("without cat. 5", self.n["without_adversarial"], self.without_adversarial))
        for cat, values in sorted(self.by_category.items()):
            rows.append(row(f"{cat} {CATEGORIES.get(cat, '?')}", self.n[str(cat)], values))
        return "\n".join(rows)


Ranker = Callable[[Conversation], list[list[str]]]
#: :func:`mindcore.batch.recall`'s signature, as :func:`evaluate_locomo` calls it.
BatchRecall = Callable[..., pa.Table]

class Retriever(NamedTuple):
    """How a LoCoMo row stores and recalls: recall weights, whether each turn is stored with its
    context, and recall options (``None``: long-term memory's default). Every turn is stored with
    its session as its thread and its index there as its position."""

    weights: RecallWeights
    context: bool
    options: RecallOptions | None = None


_ALONE = RecallOptions(neighbours=0)
_UNDATED = RecallOptions(time_boost=0)
_SEED = RecallOptions(neighbours=0, time_boost=0)
#: The long-term memory retrievers the LoCoMo bench compares. ``bm25`` (:func:`bm25_rankings`) is
#: the lexical floor beside them.
RETRIEVERS: dict[str, Retriever] = {
    "mindcore": Retriever(RecallWeights(), True),
    "mindcore-no-neighbours": Retriever(RecallWeights(), True, _ALONE),
    "mindcore-no-time": Retriever(RecallWeights(), True, _UNDATED),
    "mindcore-no-recency": Retriever(RecallWeights(recency=0.0), True),
    "mindcore-bare": Retriever(RecallWeights(), False),
    "mindcore-bare-no-neighbours": Retriever(RecallWeights(), False, _ALONE),
    "mindcore-bare-no-time": Retriever(RecallWeights(), False, _UNDATED),
    "mindcore-seed": Retriever(RecallWeights(lexical=0.0), False, _SEED),
    "mindcore-cosine": Retriever(RecallWeights(similarity=1.0, recency=0.0, importance=0.0, lexical=0.0), False, _SEED),
}


def score_rankings(conversations: Sequence[Conversation], rank: Ranker, *, ks: Sequence[int] = KS) -> LocomoReport:
    """Recall@k of any retriever: ``rank(conversation)`` returns, per question, dia ids best first."""
    import time

    started = time.perf_counter()
    per_question: list[tuple[int, dict[int, float]]] = []
    for conv in conversations:
        rankings = rank(conv)
        if len(rankings) != len(conv.questions):
            raise ValueError(f"{conv.sample_id}: {len(rankings)} rankings for {len(conv.questions)} questions")
        for q, ranked in zip(conv.questions, rankings, strict=True):
            per_question.append(
                (q.category, {k: len(q.evidence.intersection(ranked[:k])) / len(q.evidence) for k in ks})
            )

    def mean(rows: list[dict[int, float]]) -> dict[int, float]:
        return {k: sum(r[k] for r in rows) / len(rows) for k in ks} if rows else dict.fromkeys(ks, 0.0)

    by_cat: dict[int, list[dict[int, float]]] = defaultdict(list)
    for cat, values in per_question:
        by_cat[cat].append(values)
    return LocomoReport(
        overall=mean([v for _, v in per_question]),
        without_adversarial=mean([v for c, v in per_question if c != 5]),
        by_category={c: mean(v) for c, v in sorted(by_cat.items())},
        n={"all": len(per_question), "without_adversarial": sum(1 for c, _ in per_question if c != 5),
           **{str(c): len(v) for c, v in by_cat.items()}},
        seconds=time.perf_counter() - started,
    )


def evaluate_locomo(
    path: str | Path | None = None,
    *,
    embedder: Embedder,
    weights: RecallWeights | None = None,
    ks: Sequence[int] = KS,
    conversations: Sequence[Conversation] | None = None,
    progress: Callable[[str], None] | None = None,
    context: bool = True,
    batch_recall: BatchRecall | None = None,
    dedupe: bool = True,
    plain: bool = False,
    options: RecallOptions | None = None,
) -> LocomoReport:
    """Store each conversation in its own long-term memory (a temporary local store) and score every
    question's recall@k. Give ``path`` to ``locomo10.json`` or already loaded ``conversations``.

    Each turn is stored with ``remember_many`` as one memory: ``text`` is the turn (the memory
    shown to the model), and with ``context`` (the default) the previous turn of the session and the
    speaker are the memory's ``context`` (embedded and indexed, never rendered; see
    :meth:`LongTermMemory.remember`). ``context=False`` stores the bare turn text. With ``dedupe``
    (the default, as users write) the write judges each turn against the ones near it as
    ``remember`` does, so a turn judged a duplicate or retired can no longer be recalled;
    ``dedupe=False`` stores every turn as it is. ``plain=True`` stores ``"{speaker}: {text}"``
    without context, with one plain ``remember()`` call per turn (with ``dedupe``; else one
    ``remember_many(..., dedupe=False)``): the path a user who stores a chat turn by turn takes.
    The report's ``writes`` counts what the writes did.

    Each turn is stored with its session (``"D3"``) as its ``thread`` and its index there as its
    ``position``, so recall brings the turns around a hit (``options``, default long-term memory's
    :class:`RecallOptions`; ``plain`` rows store the text alone, as a user's ``remember()`` does).

    The questions are recalled with ``LongTermMemory.recall_many``, or, given ``batch_recall``
    (:func:`mindcore.batch.recall`), with one batch call per conversation: the same rankings.
    """
    if conversations is None:
        if path is None:
            raise ValueError("give path= or conversations=")
        conversations = load_locomo(path)
    k_max = max(ks)
    with tempfile.TemporaryDirectory(prefix="mindcore-locomo-") as tmp:

        writes: Counter[str] = Counter()

        def rank(conv: Conversation) -> list[list[str]]:
            with open_store(Path(tmp) / conv.sample_id) as store:  # its maintenance ends before the folder goes
                ltm = LongTermMemory(store, user_id=conv.sample_id,
                                     namespace="locomo", embedder=embedder, max_items=0, weights=weights,
                                     clock=_fixed(conv.now_ms))
                if plain and dedupe:
                    results = [ltm.try_remember(f"{t.speaker}: {t.text}", created_at=t.timestamp_ms) for t in conv.turns]
                else:
                    results = ltm.remember_many(
                        [{"text": f"{t.speaker}: {t.text}" if plain else t.text, "created_at": t.timestamp_ms,
                          "context": t.context if context and not plain else None,
                          **({} if plain else {"thread": t.session, "position": t.position})} for t in conv.turns],
                        dedupe=dedupe,
                    )
                live = {m.id for m in ltm.memories()}
                writes.update(str(r.status) for r in results)
                writes["retired"] += sum(r.status == "stored" and r.memory is not None and r.memory.id not in live
                                         for r in results)
                dia_of = {r.memory.id: t.dia_id for r, t in zip(results, conv.turns, strict=True)
                          if r.memory and r.status == "stored"}
                questions = [q.question for q in conv.questions]
                if batch_recall is None:
                    found = [[m.id for m in hits]
                             for hits in ltm.recall_many(questions, k=k_max, touch=False, options=options)]
                else:
                    found = _batch_ids(batch_recall(
                        ltm.store, pa.table({"user_id": [conv.sample_id] * len(questions), "query": questions}),
                        k=k_max, namespace="locomo", embedder=embedder, weights=weights, options=options,
                        now_ms=conv.now_ms,
                    ), len(questions))
                ltm.close()
                if progress:
                    progress(f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions")
                return [[dia_of[i] for i in ids] for ids in found]

        report = score_rankings(conversations, rank, ks=ks)
        report.writes = dict(writes)
        return report


def _batch_ids(hits: pa.Table, n: int) -> list[list[str]]:
    """Memory ids per query, best first, from a :func:`mindcore.batch.recall` result."""
    found: list[list[str]] = [[] for _ in range(n)]
    rows: list[Any] = hits.column("query_index").to_pylist()
    for i, memory_id in zip(rows, hits.column("memory_id").to_pylist(), strict=True):
        found[i].append(str(memory_id))  # rows come sorted by query, then rank
    return found


def bm25_rankings(*, k: int = max(KS), k1: float = 0.9, b: float = 0.4) -> Ranker:
    """The lexical floor: BM25 (the Rust kernel) over each conversation's turns."""
    from mindcore.kernels import BM25Index

    def rank(conv: Conversation) -> list[list[str]]:
        index = BM25Index([t.text for t in conv.turns], k1=k1, b=b)
        return [[conv.turns[int(i)].dia_id for i in index.top_k(q.question, k, normalize=False)[0]]
                for q in conv.questions]

    return rank
