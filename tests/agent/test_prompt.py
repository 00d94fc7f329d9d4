"""The turn's prompt under a budget: what is kept, in which order, and what is never cut."""

from __future__ import annotations

from mindcore.agent import PromptParts, build_prompt
from mindcore.kernels import count_tokens


def _history() -> list[dict[str, object]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [{"role": "user", "content": "first question " * 20},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "result " * 30},
            {"role": "assistant", "content": "answer " * 5}]


def test_everything_fits_in_order() -> None:
    parts = PromptParts(instructions="Be kind.", message="hello", mind_header="--- AGENT MIND ---",
                        working_memory="<working_memory>x</working_memory>", memories=["m1", "m2"],
                        memory_lines=["- one", "- two"], render_memories=lambda ms: "MEM:" + ",".join(ms),
                        history=_history())
    prompt = build_prompt(parts, 10_000)
    system = prompt.messages[0]["content"]
    assert system == "Be kind.\n\n--- AGENT MIND ---\n\n<working_memory>x</working_memory>\n\nMEM:m1,m2"
    assert prompt.messages[1:-1] == _history() and prompt.messages[-1] == {"role": "user", "content": "hello"}
    assert prompt.dropped == {}


def test_history_is_cut_from_the_oldest_and_never_starts_with_a_tool_result() -> None:
    # Room for the newest assistant message and the tool result, not for the call before them.
    base = count_tokens("Be kind.") + count_tokens("hello") + 8
    prompt = build_prompt(PromptParts(instructions="Be kind.", message="hello", history=_history()), base + 60)
    assert [m["role"] for m in prompt.messages] == ["system", "assistant", "user"]
    assert prompt.dropped == {"history": 3}


def test_instructions_and_message_are_never_cut() -> None:
    parts = PromptParts(instructions="RULE " * 100, message="question " * 50, mind_header="header " * 50,
                        memories=["m"], memory_lines=["- m"], render_memories=lambda ms: "MEM", history=_history())
    prompt = build_prompt(parts, 10)
    assert prompt.messages[0]["content"] == "RULE " * 100 and prompt.messages[-1]["content"] == "question " * 50
    assert len(prompt.messages) == 2
    assert prompt.dropped == {"mind_header": 1, "memories": 1, "history": 4}
