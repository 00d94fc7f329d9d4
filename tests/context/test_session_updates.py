"""update_conversation never stores a message twice: older views, middle runs and retries store
nothing, what follows an overlap is appended once, an edited earlier message gets a new version
(Session.history) instead of a second copy of the conversation, and 8 threads or 3 processes
storing one 40-message chat leave exactly 40 rows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _session_procs import SESSION, chat, fork_context, store_chat, views

import mindcore
from mindcore.context import Context, MessageVersion, Session
from mindcore.store import ALL_NAMESPACES
from mindcore.store.messages import COLUMNS


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


SYS = {"role": "system", "content": "Be brief."}


@pytest.fixture
def chat_session(store: mindcore.Store) -> Session:
    return Context(store, dataset="ds").session("chat")


def texts(session: Session) -> list[str]:
    page = session.get_messages(limit=1000)
    assert [m.seq for m in page.messages] == list(range(1, page.max_seq + 1))
    return [m.content for m in page.messages]


def rows(store: mindcore.Store) -> int:
    """Every row of the sessions' table: current messages and replaced versions."""
    return store.table("context_messages", COLUMNS).count(ALL_NAMESPACES)


def six() -> list[dict[str, Any]]:
    return [SYS, user("u1"), assistant("a1"), user("u2"), assistant("a2"), user("u3")]


def test_a_late_retry_of_an_older_view_stores_nothing(chat_session: Session, store: mindcore.Store) -> None:
    conv = six()
    assert chat_session.update_conversation(conv) == 6
    assert chat_session.update_conversation(conv[:4]) == 0
    assert chat_session.update_conversation(conv) == 0
    assert texts(chat_session) == [m["content"] for m in conv] and rows(store) == 6


def test_a_contiguous_middle_run_stores_nothing(chat_session: Session) -> None:
    conv = six()
    chat_session.update_conversation(conv)
    assert chat_session.update_conversation(conv[2:5]) == 0
    assert chat_session.update_conversation(conv[3:4]) == 0
    assert len(texts(chat_session)) == 6


def test_new_messages_after_an_overlap_are_appended_once(chat_session: Session) -> None:
    conv = six()
    chat_session.update_conversation(conv[:4])
    # The view overlaps the end of the history: only what follows is new.
    assert chat_session.update_conversation(conv[2:]) == 2
    assert chat_session.update_conversation(conv[2:]) == 0
    # A writer that saw the history before u3 goes on from where its view leaves it: its new
    # message is stored once (also when it repeats the request), the shared part never again.
    assert chat_session.update_conversation([*conv[:5], assistant("a2b")]) == 1
    assert chat_session.update_conversation([*conv[:5], assistant("a2b")]) == 0
    assert texts(chat_session) == ["Be brief.", "u1", "a1", "u2", "a2", "u3", "a2b"]
    # A client that trims its view to the system prompt and the latest turns.
    assert chat_session.update_conversation([SYS, *conv[4:], assistant("a2b"), user("u4")]) == 1
    assert chat_session.update_conversation([SYS, *conv[4:], assistant("a2b"), user("u4")]) == 0
    assert texts(chat_session)[-2:] == ["a2b", "u4"]


def test_equal_means_role_content_and_tool_fields(chat_session: Session) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    reordered = {"function": {"arguments": "{}", "name": "f"}, "type": "function", "id": "c1"}
    calling = {"role": "assistant", "content": "", "tool_calls": [call]}
    result = {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert chat_session.update_conversation([user("q"), calling, result]) == 3
    # Key order inside tool_calls does not count; a name is not stored, so it does not either.
    assert chat_session.update_conversation([{**user("q"), "name": "ann"}, {**calling, "tool_calls": [reordered]},
                                             result]) == 0
    # Another call id is another message.
    assert chat_session.update_conversation([{**result, "tool_call_id": "c2"}]) == 1
    assert len(texts(chat_session)) == 4


def versions(session: Session, seq: int) -> list[tuple[str, bool]]:
    return [(v.content, v.replaced_at is None) for v in session.history(seq)]


def test_an_edited_earlier_message_is_a_new_version(chat_session: Session, store: mindcore.Store) -> None:
    conv = six()
    chat_session.update_conversation(conv)
    first = chat_session.get_messages().messages[1]
    edited = [*conv[:1], user("u1, edited"), *conv[2:]]
    assert chat_session.update_conversation(edited) == 1
    assert texts(chat_session) == ["Be brief.", "u1, edited", "a1", "u2", "a2", "u3"]
    assert versions(chat_session, 2) == [("u1", False), ("u1, edited", True)]
    assert rows(store) == 7  # six messages and the version the edit replaced
    # The edited view again, or an older view of it, stores nothing.
    assert chat_session.update_conversation(edited) == 0
    assert chat_session.update_conversation(edited[:3]) == 0
    # The message keeps its place and identity.
    now = chat_session.get_messages().messages[1]
    assert (now.seq, now.id, now.created_at) == (first.seq, first.id, first.created_at)
    old, new = chat_session.history(2)
    assert isinstance(old, MessageVersion) and old.seq == new.seq == 2 and old.message.role == "user"
    assert old.replaced_at is not None and old.written_at <= old.replaced_at <= new.written_at
    # Messages never edited have one version; an unknown seq has none.
    assert versions(chat_session, 3) == [("a1", True)] and chat_session.history(99) == []


def test_an_edit_in_a_longer_view_appends_only_what_is_new(chat_session: Session) -> None:
    conv = six()
    chat_session.update_conversation(conv)
    view = [*conv[:3], user("u2, edited"), *conv[4:], assistant("a3"), user("u4")]
    assert chat_session.update_conversation(view) == 3  # one edit, two new messages
    assert texts(chat_session) == ["Be brief.", "u1", "a1", "u2, edited", "a2", "u3", "a3", "u4"]
    # Edited again (and the system prompt too): versions pile up in order.
    view = [{**SYS, "content": "Be kind."}, *view[1:3], user("u2, again"), *view[4:]]
    assert chat_session.update_conversation(view) == 2
    assert versions(chat_session, 4) == [("u2", False), ("u2, edited", False), ("u2, again", True)]
    assert versions(chat_session, 1) == [("Be brief.", False), ("Be kind.", True)]
    assert len(texts(chat_session)) == 8


def test_an_edit_seen_through_an_older_view(chat_session: Session) -> None:
    conv = six()
    chat_session.update_conversation(conv)
    # The client's view ends before u3, with u1 edited: an edit, nothing appended.
    assert chat_session.update_conversation([SYS, user("u1, edited"), *conv[2:5]]) == 1
    assert texts(chat_session) == ["Be brief.", "u1, edited", "a1", "u2", "a2", "u3"]


def test_a_changed_last_message_is_a_new_turn_not_an_edit(chat_session: Session) -> None:
    conv = six()
    chat_session.update_conversation(conv)
    # A client that sends its system prompt and the new question alone.
    assert chat_session.update_conversation([SYS, user("u4")]) == 1
    # A view whose last message differs from the history's at that place: a new turn.
    assert chat_session.update_conversation([*conv[:3], user("u2b")]) == 1
    assert texts(chat_session) == ["Be brief.", "u1", "a1", "u2", "a2", "u3", "u4", "u2b"]
    assert all(len(chat_session.history(seq)) == 1 for seq in range(1, 9))
    # Another role at the same place is not an edit either.
    assert chat_session.update_conversation([SYS, assistant("u1"), *conv[2:]]) == 5


def test_eight_threads_storing_one_chat_leave_forty_rows(tmp_path: Path) -> None:
    path = tmp_path / "store"
    conversation = chat()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def client(seed: int) -> None:
        try:
            session = Context(path, dataset="ds").session(SESSION)
            barrier.wait(timeout=120)
            for k in views(seed):
                session.update_conversation(conversation[:k])
        except BaseException as e:  # reported by the test below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    store = mindcore.open(path)
    session = Context(store, dataset="ds").session(SESSION)
    assert texts(session) == [m["content"] for m in conversation]
    assert rows(store) == 40


@pytest.fixture(scope="module")
def procs() -> Iterator[Any]:
    yield from fork_context()


def test_three_processes_storing_one_chat_leave_forty_rows(procs: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    children = []
    for seed in range(3):
        parent, child = procs.Pipe()
        p = procs.Process(target=store_chat, args=(path, seed, child), daemon=True)
        p.start()
        children.append((p, parent))
    for _, conn in children:
        assert conn.poll(120), "a writer did not start"
        assert conn.recv() == "ready"
    for _, conn in children:
        conn.send("go")
    stored = 0
    for p, conn in children:
        assert conn.poll(600), "a writer did not finish"
        done, n = conn.recv()
        assert done == "done"
        stored += n
        p.join(timeout=60)
        assert p.exitcode == 0
    assert stored == 40  # what the writers say they stored, all together
    store = mindcore.open(path)
    session = Context(store, dataset="ds").session(SESSION)
    assert [m.content for m in session.get_messages(limit=100).messages] == [m["content"] for m in chat()]
    assert rows(store) == 40
