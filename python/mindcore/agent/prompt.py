"""A turn's prompt under a token budget: the instructions and the user's message always, then the
Mind header, the working memory, the recalled memories and the conversation so far, as many as fit
(memories and history are what shrink)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindcore.kernels import count_tokens, estimate_tokens, pack_budget

__all__ = ["MESSAGE_OVERHEAD", "Prompt", "PromptParts", "build_prompt", "message_tokens"]

#: Tokens a chat message costs beyond its text (role and framing), as OpenAI's guidance counts.
MESSAGE_OVERHEAD = 4


@dataclass(frozen=True)
class PromptParts:
    """What a turn's prompt is made of, before the budget: each block already rendered by its
    capability (``""`` when it has nothing), ``memories`` one rendered line each with
    ``render_memories`` to wrap the kept ones, ``history`` the earlier messages, oldest first."""

    instructions: str
    message: str
    mind_header: str = ""
    working_memory: str = ""
    memories: Sequence[Any] = ()
    memory_lines: Sequence[str] = ()
    render_memories: Callable[[Sequence[Any]], str] | None = None
    history: Sequence[dict[str, Any]] = ()


@dataclass(frozen=True)
class Prompt:
    """The messages to send (system prompt, history, the user's message), their token count and
    how many items of each part the budget left out."""

    messages: list[dict[str, Any]]
    tokens: int
    dropped: dict[str, int] = field(default_factory=dict)


def message_tokens(messages: Sequence[dict[str, Any]]) -> list[int]:
    """Each message's estimated tokens: its text and tool calls at a token per 4 UTF-8 bytes (the
    rule context assembly budgets history with; no tokenizer pass over a long history on every
    turn), plus the per-message overhead."""
    texts = []
    for message in messages:
        text = str(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            text += str(function.get("name", "")) + str(function.get("arguments", ""))
        texts.append(text)
    return [n + MESSAGE_OVERHEAD for n in estimate_tokens(texts, rule="bytes")] if texts else []


def build_prompt(parts: PromptParts, budget: int) -> Prompt:
    """The prompt for ``parts`` within ``budget`` tokens. The instructions and the message are
    never cut (a budget smaller than they are is exceeded by them alone); the rest is packed in
    priority order (Mind header, working memory, memories by rank, then history newest first,
    without gaps), each block whole or not at all. The system prompt's parts are counted exactly
    (o200k); history messages are estimated (see :func:`message_tokens`)."""
    fixed = count_tokens(parts.instructions) + count_tokens(parts.message) + 2 * MESSAGE_OVERHEAD
    blocks = [parts.mind_header, parts.working_memory]
    costs = [count_tokens(b) if b else 0 for b in blocks]
    sections = [0, 1]
    costs += count_tokens(list(parts.memory_lines)) if parts.memory_lines else []
    sections += [2] * len(parts.memory_lines)
    history = list(parts.history)
    newest_first = history[::-1]
    costs += message_tokens(newest_first)
    sections += [3] * len(newest_first)
    room = max(0, budget - fixed)
    kept = set(pack_budget(costs, budget=room, sections=sections, mode="first_fit_stop"))
    n_mem = len(parts.memory_lines)
    mind_header = parts.mind_header if 0 in kept and parts.mind_header else ""
    working = parts.working_memory if 1 in kept and parts.working_memory else ""
    memories = [m for i, m in enumerate(parts.memories) if 2 + i in kept]
    kept_history = [m for i, m in enumerate(newest_first) if 2 + n_mem + i in kept][::-1]
    while kept_history and kept_history[0].get("role") == "tool":
        # A tool result whose call was cut: a model API refuses it, and it means nothing alone.
        kept.discard(2 + n_mem + len(kept_history) - 1)
        kept_history.pop(0)
    memory_block = parts.render_memories(memories) if memories and parts.render_memories else ""
    system = "\n\n".join(p for p in (parts.instructions, mind_header, working, memory_block) if p)
    messages = [{"role": "system", "content": system}, *kept_history, {"role": "user", "content": parts.message}]
    tokens = fixed + sum(costs[i] for i in kept)
    dropped = {
        "mind_header": int(bool(parts.mind_header) and not mind_header),
        "working_memory": int(bool(parts.working_memory) and not working),
        "memories": n_mem - len(memories),
        "history": len(history) - len(kept_history),
    }
    return Prompt(messages, tokens, {k: v for k, v in dropped.items() if v})
