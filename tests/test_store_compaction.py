"""Tiered compaction: maintenance merges the small fragments and leaves the big ones alone, keeps
every row, drops deleted rows where Lance's planner says so, commits beside concurrent writers
(an append during the rewrite is kept; a delete that conflicts makes the run start again), and
works on object storage (moto S3).

Fragments and their data files are read with Lance itself (``lance.dataset``), not through the
store.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from conftest import S3_BUCKET
from lance.dataset import DatasetOptimizer
from lance.optimize import Compaction

import mindcore
import mindcore.store.table as table_module
from mindcore.embed import HashEmbedder
from mindcore.store import CompactionResult, StoreConfig, Table
from mindcore.store.compaction import BASE_ROWS, FANOUT, RETRIES, target_rows

BULK = 20_000
COLUMNS = {"n": pa.int64()}


def _store(where: Any, **options: Any) -> mindcore.Store:
    cfg = StoreConfig(compact_every=0, cleanup_grace=timedelta(0), lock_timeout=10)
    return mindcore.open(where, config=cfg, **options)


def _bulk(t: Table, n: int = BULK) -> None:
    ids = [str(i) for i in range(n)]
    t.write_batch(pa.table({"namespace": ["u"] * n, "id": ids, "n": list(range(n))}))


def _fragments(t: Table) -> dict[int, tuple[int, tuple[str, ...]]]:
    """Fragment id -> (physical rows, data file names) at the table's latest version."""
    ds = t._dataset()
    return {f.fragment_id: (f.metadata.physical_rows, tuple(d.path for d in f.data_files()))
            for f in ds.get_fragments()}


def _ids(t: Table) -> list[str]:
    return sorted(r["id"] for r in t.scan("u", columns=["id"]))


# -- the tiers --------------------------------------------------------------------------------------


def test_target_merges_only_small_fragments_until_a_tier_is_full() -> None:
    assert target_rows([]) == BASE_ROWS
    assert target_rows([1_000_000, 100_000, 5, 1, 1]) == BASE_ROWS
    # Seven fragments of the first tier wait; the eighth makes them merge into one of the next.
    assert target_rows([BASE_ROWS] * (FANOUT - 1) + [3]) == BASE_ROWS
    assert target_rows([BASE_ROWS] * FANOUT + [3]) == BASE_ROWS * FANOUT
    # The highest full tier wins; the top tier is never a target.
    tier2 = BASE_ROWS * FANOUT
    assert target_rows([BASE_ROWS] * FANOUT + [tier2] * FANOUT) == tier2 * FANOUT
    top = tier2 * FANOUT**3
    assert target_rows([top] * 20) == BASE_ROWS


# -- local folders ------------------------------------------------------------------------------------


def test_compaction_merges_small_fragments_and_leaves_the_bulk_fragment_untouched(tmp_path: Path) -> None:
    t = _store(tmp_path).table("t", COLUMNS)
    _bulk(t)
    for i in range(40):
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    before = _fragments(t)
    (big,) = [f for f, (rows, _) in before.items() if rows == BULK]
    assert len(before) == 41

    res = t.compact()
    after = _fragments(t)
    assert isinstance(res, CompactionResult)
    assert (res.fragments_removed, res.fragments_added, res.target_rows, res.retries) == (40, 1, BASE_ROWS, 0)
    assert after[big] == before[big]  # same fragment, same data file: not rewritten
    assert sorted(rows for rows, _ in after.values()) == [40, BULK]
    assert t.count("u") == BULK + 40
    assert _ids(t) == sorted([str(i) for i in range(BULK)] + [f"s{i}" for i in range(40)])
    assert t.stats().versions == 1  # old versions went (no grace here)

    # A second run has nothing to do.
    assert t.compact().fragments_removed == 0
    assert _fragments(t) == after


def test_compaction_drops_deleted_rows_only_where_many_are_deleted(tmp_path: Path) -> None:
    t = _store(tmp_path).table("t", COLUMNS)
    _bulk(t)
    _bulk_other = t.write_batch(pa.table({"namespace": ["v"] * BULK, "id": [str(i) for i in range(BULK)],
                                          "n": list(range(BULK))}))
    assert _bulk_other.inserted == BULK
    frags = _fragments(t)
    assert len(frags) == 2
    by_ns = {"u": min(frags), "v": max(frags)}
    # "u" loses 20% of its rows (Lance's planner rewrites past 10%), "v" one row.
    t.delete("u", ids=[str(i) for i in range(0, BULK, 5)])
    t.delete("v", ids=["7"])

    t.compact()
    after = _fragments(t)
    assert by_ns["u"] not in after  # rewritten without the deleted rows...
    assert after[by_ns["v"]] == frags[by_ns["v"]]  # ...the lightly deleted fragment is left alone
    assert sorted(rows for rows, _ in after.values()) == [BULK - BULK // 5, BULK]
    ds = t._dataset()
    assert [f.fragment_id for f in ds.get_fragments() if f.metadata.deletion_file is not None] == [by_ns["v"]]
    assert t.count("u") == BULK - BULK // 5 and t.count("v") == BULK - 1
    assert t.get("u", ["0", "1"])[0]["id"] == "1" and t.get_one("v", "7") is None


def test_automatic_maintenance_keeps_every_row_and_the_bulk_fragment(tmp_path: Path) -> None:
    cfg = StoreConfig(compact_every=8, compact_in_background=False, cleanup_grace=timedelta(0))
    t = mindcore.open(tmp_path, config=cfg).table("t", COLUMNS)
    _bulk(t)
    (big,) = _fragments(t).items()
    for i in range(3 * BASE_ROWS // 2):  # crosses the first tier: one full fragment is left behind
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    after = _fragments(t)
    assert after[big[0]] == big[1]
    assert BASE_ROWS in [rows for rows, _ in after.values()]
    assert len(after) <= 2 + 8  # the bulk fragment, one full tier fragment, the tail since the last run
    assert t.count("u") == BULK + 3 * BASE_ROWS // 2


def test_single_writes_rewrite_each_row_a_few_times_not_once_a_run(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A table that grows one row a write: its maintenance runs (every 32 writes, the default) write
    each row a few times over (once per tier it climbs), not once a run until it is old."""
    import mindcore.store.table as table_module

    written: list[int] = []
    rewrite = table_module._rewrite

    def counting(ds: Any, plan: Any) -> list[Any]:
        done = rewrite(ds, plan)
        written.extend(f.physical_rows for r in done for f in r.new_fragments)
        return done

    monkeypatch.setattr(table_module, "_rewrite", counting)
    cfg = StoreConfig(compact_every=32, compact_in_background=False, cleanup_grace=timedelta(0))
    t = mindcore.open(tmp_path, config=cfg).table("t", COLUMNS)
    n = 960
    for i in range(n):
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    assert t.count("u") == n
    # Tiers of 64 and 512 rows: at most ~2 base merges and 1 per tier climbed (a base of 1,024
    # rows would rewrite 9,952 rows here, each about 10 times).
    assert 0 < sum(written) <= 4 * n, sum(written)


def test_an_append_during_the_rewrite_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite runs without the write lock: a writer thread commits in the middle of it
    (it would time out if the lock were held), and the compaction's commit rebases over it."""
    t = _store(tmp_path).table("t", COLUMNS)
    _bulk(t, 100)
    for i in range(10):
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    real = table_module._rewrite
    written: list[int] = []

    def rewrite_while_writing(ds: Any, plan: Any) -> list[Any]:
        out = real(ds, plan)
        th = threading.Thread(target=lambda: written.append(t.upsert("u", [{"id": "late", "n": -1}]).version))
        th.start()
        th.join()
        return out

    monkeypatch.setattr(table_module, "_rewrite", rewrite_while_writing)
    res = t.compact()
    assert written and res.retries == 0 and res.fragments_removed >= 2
    assert res.version > written[0]
    assert t.count("u") == 100 + 10 + 1
    assert t.get_one("u", "late") == {**t.get_one("u", "late"), "n": -1}  # type: ignore[dict-item]


def _ten_rows(tmp_path: Path) -> Table:
    t = _store(tmp_path).table("t", COLUMNS)
    for i in range(10):
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    return t


def _delete_during_rewrites(t: Table, monkeypatch: pytest.MonkeyPatch, ids_for: Callable[[int], list[str]]) -> list[int]:
    """Every rewrite of a compaction of ``t`` is followed, before its commit, by another thread
    deleting ``ids_for(n)`` (n counts the rewrites from 1; no delete when empty). Returns the list
    each rewrite appends its task count to."""
    real = table_module._rewrite
    calls: list[int] = []

    def rewrite_then_delete(ds: Any, plan: Any) -> list[Any]:
        out = real(ds, plan)
        calls.append(plan.num_tasks())
        ids = ids_for(len(calls))
        if ids:
            th = threading.Thread(target=lambda: t.delete("u", ids=ids))
            th.start()
            th.join()
        return out

    monkeypatch.setattr(table_module, "_rewrite", rewrite_then_delete)
    return calls


def test_a_delete_that_conflicts_with_the_rewrite_makes_it_start_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _ten_rows(tmp_path)
    # A row of a fragment being merged is deleted before the first rewrite commits.
    calls = _delete_during_rewrites(t, monkeypatch, lambda n: ["s3"] if n == 1 else [])
    res = t.compact()
    assert res.retries == 1 and len(calls) == 2
    assert _ids(t) == sorted(f"s{i}" for i in range(10) if i != 3)
    assert len(_fragments(t)) == 1


def test_a_merge_that_keeps_conflicting_is_left_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete overtakes every rewrite: after RETRIES redone runs the merge is deferred (no
    error, nothing merged, every row as the deletes left it), and the next run merges."""
    t = _ten_rows(tmp_path)
    real = table_module._rewrite
    calls = _delete_during_rewrites(t, monkeypatch, lambda n: [f"s{n}"])
    before = len(_fragments(t))
    res = t.compact()
    assert len(calls) == RETRIES + 1
    assert res.deferred and res.retries == RETRIES and res.fragments_removed == 0
    # Nothing merged: only the deletes changed the files (each emptied a one-row fragment).
    assert len(_fragments(t)) == before - (RETRIES + 1)
    assert _ids(t) == sorted(f"s{i}" for i in range(10) if i > RETRIES + 1 or i == 0)
    monkeypatch.setattr(table_module, "_rewrite", real)
    res = t.compact()
    assert not res.deferred and res.retries == 0 and res.fragments_removed == before - (RETRIES + 1)
    assert len(_fragments(t)) == 1 and t.count("u") == 10 - (RETRIES + 1)


@pytest.mark.parametrize("step", ["merge", "index update"])
def test_a_read_that_sees_maintenance_commit_before_it_is_recorded_keeps_the_cached_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    # Lance writes a version's manifest before the store records the commit that made it: a read
    # in between sees a version the cache does not know yet. When that commit changes no row (a
    # merge, an index update), the namespace held in memory is still right: no second read of it
    # (which takes seconds at 100k rows).
    emb = HashEmbedder(dim=16)
    t = _store(tmp_path, embedder=emb).table("notes", {"text": pa.string()}, vectors=True)
    texts = [f"note {i}" for i in range(300)]
    t.upsert("u", [{"id": f"n{i}", "text": s, "vector": v} for i, (s, v) in enumerate(zip(texts, emb.embed(texts), strict=True))])
    t.create_vector_index()
    for i in range(3):  # small fragments to merge, rows the index does not cover yet
        t.upsert("u", [{"id": f"s{i}", "text": f"single {i}", "vector": emb.embed([f"single {i}"])[0]}])
    held = t.cached("u")
    read_at = held.version
    seen: list[tuple[int, Any]] = []

    def then_read(real: Callable[..., Any]) -> Callable[..., Any]:
        def committed_then_read(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            seen.append((t.version, t.cached("u")))  # the version just made, not recorded yet
            return out
        return committed_then_read

    if step == "merge":
        monkeypatch.setattr(Compaction, "commit", staticmethod(then_read(Compaction.commit)))
    else:
        monkeypatch.setattr(DatasetOptimizer, "optimize_indices", then_read(DatasetOptimizer.optimize_indices))
    t.compact()
    assert seen, "the patched commit ran"
    for version, entry in seen:
        assert version > read_at  # positive control: the read saw a version made since
        assert entry is held
    assert t.cached("u") is held and held.version == t.version
    assert held.n == 303 and t.count("u") == 303


def test_a_writer_thread_loses_nothing_while_maintenance_runs(tmp_path: Path) -> None:
    t = _store(tmp_path).table("t", COLUMNS)
    _bulk(t, 2000)
    stop = threading.Event()
    written: list[str] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            i = 0
            while not stop.is_set() or i < 50:
                t.upsert("u", [{"id": f"w{i}", "n": i}])
                written.append(f"w{i}")
                i += 1
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    th = threading.Thread(target=writer)
    th.start()
    results = [t.compact() for _ in range(6)]
    stop.set()
    th.join()
    assert not errors
    assert _ids(t) == sorted([str(i) for i in range(2000)] + written)
    # Under a writer that commits without pause every run may be deferred (a conflict each time);
    # once it stops, the next run merges what they left.
    results.append(t.compact())
    assert sum(r.fragments_removed for r in results) > 0
    assert t.count("u") == 2000 + len(written)


# -- object storage -----------------------------------------------------------------------------------


def test_tiered_compaction_on_s3(s3: dict[str, str]) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is part of the test extra")
    uri = f"s3://{S3_BUCKET}/{uuid.uuid4().hex}"
    t = _store(uri, storage_options=s3).table("t", COLUMNS)
    _bulk(t, 3000)
    for i in range(12):
        t.upsert("u", [{"id": f"s{i}", "n": i}])
    t.delete("u", ids=["0"])  # lightly: the bulk fragment keeps its deletion file
    before = _fragments(t)
    (big,) = [f for f, (rows, _) in before.items() if rows == 3000]
    res = t.compact()
    after = _fragments(t)
    assert res.fragments_removed == 12 and after[big] == before[big]
    assert t.count("u") == 3000 - 1 + 12
    assert t.stats().versions == 1
    other = mindcore.open(uri, storage_options=s3)  # another client reads the compacted table
    assert other.table("t").count("u") == 3000 - 1 + 12
    assert len(lance.dataset(f"{uri}/t.lance", storage_options=s3).get_fragments()) == 2


def test_old_compaction_options_still_open_a_store_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="compact_amplification is no longer used"):
        cfg = StoreConfig(compact_every=4, compact_amplification=64)
    with pytest.warns(DeprecationWarning, match="compact_max_writes is no longer used"):
        StoreConfig(compact_max_writes=8)
    store = mindcore.open(tmp_path, config=cfg)
    t = store.table("t", COLUMNS)
    for i in range(8):
        t.upsert("u", [{"id": str(i), "n": i}])
    store.wait_for_maintenance()
    assert t.count("u") == 8
