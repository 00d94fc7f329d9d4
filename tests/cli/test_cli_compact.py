"""``mindcore compact``: fragments merged, old versions deleted, rows unchanged, sizes before and after."""

from __future__ import annotations

from pathlib import Path

from _cli_helpers import populate, run_cli

import mindcore


def _snapshot(path: Path) -> dict[str, list[dict[str, object]]]:
    store = mindcore.open(path, read_only=True)
    return {name: sorted(store.open_table(name).scan(mindcore.store.ALL_NAMESPACES, columns=["namespace", "id",
                                                                                             "updated_at"]),
                         key=lambda r: (str(r["namespace"]), str(r["id"])))
            for name in store.table_names()}


def test_compact_merges_files_drops_old_versions_and_keeps_every_row(tmp_path: Path) -> None:
    path = populate(tmp_path / "store")
    rows = _snapshot(path)
    before = {t.name: t for t in mindcore.open(path, read_only=True).stats().tables}
    assert before["mind_entries"].fragments > 1
    done = run_cli("compact", "--store", path, "--older-than", "0")
    after = {t.name: t for t in mindcore.open(path, read_only=True).stats().tables}
    for name, stats in after.items():
        assert stats.fragments <= 1 and stats.versions <= before[name].versions
    assert after["mind_entries"].versions < before["mind_entries"].versions
    assert _snapshot(path) == rows
    assert "| mind_entries | " in done.stdout and "store on disk: " in done.stdout
    # Not a terminal: progress comes as plain lines on stderr, the last one complete.
    assert done.stderr.strip().splitlines()[-1].startswith(f"compact: {len(after)}/{len(after)} tables")


def test_compact_one_table_leaves_the_others(tmp_path: Path) -> None:
    path = populate(tmp_path / "store")
    before = {t.name: t.version for t in mindcore.open(path, read_only=True).stats().tables}
    run_cli("compact", "--store", path, "--table", "ltm_memories", "--older-than", "0")
    after = {t.name: t.version for t in mindcore.open(path, read_only=True).stats().tables}
    assert after["ltm_memories"] > before["ltm_memories"]
    assert {k: v for k, v in after.items() if k != "ltm_memories"} == {k: v for k, v in before.items()
                                                                      if k != "ltm_memories"}
