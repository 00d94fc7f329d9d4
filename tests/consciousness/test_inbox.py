"""The inbox's behaviour, run against both inboxes: `Inbox` on a store folder and `RedisInbox` on a
real Redis server (127.0.0.1): push, leases, acks, nacks, order, bad input, async twins."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import mindcore
from mindcore.consciousness import BaseInbox, Event, Inbox, InboxConfig
from mindcore.errors import InboxError, InvalidInputError, MindcoreError, SecretRefusedError
from mindcore.policy import SecretPolicy
from mindcore.store import new_id

MakeInbox = Callable[..., BaseInbox]
SHORT = 0.4  # a lease short enough to wait out in a test


@pytest.fixture
def make(inbox_at: tuple[str, str]) -> Iterator[MakeInbox]:
    """Opens an inbox (a new consumer each call) of ``agent`` at the test's location."""
    kind, where = inbox_at
    opened: list[BaseInbox] = []

    def open_one(agent: str = "assistant", visibility_timeout: float = 30.0, config: InboxConfig | None = None,
                 ) -> BaseInbox:
        inbox: BaseInbox
        if kind == "store":
            inbox = Inbox(where, agent=agent, visibility_timeout=visibility_timeout, config=config)
        else:
            from mindcore.consciousness import RedisInbox

            inbox = RedisInbox(where, agent=agent, visibility_timeout=visibility_timeout, config=config)
        opened.append(inbox)
        return inbox

    yield open_one
    for inbox in opened:
        inbox.close()


def msg(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "space_message", "space": "Family", "sender": "Husam", "sender_type": "human",
            "text": text, **extra}


def unknown_id(inbox: BaseInbox) -> str:
    """An id shaped like this inbox's ids that no event has."""
    return new_id() if isinstance(inbox, Inbox) else "1-1"


def texts(events: list[Event]) -> list[str]:
    return [e.payload["text"] for e in events]


# -- push and receive ---------------------------------------------------------------------------------


def test_push_receive_round_trips_the_payload_in_push_order(make: MakeInbox) -> None:
    inbox = make()
    before = datetime.now(UTC) - timedelta(seconds=5)
    payload = msg("Héllo 👋", nested={"list": [1, 2.5, None, True, "x"], "empty": {}})
    first = inbox.push(payload)
    rest = inbox.push_many([msg(f"m{i}") for i in range(3)])
    assert isinstance(first, str) and len({first, *rest}) == 4
    events = inbox.receive(max_events=20)
    assert [e.id for e in events] == [first, *rest]
    assert events[0].payload == payload
    assert texts(events) == ["Héllo 👋", "m0", "m1", "m2"]
    assert all(e.attempts == 1 for e in events)
    assert all(before <= e.pushed_at <= datetime.now(UTC) + timedelta(seconds=5) for e in events)
    assert events[0].pushed_at.tzinfo is not None


def test_receive_respects_max_events_and_an_empty_inbox(make: MakeInbox) -> None:
    inbox = make()
    assert inbox.receive() == []
    inbox.push_many([msg(f"m{i}") for i in range(5)])
    assert texts(inbox.receive(max_events=2)) == ["m0", "m1"]
    assert texts(inbox.receive(max_events=2)) == ["m2", "m3"]
    assert texts(inbox.receive(max_events=2)) == ["m4"]
    assert inbox.receive() == []
    assert inbox.push_many([]) == []


def test_pending_and_len_count_events_not_acked(make: MakeInbox) -> None:
    inbox = make()
    inbox.push_many([msg(f"m{i}") for i in range(3)])
    assert inbox.pending() == len(inbox) == 3
    events = inbox.receive(2)
    assert len(inbox) == 3  # leased is still pending
    inbox.ack([events[0].id])
    assert len(inbox) == 2


def test_agents_have_separate_inboxes(make: MakeInbox) -> None:
    a, b = make("agent-a"), make("agent-b")
    a.push(msg("for a"))
    assert b.receive() == [] and len(b) == 0
    assert texts(a.receive()) == ["for a"]


# -- leases -------------------------------------------------------------------------------------------


def test_a_leased_event_is_invisible_to_other_consumers(make: MakeInbox) -> None:
    one, two = make(), make()
    one.push_many([msg("a"), msg("b")])
    assert texts(one.receive(1)) == ["a"]
    assert texts(two.receive(5)) == ["b"]  # "a" is leased to `one`
    assert one.receive(5) == [] and two.receive(5) == []


def test_an_unacked_event_comes_back_after_its_lease_with_attempts_counted(make: MakeInbox) -> None:
    # "Still leased" can only be checked before the lease could have run out; on a machine too busy
    # for that, the run proves nothing and repeats with a 4x longer lease (load sets the pace).
    for lease in (SHORT, 4 * SHORT, 16 * SHORT, 64 * SHORT):
        one, two = make(visibility_timeout=lease), make(visibility_timeout=lease)
        event_id = one.push(msg("slow"))
        leased_at = time.monotonic()
        assert [e.attempts for e in one.receive()] == [1]
        first_held = two.receive()
        in_time = time.monotonic() - leased_at < lease
        time.sleep(lease + 0.2)
        leased_at = time.monotonic()
        again = two.receive()
        assert [(e.id, e.attempts) for e in again] == [(event_id, 2)]
        second_held = one.receive()
        in_time = in_time and time.monotonic() - leased_at < lease
        if in_time:
            assert first_held == [] and second_held == []  # leased to `one`, then to `two`
            time.sleep(lease + 0.2)
            assert [(e.id, e.attempts) for e in one.receive()] == [(event_id, 3)]
            return
        one.ack([event_id])
    pytest.fail("the machine never answered within a lease of 25.6 s")


def test_an_acked_event_never_comes_back(make: MakeInbox) -> None:
    inbox = make(visibility_timeout=SHORT)
    ids = inbox.push_many([msg("a"), msg("b")])
    inbox.ack([e.id for e in inbox.receive()][:1])
    time.sleep(SHORT + 0.2)
    assert [e.id for e in inbox.receive()] == [ids[1]]
    inbox.ack([ids[1]])
    time.sleep(SHORT + 0.2)
    assert inbox.receive() == [] and len(inbox) == 0


def test_ack_is_idempotent_and_ignores_unknown_ids(make: MakeInbox) -> None:
    inbox = make()
    ids = inbox.push_many([msg("a"), msg("b")])
    inbox.receive()
    inbox.ack([ids[0]])
    inbox.ack([ids[0]])
    inbox.ack([ids[0], ids[0], unknown_id(inbox)])
    inbox.ack([])
    assert len(inbox) == 1
    inbox.ack(ids)
    assert len(inbox) == 0


def test_an_event_pushed_but_never_received_can_be_acked(make: MakeInbox) -> None:
    inbox = make()
    event_id = inbox.push(msg("skip me"))
    inbox.ack([event_id])
    assert inbox.receive() == [] and len(inbox) == 0


# -- nack ---------------------------------------------------------------------------------------------


def test_nack_delivers_again_at_once_in_push_order(make: MakeInbox) -> None:
    one, two = make(), make()
    one.push_many([msg("a"), msg("b"), msg("c")])
    a = one.receive(1)
    b = one.receive(1)
    assert texts(a) == ["a"] and texts(b) == ["b"]
    one.nack([a[0].id])
    again = two.receive(5)
    assert texts(again) == ["a", "c"]
    assert [e.attempts for e in again] == [2, 1]


def test_nack_ignores_acked_unknown_and_other_consumers_events(make: MakeInbox) -> None:
    one, two = make(), make()
    ids = one.push_many([msg("a"), msg("b")])
    assert texts(one.receive(1)) == ["a"]
    assert texts(two.receive(1)) == ["b"]
    one.nack([ids[1], unknown_id(one)])  # "b" is leased to `two`, not to `one`
    assert one.receive() == []
    two.ack([ids[1]])
    two.nack([ids[1]])  # acked: stays gone
    one.ack([ids[0]])
    assert one.receive() == [] and two.receive() == [] and len(one) == 0


def test_nack_of_a_never_received_event_changes_nothing(make: MakeInbox) -> None:
    inbox = make()
    event_id = inbox.push(msg("a"))
    inbox.nack([event_id])
    assert [(e.id, e.attempts) for e in inbox.receive()] == [(event_id, 1)]


# -- durability ---------------------------------------------------------------------------------------


def test_events_outlive_the_inbox_object(make: MakeInbox) -> None:
    first = make()
    ids = first.push_many([msg("a"), msg("b")])
    first.close()
    first.close()  # idempotent
    second = make()
    assert [e.id for e in second.receive()] == ids


def test_a_closed_inbox_refuses_to_be_used(make: MakeInbox) -> None:
    inbox = make()
    event_id = inbox.push(msg("a"))
    inbox.close()
    for call in (lambda: inbox.push(msg("b")), inbox.receive, lambda: inbox.ack([event_id]),
                 lambda: inbox.nack([event_id]), inbox.pending):
        with pytest.raises(InboxError, match="the inbox of agent 'assistant' is closed"):
            call()
    assert len(make()) == 1


def test_a_closed_consumers_leases_still_run_out(make: MakeInbox) -> None:
    one = make(visibility_timeout=SHORT)
    event_id = one.push(msg("a"))
    assert len(one.receive()) == 1
    one.close()
    two = make(visibility_timeout=SHORT)
    assert two.receive() == []
    time.sleep(SHORT + 0.2)
    assert [(e.id, e.attempts) for e in two.receive()] == [(event_id, 2)]


# -- bad input ----------------------------------------------------------------------------------------


class Opaque:
    pass


BAD_PAYLOADS: list[tuple[Any, str]] = [
    ("just text", "expected a dict"),
    (["kind", "x"], "expected a dict"),
    (None, "expected a dict"),
    ({"text": "no kind"}, "'kind' must be a non-empty string"),
    ({"kind": ""}, "'kind' must be a non-empty string"),
    ({"kind": 5}, "'kind' must be a non-empty string"),
    ({"kind": "x", "when": datetime(2026, 1, 1)}, "not JSON-serialisable"),
    ({"kind": "x", "obj": Opaque()}, "not JSON-serialisable"),
    ({"kind": "x", "tags": {"a", "b"}}, "not JSON-serialisable"),
    ({"kind": "x", "score": float("nan")}, "not JSON-serialisable"),
    ({"kind": "x", 1: "int key"}, "keys must be strings"),
    ({"kind": "x", "nested": {True: "bool key"}}, "keys must be strings"),
    ({"kind": "x", "text": "nul\x00byte"}, "NUL"),
    ({"kind": "x", "text": "lone \ud800 surrogate"}, "surrogate"),
]


@pytest.mark.parametrize(("payload", "needle"), BAD_PAYLOADS)
def test_bad_payloads_are_refused_and_nothing_is_stored(make: MakeInbox, payload: Any, needle: str) -> None:
    inbox = make()
    with pytest.raises(InboxError, match=needle):
        inbox.push(payload)
    with pytest.raises(InboxError, match=needle):
        inbox.push_many([msg("fine"), payload])  # all or none
    assert len(inbox) == 0


def test_deeply_nested_payloads_are_refused(make: MakeInbox) -> None:
    deep: dict[str, Any] = {"kind": "x"}
    cur = deep
    for _ in range(5000):
        cur["d"] = {}
        cur = cur["d"]
    with pytest.raises(InboxError, match="nested more than"):
        make().push(deep)


def test_oversized_events_are_refused_with_the_limit(make: MakeInbox) -> None:
    inbox = make(config=InboxConfig(max_event_bytes=1024))
    inbox.push(msg("x" * 800))
    with pytest.raises(InboxError, match=r"is 1,\d{3} bytes as JSON; the limit is 1,024"):
        inbox.push(msg("x" * 1000))
    with pytest.raises(InboxError, match="the limit is 262,144"):
        make().push(msg("é" * 140_000))  # the default cap counts UTF-8 bytes, not characters
    assert len(inbox) == 1


def test_secrets_are_refused_by_default_and_redacted_when_configured(make: MakeInbox) -> None:
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    inbox = make()
    with pytest.raises(SecretRefusedError, match=r"payloads\[0\]\.text: not stored.*github-token"):
        inbox.push(msg(f"my token is {token}"))
    with pytest.raises(SecretRefusedError, match="key"):
        inbox.push({"kind": "x", token: "in a key"})
    assert len(inbox) == 0
    redacting = make(config=InboxConfig(secrets=SecretPolicy(action="redact")))
    redacting.push(msg(f"my token is {token}", extra=[f"again {token}"]))
    (event,) = redacting.receive()
    assert event.payload["text"] == "my token is [REDACTED:github-token]"
    assert event.payload["extra"] == ["again [REDACTED:github-token]"]


HOSTILE_AGENTS = ["", " ", "a b", "x' OR 1=1 --", "../other", "a/b", "agent\n[SYSTEM]", "a\x00b", "ünïcode\u2028x",
                  "-leading-dash", "_leading", "a" * 201, "*", "a;b", 'a"b', "a\\b", "a\tb"]


@pytest.mark.parametrize("agent", HOSTILE_AGENTS)
def test_hostile_agent_names_are_refused(make: MakeInbox, agent: str) -> None:
    with pytest.raises(InboxError, match="agent"):
        make(agent)


@pytest.mark.parametrize("agent", ["assistant", "ProjectAssistant", "entity-abc-123", "agent_1.v2", "名前", "a@b:c+d",
                                   "a" * 200])
def test_usable_agent_names_are_accepted(make: MakeInbox, agent: str) -> None:
    inbox = make(agent)
    inbox.push(msg("hi"))
    assert texts(inbox.receive()) == ["hi"]


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda i: i.receive(0), "max_events: must be at least 1"),
        (lambda i: i.receive(True), "max_events: expected an integer"),
        (lambda i: i.receive(10_001), "max_events: must be at most 10000"),
        (lambda i: i.ack("single-id"), "ids: expected a list of event ids"),
        (lambda i: i.nack("single-id"), "ids: expected a list of event ids"),
        (lambda i: i.ack([""]), r"ids\[0\]: expected an event id"),
        (lambda i: i.ack([5]), r"ids\[0\]: expected an event id"),
        (lambda i: i.push_many({"kind": "x"}), "payloads: expected a list"),
    ],
)
def test_bad_arguments_name_themselves(make: MakeInbox, call: Callable[[BaseInbox], Any], needle: str) -> None:
    with pytest.raises(InboxError, match=needle):
        call(make())


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"visibility_timeout": 0}, "visibility_timeout: must be at least"),
        ({"visibility_timeout": -1}, "visibility_timeout: must be at least"),
        ({"visibility_timeout": "30"}, "visibility_timeout: expected a number"),
        ({"visibility_timeout": float("inf")}, "visibility_timeout: must be a finite number"),
        ({"config": {"max_event_bytes": 10}}, "config: expected an InboxConfig"),
    ],
)
def test_bad_options_are_refused(make: MakeInbox, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidInputError, match=needle):
        make(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"max_event_bytes": 63}, InboxError, "max_event_bytes: must be at least 64"),
        ({"max_event_bytes": 1.5}, InboxError, "max_event_bytes: expected an integer"),
        ({"max_receive": 0}, InboxError, "max_receive: must be at least 1"),
        ({"secrets": "refuse"}, InvalidInputError, "secrets: expected a SecretPolicy"),
    ],
)
def test_bad_config_values_name_themselves(kwargs: dict[str, Any], error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        InboxConfig(**kwargs)


def test_max_receive_caps_one_receive(make: MakeInbox) -> None:
    inbox = make(config=InboxConfig(max_receive=2))
    with pytest.raises(InboxError, match="max_events: must be at most 2"):
        inbox.receive(3)
    inbox.push_many([msg("a"), msg("b"), msg("c")])
    assert texts(inbox.receive(2)) == ["a", "b"]


def test_inbox_errors_are_mindcore_value_errors() -> None:
    assert issubclass(InboxError, MindcoreError) and issubclass(InboxError, ValueError)


# -- async twins --------------------------------------------------------------------------------------


def test_async_twins(make: MakeInbox) -> None:
    inbox = make()

    async def run() -> None:
        first = await inbox.apush(msg("a"))
        more = await inbox.apush_many([msg("b"), msg("c")])
        assert await inbox.apending() == 3
        events = await inbox.areceive(max_events=2)
        assert [e.id for e in events] == [first, more[0]]
        await inbox.anack([events[1].id])
        await inbox.aack([first])
        again = await inbox.areceive(5)
        assert [(e.payload["text"], e.attempts) for e in again] == [("b", 2), ("c", 1)]
        await inbox.aack(e.id for e in again)
        assert await inbox.apending() == 0

    asyncio.run(run())


# -- the embedded inbox's own -------------------------------------------------------------------------


def test_inbox_takes_a_store_or_a_path_and_closes_only_what_it_opened(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "store")
    with Inbox(store, agent="a") as inbox:
        assert inbox.store is store
        inbox.push(msg("hi"))
    assert store.table("consciousness_inbox").count("a") == 1  # the store passed in stays open
    with Inbox(tmp_path / "store", agent="a") as by_path:
        assert by_path.store is not store and len(by_path) == 1
    with pytest.raises(InvalidInputError, match="store: expected a Store"):
        Inbox(42, agent="a")  # type: ignore[arg-type]


def test_concurrent_pushes_of_one_process_share_commits(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "s", agent="a")
    inbox.push(msg("first"))
    table = inbox._repo.table
    commits = []
    append = table.append

    def counting(*args: Any, **kwargs: Any) -> Any:
        commits.append(1)
        return append(*args, **kwargs)

    table.append = counting  # type: ignore[method-assign]
    per_thread, threads = 15, 8

    def pusher(t: int) -> list[str]:
        return [inbox.push({"kind": "x", "thread": t, "i": i}) for i in range(per_thread)]

    with ThreadPoolExecutor(threads) as pool:
        ids = [i for chunk in pool.map(pusher, range(threads)) for i in chunk]
    assert len(set(ids)) == per_thread * threads
    assert len(commits) < per_thread * threads  # some pushes rode along with another's commit
    events = inbox.receive(1000)[1:]
    assert sorted(e.id for e in events) == sorted(ids)
    for t in range(threads):  # each thread's pushes come out in the order it made them
        assert [e.payload["i"] for e in events if e.payload["thread"] == t] == list(range(per_thread))


def test_a_failed_commit_fails_its_pushes_and_stores_nothing(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "s", agent="a")
    table = inbox._repo.table
    append = table.append

    def broken(*args: Any, **kwargs: Any) -> Any:
        table.append = append  # type: ignore[method-assign]
        raise OSError("disk full")

    table.append = broken  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        inbox.push(msg("lost"))
    assert len(inbox) == 0
    inbox.push(msg("kept"))
    assert texts(inbox.receive()) == ["kept"]


@pytest.mark.parametrize("one_scan", [0, 3, 10_000])
def test_receive_reads_a_big_backlog_in_two_steps_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_scan: int
) -> None:
    monkeypatch.setattr("mindcore.consciousness._inbox_repo._ONE_SCAN", one_scan)
    inbox = Inbox(tmp_path / "s", agent="a")
    inbox.push_many([msg(f"m{i}") for i in range(6)])
    first = inbox.receive(2)
    inbox.nack([first[1].id])
    assert [(e.payload["text"], e.attempts) for e in inbox.receive(3)] == [("m1", 2), ("m2", 1), ("m3", 1)]
    assert texts(inbox.receive(10)) == ["m4", "m5"]


def test_inbox_repr_names_the_agent(tmp_path: Path) -> None:
    with Inbox(tmp_path / "s", agent="assistant", visibility_timeout=5) as inbox:
        assert "assistant" in repr(inbox) and "visibility_timeout=5" in repr(inbox)
