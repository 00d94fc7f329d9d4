"""``mindcore inspect``: tables, namespaces, kinds, rows, sizes and versions of a store, read-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import populate, run_cli

import mindcore
from mindcore.cli import SUBCOMMANDS


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return populate(tmp_path_factory.mktemp("inspect") / "store")


def test_inspect_json_counts_every_table_namespace_and_kind(populated: Path) -> None:
    doc = json.loads(run_cli("inspect", "--store", populated, "--json").stdout)
    tables = {t["name"]: t for t in doc["tables"]}
    assert doc["embedding"]["model_id"].startswith("mindcore-hash-")
    mind = tables["mind_entries"]
    assert mind["capability"] == "mind" and mind["rows"] == 3
    assert mind["kinds"] == {"belief": 1, "goal": 1, "reflection": 1}
    assert mind["dim"] == 384 and mind["embedding"]["dim"] == 384
    ltm = tables["ltm_memories"]
    assert ltm["rows"] == 3 and len(ltm["namespaces"]) == 2
    assert ltm["kinds"] == {"fact": 2, "preference": 1}
    assert tables["context_tools"]["namespaces"] == {"support": {"rows": 3, "kinds": {"backend": 3}}}
    assert tables["working_memory"]["capability"] == "working memory"
    for t in tables.values():
        assert t["version"] >= 1 and t["versions"] >= 1 and t["disk_bytes"] > 0 and t["data_bytes"] > 0
    assert doc["disk_bytes"] >= sum(t["disk_bytes"] for t in tables.values())


def test_inspect_prints_tables_and_writes_nothing(populated: Path) -> None:
    before = mindcore.open(populated, read_only=True).stats()
    out = run_cli("inspect", "--store", populated, "--namespaces").stdout
    assert "| mind_entries | mind | 1 | 3 | belief 1, goal 1, reflection 1 |" in out
    assert "| mind/tracker | 3 | belief 1, goal 1, reflection 1 |" in out
    after = mindcore.open(populated, read_only=True).stats()
    assert [(t.name, t.version) for t in after.tables] == [(t.name, t.version) for t in before.tables]


def test_inspect_of_a_missing_store_is_one_line_and_exit_1(tmp_path: Path) -> None:
    done = run_cli("inspect", "--store", tmp_path / "nothing", check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == f"mindcore inspect: no store at {tmp_path / 'nothing'} (give --store PATH)"
    assert not (tmp_path / "nothing").exists()


@pytest.mark.parametrize("name", [c.name for c in SUBCOMMANDS])
def test_every_subcommand_has_help_with_an_example(name: str) -> None:
    out = run_cli(name, "--help").stdout
    assert f"usage: mindcore {name}" in out
    assert "example:\n  mindcore " + name in out
