"""``mindcore remember-bulk``: many users' memories from a file, with progress; a bad row stops it
before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from _cli_helpers import interrupt_cli, run_cli

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory
from mindcore.store import ALL_NAMESPACES


def texts(path: Path, user: str, namespace: str = "chat") -> list[str]:
    store = mindcore.open(path)
    memory = LongTermMemory(store, user_id=user, namespace=namespace, embedder=HashEmbedder())
    return sorted(m.text for m in memory.memories())


def test_remember_bulk_stores_each_users_memories(tmp_path: Path) -> None:
    facts = ["Drinks green tea", "Plays the cello", "Grows roses in the garden"]
    rows = [{"user_id": f"user-{u}", "text": fact} for u in range(6) for fact in facts]
    rows.append({"user_id": "user-0", "text": "Drinks green tea"})  # a duplicate
    rows.append({"user_id": "user-1", "text": "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = run_cli("remember-bulk", "--store", tmp_path / "store", path, "--embedder", "hash",
                   "--namespace", "chat", "--chunk-size", "7")
    assert done.stdout.startswith("20 rows: 18 stored, 1 duplicates, 1 secrets refused, 0 evicted; 4 commits")  # users of 4, 4, 3+3, 3+3 rows
    # Not a terminal: progress as plain lines on stderr, the last one complete.
    assert done.stderr.strip().splitlines()[-1] == "remember: 20/20 rows"
    assert texts(tmp_path / "store", "user-0") == sorted(facts)
    again = run_cli("remember-bulk", "--store", tmp_path / "store", path, "--embedder", "hash", "--namespace", "chat")
    assert again.stdout.startswith("20 rows: 0 stored, 19 duplicates, 1 secrets refused")


def test_a_bad_row_stops_it_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("user_id,text,importance\nann,Likes tea,0.5\nbob,Lives in Lyon,7\n", encoding="utf-8")
    done = run_cli("remember-bulk", "--store", tmp_path / "store", path, "--embedder", "hash", check=False)
    assert done.returncode == 1
    assert "rows[1]: importance: expected a number in [0, 1], got 7.0" in done.stderr
    assert texts(tmp_path / "store", "ann", namespace="default") == []


def test_ctrl_c_stops_between_committed_chunks_and_a_rerun_stores_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"user_id": f"user-{u}", "text": f"fact number {u} about topic {u % 17}"})
                            + "\n" for u in range(150)), encoding="utf-8")
    stdout, stderr = interrupt_cli("remember-bulk", "--store", tmp_path / "store", path, "--embedder", "hash",
                                   "--namespace", "chat", "--chunk-size", "1", first="remember: ")
    assert "stopping after the chunk in progress" in stderr
    handled = int(stdout.split("stopped: ")[1].split(" rows")[0])
    assert 1 <= handled < 150
    assert mindcore.open(tmp_path / "store", read_only=True).open_table("ltm_memories").count(ALL_NAMESPACES) == handled
    again = run_cli("remember-bulk", "--store", tmp_path / "store", path, "--embedder", "hash", "--namespace", "chat")
    assert again.stdout.startswith(f"150 rows: {150 - handled} stored, {handled} duplicates")
