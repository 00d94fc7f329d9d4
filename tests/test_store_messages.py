"""MessageLog.prune: the rows a snapshot replaced go; the rest keep their seq, and appends go on."""

from __future__ import annotations

from mindcore.store import Store
from mindcore.store.messages import MessageLog


def test_prune_keeps_seq_and_appends_continue(store: Store) -> None:
    log = MessageLog(store, "chat_messages")
    log.append("a", [{"role": "user", "content": str(i)} for i in range(5)])
    log.append("b", [{"role": "user", "content": "other log"}])
    assert log.prune("a", 4) == 3
    assert [(m["seq"], m["content"]) for m in log.page("a").messages] == [(4, "3"), (5, "4")]
    assert log.append("a", [{"role": "user", "content": "5"}]) == (6, 6)
    assert [m["content"] for m in log.page("b").messages] == ["other log"]
    assert log.prune("a", 1) == 0
