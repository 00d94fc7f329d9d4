"""Budget packing against a straightforward Python reference (both modes, hypothesis)."""

from __future__ import annotations

import doctest
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mindcore.kernels.packing
from mindcore.errors import KernelTypeError
from mindcore.kernels import pack_budget


def ref_pack(
    costs: Sequence[int],
    budget: int,
    sections: Sequence[int] | None = None,
    scores: Sequence[float] | None = None,
    section_budgets: Sequence[int | None] | None = None,
    section_max_items: Sequence[int | None] | None = None,
    mode: str = "first_fit_stop",
) -> list[int]:
    n = len(costs)
    secs = list(sections) if sections is not None else [0] * n
    left = budget
    out: list[int] = []
    for sec in sorted(set(secs)):
        items = [i for i in range(n) if secs[i] == sec]
        if scores is not None:
            items.sort(key=lambda i: (-scores[i], i))
        tok_cap = section_budgets[sec] if section_budgets is not None else None
        sec_left = math.inf if tok_cap is None else tok_cap
        max_items = section_max_items[sec] if section_max_items is not None else None
        item_cap = math.inf if max_items is None else max_items
        taken = 0
        for i in items:
            if taken >= item_cap:
                break
            if costs[i] <= left and costs[i] <= sec_left:
                out.append(i)
                left -= costs[i]
                sec_left -= costs[i]
                taken += 1
            elif mode == "first_fit_stop":
                break
    return out


@st.composite
def packing_cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 25))
    n_sections = draw(st.integers(1, 4))
    case: dict[str, Any] = {
        "costs": draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)),
        "budget": draw(st.integers(0, 150)),
        "mode": draw(st.sampled_from(["first_fit_stop", "best_fit"])),
    }
    if draw(st.booleans()):
        case["sections"] = draw(st.lists(st.integers(0, n_sections - 1), min_size=n, max_size=n))
    if draw(st.booleans()):
        # A small pool of values makes ties common; -0.0 and 0.0 must tie too.
        value = st.sampled_from([-1.5, -0.0, 0.0, 0.25, 1.0, 3.0]) | st.floats(-1e6, 1e6)
        case["scores"] = draw(st.lists(value, min_size=n, max_size=n))
    cap = st.none() | st.integers(0, 60)
    if draw(st.booleans()):
        case["section_budgets"] = draw(st.lists(cap, min_size=n_sections, max_size=n_sections + 2))
    if draw(st.booleans()):
        case["section_max_items"] = draw(st.lists(st.none() | st.integers(0, 5), min_size=n_sections, max_size=n_sections))
    return case


@settings(max_examples=600, deadline=None)
@given(packing_cases())
def test_matches_reference_and_respects_every_budget(case: dict[str, Any]) -> None:
    got = pack_budget(**case)
    assert got == ref_pack(**case)
    costs = case["costs"]
    assert len(set(got)) == len(got)
    assert sum(costs[i] for i in got) <= case["budget"]
    secs = case.get("sections") or [0] * len(costs)
    assert [secs[i] for i in got] == sorted(secs[i] for i in got)
    for s in set(secs):
        chosen = [i for i in got if secs[i] == s]
        if case.get("section_budgets") and case["section_budgets"][s] is not None:
            assert sum(costs[i] for i in chosen) <= case["section_budgets"][s]
        if case.get("section_max_items") and case["section_max_items"][s] is not None:
            assert len(chosen) <= case["section_max_items"][s]


@settings(max_examples=200, deadline=None)
@given(packing_cases())
def test_first_fit_stop_takes_a_prefix_of_each_section_ranking(case: dict[str, Any]) -> None:
    case["mode"] = "first_fit_stop"
    got = pack_budget(**case)
    n = len(case["costs"])
    secs = case.get("sections") or [0] * n
    scores = case.get("scores")
    for s in set(secs):
        ranked = sorted((i for i in range(n) if secs[i] == s), key=lambda i: (-(scores[i] if scores else 0.0), i))
        chosen = [i for i in got if secs[i] == s]
        assert chosen == ranked[: len(chosen)]


def test_modes_on_a_small_case() -> None:
    assert pack_budget([5, 10, 2, 1], budget=8) == [0]
    assert pack_budget([5, 10, 2, 1], budget=8, mode="best_fit") == [0, 2, 3]
    assert pack_budget([0, 0, 3], budget=0) == [0, 1]


def test_agent_mind_header() -> None:
    """Beliefs by confidence then recent reflections share one 300-token budget; a belief that does not
    fit ends the beliefs (no smaller belief jumps the queue) but reflections are still tried."""
    belief_costs, belief_conf = [100, 150, 90, 10], [3.0, 2.0, 1.0, 1.0]
    refl_costs, refl_recency = [20, 40], [2.0, 1.0]
    got = pack_budget(
        belief_costs + refl_costs,
        budget=300,
        sections=[0, 0, 0, 0, 1, 1],
        scores=belief_conf + refl_recency,
    )
    assert got == [0, 1, 4]  # 100 + 150 + 20 = 270; the 90-token belief ends the beliefs; 40 > 300 - 270.


def test_context_assembly_recent_messages_and_tools() -> None:
    """Tools first (section 0), then the most recent messages without gaps (section 1, scored by
    sequence number) under one overall cap, with a token cap on messages."""
    tool_costs = [50, 40]
    msg_costs = [30, 500, 20, 25, 10]  # oldest .. newest
    got = pack_budget(
        tool_costs + msg_costs,
        budget=200,
        sections=[0, 0] + [1] * 5,
        scores=[0.0, 0.0] + [float(seq) for seq in range(5)],
        section_budgets=[None, 60],
    )
    assert got == [0, 1, 6, 5, 4]  # newest first; 10 + 25 + 20 = 55; the 500-token message ends the window.
    assert sorted(i for i in got if i >= 2) == [4, 5, 6]


def test_section_caps_and_sparse_sections() -> None:
    costs = [3, 3, 3, 3, 0]
    got = pack_budget(
        costs,
        budget=100,
        sections=[0, 0, 5, 5, 5],
        section_budgets=[4, None, None, None, None, None, 99],  # longer than needed is fine
        section_max_items=[None, None, None, None, None, 1],
    )
    assert got == [0, 2]


def test_accepts_numpy_inputs() -> None:
    got = pack_budget(
        np.array([5, 1, 2], dtype=np.int64),
        budget=np.int64(6),
        sections=np.array([1, 0, 0]),
        scores=np.array([0.1, 0.2, 0.9], dtype=np.float32),
    )
    assert got == [2, 1]
    assert pack_budget([], budget=0) == []
    assert pack_budget([1, 2], budget=10**30) == [0, 1]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"costs": [1, -2], "budget": 5}, ValueError, r"costs: must be >= 0, item 1"),
        ({"costs": [1], "budget": -1}, ValueError, r"budget: must be >= 0"),
        ({"costs": [1], "budget": 5, "scores": [float("nan")]}, ValueError, r"scores: must be finite"),
        ({"costs": [1], "budget": 5, "scores": [float("inf")]}, ValueError, r"scores: must be finite"),
        ({"costs": [1, 1], "budget": 5, "scores": [1.0]}, ValueError, r"scores: has 1 entries but costs has 2"),
        ({"costs": [1, 1], "budget": 5, "sections": [0]}, ValueError, r"sections: has 1 entries"),
        ({"costs": [1], "budget": 5, "sections": [-1]}, ValueError, r"sections: must be >= 0"),
        ({"costs": [1, 1], "budget": 5, "sections": [0, 2], "section_budgets": [1, 1]}, ValueError,
         r"section_budgets: has 2 entries but sections uses section 2"),
        ({"costs": [1], "budget": 5, "section_budgets": [-1]}, ValueError, r"section_budgets: entry 0 is negative"),
        ({"costs": [1], "budget": 5, "section_max_items": []}, ValueError, r"section_max_items: has 0 entries"),
        ({"costs": [1], "budget": 5, "section_max_items": [-3]}, ValueError, r"section_max_items: entry 0"),
        ({"costs": [1], "budget": 5, "mode": "greedy"}, ValueError, r"mode: must be"),
        ({"costs": "123", "budget": 5}, TypeError, r"costs: expected a sequence of int, got str"),
        ({"costs": [1.5], "budget": 5}, TypeError, r"costs: expected a sequence of int"),
        ({"costs": [1], "budget": 5.0}, TypeError, r"budget: expected int"),
        ({"costs": [1], "budget": 5, "scores": ["high"]}, TypeError, r"scores: expected a sequence of float"),
        ({"costs": [1], "budget": 5, "section_budgets": [1.5]}, TypeError, r"section_budgets: expected"),
    ],
)  # fmt: skip
def test_bad_input_raises_clear_errors(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        pack_budget(**kwargs)


def test_docstring_examples() -> None:
    assert doctest.testmod(mindcore.kernels.packing).failed == 0


@pytest.mark.parametrize("costs", [None, "12", b"12"])
def test_costs_that_are_not_a_sequence_of_ints_raise(costs: Any) -> None:
    with pytest.raises(KernelTypeError, match="costs"):
        pack_budget(costs, budget=10)
