"""``mindcore inbox dead-letters | requeue | discard``: an operator's view of an agent's dead letters,
on a store folder and on a real Redis server, through ``main([...])`` and one real ``python -m mindcore``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import run_cli

from mindcore.cli import main
from mindcore.consciousness import BaseInbox, Inbox


def open_inbox(kind: str, where: str) -> BaseInbox:
    if kind == "store":
        return Inbox(where, agent="assistant", max_attempts=1)
    from mindcore.consciousness import RedisInbox

    return RedisInbox(where, agent="assistant", max_attempts=1)


def kill_two(inbox: BaseInbox) -> list[str]:
    """Push three events; the first two die (the second with no error given); their ids."""
    ids = inbox.push_many([{"kind": "plan", "text": "poison"}, {"kind": "plan", "text": "b\nc"},
                           {"kind": "plan", "text": "fine"}])
    inbox.receive(2)
    inbox.nack([ids[0]], error="ValueError: bad date\nin line 2")
    inbox.nack([ids[1]])
    return ids[:2]


def test_list_requeue_and_discard(inbox_at: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    kind, where = inbox_at
    scope = ["--store", where, "--agent", "assistant"]
    with open_inbox(kind, where) as inbox:
        poison, other = kill_two(inbox)
        assert main(["inbox", "dead-letters", *scope]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2
        assert lines[0].startswith(f"{poison}  attempts=1  died 20")
        assert lines[0].endswith('Z  ValueError: bad date in line 2  {"kind": "plan", "text": "poison"}')
        assert lines[1].startswith(f"{other}  attempts=1  ") and "(no error given: its leases ran out)" in lines[1]

        assert main(["inbox", "dead-letters", "--json", *scope]) == 0
        docs = json.loads(capsys.readouterr().out)
        assert [(d["id"], d["attempts"], d["error"], d["payload"]["text"]) for d in docs] == [
            (poison, 1, "ValueError: bad date\nin line 2", "poison"), (other, 1, None, "b\nc")]

        assert main(["inbox", "requeue", *scope, poison]) == 0
        out = capsys.readouterr().out.strip()
        if kind == "store":  # the same id, in its place in push order
            assert out == f"requeued {poison}"
            assert [e.payload["text"] for e in inbox.receive()] == ["poison", "fine"]
        else:  # a new entry at the end of the stream
            assert out.startswith(f"requeued {poison} as ")
            assert [e.payload["text"] for e in inbox.receive()] == ["fine", "poison"]

        assert main(["inbox", "discard", *scope, other]) == 0
        assert capsys.readouterr().out == f"discarded {other}\n"
        assert main(["inbox", "dead-letters", *scope]) == 0
        assert capsys.readouterr().out == "no dead letters in the inbox of agent 'assistant'\n"
        assert main(["inbox", "dead-letters", "--json", *scope]) == 0
        assert json.loads(capsys.readouterr().out) == []


def test_errors_are_one_line_and_nothing_is_done(inbox_at: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    kind, where = inbox_at
    scope = ["--store", where, "--agent", "assistant"]
    with open_inbox(kind, where) as inbox:
        poison, other = kill_two(inbox)
        live = inbox.push({"kind": "plan", "text": "live"})
        for action in ("requeue", "discard"):
            assert main(["inbox", action, *scope, poison, live]) == 1
            captured = capsys.readouterr()
            assert captured.out == "" and captured.err == (
                f"mindcore inbox: {live}: no dead letter with this id in the inbox of agent 'assistant' "
                "(mindcore inbox dead-letters lists them); nothing was done\n")
        assert [d.id for d in inbox.dead_letters()] == [poison, other]
    assert main(["inbox", "requeue", *scope, "not an id"]) == 1
    assert capsys.readouterr().err.startswith("mindcore inbox: not an id: no dead letter")
    assert main(["inbox", "dead-letters", "--store", where, "--agent", "a b"]) == 1
    err = capsys.readouterr().err
    assert "\n" not in err.strip() and err.startswith("mindcore inbox: agent: 'a b' is not a usable agent name")


def test_a_store_without_an_inbox_is_left_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mindcore

    path = tmp_path / "s"
    mindcore.open(path).close()
    assert main(["inbox", "dead-letters", "--store", str(path), "--agent", "assistant"]) == 0
    assert capsys.readouterr().out == "no dead letters in the inbox of agent 'assistant'\n"
    assert main(["inbox", "discard", "--store", str(path), "--agent", "assistant", "x"]) == 1
    assert capsys.readouterr().err.startswith("mindcore inbox: x: no dead letter with this id")
    assert mindcore.open(path).table_names() == []
    assert main(["inbox", "dead-letters", "--store", str(tmp_path / "none"), "--agent", "assistant"]) == 1
    assert capsys.readouterr().err.startswith("mindcore inbox: no store at ")


def test_as_real_commands(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with open_inbox("store", path) as inbox:
        poison, other = kill_two(inbox)
    listed = run_cli("inbox", "dead-letters", "--store", path, "--agent", "assistant").stdout
    assert listed.startswith(f"{poison}  attempts=1  ") and f"\n{other}  attempts=1  " in listed
    assert run_cli("inbox", "requeue", "--store", path, "--agent", "assistant", poison, other).stdout == (
        f"requeued {poison}\nrequeued {other}\n")
    failed = run_cli("inbox", "discard", "--store", path, "--agent", "assistant", poison, check=False)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith(f"mindcore inbox: {poison}: no dead letter with this id")
    for action in ("dead-letters", "requeue", "discard"):
        out = run_cli("inbox", action, "--help").stdout
        assert f"usage: mindcore inbox {action}" in out and f"example:\n  mindcore inbox {action}" in out
    with open_inbox("store", path) as inbox:
        assert [e.id for e in inbox.receive()][:2] == [poison, other] and inbox.dead_letters() == []
