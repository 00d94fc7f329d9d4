"""``mindcore restore`` and ``mindcore inspect --retired``: list a user's retired long-term memories
and bring one back, from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import run_cli

import mindcore
from mindcore.cli import main
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory

OLD = "Is allergic to peanuts"
NEW = "Is not allergic to peanuts"


def retired_store(path: Path) -> tuple[str, str]:
    """A store whose user ``user-7`` (namespace ``chat``) has ``OLD`` superseded by ``NEW``: their ids."""
    store = mindcore.open(str(path), embedder=HashEmbedder())
    ltm = LongTermMemory(store, user_id="user-7", namespace="chat", embedder=HashEmbedder())
    old = ltm.remember(OLD)
    new = ltm.try_remember(NEW)
    assert old is not None and new.memory is not None and new.action == "superseded"
    ltm.close()
    store.close()
    return old.id, new.memory.id


def test_inspect_retired_lists_and_restore_brings_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s"
    old, new = retired_store(path)
    scope = ["--store", str(path), "--user-id", "user-7", "--namespace", "chat"]
    assert main(["inspect", "--retired", *scope]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{old}  superseded  20") and f"  {OLD}  -> {new}  (" in line and line.endswith(")")
    assert main(["inspect", "--retired", "--json", *scope]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert (doc["memory_id"], doc["action"], doc["text"], doc["successor_id"]) == (old, "superseded", OLD, new)

    assert main(["restore", *scope, old]) == 0
    assert capsys.readouterr().out == f"restored {old}: {OLD}\n"
    assert main(["inspect", "--retired", *scope]) == 0
    assert capsys.readouterr().out == "no retired memories of user 'user-7' in namespace 'chat'\n"
    ltm = LongTermMemory(mindcore.open(str(path)), user_id="user-7", namespace="chat", embedder=HashEmbedder())
    assert {m.text for m in ltm.memories()} == {OLD, NEW}
    # Again: the memory is live, printed and left as it is.
    assert main(["restore", *scope, old]) == 0
    assert capsys.readouterr().out == f"restored {old}: {OLD}\n"


def test_unknown_id_is_one_line_on_stderr_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s"
    old, _ = retired_store(path)
    # Another user's (or namespace's) retired memory is unknown in this scope.
    assert main(["restore", "--store", str(path), "--user-id", "user-8", "--namespace", "chat", old]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err and err.startswith(f"mindcore restore: memory_id: no memory {old!r} in long-term memory")
    assert main(["inspect", "--retired", "--store", str(path)]) == 1
    assert capsys.readouterr().err.strip() == "mindcore inspect: --retired needs --user-id"


def test_restore_and_inspect_retired_as_real_commands(tmp_path: Path) -> None:
    path = tmp_path / "s"
    old, new = retired_store(path)
    before = mindcore.open(str(path), read_only=True).stats()
    listed = run_cli("inspect", "--store", path, "--retired", "--user-id", "user-7", "--namespace", "chat").stdout
    assert listed.startswith(f"{old}  superseded  ") and f"-> {new}" in listed
    after = mindcore.open(str(path), read_only=True).stats()  # inspect wrote nothing
    assert [(t.name, t.version) for t in after.tables] == [(t.name, t.version) for t in before.tables]
    done = run_cli("restore", "--store", path, "--user-id", "user-7", "--namespace", "chat", old)
    assert done.stdout == f"restored {old}: {OLD}\n"
    failed = run_cli("restore", "--store", path, "--user-id", "user-7", "--namespace", "chat", "nope", check=False)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("mindcore restore: memory_id: no memory 'nope' in long-term memory scope")
    assert len(failed.stderr.strip().splitlines()) == 1
