"""Sessions: seq per (dataset, namespace, session), contiguous also with two writer processes;
update_conversation's basic dedupe rule (the rest: test_session_updates.py); paging; messages converted, checked and screened on the way in."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mindcore
from mindcore.context import Context, StoredMessage
from mindcore.errors import ContextError, SecretRefusedError
from mindcore.policy import SecretPolicy

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = Path(mindcore.__file__).resolve().parents[1]
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


@pytest.fixture
def ctx(store: mindcore.Store) -> Context:
    return Context(store, dataset="ds")


def contents(session: mindcore.context.Session) -> list[tuple[int, str]]:
    return [(m.seq, m["content"]) for m in session.get_messages(limit=1000).messages]


def test_seq_is_per_dataset_namespace_and_session(store: mindcore.Store) -> None:
    a = Context(store, dataset="a")
    assert a.session("s").append([user("1"), assistant("2")]) == (1, 2)
    assert a.session("s").append([user("3")]) == (3, 3)
    assert a.session("s", namespace="other").append([user("x")]) == (1, 1)
    assert a.session("t").append([user("x")]) == (1, 1)
    assert Context(store, dataset="b").session("s").append([user("x")]) == (1, 1)
    assert contents(a.session("s")) == [(1, "1"), (2, "2"), (3, "3")]


def test_update_conversation_appends_only_what_is_new(ctx: Context) -> None:
    chat = ctx.session("chat")
    u1, a1, u2, u3 = user("u1"), assistant("a1"), user("u2"), user("u3")
    assert chat.update_conversation([u1, a1, u2]) == 3
    assert chat.update_conversation([u1, a1, u2, u3]) == 1
    assert chat.update_conversation([u1, a1, u2, u3]) == 0
    assert chat.update_conversation([]) == 0
    assert [c for _, c in contents(chat)] == ["u1", "a1", "u2", "u3"]
    # The longest run of stored messages that ends the session and begins the input.
    assert chat.update_conversation([u3, assistant("a3")]) == 1
    # Every stored field decides: a tool_call_id makes another message.
    assert chat.update_conversation([{**assistant("a3"), "tool_call_id": "x"}, user("u4")]) == 2
    # No overlap: everything is new (the same text under another role is another message).
    assert chat.update_conversation([assistant("u4")]) == 1
    assert [c for _, c in contents(chat)] == ["u1", "a1", "u2", "u3", "a3", "a3", "u4", "u4"]


def test_get_messages_pages(ctx: Context) -> None:
    chat = ctx.session("chat")
    chat.append([user(str(i)) for i in range(1, 61)])
    page = chat.get_messages()
    assert [m.seq for m in page.messages] == list(range(11, 61)) and page.has_more and page.max_seq == 60
    assert [m.seq for m in chat.get_messages(limit=5, after_seq=55).messages] == [56, 57, 58, 59, 60]
    assert [m.seq for m in chat.get_messages(limit=4, around_seq=30).messages] == [28, 29, 30, 31]
    empty = chat.get_messages(limit=0)
    assert empty.messages == [] and not empty.has_more and empty.max_seq == 60
    with pytest.raises(ContextError, match="cannot specify both after_seq and around_seq"):
        chat.get_messages(after_seq=1, around_seq=2)
    with pytest.raises(ContextError, match="limit"):
        chat.get_messages(limit=-5)
    assert ctx.session("never").get_messages().to_wire() == {"messages": [], "has_more": False, "max_seq": 0}


def test_stored_messages_are_openai_messages(ctx: Context) -> None:
    chat = ctx.session("chat")
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    chat.append([user("hi"), {"role": "assistant", "content": None, "tool_calls": calls},
                 {"role": "tool", "content": "42", "tool_call_id": "c1"}])
    messages = chat.get_messages().messages
    assert [dict(m) for m in messages] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]
    wire = messages[2].to_wire()
    assert set(wire) == {"id", "role", "content", "tool_call_id", "created_at", "seq"} and wire["seq"] == 3
    assert isinstance(messages[0], StoredMessage) and wire["created_at"].endswith("+00:00")


def test_content_parts_convert_on_the_way_in(ctx: Context) -> None:
    chat = ctx.session("chat")
    chat.append([
        {"role": "user", "content": [{"type": "text", "text": "weather in "}, {"type": "text", "text": "Paris?"}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather",
                                           "args": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": {"temp": 22}},
                                     {"type": "tool-result", "toolCallId": "c2", "result": "sunny"}]},
    ])
    messages = [dict(m) for m in chat.get_messages().messages]
    assert messages[0] == {"role": "user", "content": "weather in Paris?"}
    assert messages[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert messages[2:] == [{"role": "tool", "content": '{"temp": 22}', "tool_call_id": "c1"},
                            {"role": "tool", "content": "sunny", "tool_call_id": "c2"}]


@pytest.mark.parametrize(("messages", "match"), [
    ([{"role": "wizard", "content": "x"}], r"messages\[0\]\.role"),
    ([{"role": "user", "content": 5}], r"messages\[0\]\.content"),
    ([{"role": "user"}], r"messages\[0\]\.content: required"),
    ([user("ok"), "not a message"], r"messages\[1\]"),
    ([{"role": "user", "content": [{"type": "image", "url": "x"}]}], "unsupported content part 'image'"),
    ([{"role": "assistant", "content": "", "tool_calls": "nope"}], "tool_calls"),
    ([{"role": "user", "content": "a\x00b"}], "NUL"),
    ([{"role": "user", "content": "x" * 2001}], "limit is 2,000"),
    ({"role": "user", "content": "a dict, not a list"}, "expected a list"),
])
def test_malformed_messages_store_nothing(store: mindcore.Store, messages: object, match: str) -> None:
    ctx = Context(store, config=mindcore.ContextConfig(max_message_chars=2000))
    other = ctx.session("other")
    other.append([user("untouched")])
    chat = ctx.session("chat")
    with pytest.raises(ContextError, match=match):
        chat.append(messages)  # type: ignore[arg-type]
    with pytest.raises(ContextError, match=match):
        chat.update_conversation(messages)  # type: ignore[arg-type]
    assert chat.get_messages().max_seq == 0
    assert contents(other) == [(1, "untouched")]


def test_hostile_session_ids_are_plain_data(ctx: Context) -> None:
    for hostile in ["s' OR 1=1 --", '["ds","default","x"]', "../../etc", "名前", " spaced "]:
        ctx.session(hostile).append([user(hostile)])
    assert contents(ctx.session("s' OR 1=1 --")) == [(1, "s' OR 1=1 --")]
    assert contents(ctx.session('["ds","default","x"]')) == [(1, '["ds","default","x"]')]
    assert contents(ctx.session("x")) == []
    for bad in ["", "a\x00", "x" * 300, 7]:
        with pytest.raises(ContextError):
            ctx.session(bad)  # type: ignore[arg-type]


def test_secrets_in_messages_are_refused_by_default(ctx: Context) -> None:
    chat = ctx.session("chat")
    with pytest.raises(SecretRefusedError, match=r"messages\[1\]\.content"):
        chat.append([user("fine"), user(f"my token is {TOKEN}")])
    with pytest.raises(SecretRefusedError, match="tool_calls"):
        chat.append([{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"arguments": TOKEN}}]}])
    assert chat.get_messages().max_seq == 0


def test_redacted_messages_dedupe_against_what_was_stored(store: mindcore.Store) -> None:
    ctx = Context(store, config=mindcore.ContextConfig(secrets=SecretPolicy(action="redact")))
    chat = ctx.session("chat")
    conversation = [user(f"my token is {TOKEN}"), assistant("noted")]
    assert chat.update_conversation(conversation) == 2
    assert chat.update_conversation(conversation) == 0
    assert TOKEN not in chat.get_messages().messages[0]["content"]


@pytest.mark.parametrize("mode", ["append", "update_conversation"])
def test_two_writer_processes_keep_seq_contiguous(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "store"
    Context(store, dataset="ds").session("shared", namespace="ns").append([user("start")])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
    count = 25
    procs = [subprocess.Popen([sys.executable, str(HERE / "_session_writer.py"), str(store), name, str(count),
                               str(tmp_path), mode], env=env) for name in ("w1", "w2")]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"{n}.ready").exists() for n in ("w1", "w2")):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer did not start"
        time.sleep(0.05)
    (tmp_path / "go").touch()
    for p in procs:
        assert p.wait(timeout=300) == 0
    stored = contents(Context(store, dataset="ds").session("shared", namespace="ns"))
    assert [seq for seq, _ in stored] == list(range(1, len(stored) + 1))
    texts = [c for _, c in stored[1:]]
    for name in ("w1", "w2"):
        own = [t for t in texts if t.startswith(name)]
        if mode == "append":
            assert own == [f"{name}-{i}" for i in range(count)]
        else:  # each writer's latest message is always stored, and never twice in a row
            assert own[-1] == f"{name}-{count - 1}"
            assert all(a != b for a, b in itertools.pairwise(texts))
    if mode == "append":
        assert len(stored) == 1 + 2 * count
        switches = sum(a[:2] != b[:2] for a, b in itertools.pairwise(texts))
        assert switches >= 3, "the writers did not run at the same time"  # they meet twice (the writer)


def test_metadata_is_kept_with_each_message_and_screened(store: mindcore.Store) -> None:
    chat = Context(store, dataset="ds").session("meta")
    assert chat.append([user("hi"), assistant("hello")], metadata=[{"source": "web", "n": [1, 2]}, None]) == (1, 2)
    chat.append([user("plain")])
    got = chat.get_messages().messages
    assert [m.metadata for m in got] == [{"source": "web", "n": [1, 2]}, None, None]
    assert got[0] == user("hi")  # the message itself is unchanged: metadata is beside it
    assert chat.get_messages_wire()["messages"][0].keys() == chat.get_messages().messages[0].to_wire().keys()
    before = contents(chat)
    for policy in (SecretPolicy(), SecretPolicy(action="redact")):  # refused whatever the action
        guarded = Context(store, dataset="ds", config=mindcore.context.ContextConfig(secrets=policy)).session("meta")
        with pytest.raises(SecretRefusedError, match=r"metadata\[1\].*github-token"):
            guarded.append([user("a"), user("b")], metadata=[{"ok": 1}, {"raw": {"token": TOKEN}}])
    for metadata, match in (
        ([{"a": 1}], "1 values for 2 messages"),
        ({"a": 1}, "one value per message"),
        ([{"a": {1, 2}}, None], r"metadata\[0\]: expected a JSON value"),
        ([{"a": "bad\x00"}, None], r"metadata\[0\]"),
    ):
        with pytest.raises(ContextError, match=match):
            chat.append([user("a"), user("b")], metadata=metadata)  # type: ignore[arg-type]
    parts = {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": 1},
                                         {"type": "tool-result", "toolCallId": "c2", "result": 2}]}
    with pytest.raises(ContextError, match="several"):
        chat.append([parts], metadata=[{"x": 1}])
    assert contents(chat) == before


def test_pop_removes_the_last_message_and_its_versions(store: mindcore.Store) -> None:
    chat = Context(store, dataset="ds").session("pop")
    assert chat.pop() is None
    chat.append([user("one"), assistant("two"), user("three")], metadata=[None, {"k": "v"}, None])
    chat.update_conversation([user("one"), assistant("two, edited"), user("three")])  # message 2 gets a version
    assert len(chat.history(2)) == 2
    third = chat.pop()
    assert third is not None and (third.seq, third.content) == (3, "three")
    popped = chat.pop()
    assert popped is not None and (popped.seq, popped.content) == (2, "two, edited")
    assert chat.history(2) == []
    assert contents(chat) == [(1, "one")]
    assert chat.append([assistant("again")]) == (2, 2)  # the popped seq is reused
    assert contents(Context(store, dataset="ds").session("pop")) == [(1, "one"), (2, "again")]
