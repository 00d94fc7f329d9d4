"""Quiet by default: normal use prints nothing on stderr, and a user who asks for Lance's logs gets them.

Each case runs a real child process, with the environment a user's shell would give it (no Lance
log level inherited from this test process, see ``conftest.user_env``), and captures its stderr:
``mindcore demo``, storing a whole LoCoMo conversation through ``LongTermMemory.remember()``, and
a compaction whose commit loses a race with a concurrent delete (the race that makes Lance print
``Compaction commit failed ... Retryable commit conflict`` at its default level). The README's
blocks are checked the same way by ``tests/test_readme.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import user_env

from mindcore.errors import MindcoreError
from mindcore.eval import data_dir
from mindcore.store._lance_logs import DEFAULT_LEVEL, LOG_VARIABLES, quiet_lance_logs


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{done.stdout}\n--- stderr ---\n{done.stderr}"
    return done


def test_mindcore_demo_prints_nothing_on_stderr(tmp_path: Path) -> None:
    done = _run(["-m", "mindcore", "demo"], tmp_path, user_env())
    assert done.stdout.strip().endswith("ok")
    assert done.stderr == ""


_LOCOMO = """
import sys
from mindcore.embed import HashEmbedder
from mindcore.eval.locomo import load_locomo
from mindcore.ltm import LongTermMemory

conversation = load_locomo(sys.argv[1])[0]
ltm = LongTermMemory(sys.argv[2], user_id="caroline", namespace="locomo", embedder=HashEmbedder())
for turn in conversation.turns:
    ltm.remember(turn.text, created_at=turn.timestamp_ms, context=turn.context)
ltm.store.wait_for_maintenance()
print(len(conversation.turns), len(ltm.memories()))
ltm.close()
"""


def test_storing_a_locomo_conversation_prints_nothing_on_stderr(tmp_path: Path) -> None:
    """Every turn of LoCoMo's first conversation (419) through plain ``remember()``, on a folder
    store with its default background compaction."""
    try:
        path = data_dir() / "locomo" / "locomo10.json"
    except MindcoreError as e:
        pytest.skip(f"no evaluation data: {e}")
    if not path.is_file():
        pytest.skip(f"no LoCoMo data at {path}")
    done = _run(["-c", _LOCOMO, str(path), str(tmp_path / "store")], tmp_path, user_env())
    assert done.stdout.split() == ["419", "419"]
    assert done.stderr == ""


# A compaction whose rewrite is overtaken by a delete of one of the rows it merges: its first
# commit conflicts, and it is planned and done again (tests/test_store_compaction.py checks the rows).
_CONFLICT = """
import os, sys, threading
import pyarrow as pa
import mindcore
import mindcore.store.table as table_module
from mindcore.store import StoreConfig

t = mindcore.open(sys.argv[1], config=StoreConfig(compact_every=0)).table("t", {"n": pa.int64()})
for i in range(10):
    t.upsert("u", [{"id": f"s{i}", "n": i}])
real = table_module._rewrite
calls = []

def rewrite_then_delete(ds, plan):
    out = real(ds, plan)
    calls.append(plan)
    if len(calls) == 1:
        th = threading.Thread(target=lambda: t.delete("u", ids=["s3"]))
        th.start()
        th.join()
    return out

table_module._rewrite = rewrite_then_delete
result = t.compact()
print(result.retries, result.deferred, t.count("u"), os.environ["LANCE_LOG"], os.environ["LANCEDB_LOG"])
"""


def test_a_compaction_conflict_is_redone_without_a_word(tmp_path: Path) -> None:
    done = _run(["-c", _CONFLICT, str(tmp_path / "store")], tmp_path, user_env())
    assert done.stdout.split() == ["1", "False", "9", DEFAULT_LEVEL, DEFAULT_LEVEL]
    assert done.stderr == ""


def test_a_user_who_sets_lance_log_keeps_it_and_sees_lances_warnings(tmp_path: Path) -> None:
    done = _run(["-c", _CONFLICT, str(tmp_path / "store")], tmp_path, user_env(LANCE_LOG="warn"))
    # Both libraries log at the user's level (LANCEDB_LOG follows LANCE_LOG when it is not set).
    assert done.stdout.split() == ["1", "False", "9", "warn", "warn"]
    assert "WARN" in done.stderr and "Retryable commit conflict" in done.stderr


def test_lance_log_levels_default_to_errors_and_follow_the_users_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    def levels(**given: str) -> tuple[str, str]:
        for name in LOG_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in given.items():
            monkeypatch.setenv(name, value)
        quiet_lance_logs()
        return os.environ["LANCE_LOG"], os.environ["LANCEDB_LOG"]

    assert levels() == ("error", "error")
    assert levels(LANCE_LOG="warn") == ("warn", "warn")
    assert levels(LANCEDB_LOG="lance=debug,info") == ("lance=debug,info", "lance=debug,info")
    assert levels(LANCE_LOG="info", LANCEDB_LOG="off") == ("info", "off")
