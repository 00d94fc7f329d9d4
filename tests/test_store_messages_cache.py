"""MessageLog and the store's cache: a new log's first append scans nothing (it is counted, held as
empty and patched by the commit), and what another process wrote first is never taken for empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mindcore
from mindcore.store import Store
from mindcore.store.messages import MessageLog


def _count_scans(log: MessageLog, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    lance = log.table._tbl
    scans: list[Any] = []
    search = lance.search

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(args)
        return search(*args, **kwargs)

    monkeypatch.setattr(lance, "search", counted)
    return scans


def test_a_new_logs_first_append_and_read_scan_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    log = MessageLog(store, "chat_messages")
    log.append("old", [{"role": "user", "content": "the table has rows"}])
    scans = _count_scans(log, monkeypatch)
    assert log.append("new", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]) == (1, 2)
    assert log.append("new", [{"role": "user", "content": "again"}]) == (3, 3)
    page = log.page("new")
    assert [(m["seq"], m["content"]) for m in page.messages] == [(1, "hi"), (2, "hello"), (3, "again")]
    assert scans == []


def test_a_log_another_process_wrote_is_read_not_taken_for_empty(tmp_path: Path) -> None:
    with mindcore.open(tmp_path / "s") as first, mindcore.open(tmp_path / "s") as second:
        writer, other = MessageLog(first, "chat_messages"), MessageLog(second, "chat_messages")
        assert writer.append("chat", [{"role": "user", "content": str(i)} for i in range(3)]) == (1, 3)
        assert other.append("chat", [{"role": "user", "content": "3"}]) == (4, 4)  # never read it here
        assert writer.append("chat", [{"role": "user", "content": "4"}]) == (5, 5)
        for log in (writer, other):
            assert [m["content"] for m in log.page("chat").messages] == ["0", "1", "2", "3", "4"]
