"""``mindcore recall``: every capability answers from the shell, from the store as the library wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import populate, run_cli

import mindcore


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return populate(tmp_path_factory.mktemp("recall") / "store")


def _versions(path: Path) -> dict[str, int]:
    return {t.name: t.version for t in mindcore.open(path, read_only=True).stats().tables}


def test_ltm_recall_ranks_a_users_memories_and_writes_nothing(store: Path) -> None:
    before = _versions(store)
    found = json.loads(run_cli("recall", "--store", store, "--json", "ltm", "--user-id", "user-7",
                               "--namespace", "chat", "what does the user drink? tea or coffee").stdout)
    assert [m["text"] for m in found] == ["Prefers green tea over coffee", "Lives in Lyon"]
    assert found[0]["kind"] == "preference" and found[0]["score"] > found[1]["score"]
    assert _versions(store) == before
    other = run_cli("recall", "--store", store, "ltm", "--user-id", "user-8", "--namespace", "chat", "-k", "1",
                    "food allergies").stdout
    assert "Allergic to peanuts" in other and "tea" not in other


def test_mind_recall_and_header(store: Path) -> None:
    found = json.loads(run_cli("recall", "--store", store, "--json", "mind", "--agent", "tracker",
                               "TSMC capacity").stdout)
    assert {(r["type"], r["content"]) for r in found} >= {("goal", "Track TSMC capacity"),
                                                          ("belief", "TSMC N3 capacity is booked through Q2")}
    header = run_cli("recall", "--store", store, "mind", "--agent", "tracker").stdout
    assert header.startswith("--- AGENT MIND ---") and "Always cite the earnings call" in header


def test_context_discovers_tools(store: Path) -> None:
    found = json.loads(run_cli("recall", "--store", store, "--json", "context", "--dataset", "support",
                               "--limit", "2", "book a flight to Paris").stdout)
    assert found[0]["name"] == "book_flight" and len(found) == 2
    bm25 = run_cli("recall", "--store", store, "context", "--dataset", "support", "--strategy", "bm25",
                   "send an e-mail").stdout
    assert bm25.splitlines()[2].split(" | ")[2] == "send_email"


def test_working_memory_block(store: Path) -> None:
    out = run_cli("recall", "--store", store, "working", "--thread-id", "t-1").stdout
    assert out.strip() == "<working_memory>\nbooking a flight to Paris\n</working_memory>"
    empty = run_cli("recall", "--store", store, "working", "--thread-id", "t-other").stdout
    assert "is empty" in empty


def test_a_capability_the_store_does_not_hold_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    mindcore.open(tmp_path / "empty").close()
    done = run_cli("recall", "--store", tmp_path / "empty", "mind", "--agent", "a", "q", check=False)
    assert done.returncode == 1 and "holds no mind" in done.stderr
    assert mindcore.open(tmp_path / "empty", read_only=True).table_names() == []
