"""``mindcore inspect`` shows each table's storage: fragments, versions kept, deleted rows, bytes on
disk and what ``compact`` would reclaim, and inspecting changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
from _cli_helpers import run_cli

import mindcore

WRITES = 10


def _written(path: Path) -> Path:
    """A store whose table ``notes`` got ``WRITES`` single-row upserts and one delete."""
    store = mindcore.open(path)
    t = store.table("notes", {"text": pa.string()})
    for i in range(WRITES):
        t.upsert("u", [{"id": f"n{i}", "text": f"note {i} " * 10}])
    t.delete("u", ids=["n0"])
    store.close()
    return path


def test_inspect_json_names_the_storage_figures(tmp_path: Path) -> None:
    path = _written(tmp_path / "db")
    version = mindcore.open(path, read_only=True).open_table("notes").version
    doc = json.loads(run_cli("inspect", "--store", path, "--json").stdout)
    (notes,) = doc["tables"]
    assert notes["rows"] == WRITES - 1 and notes["fragments"] == WRITES - 1 and notes["versions"] > 1
    assert notes["deleted_rows"] == 0  # a one-row fragment whose row is deleted is dropped whole
    assert 0 < notes["reclaimable_bytes"] < notes["disk_bytes"]
    assert doc["reclaimable_bytes"] == notes["reclaimable_bytes"]
    assert mindcore.open(path, read_only=True).open_table("notes").version == version


def test_inspect_text_shows_the_figures_and_compaction_empties_reclaimable(tmp_path: Path) -> None:
    path = _written(tmp_path / "db")
    out = run_cli("inspect", "--store", path).stdout
    header = next(line for line in out.splitlines() if line.startswith("| table |"))
    for column in ("rows", "fragments", "versions kept", "deleted rows", "on disk", "compact would reclaim"):
        assert f"| {column} |" in header
    assert "compact would reclaim" in out.splitlines()[2]
    before = mindcore.open(path, read_only=True).stats()

    store = mindcore.open(path)
    store.compact(cleanup_grace=timedelta(0))
    store.close()
    doc = json.loads(run_cli("inspect", "--store", path, "--json").stdout)
    (notes,) = doc["tables"]
    assert (notes["fragments"], notes["versions"], notes["reclaimable_bytes"]) == (1, 1, 0)
    assert notes["disk_bytes"] < before.tables[0].disk_bytes
