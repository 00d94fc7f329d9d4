"""A table's census of namespaces (``Table.has_rows``, and the reads and writes of a new namespace).

A namespace the census does not list is taken to have no rows without a read, so the census must
never miss one: not after this process writes, not after another process writes (new sessions,
compactions, many commits), not for a table too big to hold its census. A message log begun in
another process is the case where a miss would do harm (its ``seq`` would start again at 1).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mindcore
from mindcore.store import StoreConfig, census
from mindcore.store.messages import MessageLog

CONFIG = StoreConfig(compact_every=0)  # maintenance only when a test asks for it


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def in_another_process(path: str, body: str) -> None:
    """Run ``body`` in a new Python process with ``store`` open on ``path`` (maintenance off)."""
    script = textwrap.dedent("""
        import sys
        import mindcore
        from mindcore.store import StoreConfig
        from mindcore.store.messages import MessageLog
        with mindcore.open(sys.argv[1], config=StoreConfig(compact_every=0)) as store:
        """) + textwrap.indent(textwrap.dedent(body), "    ")
    subprocess.run([sys.executable, "-c", script, path], check=True, capture_output=True, timeout=300)


def test_has_rows_tells_new_namespaces_existing_ones_and_emptied_ones(tmp_path: Path) -> None:
    with mindcore.open(str(tmp_path / "s"), config=CONFIG) as store:
        t = store.table("notes", {"text": pa.string()})
        assert not t.has_rows("a")
        t.upsert("a", [{"id": "1", "text": "x"}])
        assert t.has_rows("a") and not t.has_rows("b")
        assert t._census is not None  # the census is held: "b" was told without a count
        t.delete("a", ids=["1"])
        assert not t.has_rows("a")  # listed in the census, so counted: no rows left


def test_a_log_begun_by_another_process_goes_on_from_its_last_seq(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with mindcore.open(path, config=CONFIG) as store:
        log = MessageLog(store, "chat")
        assert log.append("mine", [user("a")]) == (1, 1)  # this process now holds the census
        in_another_process(path, """
            MessageLog(store, "chat").append("theirs", [{"role": "user", "content": c} for c in "xyz"])
        """)
        assert log.append("theirs", [user("w")]) == (4, 4)
        assert [m["content"] for m in log.page("theirs", limit=10).messages] == ["x", "y", "z", "w"]


def test_the_census_catches_up_after_many_commits_and_compactions_elsewhere(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with mindcore.open(path, config=CONFIG) as store:
        t = store.table("notes", {"text": pa.string()})
        t.upsert("first", [{"id": "1", "text": "x"}])
        assert not t.has_rows("n0")
        # More new fragments than a catch-up reads: the census is taken again.
        in_another_process(path, """
            t = store.table("notes")
            for i in range(80):
                t.upsert(f"n{i}", [{"id": "1", "text": "x"}])
        """)
        assert all(t.has_rows(f"n{i}") for i in range(80))
        assert not t.has_rows("later")
        in_another_process(path, """
            t = store.table("notes")
            t.upsert("later", [{"id": "1", "text": "x"}])
            t.compact()
        """)
        assert t.has_rows("later") and t.has_rows("n79") and not t.has_rows("never")
        assert t.cached("later").n == 1


def test_a_new_namespace_is_read_as_empty_without_a_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with mindcore.open(str(tmp_path / "s"), config=CONFIG) as store:
        t = store.table("notes", {"text": pa.string()})
        t.upsert("a", [{"id": "1", "text": "x"}])
        assert not t.has_rows("new")
        scans: list[object] = []
        search = t._tbl.search
        monkeypatch.setattr(t._tbl, "search", lambda *a, **k: scans.append(a) or search(*a, **k))
        assert t.cached("new").n == 0
        assert scans == []
        t.upsert("new", [{"id": "1", "text": "y"}])  # the empty entry is patched, not read again
        assert [r["text"] for r in t.scan("new")] == ["y"] and t.cached("new").n == 1


def test_a_table_too_big_for_a_census_is_looked_up_namespace_by_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "s")
    with mindcore.open(path, config=CONFIG) as store:
        store.table("notes", {"text": pa.string()}).upsert("a", [{"id": str(i), "text": "x"} for i in range(10)])
        MessageLog(store, "chat").append("big", [user(str(i)) for i in range(10)])
    monkeypatch.setattr(census, "CENSUS_MAX_ROWS", 5)
    with mindcore.open(path, config=CONFIG) as store:  # a process that finds the tables already big
        t = store.table("notes", {"text": pa.string()})
        assert t.has_rows("a") and not t.has_rows("b")
        assert t._census is None and t._census_off
        assert MessageLog(store, "chat").append("big", [user("next")]) == (11, 11)


def test_a_census_taken_while_small_follows_the_table_as_it_grows(tmp_path: Path) -> None:
    with mindcore.open(str(tmp_path / "s"), config=CONFIG) as store:
        t = store.table("notes", {"text": pa.string()})
        assert not t.has_rows("a")
        for i in range(20):
            t.upsert(f"n{i}", [{"id": "1", "text": "x"}])
        assert t._census is not None and t._census.names == {f"n{i}" for i in range(20)}
        assert t.has_rows("n19") and not t.has_rows("n20")
