"""Compaction: a history over its token budget made to fit, keeping whole cycles.

A history is the system prompt, then cycles: each begins with an INBOX user message and holds the
assistant and tool messages that answered it. Compaction keeps the newest cycles verbatim and turns
older ones into the agent's own self-summaries, the last non-empty assistant text of each cycle
(no extra LLM call). It only ever moves whole cycles, so an assistant tool call is never separated
from its tool results.

Three strategies, and any callable ``(messages, max_tokens) -> messages``:

- ``"self_summary"``: the newest cycles while they fit in 70% of ``max_tokens`` (never fewer than
  ``min_recent_cycles`` when those fit the budget; the seed documents that rule and its code
  lacks it), one summary line per older cycle.
- ``"semantic"``: as above, plus the ``top_k`` older cycles most similar to ``query`` (default: the
  newest cycle's INBOX message) kept in full; embeddings are computed in one batch.
- ``"layered"``: ``layers=(recent, medium[, group])``: the ``recent`` newest cycles in full, cycles
  up to ``medium`` back as one summary line each, older ones as grouped lines
  (``Cycles 50-80: ...``, with an en dash) of ``group`` cycles each (default ``recent``).

Every strategy's output fits ``max_tokens`` unless the newest cycle alone does not: it is then
kept in full rather than dropped, beside the older cycles' summaries (as the seed keeps them), which
then get the whole budget to themselves. Summaries from an earlier compaction are carried over,
oldest dropped first when the budget is short.

>>> history = [{"role": "system", "content": "You are an agent."}]
>>> for n in range(1, 4):
...     history += [{"role": "user", "content": f"INBOX (1 event, now=2026-02-0{n}T09:00:00.000Z):\\n[plan] " + "x" * 400},
...                 {"role": "assistant", "content": f"Did step {n}."}]
>>> out = compact(history, max_tokens=300, min_recent_cycles=1)
>>> [m["role"] for m in out]
['system', 'user', 'user', 'assistant']
>>> print(out[1]["content"])
[EARLIER CYCLES — self-summaries]
[2026-02-01T09:00:00.000Z] Did step 1.
[2026-02-02T09:00:00.000Z] Did step 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mindcore.blocks import one_line
from mindcore.consciousness.messages import ROLES, check_sequence, is_cycle_start, normalize
from mindcore.consciousness.render import inbox_now
from mindcore.consciousness.tokens import estimate_tokens, message_text
from mindcore.errors import ConsciousnessError
from mindcore.kernels import estimate_message_tokens, hybrid_topk
from mindcore.validation import check_int, describe

__all__ = ["SUMMARY_HEADER", "Compactor", "Strategy", "check_layers", "compact", "cycle_summary", "split_cycles"]

SUMMARY_HEADER = "[EARLIER CYCLES — self-summaries]"
Strategy = Literal["self_summary", "semantic", "layered"]
Compactor = Callable[[list[dict[str, Any]], int], Sequence[Mapping[str, Any]]]
STRATEGIES: tuple[str, ...] = ("self_summary", "semantic", "layered")
RECENT_SHARE = 0.7  # the seed keeps the newest cycles within 70% of the budget
_EMBED_CHARS = 4000  # of a cycle's text, for the semantic strategy
_GROUP_ITEM_CHARS = 160  # of each summary inside a grouped line


@dataclass
class Split:
    """A history cut into its parts: the system prompt (if message 0 is one), the summary lines of
    an earlier compaction, and each cycle as a ``(start, stop)`` range of ``messages``."""

    messages: list[dict[str, Any]]
    system: dict[str, Any] | None
    carried: list[str]
    cycles: list[tuple[int, int]]


def split_cycles(messages: Sequence[Mapping[str, Any]]) -> Split:
    """Cut ``messages`` into system prompt, carried summary lines and cycles. Messages before the
    first cycle other than those two are not part of any cycle (compaction drops them)."""
    msgs = [m if isinstance(m, dict) else dict(m) for m in messages]
    system = msgs[0] if msgs and msgs[0].get("role") == "system" else None
    starts = [i for i, m in enumerate(msgs) if is_cycle_start(m)]
    carried: list[str] = []
    for m in msgs[1 if system else 0: starts[0] if starts else len(msgs)]:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEADER):
            carried += [line for line in content.split("\n")[1:] if line.strip()]
    bounds = [*starts, len(msgs)]
    return Split(msgs, system, carried, [(bounds[i], bounds[i + 1]) for i in range(len(starts))])


def cycle_summary(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """A cycle's self-summary line: its last non-empty assistant text, on one line, prefixed
    ``[<now of its INBOX header>] ``; ``None`` when the cycle has no assistant text."""
    for m in reversed(messages):
        content = m.get("content")
        if m.get("role") == "assistant" and isinstance(content, str) and content.strip():
            text = one_line(content)
            if not text:
                continue
            header = messages[0].get("content") if messages else None
            now = inbox_now(header) if isinstance(header, str) else None
            return f"[{now}] {text}" if now else text
    return None


def compact(
    messages: Sequence[Mapping[str, Any]],
    max_tokens: int,
    strategy: Strategy | Compactor = "self_summary",
    min_recent_cycles: int = 10,
    embedder: Any = None,
    query: str | None = None,
    top_k: int = 5,
    layers: tuple[int, ...] = (10, 50),
    *,
    first_cycle: int = 1,
) -> list[dict[str, Any]]:
    """``messages`` made to fit ``max_tokens`` (their estimate, see :func:`estimate_tokens`), or
    ``messages`` unchanged when they fit already or hold fewer than two cycles. A pure function:
    nothing is stored and ``messages`` is not modified.

    ``min_recent_cycles`` is the rule the seed documents and its code lacks: at least that many of
    the newest cycles stay in full whenever they fit ``max_tokens`` (never beyond it). The seed's
    quirk of dropping a newest cycle that alone is over budget is fixed: it is kept, and the older
    cycles' summaries are kept beside it (within ``max_tokens`` of their own, oldest dropped first).

    ``embedder`` (semantic only; default the bundled model) turns texts into unit vectors.
    ``first_cycle`` is the number of the first cycle in ``messages`` (for the grouped lines of
    the layered strategy). A callable strategy gets ``(messages, max_tokens)``; its result is
    checked like any history and must fit ``max_tokens`` unless its newest cycle alone does not.

    Raises
    ------
    ConsciousnessError
        An unknown strategy, a bad option, or a malformed message.
    """
    max_tokens = check_int(max_tokens, "max_tokens", minimum=1, error=ConsciousnessError)
    min_recent_cycles = check_int(min_recent_cycles, "min_recent_cycles", minimum=1, error=ConsciousnessError)
    top_k = check_int(top_k, "top_k", minimum=0, error=ConsciousnessError)
    first_cycle = check_int(first_cycle, "first_cycle", minimum=1, error=ConsciousnessError)
    layers = check_layers(layers)
    if query is not None and not isinstance(query, str):
        raise ConsciousnessError(f"query: expected a string, got {describe(query)}")
    if not callable(strategy) and strategy not in STRATEGIES:
        raise ConsciousnessError(f"strategy: {strategy!r} is not one of {', '.join(STRATEGIES)} or a callable")
    msgs = _as_history(messages)
    if estimate_tokens(msgs) <= max_tokens:
        return msgs
    split = split_cycles(msgs)
    if callable(strategy):
        return _custom(strategy, msgs, max_tokens)
    if len(split.cycles) < 2:
        return msgs
    plan = _Plan(split, max_tokens)
    if strategy == "self_summary":
        full = plan.recent(min_recent_cycles)
        return plan.build(full, summarized=range(len(split.cycles) - len(full)))
    if strategy == "semantic":
        full = plan.recent(min_recent_cycles)
        older = len(split.cycles) - len(full)
        relevant = plan.relevant(older, top_k, embedder, query, full)
        return plan.build(sorted(relevant) + full, summarized=[i for i in range(older) if i not in relevant])
    recent_n, medium_n, group = layers
    full = plan.recent(recent_n, exactly=True)
    older = len(split.cycles) - len(full)
    medium_from = max(0, len(split.cycles) - max(medium_n, len(full)))
    return plan.build(full, summarized=range(min(medium_from, older), older),
                      grouped=range(min(medium_from, older)), group=group, first_cycle=first_cycle)


def check_layers(layers: object) -> tuple[int, int, int]:
    if not isinstance(layers, tuple | list) or len(layers) not in (2, 3):
        raise ConsciousnessError(f"layers: expected (recent, medium) or (recent, medium, group), got {layers!r}")
    recent = check_int(layers[0], "layers[0]", minimum=1, error=ConsciousnessError)
    medium = check_int(layers[1], "layers[1]", minimum=recent, error=ConsciousnessError)
    group = check_int(layers[2], "layers[2]", minimum=1, error=ConsciousnessError) if len(layers) == 3 else recent
    return recent, medium, group


def _as_history(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as OpenAI dicts; messages already in that form are taken as they are (a
    history the consciousness keeps is checked when saved), others are normalized."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ConsciousnessError(f"messages: expected a list of messages, got {describe(messages)}")
    if all(isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str) for m in messages):
        return list(messages)  # type: ignore[arg-type]
    return normalize(messages)


def _custom(strategy: Compactor, msgs: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    out = normalize(list(strategy([dict(m) for m in msgs], max_tokens)), where="strategy result")
    check_sequence(out, where="strategy result")
    if estimate_tokens(out) > max_tokens:
        split = split_cycles(out)
        alone = ([split.system] if split.system else []) + (out[split.cycles[-1][0]:] if split.cycles else [])
        if not split.cycles or len(out) != len(alone) or estimate_tokens(alone) <= max_tokens:
            raise ConsciousnessError(f"strategy result: {estimate_tokens(out):,} tokens do not fit max_tokens={max_tokens:,}")
    return out


class _Plan:
    """What one compaction keeps, with the token cost of each part."""

    def __init__(self, split: Split, max_tokens: int) -> None:
        self.split = split
        self.max_tokens = max_tokens
        msgs = split.messages
        self.texts = [message_text(m) for m in msgs]
        # Cost of each cycle on its own (the kernel rounds each up, so their sum never
        # underestimates the whole).
        self.costs = [estimate_message_tokens(self.texts[a:b]) for a, b in split.cycles]
        self.system_cost = estimate_message_tokens(self.texts[:1]) if split.system else 0

    def recent(self, at_least: int, *, exactly: bool = False) -> list[int]:
        """Indices of the newest cycles kept in full: while they fit 70% of the budget (with
        ``exactly``: the newest ``at_least`` of them, as far as they fit the budget), at least
        ``at_least`` when the whole budget holds them, and always the newest one."""
        n = len(self.costs)
        room = self.max_tokens - self.system_cost
        kept, used = 0, 0
        soft = int(RECENT_SHARE * self.max_tokens)
        if not exactly:
            while kept < n and used + self.costs[n - 1 - kept] <= soft:
                used += self.costs[n - 1 - kept]
                kept += 1
        while kept < min(at_least, n) and used + self.costs[n - 1 - kept] <= room:
            used += self.costs[n - 1 - kept]
            kept += 1
        return list(range(n - max(kept, 1), n))

    def relevant(self, older: int, top_k: int, embedder: Any, query: str | None, full: list[int]) -> list[int]:
        """Up to ``top_k`` of the ``older`` cycles most similar to ``query`` that fit beside
        ``full``, by decreasing similarity."""
        if older == 0 or top_k == 0:
            return []
        split = self.split
        if query is None:
            query = str(split.messages[split.cycles[-1][0]]["content"])
        texts = ["\n".join(self.texts[a:b])[:_EMBED_CHARS] for a, b in split.cycles[:older]]
        if embedder is None:
            from mindcore.embed import default_embedder

            embedder = default_embedder()
        vectors = np.ascontiguousarray(embedder.embed([query[:_EMBED_CHARS], *texts]), dtype=np.float32)
        top = hybrid_topk(vectors[0], vectors[1:], k=min(older, max(top_k * 4, top_k)))
        room = self.max_tokens - self.system_cost - sum(self.costs[i] for i in full)
        chosen: list[int] = []
        for i in (int(j) for j in top.indices):
            if len(chosen) == top_k:
                break
            if self.costs[i] <= room:
                chosen.append(i)
                room -= self.costs[i]
        return chosen

    def build(self, full: Sequence[int], *, summarized: Sequence[int], grouped: Sequence[int] = (),
              group: int = 10, first_cycle: int = 1) -> list[dict[str, Any]]:
        split = self.split
        msgs = split.messages
        body: list[dict[str, Any]] = []
        for i in sorted(full):
            a, b = split.cycles[i]
            body += msgs[a:b]
        lines = list(split.carried)
        for start in range(0, len(grouped), group):
            chunk = list(grouped[start:start + group])
            line = self._grouped_line(chunk, first_cycle)
            if line:
                lines.append(line)
        for i in summarized:
            a, b = split.cycles[i]
            line = cycle_summary(msgs[a:b])
            if line:
                lines.append(line)
        head = [split.system] if split.system else []
        room = self.max_tokens - self.system_cost - sum(self.costs[i] for i in full)
        if room <= 0 and len(full) == 1:
            # The newest cycle alone is over budget: the output cannot fit whatever is dropped, so
            # the summaries stay beside it (as the seed keeps them), within a budget of their own.
            room = self.max_tokens - self.system_cost
        summary = _fit_summary(lines, room)
        return head + ([summary] if summary else []) + body

    def _grouped_line(self, chunk: list[int], first_cycle: int) -> str | None:
        split = self.split
        items = []
        for i in chunk:
            a, b = split.cycles[i]
            line = cycle_summary(split.messages[a:b])
            if line:
                text = line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line
                items.append(_first_sentence(text)[:_GROUP_ITEM_CHARS])
        if not items:
            return None
        return f"Cycles {first_cycle + chunk[0]}\u2013{first_cycle + chunk[-1]}: " + " | ".join(items)


def _first_sentence(text: str) -> str:
    ends = [at for at in (text.find(". "), text.find("! "), text.find("? ")) if at > 0]
    return text[: min(ends) + 1] if ends else text


def _fit_summary(lines: list[str], room: int) -> dict[str, Any] | None:
    """The summary user message of ``lines`` within ``room`` tokens, the oldest lines dropped
    first when they do not all fit; ``None`` when none fits."""
    if not lines or room <= 0:
        return None

    def message(k: int) -> str:
        return "\n".join([SUMMARY_HEADER, *lines[k:]])

    if estimate_message_tokens([message(0)]) <= room:
        return {"role": "user", "content": message(0)}
    lo, hi = 1, len(lines)  # the fewest lines to drop so the rest fit lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if estimate_message_tokens([message(mid)]) <= room:
            hi = mid
        else:
            lo = mid + 1
    return {"role": "user", "content": message(lo)} if lo < len(lines) else None
