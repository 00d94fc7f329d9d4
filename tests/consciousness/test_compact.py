"""Compaction: every strategy keeps whole cycles, fits the budget unless the newest cycle alone does
not, carries earlier summaries over, and never separates a tool call from its results."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from mindcore.consciousness import compact, estimate_tokens
from mindcore.consciousness.compact import SUMMARY_HEADER, split_cycles
from mindcore.consciousness.messages import check_sequence
from mindcore.embed import HashEmbedder
from mindcore.errors import ConsciousnessError

SYSTEM = {"role": "system", "content": "You are a living agent."}


def cycle(n: int, *, summary: str | None = "", pad: int = 200, calls: int = 1, topic: str = "") -> list[dict[str, Any]]:
    """Cycle ``n``: its INBOX message, ``calls`` tool calls with results, a final text."""
    out: list[dict[str, Any]] = [{"role": "user", "content": (
        f"INBOX (1 event, now=2026-02-{1 + n // 24:02d}T{n % 24:02d}:00:00.000Z):\n"
        f'[Family] Husam (human): "{topic or "message"} {n}"')}]
    for c in range(calls):
        cid = f"tc-{n}-{c}"
        out.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "send_message", "arguments": '{"text": "hi"}'}}]})
        out.append({"role": "tool", "content": "r" * pad, "tool_call_id": cid})
    if summary is not None:
        out.append({"role": "assistant", "content": summary or f"Handled message {n}. {topic}".strip()})
    return out


def history(n: int, **kw: Any) -> list[dict[str, Any]]:
    out = [SYSTEM]
    for i in range(1, n + 1):
        out += cycle(i, **kw)
    return out


def cycles_of(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    split = split_cycles(messages)
    return [messages[a:b] for a, b in split.cycles]


def summary_lines(messages: list[dict[str, Any]]) -> list[str]:
    found = [m for m in messages if m["role"] == "user" and m["content"].startswith(SUMMARY_HEADER)]
    assert len(found) <= 1
    return found[0]["content"].split("\n")[1:] if found else []


def test_under_budget_is_unchanged() -> None:
    h = history(5)
    assert compact(h, max_tokens=estimate_tokens(h)) == h


def test_self_summary_shape_and_rules() -> None:
    h = history(30)
    h[4 * 4]["content"] = ""  # cycle 4's last assistant text is empty: its earlier text counts
    h[4 * 4 - 2]["content"] = "Checked the calendar."  # an assistant message with text and a tool call
    budget = estimate_tokens(h) // 3
    out = compact(h, max_tokens=budget, min_recent_cycles=1)
    assert out[0] == SYSTEM
    assert out[1]["role"] == "user" and out[1]["content"].startswith(SUMMARY_HEADER + "\n")
    kept = cycles_of(out)
    originals = cycles_of(h)
    assert kept == originals[-len(kept):]  # the newest cycles, verbatim
    assert sum(estimate_tokens(c) for c in kept) <= 0.7 * budget
    assert sum(estimate_tokens(c) for c in originals[-len(kept) - 1:]) > 0.7 * budget  # one more would not fit
    lines = summary_lines(out)
    assert lines[0] == "[2026-02-01T01:00:00.000Z] Handled message 1."
    assert "[2026-02-01T04:00:00.000Z] Checked the calendar." in lines
    assert len(lines) == 30 - len(kept)
    assert estimate_tokens(out) <= budget


def test_cycles_without_assistant_text_are_dropped() -> None:
    h = [SYSTEM]
    for i in range(1, 13):
        h += cycle(i, summary=None if i % 2 else "")
    out = compact(h, max_tokens=estimate_tokens(h) // 2, min_recent_cycles=1)
    kept = len(cycles_of(out))
    assert summary_lines(out) == [f"[2026-02-01T{i:02d}:00:00.000Z] Handled message {i}."
                                  for i in range(1, 13 - kept) if i % 2 == 0]


def test_min_recent_cycles_is_the_documented_floor() -> None:
    h = history(20)
    budget = estimate_tokens(h) * 6 // 10  # 70% of it holds about 8 cycles, all of it 11
    assert len(cycles_of(compact(h, max_tokens=budget, min_recent_cycles=1))) < 10
    out = compact(h, max_tokens=budget, min_recent_cycles=10)
    assert len(cycles_of(out)) == 10
    assert estimate_tokens(out) <= budget
    # The budget wins over the floor: it never keeps more than fits.
    tight = compact(h, max_tokens=estimate_tokens(h) // 5, min_recent_cycles=10)
    assert len(cycles_of(tight)) < 10 and estimate_tokens(tight) <= estimate_tokens(h) // 5


def test_earlier_summaries_are_carried_over() -> None:
    h = history(20, pad=1000)
    budget = estimate_tokens(h) // 2
    first = compact(h, max_tokens=budget, min_recent_cycles=1)
    before = summary_lines(first)
    assert before[0].endswith("Handled message 1.")
    grown = first + [m for i in range(21, 41) for m in cycle(i, pad=1000)]
    second = compact(grown, max_tokens=budget, min_recent_cycles=1)
    after = summary_lines(second)
    assert after[: len(before)] == before
    # then the cycles the first compaction had kept in full, now summarized
    assert after[len(before)].endswith(f"Handled message {20 - len(cycles_of(first)) + 1}.")
    assert estimate_tokens(second) <= budget


def test_carried_summaries_give_way_oldest_first() -> None:
    h = history(60, pad=40)
    budget = estimate_tokens(history(12, pad=40))
    out = compact(h, max_tokens=budget, min_recent_cycles=1)
    lines = summary_lines(out)
    assert lines and lines[-1].endswith(f"Handled message {60 - len(cycles_of(out))}.")
    assert not any(line.endswith("Handled message 1.") for line in lines)  # oldest gave way
    assert estimate_tokens(out) <= budget


def test_a_single_cycle_over_budget_is_kept() -> None:
    h = history(3, pad=4000)
    out = compact(h, max_tokens=500)
    assert out[0] == SYSTEM and cycles_of(out) == [cycles_of(h)[-1]]
    one = [SYSTEM, *cycle(1, pad=4000)]
    assert compact(one, max_tokens=100) == one


@pytest.mark.parametrize("strategy", ["self_summary", "semantic", "layered"])
def test_an_over_budget_newest_cycle_keeps_the_older_summaries_beside_it(strategy: str) -> None:
    h = history(4, pad=40) + cycle(5, pad=4000)
    out = compact(h, max_tokens=500, strategy=strategy, embedder=HashEmbedder(dim=64), layers=(1, 10))  # type: ignore[arg-type]
    assert out[0] == SYSTEM and cycles_of(out) == [cycles_of(h)[-1]]
    assert [line.rsplit(" ", 1)[1] for line in summary_lines(out)] == ["1.", "2.", "3.", "4."]
    # Carried over by the next compaction, and the summaries alone stay within the budget.
    grown = out + cycle(6, pad=4000)
    again = compact(grown, max_tokens=500, strategy=strategy, embedder=HashEmbedder(dim=64), layers=(1, 10))  # type: ignore[arg-type]
    assert [line.rsplit(" ", 1)[1] for line in summary_lines(again)] == ["1.", "2.", "3.", "4.", "5."]
    many = history(80, pad=40) + cycle(81, pad=4000)
    lines = summary_lines(compact(many, max_tokens=500, strategy=strategy, embedder=HashEmbedder(dim=64), layers=(1, 100)))  # type: ignore[arg-type]
    assert lines and lines[-1].endswith("Handled message 80.") and not lines[0].endswith("Handled message 1.")
    assert estimate_tokens([SYSTEM, {"role": "user", "content": "\n".join([SUMMARY_HEADER, *lines])}]) <= 500


@pytest.mark.parametrize("strategy", ["self_summary", "semantic", "layered"])
def test_invariants_on_random_histories(strategy: str) -> None:
    rng = random.Random(7)
    emb = HashEmbedder(dim=64)
    for trial in range(40):
        h = [SYSTEM]
        for i in range(1, rng.randint(2, 40)):
            h += cycle(i, pad=rng.randint(0, 900), calls=rng.randint(0, 3),
                       summary=rng.choice([None, "", "Did things. More."]))
        total = estimate_tokens(h)
        budget = rng.randint(max(1, total // 10), total)
        original = copy.deepcopy(h)
        out = compact(h, max_tokens=budget, strategy=strategy, min_recent_cycles=rng.randint(1, 12),  # type: ignore[arg-type]
                      embedder=emb, top_k=rng.randint(0, 4), layers=(rng.randint(1, 5), rng.randint(5, 15)))
        assert h == original, "compact must not modify its input"
        check_sequence(out)  # no tool call separated from its results
        kept = cycles_of(out)
        source = cycles_of(h)
        assert all(c in source for c in kept), f"trial {trial}: a kept cycle was altered"
        assert kept[-1] == source[-1]
        alone = estimate_tokens([SYSTEM, *source[-1]])
        assert estimate_tokens(out) <= budget or (len(kept) == 1 and alone > budget), f"trial {trial}"


def test_semantic_keeps_the_relevant_old_cycle_in_full() -> None:
    h = [SYSTEM]
    for i in range(1, 31):
        topic = "the quarterly revenue report for Ahmad" if i == 3 else f"weather chat number {i}"
        h += cycle(i, topic=topic)
    budget = estimate_tokens(h) // 3
    out = compact(h, max_tokens=budget, strategy="semantic", min_recent_cycles=1, embedder=HashEmbedder(),
                  query="Did you send Ahmad the quarterly revenue report?", top_k=1)
    kept = cycles_of(out)
    assert kept[0] == cycles_of(h)[2]  # cycle 3 in full, before the recent ones
    assert not any("Handled message 3." in line for line in summary_lines(out))
    assert estimate_tokens(out) <= budget
    # Without a query it asks with the newest cycle's INBOX message.
    h += cycle(31, topic="revenue report for Ahmad quarterly")
    out = compact(h, max_tokens=budget, strategy="semantic", min_recent_cycles=1, embedder=HashEmbedder(), top_k=1)
    assert cycles_of(out)[0] == cycles_of(h)[2]


def test_layered_recent_medium_and_grouped() -> None:
    h = history(40, pad=20)
    out = compact(h, max_tokens=estimate_tokens(h) - 1, strategy="layered", layers=(3, 10, 5), first_cycle=101)
    kept = cycles_of(out)
    assert kept == cycles_of(h)[-3:]
    lines = summary_lines(out)
    grouped, single = lines[:6], lines[6:]
    assert grouped[0].startswith("Cycles 101\u2013105: Handled message 1. | Handled message 2.")
    assert grouped[-1].startswith("Cycles 126\u2013130: ")
    assert [s.rsplit(" ", 1)[1] for s in single] == [f"{i}." for i in range(31, 38)]


def test_callable_strategy() -> None:
    h = history(10)

    def keep_last(messages: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
        return [messages[0], *cycles_of(messages)[-1]]

    assert compact(h, max_tokens=estimate_tokens(h) // 2, strategy=keep_last) == [SYSTEM, *cycles_of(h)[-1]]
    with pytest.raises(ConsciousnessError, match="do not fit"):
        compact(h, max_tokens=estimate_tokens(h) // 2, strategy=lambda m, t: m)
    with pytest.raises(ConsciousnessError, match="has no tool result"):
        compact(h, max_tokens=estimate_tokens(h) // 2, strategy=lambda m, t: m[:3])


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"strategy": "newest"}, "strategy: 'newest' is not one of"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"min_recent_cycles": 0}, "min_recent_cycles"),
    ({"layers": (10,)}, "layers"),
    ({"layers": (10, 5)}, "layers[1]"),
    ({"query": 5}, "query: expected a string"),
])
def test_bad_options(kwargs: dict[str, Any], fragment: str) -> None:
    args: dict[str, Any] = {"max_tokens": 100, **kwargs}
    with pytest.raises(ConsciousnessError) as info:
        compact(history(3), **args)
    assert fragment in str(info.value)


def test_content_part_histories_are_converted_first() -> None:
    h = [SYSTEM]
    for i in range(1, 8):
        h += [{"role": "user", "content": f"INBOX (1 event, now=2026-02-01T0{i}:00:00.000Z):\nx"},
              {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"c{i}", "toolName": "f",
                                                 "args": {"q": "y" * 300}}]},
              {"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"c{i}", "result": {"ok": True}}]},
              {"role": "assistant", "content": f"Done {i}."}]
    out = compact(h, max_tokens=estimate_tokens(h) // 2, min_recent_cycles=1)
    check_sequence(out)
    assert out[-2] == {"role": "tool", "content": '{"ok":true}', "tool_call_id": "c7"}
