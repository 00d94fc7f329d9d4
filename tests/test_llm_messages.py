"""The one chat-message reader: OpenAI form checked, content parts converted, tool calls and
their results paired."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mindcore.errors import ContextError, InvalidInputError, InvalidMessageError
from mindcore.llm.messages import check_tool_pairs, normalize_messages

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def test_openai_messages_pass_unchanged() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "content": "22C", "tool_call_id": "c1"}, {"role": "assistant", "content": "22C."}]
    out = normalize_messages(messages, max_chars=1000, strict=True)
    assert out[2] == {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant"]
    check_tool_pairs(out)


def test_content_parts_convert_losslessly() -> None:
    out = normalize_messages([
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                          {"type": "tool-call", "toolCallId": "c1", "toolName": "f",
                                           "args": {"q": "é", "n": [1, 2]}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": {"ok": True}},
                                     {"type": "tool-result", "toolCallId": "c1", "result": "plain"}]},
    ], max_chars=1000, strict=True)
    assert out[0]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"q": "é", "n": [1, 2]}'}
    assert out[1:] == [{"role": "tool", "content": '{"ok": true}', "tool_call_id": "c1"},
                       {"role": "tool", "content": "plain", "tool_call_id": "c1"}]


@pytest.mark.parametrize(("message", "fragment"), [
    ({"role": "robot", "content": "hi"}, "messages[0].role: 'robot'"),
    ({"role": "user"}, "messages[0].content: required"),
    ({"role": "user", "content": "bad \ud800"}, "messages[0].content"),
    ({"role": "user", "content": [{"type": "image", "url": "x"}]}, "unsupported content part 'image'"),
    ({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}, "tool_calls[0].id"),
    ({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{x"}}]},
     "arguments: not valid JSON"),
    ({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}]},
     "expected a JSON object"),
    ({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "web", "function": {"name": "f"}}]},
     "only 'function'"),
])
def test_malformed_messages_name_the_item(message: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        normalize_messages([message], max_chars=1000, strict=True)
    assert fragment in str(info.value)
    assert isinstance(info.value, InvalidInputError)


def test_limits_and_the_callers_error_class() -> None:
    with pytest.raises(ContextError, match="the limit is 1"):
        normalize_messages([{"role": "user", "content": "a"}] * 2, max_chars=10, max_messages=1, error=ContextError)
    with pytest.raises(InvalidMessageError, match="limit is 5"):
        normalize_messages([{"role": "user", "content": "toolong"}], max_chars=5)
    with pytest.raises(InvalidMessageError, match="expected a list"):
        normalize_messages({"role": "user", "content": "a"}, max_chars=10)  # type: ignore[arg-type]
    # Not strict (a session stores what a client sends): tool calls need only be JSON.
    loose = normalize_messages([{"role": "assistant", "content": "", "tool_calls": [{"anything": 1}]}], max_chars=100)
    assert loose[0]["tool_calls"] == [{"anything": 1}]


def test_tool_results_must_answer_an_earlier_call_once() -> None:
    call = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    result = {"role": "tool", "content": "22", "tool_call_id": "c1"}
    check_tool_pairs([call, result])
    with pytest.raises(InvalidMessageError, match="messages\\[0\\]: a tool result for call 'c1'"):
        check_tool_pairs([result, call])
    with pytest.raises(InvalidMessageError, match="messages\\[2\\]"):
        check_tool_pairs([call, result, result])
    with pytest.raises(InvalidMessageError, match="needs tool_call_id"):
        check_tool_pairs([call, {"role": "tool", "content": "x"}])


def test_the_history_form_rebuilds_calls_and_keeps_what_a_history_holds() -> None:
    given = [{"role": "assistant", "content": None, "refusal": None,
              "tool_calls": [{"id": "c1", "index": 0, "function": {"name": "f", "arguments": {"a": "é"}}}]}]
    out = normalize_messages(given, max_chars=100, history=True, compact=True)
    assert out == [{"role": "assistant", "content": "",
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":"é"}'}}]}]
    # The same message read as a session reads it: the call kept as given.
    assert normalize_messages(given, max_chars=100)[0]["tool_calls"] == given[0]["tool_calls"]
    for bad, fragment in [
        ({"role": "user", "content": "hi", "tool_calls": [CALL]}, "only assistant messages make tool calls"),
        ({"role": "user", "content": "hi", "name": "bob"}, "unsupported key 'name'"),
        ({"role": "tool", "content": "x"}, "messages[0].tool_call_id"),
        ({"role": "user", "content": "x", "tool_call_id": "c1"}, "only tool messages answer a call"),
        ({"role": "assistant", "content": "", "tool_calls": [CALL, CALL]}, "share the id 'c1'"),
    ]:
        with pytest.raises(InvalidMessageError, match=re.escape(fragment)):
            normalize_messages([bad], max_chars=100, history=True)


def test_tool_call_parts_check_their_text_arguments() -> None:
    part = {"type": "tool-call", "toolCallId": "c1", "toolName": "f", "args": '{"a": "' + "x" * 200 + '"}'}
    for history in (False, True):
        with pytest.raises(InvalidMessageError, match=r"messages\[0\]\.content\[0\]\.args: .*limit is 100"):
            normalize_messages([{"role": "assistant", "content": [part]}], max_chars=100, history=history)


def test_a_plain_text_history_reads_as_the_one_message_at_a_time_path_reads_it() -> None:
    """Plain text messages are checked together; the answer and the first error named are those
    of the checks made one message at a time."""
    plain = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(50)]
    out = normalize_messages(plain, max_chars=100)
    assert out == plain and all(o is not m for o, m in zip(out, plain, strict=True))  # copies, not the input
    assert normalize_messages([], max_chars=10) == []
    tool = {"role": "tool", "content": "22", "tool_call_id": "c1"}
    mixed = [*plain[:3], tool, {**plain[3], "name": "ann"}, {"role": "assistant", "content": None, "tool_calls": [CALL]}]
    assert normalize_messages(mixed, max_chars=200) == [*plain[:3], tool, plain[3],
                                                        {"role": "assistant", "content": "", "tool_calls": [CALL]}]
    # In a history a plain tool message still needs its call id.
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]\.tool_call_id"):
        normalize_messages([{"role": "tool", "content": "22"}], max_chars=100, history=True)
    for bad, fragment in [("x" * 101, r"messages\[7\]\.content: is 101 characters"),
                          ("bad \ud800", r"messages\[7\]\.content: contains a lone surrogate"),
                          ("a\x00b", r"messages\[7\]\.content: contains a NUL")]:
        given = [*plain[:7], {"role": "user", "content": bad}, *plain[7:]]
        with pytest.raises(InvalidMessageError, match=fragment):
            normalize_messages(given, max_chars=100)
        # A bad message of another kind earlier in the list is the one named.
        with pytest.raises(InvalidMessageError, match=r"messages\[2\]\.role: 'robot'"):
            normalize_messages([*given[:2], {"role": "robot", "content": "hi", "x": 1}, *given[2:]], max_chars=100)
    # A role that is no str (not even hashable) is named, not a crash of the batch check.
    with pytest.raises(InvalidMessageError, match=r"messages\[1\]\.role: \['user'\]"):
        normalize_messages([plain[0], {"role": ["user"], "content": "hi"}], max_chars=100)
    # Str subclasses and other mappings take the one-at-a-time path and read the same.
    class Text(str):
        pass

    assert normalize_messages([{"role": "user", "content": Text("hi")}], max_chars=10) == [{"role": "user", "content": "hi"}]
