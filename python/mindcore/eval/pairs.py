"""Scoring a memory-pair classifier on a labelled set (``tests/data/ltm_pairs.jsonl`` in a checkout).

The set is JSON Lines: a first line ``{"_header": "..."}`` describing it, then one pair a line with
``id``, ``old``, ``new``, ``label`` (a :data:`~mindcore.ltm.resolve.RELATIONS` value), ``kind``,
``split`` (``dev`` or ``test``) and ``source``.

>>> scores = score_relations(["duplicate", "contradiction", "contradiction"],
...                          ["duplicate", "contradiction", "unrelated"])
>>> scores["accuracy"], scores["contradiction"]
(0.667, {'precision': 1.0, 'recall': 0.5, 'support': 2})
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindcore.errors import MindcoreError
from mindcore.ltm.resolve import RELATIONS

__all__ = ["LabelledPair", "load_pairs", "score_keeping", "score_relations"]


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One labelled pair of the set."""

    id: int
    old: str
    new: str
    label: str
    kind: str
    split: str
    source: str


def load_pairs(path: str | Path) -> list[LabelledPair]:
    """The pairs of a labelled set (its header line skipped); a bad line raises naming its number."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            record = json.loads(line)
            if "_header" in record:
                continue
            try:
                pair = LabelledPair(**{k: record[k] for k in LabelledPair.__slots__})
            except KeyError as exc:
                raise MindcoreError(f"{path}:{n}: missing field {exc}") from None
            if pair.label not in RELATIONS:
                raise MindcoreError(f"{path}:{n}: label {pair.label!r} is not one of {RELATIONS}")
            out.append(pair)
    return out


def score_relations(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """Accuracy and, per relation, precision, recall and support (gold count), rounded to 3 places.

    A relation never predicted has precision 0.0 (not undefined), so a classifier cannot pass a
    precision target by never answering it.
    """
    if len(gold) != len(predicted):
        raise MindcoreError(f"gold has {len(gold)} labels, predicted {len(predicted)}")
    out: dict[str, Any] = {
        "n": len(gold),
        "accuracy": round(sum(g == p for g, p in zip(gold, predicted, strict=True)) / max(1, len(gold)), 3),
    }
    for rel in RELATIONS:
        tp = sum(g == p == rel for g, p in zip(gold, predicted, strict=True))
        said = sum(p == rel for p in predicted)
        support = sum(g == rel for g in gold)
        out[rel] = {"precision": round(tp / said, 3) if said else 0.0,
                    "recall": round(tp / support, 3) if support else 0.0, "support": support}
    return out


def score_keeping(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """What a write judgement keeps and retires, on labelled pairs (both lists hold relations).

    ``compatible_lost``: the share of pairs labelled ``unrelated`` (both statements true) on which
    a fact is lost, because the new one is taken for a duplicate or retires the old one: the
    number that must stay near 0. ``updates_caught`` / ``contradictions_caught``: the share of
    those pairs on which the new memory retires the old one (an update and a contradiction both
    count). ``duplicates_caught``: the share of duplicates not stored twice.

    >>> score_keeping(["unrelated", "update", "contradiction", "duplicate"],
    ...               ["unrelated", "unrelated", "contradiction", "duplicate"])["updates_caught"]
    0.0
    """
    if len(gold) != len(predicted):
        raise MindcoreError(f"gold has {len(gold)} labels, predicted {len(predicted)}")
    retires = ("update", "contradiction")

    def share(label: str, hit: Any) -> float:
        chosen = [p for g, p in zip(gold, predicted, strict=True) if g == label]
        return round(sum(map(hit, chosen)) / len(chosen), 4) if chosen else 0.0

    return {
        "n": len(gold),
        "compatible_lost": share("unrelated", lambda p: p != "unrelated"),
        "updates_caught": share("update", lambda p: p in retires),
        "contradictions_caught": share("contradiction", lambda p: p in retires),
        "duplicates_caught": share("duplicate", lambda p: p == "duplicate"),
        "support": {label: sum(g == label for g in gold) for label in RELATIONS},
    }
