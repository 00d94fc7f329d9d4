"""The store's append-only message log: contiguous seq per log, paging, appends decided under the
log's lock, edits kept as versions, message keys, logs that never see each other."""

from __future__ import annotations

import re

import pytest

import mindcore
from mindcore.errors import InvalidInputError
from mindcore.store.messages import LogChange, LogView, LogWrite, MessageLog, message_key


def msgs(*texts: str, role: str = "user") -> list[dict]:
    return [{"role": role, "content": t} for t in texts]


@pytest.fixture
def log(store: mindcore.Store) -> MessageLog:
    return MessageLog(store, "test_messages")


def test_seq_is_one_based_and_contiguous_per_log(log: MessageLog) -> None:
    assert log.append("a", msgs("1", "2")) == (1, 2)
    assert log.append("b", msgs("x")) == (1, 1)
    assert log.append("a", msgs("3")) == (3, 3)
    assert log.append("a", []) == (4, 3)
    assert log.view("a").seq.tolist() == [1, 2, 3]
    assert log.max_seq("b") == 1 and log.max_seq("never") == 0


def test_messages_keep_their_tool_fields(log: MessageLog) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    log.append("a", [{"role": "assistant", "content": "", "tool_calls": calls},
                     {"role": "tool", "content": "42", "tool_call_id": "c1", "ignored": True}])
    first, second = log.page("a").messages
    assert first["tool_calls"] == calls and first["tool_call_id"] is None
    assert second["tool_call_id"] == "c1" and second["tool_calls"] is None
    assert isinstance(first["id"], str) and first["created_at"] > 0


def test_paging(log: MessageLog) -> None:
    log.append("a", msgs(*[str(i) for i in range(1, 11)]))  # seq 1..10, content = seq

    def page(**kw: int) -> tuple[list[int], bool, int]:
        p = log.page("a", **kw)
        return [m["seq"] for m in p.messages], p.has_more, p.max_seq

    assert page() == (list(range(1, 11)), False, 10)
    assert page(limit=3) == ([8, 9, 10], True, 10)
    assert page(limit=0) == ([], False, 10)
    assert page(limit=3, after_seq=2) == ([3, 4, 5], True, 10)
    assert page(limit=3, after_seq=7) == ([8, 9, 10], False, 10)
    assert page(limit=4, around_seq=5) == ([3, 4, 5, 6], True, 10)
    assert page(limit=4, around_seq=1) == ([1, 2, 3, 4], True, 10)
    assert page(limit=50, around_seq=9) == ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], False, 10)
    with pytest.raises(InvalidInputError, match="cannot specify both after_seq and around_seq"):
        log.page("a", after_seq=1, around_seq=2)
    with pytest.raises(InvalidInputError, match="limit"):
        log.page("a", limit=-1)


def test_an_append_can_decide_under_the_lock(log: MessageLog) -> None:
    log.append("a", msgs("1", "2"))
    seen: list[int] = []

    def only_if_short(view: LogView) -> list[dict]:
        seen.append(len(view))
        return msgs("3") if len(view) < 3 else []

    assert log.append("a", only_if_short) == (3, 3)
    assert log.append("a", only_if_short) == (4, 3)
    assert seen == [2, 3]


def test_a_bad_message_appends_nothing(log: MessageLog) -> None:
    log.append("a", msgs("1"))
    with pytest.raises(InvalidInputError):
        log.append("a", [{"role": "user", "content": "ok"}, {"role": "user", "content": 5}])
    assert log.max_seq("a") == 1


def test_a_second_log_object_sees_every_append(store: mindcore.Store) -> None:
    one, two = MessageLog(store, "shared"), MessageLog(store, "shared")
    one.append("a", msgs("1"))
    assert two.append("a", msgs("2")) == (2, 2)
    assert [m["content"] for m in one.page("a").messages] == ["1", "2"]
    one.clear("a")
    assert two.max_seq("a") == 0


def test_a_view_after_an_append_reuses_the_rows_it_shares(log: MessageLog) -> None:
    log.append("a", msgs("one", "two"))
    computed: list[tuple[int, int]] = []

    def lengths(view: LogView) -> list[int]:
        def compute(lo: int, hi: int) -> list[int]:
            computed.append((lo, hi))
            return [len(c) for c in view.column("content")[lo:hi]]

        return view.per_row("lengths", compute).tolist()

    assert lengths(log.view("a")) == [3, 3]
    log.append("a", msgs("three"))
    view = log.view("a")
    assert lengths(view) == [3, 3, 5] and view.column("content") == ["one", "two", "three"]
    assert computed == [(0, 2), (2, 3)]  # only the new row was computed
    # Another log object of this process shares the store's cache, and so its history.
    other = MessageLog(log._store, "test_messages")
    other.append("a", msgs("four"))
    assert lengths(log.view("a")) == [3, 3, 5, 4] and computed[-1] == (3, 4)
    # Rows that changed in a way the cache cannot follow are computed again, from the start.
    log.clear("a")
    log.append("a", msgs("five!"))
    assert lengths(log.view("a")) == [5] and computed[-1] == (0, 1)


def test_an_edit_is_a_new_version_of_the_same_message(log: MessageLog) -> None:
    log.append("a", msgs("1", "2", "3"))
    before = log.page("a").messages
    done = log.write("a", LogChange(append=msgs("4"), edits={2: {"role": "user", "content": "two"}}))
    assert done == LogWrite(4, 4, (2,)) and done.appended == 1
    after = log.page("a").messages
    assert [m["content"] for m in after] == ["1", "two", "3", "4"]
    assert [(m["id"], m["seq"], m["created_at"]) for m in after[:3]] == [
        (m["id"], m["seq"], m["created_at"]) for m in before]
    log.write("a", LogChange(edits={2: {"role": "user", "content": "deux"}}))
    versions = log.versions("a", 2)
    assert [(v["content"], v["replaced_at"] is None) for v in versions] == [("2", False), ("two", False), ("deux", True)]
    assert versions[0]["replaced_at"] <= versions[1]["written_at"] <= versions[1]["replaced_at"] <= versions[2]["written_at"]
    assert log.view("a").seq.tolist() == [1, 2, 3, 4] and log.max_seq("a") == 4
    assert log.append("a", msgs("5")) == (5, 5)
    assert log.versions("a", 9) == [] and log.versions("never", 1) == []


def test_a_bad_edit_writes_nothing(log: MessageLog) -> None:
    log.append("a", msgs("1"))
    with pytest.raises(InvalidInputError, match="no message with seq 7"):
        log.write("a", LogChange(append=msgs("2"), edits={7: {"role": "user", "content": "x"}}))
    with pytest.raises(InvalidInputError, match=r"edits\[1\]"):
        log.write("a", LogChange(edits={1: {"role": "user", "content": 5}}))
    assert [m["content"] for m in log.page("a").messages] == ["1"] and len(log.versions("a", 1)) == 1


def test_prune_drops_replaced_versions_too(log: MessageLog) -> None:
    log.append("a", msgs("1", "2", "3"))
    log.write("a", LogChange(edits={1: {"role": "user", "content": "one"}, 3: {"role": "user", "content": "three"}}))
    assert log.prune("a", 2) == 2  # message 1 and the version it replaced
    assert [m["content"] for m in log.page("a").messages] == ["2", "three"]
    assert [v["content"] for v in log.versions("a", 3)] == ["3", "three"]


def test_keys_compare_what_is_stored(log: MessageLog) -> None:
    call = [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]
    log.append("a", [{"role": "assistant", "content": "", "tool_calls": call}, *msgs("hi")])
    keys = log.view("a").keys()
    assert keys[0] == message_key({"role": "assistant", "content": "", "name": "bot",
                                   "tool_calls": [{"function": {"arguments": "{}", "name": "f"}, "id": "c1"}]})
    assert keys[1] == message_key({"role": "user", "content": "hi"}) != message_key({"role": "user", "content": "hi",
                                                                                     "tool_call_id": "c1"})
    assert keys[0].shape == ("assistant", None, keys[0].tool_calls)


def test_messages_of_every_shape_are_stored_as_given(log: MessageLog) -> None:
    """A list of plain messages is written column by column, any other list message by message:
    both store the same rows, and a bad message anywhere is named and stores nothing."""
    plain = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(40)]
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    mixed = [*plain[:2], {"role": "assistant", "content": "", "tool_calls": calls},
             {"role": "tool", "content": "42", "tool_call_id": "c1"}, {**plain[2], "name": "ann"}]
    assert log.append("plain", plain) == (1, 40) and log.append("mixed", mixed) == (1, 5)
    got = log.page("plain", limit=100).messages
    assert [(m["seq"], m["role"], m["content"], m["tool_calls"], m["tool_call_id"]) for m in got] == [
        (i + 1, m["role"], m["content"], None, None) for i, m in enumerate(plain)]
    assert len({m["id"] for m in got}) == 40
    got = log.page("mixed").messages
    assert [(m["content"], m["tool_calls"], m["tool_call_id"]) for m in got] == [
        ("m0", None, None), ("m1", None, None), ("", calls, None), ("42", None, "c1"), ("m2", None, None)]
    for bad, where in [({"role": "user", "content": 5}, "messages[3]"), ("text", "messages[3]"),
                       ({"role": "user", "content": "x", "tool_call_id": 7}, "messages[3]")]:
        with pytest.raises(InvalidInputError, match=re.escape(where)):
            log.append("plain", [*plain[:3], bad, *plain[3:]])  # type: ignore[list-item]
    assert log.max_seq("plain") == 40


def test_records_read_the_same_from_cached_columns_and_from_the_table(log: MessageLog) -> None:
    """A view reads messages from its cached columns for many ranks (or once they are cached)
    and from the table for a few: both give the same rows, edited logs and tool calls included."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    log.append("a", [*msgs(*(f"m{i}" for i in range(60))), {"role": "assistant", "content": "", "tool_calls": calls},
                     {"role": "tool", "content": "42", "tool_call_id": "c1"}])
    log.write("a", LogChange(edits={5: {"role": "user", "content": "five"}}))  # an edited log: rows out of order
    view = log.view("a")
    assert view.order is not None
    few, scattered = [61, 3, 4], [0, 4, 60, 61, 17]
    from_table = [view.messages(few), view.messages(scattered)]
    assert not view._columns  # a few ranks of a log read nothing else
    everything = view.messages(range(len(view)))  # most of the log: from the columns, now cached
    assert view._columns
    assert [view.messages(few), view.messages(scattered)] == from_table
    assert [everything[i] for i in few] == from_table[0] and [everything[i] for i in scattered] == from_table[1]
    assert everything[4]["content"] == "five" and everything[60]["tool_calls"] == calls
    assert everything[61]["tool_call_id"] == "c1" and [m["seq"] for m in everything] == list(range(1, 63))
    assert view.records([2, 3]) == [tuple(m.values()) for m in everything[2:4]] and view.messages([]) == []
    # Decoded tool calls are the caller's to change: the next read decodes them again.
    everything[60]["tool_calls"][0]["id"] = "changed"
    assert view.messages([60])[0]["tool_calls"] == calls
    # A log as appended: a run of ranks is read as a slice of the stored rows, others are taken.
    log.append("b", [*msgs(*(f"b{i}" for i in range(60))), {"role": "assistant", "content": "", "tool_calls": calls}])
    view = log.view("b")
    assert view.order is None
    run, scattered = view.messages([58, 59, 60]), view.messages([60, 2, 7])
    assert not view._columns
    everything = view.messages(range(len(view)))
    assert run == everything[58:] and scattered == [everything[60], everything[2], everything[7]]
    assert [m["content"] for m in run] == ["b58", "b59", ""] and run[2]["tool_calls"] == calls
