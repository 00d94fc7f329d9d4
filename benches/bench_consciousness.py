"""Consciousness: what a cycle's save costs, what compaction costs, and what each compaction
strategy keeps (a quality replay of LoCoMo).

Speed (targets of issue 10, release build):

* ``save``: one whole cycle (refresh the system prompt, the INBOX message, append one cycle's
  assistant/tool messages, save) on a history of 10k and 100k tokens (target p50 <= 10 ms, and
  independent of the history's length). Baselines in the same run, as the seed saves: the whole
  history as one JSON document, rewritten on every save, ``json-row`` into a row of a LanceDB
  table of the same store (the seed upserts a database row) and ``json-file`` into a file
  (written to a temporary file, then renamed).
* ``compact``: :func:`mindcore.consciousness.compact` of a 200k-token history (about 660 cycles
  of 300 tokens) to a 150k budget, per strategy (targets p50 <= 20 ms for ``self_summary``,
  <= 50 ms for ``layered``; ``semantic`` with embedding excluded: vectors come from a cache
  filled before the timed rounds).

Quality (``locomo``): each LoCoMo conversation replayed as an agent's history, one session per
cycle (the session's turns are the INBOX events; the session's last turn, as the agent's final
text, is the cycle's self-summary), compacted to 25% of its full size with each strategy
(``min_recent_cycles=3``, ``top_k=5``, ``layers=(3, 10, 5)``; semantic asks with the question,
bundled embedder). For every question, each evidence turn is ``full`` (still in a kept cycle),
``summary`` (only in a summary line) or ``gone``; the report gives the mean share per question.

Measured (release build, Intel Xeon, 2 cores shared with other work, load ~3; p50): save 5.3 ms
at 10k tokens and 7.4 ms at 100k (json-row 8.7 / 12.7 ms, json-file 2.5 / 8.0 ms); what is left
of a save is the LanceDB commit. Compaction of 200k tokens: self_summary 7.8 ms, layered 9.2 ms,
semantic 8.5 ms. LoCoMo (1,977 questions; share of evidence turns full / summary / gone):
self_summary .166 / .007 / .826, semantic .414 / .002 / .585, layered .131 / .007 / .862. A
summary keeps only a session's last turn, so evidence survives mostly in full cycles, and the
semantic strategy keeps 2.5x as much of it.

    pytest benches/bench_consciousness.py --benchmark-only -q -s
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.consciousness import Consciousness, compact, estimate_tokens
from mindcore.embed import HashEmbedder, default_embedder
from mindcore.eval import data_dir
from mindcore.eval.locomo import Conversation, load_locomo

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
SAVE_SIZES = [10_000, 100_000]
SYSTEM = "You are a living agent with continuous consciousness. " * 20


def _cycle(n: int, pad: int = 600) -> list[dict[str, Any]]:
    """One cycle of about ``pad / 4 + 80`` tokens: INBOX, a tool call and its result, a final text."""
    return [
        {"role": "user", "content": f'INBOX (1 event, now=2026-02-19T09:00:00.000Z):\n[Family] Husam (human): "m{n}"'},
        {"role": "assistant", "content": "", "tool_calls": [{"id": f"tc-{n}", "type": "function", "function": {
            "name": "send_message", "arguments": json.dumps({"text": f"reply {n}"})}}]},
        {"role": "tool", "content": json.dumps({"success": True, "log": "x" * pad}), "tool_call_id": f"tc-{n}"},
        {"role": "assistant", "content": f"Replied to Husam about message {n}. Nothing pending."},
    ]


def _history(tokens: int, pad: int = 600) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    n = 0
    while estimate_tokens(out) < tokens:
        n += 1
        out += _cycle(n, pad)
    return out


def _print_machine() -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    print(f"\nCPU: {cpu or platform.machine()}, {os.cpu_count()} cores, mindcore {mindcore.__version__}")


# -- save -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SAVE_SIZES, ids=size_label)
@pytest.mark.parametrize("impl", ["mindcore", "json-row", "json-file"])
def test_save(benchmark: Any, tmp_path: Path, size: int, impl: str) -> None:
    _print_machine()
    history = _history(size)
    store = mindcore.open(tmp_path / "store")
    n = iter(range(10**6, 10**9))
    if impl == "mindcore":
        c = Consciousness(store, agent="bench", max_tokens=10 * size)
        while c.token_estimate < size:  # the history, cycle by cycle
            with c.cycle(system_prompt=SYSTEM) as cycle:
                cycle.append(_cycle(next(n))[1:])

        def save() -> None:
            with c.cycle(system_prompt=SYSTEM) as cycle:
                cycle.append(_cycle(next(n))[1:])
    elif impl == "json-row":
        table = store.table("agent_consciousness", {"messages": pa.string(), "cycle_count": pa.int64()})
        state = {"messages": list(history)}

        def save() -> None:
            state["messages"] += _cycle(next(n))
            table.upsert("bench", [{"id": "bench", "messages": json.dumps(state["messages"]),
                                    "cycle_count": len(state["messages"])}])
    else:
        path = tmp_path / "consciousness.json"
        state = {"messages": list(history)}

        def save() -> None:
            state["messages"] += _cycle(next(n))
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state["messages"]))
            os.replace(tmp, path)

    finish(benchmark, impl, f"consciousness: save a cycle, {size_label(size)}-token history")
    benchmark.pedantic(save, rounds=20 if QUICK else 100, warmup_rounds=3)
    if impl == "mindcore":
        assert c.token_estimate >= size
    store.close()


# -- compact ----------------------------------------------------------------------------------------


class _CachedVectors:
    """An embedder that embeds each text once: the timed rounds read vectors from memory."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim, self.model_id = inner, inner.dim, inner.model_id
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])


@pytest.fixture(scope="module")
def big_history() -> list[dict[str, Any]]:
    return _history(200_000, pad=900)


@pytest.mark.parametrize("strategy", ["self_summary", "layered", "semantic"])
def test_compact(benchmark: Any, big_history: list[dict[str, Any]], strategy: str) -> None:
    _print_machine()
    embedder = _CachedVectors(HashEmbedder())
    out = compact(big_history, 150_000, strategy, embedder=embedder)  # type: ignore[arg-type]
    assert estimate_tokens(out) <= 150_000 < estimate_tokens(big_history)
    finish(benchmark, strategy, "consciousness: compact a 200k-token history")
    benchmark.pedantic(lambda: compact(big_history, 150_000, strategy, embedder=embedder),  # type: ignore[arg-type]
                       rounds=10 if QUICK else 50, warmup_rounds=2)


# -- quality: LoCoMo ---------------------------------------------------------------------------------


def _replay(conv: Conversation) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The conversation as an agent's history, and each turn's tagged text."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a participant of this conversation."}]
    tagged: dict[str, str] = {}
    sessions: dict[int, list[Any]] = {}
    for turn in conv.turns:
        sessions.setdefault(turn.timestamp_ms, []).append(turn)
    from mindcore.consciousness.render import inbox_message

    for when, turns in sorted(sessions.items()):
        now = datetime.fromtimestamp(when / 1000, tz=UTC)
        events = []
        for t in turns:
            tagged[t.dia_id] = f"({t.dia_id}) {t.text}"
            events.append({"kind": "space_message", "space": "Chat", "sender": t.speaker, "sender_type": "human",
                           "text": tagged[t.dia_id]})
        history.append(inbox_message(events[:-1], now))
        history.append({"role": "assistant", "content": tagged[turns[-1].dia_id]})
    return history, tagged


def _status(out: list[dict[str, Any]], tag: str) -> str:
    for m in out:
        if tag in m["content"]:
            return "summary" if m["content"].startswith("[EARLIER CYCLES") else "full"
    return "gone"


@pytest.fixture(scope="module")
def locomo() -> list[Conversation]:
    path = data_dir() / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip(f"LoCoMo data not found at {path}")
    return load_locomo(path)[: 2 if QUICK else None]


@pytest.mark.parametrize("strategy", ["self_summary", "semantic", "layered"])
def test_locomo_what_compaction_keeps(benchmark: Any, locomo: list[Conversation], strategy: str) -> None:
    embedder = _CachedVectors(default_embedder()) if strategy == "semantic" else None
    finish(benchmark, strategy, "consciousness: locomo evidence kept at 25% budget")

    def run() -> dict[str, float]:
        shares = {"full": 0.0, "summary": 0.0, "gone": 0.0}
        n = 0
        for conv in locomo:
            history, _ = _replay(conv)
            budget = estimate_tokens(history) // 4
            plain = None
            if strategy != "semantic":
                plain = compact(history, budget, strategy, min_recent_cycles=3, layers=(3, 10, 5))  # type: ignore[arg-type]
            for q in conv.questions:
                out = plain if plain is not None else compact(
                    history, budget, "semantic", min_recent_cycles=3, embedder=embedder, query=q.question, top_k=5)
                assert estimate_tokens(out) <= budget
                states = [_status(out, f"({d}) ") for d in q.evidence]
                for s in states:
                    shares[s] += 1 / len(states)
                n += 1
        return {k: v / n for k, v in shares.items()} | {"questions": n}

    result = benchmark.pedantic(run, rounds=1, iterations=1)
    for key, value in result.items():
        benchmark.extra_info[key] = round(value, 3)
    print(f"\nlocomo {strategy}: " + "  ".join(f"{k} {v:.3f}" for k, v in result.items()))
