"""``mindcore.batch.remember``: per user the outcome of ``LongTermMemory.remember_many`` (checked
against a loop of it on a second store), the secret policy, near-duplicates within the rows and
against the store, eviction, validation of every row before any write, progress, one commit per
chunk, every input form, and a real second process writing one of the users meanwhile."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import HANG, S3_BUCKET

import mindcore
from mindcore.batch import BulkReport, remember
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.ltm import LongTermMemory
from mindcore.ltm._repo import TABLE
from mindcore.policy import SecretPolicy
from mindcore.store import ALL_NAMESPACES, EmbedderMismatchError, Store, StoreConfig

DAY = 86_400_000
NOW = time.time_ns() // 1_000_000
SECRET = "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"
WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lantern", "meadow", "nectar", "orchid", "pebble", "quartz", "raven", "saffron", "tundra", "umber",
         "velvet", "willow", "xenon", "yarrow", "zephyr"]


def open_store(path: Path) -> Store:
    # No background compaction: table versions count commits.
    return mindcore.open(path, config=StoreConfig(compact_every=0))


def ltm(store: Store, user_id: str, *, workspace_id: str | None = None, max_items: int = 0,
        namespace: str = "default") -> LongTermMemory:
    return LongTermMemory(store, user_id=user_id, namespace=namespace, workspace_id=workspace_id,
                          embedder=HashEmbedder(), max_items=max_items)


def texts_of(store: Store, user_id: str, *, workspace_id: str | None = None, namespace: str = "default") -> list[str]:
    return sorted(m.text for m in ltm(store, user_id, workspace_id=workspace_id, namespace=namespace).memories())


def version(store: Store) -> int:
    return store.table(TABLE, vectors=True, embedder=HashEmbedder()).version


def random_rows(rng: random.Random, users: int) -> list[dict[str, Any]]:
    """Rows of ``users`` users, shuffled: facts repeated within a user, secrets, contexts,
    workspaces, and created_at/importance spread so that eviction has to choose."""
    rows: list[dict[str, Any]] = []
    for u in range(users):
        user = f"user-{u:03d}"
        facts = [f"{user} likes " + " ".join(rng.sample(WORDS, 4)) for _ in range(rng.randint(3, 30))]
        for i in range(rng.randint(3, 40)):
            row: dict[str, Any] = {"user_id": user, "text": rng.choice(facts)}
            if rng.random() < 0.05:
                row["text"] = SECRET
            if rng.random() < 0.3:
                row["context"] = f"Bob: what about {rng.choice(WORDS)}?\nAlice:"
            row["importance"] = round(rng.random(), 2)
            row["created_at"] = NOW - rng.randint(0, 400) * DAY
            row["kind"] = rng.choice(["fact", "preference", "event"])
            row["workspace_id"] = "w1" if u % 5 == 0 and i % 2 else None
            rows.append(row)
    rng.shuffle(rows)
    return rows


def as_table(rows: list[dict[str, Any]]) -> pa.Table:
    columns = ["user_id", "text", "kind", "importance", "created_at", "context", "workspace_id"]
    return pa.table({c: [r.get(c) for r in rows] for c in columns},
                    schema=pa.schema([("user_id", pa.string()), ("text", pa.string()), ("kind", pa.string()),
                                      ("importance", pa.float64()), ("created_at", pa.int64()),
                                      ("context", pa.string()), ("workspace_id", pa.string())]))


def seed(store: Store, rng: random.Random, users: int) -> None:
    """Memories stored before the bulk write: some of them come again in the rows."""
    for u in range(0, users, 2):
        user = f"user-{u:03d}"
        memory = ltm(store, user, max_items=0)
        memory.remember_many([{"text": f"{user} likes " + " ".join(rng.sample(WORDS, 4)), "importance": 0.5,
                               "created_at": NOW - rng.randint(0, 400) * DAY} for _ in range(12)])
        memory.close()


# -- the same outcome as remember_many per user -------------------------------------------------------


def test_same_outcome_as_remember_many_per_user(tmp_path: Path) -> None:
    users, cap = 40, 15
    rows = random_rows(random.Random(1), users)
    bulk, loop = open_store(tmp_path / "bulk"), open_store(tmp_path / "loop")
    seed(bulk, random.Random(2), users)
    seed(loop, random.Random(2), users)

    report = remember(bulk, as_table(rows), embedder=HashEmbedder(), max_items=cap, chunk_size=100)

    # The reference: one remember_many per scope, with that scope's rows in input order.
    by_scope: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_scope[(r["user_id"], r["workspace_id"])].append(i)
    expected: dict[int, tuple[str, str | None]] = {}
    for (user, workspace), positions in by_scope.items():
        memory = ltm(loop, user, workspace_id=workspace, max_items=cap)
        items = [{k: v for k, v in rows[i].items() if k not in ("user_id", "workspace_id")} for i in positions]
        for i, result in zip(positions, memory.remember_many(items, source="import"), strict=True):
            expected[i] = (result.status, None if result.memory is None else result.memory.text)
        memory.close()

    results = report.results.to_pylist()
    assert [r["row_index"] for r in results] == list(range(len(rows)))
    assert [r["user_id"] for r in results] == [r["user_id"] for r in rows]
    assert [r["status"] for r in results] == [expected[i][0] for i in range(len(rows))]
    statuses = [r["status"] for r in results]
    assert {"stored", "duplicate", "secret", "evicted"} <= set(statuses)  # the data exercises every path
    assert report.evicted > 0
    for (user, workspace) in by_scope:
        assert texts_of(bulk, user, workspace_id=workspace) == texts_of(loop, user, workspace_id=workspace)
        assert len(texts_of(bulk, user, workspace_id=workspace)) <= cap
    # memory_id names the memory stored, or the one duplicated (same text as remember_many's); a
    # memory retired since (a later row updates or contradicts it, or eviction took it) is in history.
    stored = {r["id"]: r for r in bulk.open_table(TABLE).scan(ALL_NAMESPACES)}
    retired = {r["memory_id"]: r for r in bulk.open_table("ltm_history").scan(ALL_NAMESPACES)
               if r["action"] in ("updated", "superseded", "evicted")}
    for i, r in enumerate(results):
        if r["memory_id"] is not None and r["memory_id"] in retired:
            assert retired[r["memory_id"]]["text"] == expected[i][1]
        elif r["memory_id"] is not None:
            if r["memory_id"] not in stored:
                # Evicted by a later chunk's eviction, as it was from the remember_many store.
                assert expected[i][1] not in texts_of(loop, r["user_id"], workspace_id=rows[i]["workspace_id"])
                continue
            assert stored[r["memory_id"]]["text"] == expected[i][1]
            assert stored[r["memory_id"]]["source"] == ("import" if r["status"] == "stored" else
                                                        stored[r["memory_id"]]["source"])
        elif r["status"] in ("stored",):
            pytest.fail(f"row {i} stored without a memory_id")
    assert report.rows == len(rows)
    assert (report.stored, report.duplicates, report.secrets) == (
        statuses.count("stored"), statuses.count("duplicate"), statuses.count("secret"))


# -- secrets, duplicates, eviction ----------------------------------------------------------------------


def test_secrets_are_refused_in_text_and_context(store: Store) -> None:
    rows = pa.table({"user_id": ["ann", "ann", "bob"],
                     "text": [SECRET, "Likes tea", "Lives in Lyon"],
                     "context": [None, None, "password: Summer2024!"]})
    report = remember(store, rows, embedder=HashEmbedder())
    assert report.results.column("status").to_pylist() == ["secret", "stored", "secret"]
    assert report.secrets == 2 and report.results.column("memory_id").to_pylist()[0] is None
    assert texts_of(store, "ann") == ["Likes tea"] and texts_of(store, "bob") == []


def test_threads_and_positions_are_stored_and_a_secret_thread_refused(store: Store) -> None:
    rows = pa.table({"user_id": ["ann", "ann", "ann"], "text": ["Where did you go in May?", "Lisbon.", "Likes tea"],
                     "thread": ["chat-1", "chat-1", SECRET], "position": [0, 1, None]})
    report = remember(store, rows, embedder=HashEmbedder())
    assert report.results.column("status").to_pylist() == ["stored", "stored", "secret"]
    stored = {m.text: (m.thread, m.position) for m in ltm(store, "ann").memories()}
    assert stored == {"Where did you go in May?": ("chat-1", 0), "Lisbon.": ("chat-1", 1)}


def test_a_redacting_policy_stores_placeholders(store: Store) -> None:
    rows = pa.table({"user_id": ["ann"], "text": [SECRET]})
    report = remember(store, rows, embedder=HashEmbedder(), secrets=SecretPolicy(action="redact"))
    assert report.stored == 1
    assert texts_of(store, "ann") == ["my token is [REDACTED:github-token]"]


def test_duplicates_within_the_rows_and_against_the_store(store: Store) -> None:
    first = ltm(store, "ann").try_remember("Likes green tea").memory
    assert first is not None
    rows = pa.table({"user_id": ["ann", "ann", "ann", "bob", "bob"],
                     "text": ["Likes green tea", "Lives in Lyon", "Lives in Lyon", "Likes green tea", "Owns a cat"]})
    report = remember(store, rows, embedder=HashEmbedder())
    got = report.results.to_pylist()
    assert [r["status"] for r in got] == ["duplicate", "stored", "duplicate", "stored", "stored"]
    assert got[0]["memory_id"] == first.id  # the stored twin
    assert got[2]["memory_id"] == got[1]["memory_id"]  # the earlier row of the batch
    assert texts_of(store, "ann") == ["Likes green tea", "Lives in Lyon"]
    assert texts_of(store, "bob") == ["Likes green tea", "Owns a cat"]  # users never dedupe against each other

    again = remember(store, rows, embedder=HashEmbedder(), dedupe=False)
    assert again.stored == 5 and len(texts_of(store, "ann")) == 5


def test_eviction_keeps_each_user_within_max_items(store: Store) -> None:
    old = ltm(store, "ann", max_items=0)
    old.remember_many([{"text": text, "created_at": NOW - 300 * DAY, "importance": 0.1}
                       for text in ("Plays the violin", "Collects stamps")])
    rows = pa.table({
        "user_id": ["ann"] * 4 + ["bob"],
        "text": ["Works as a nurse", "Has a dog", "Speaks Italian", "Visited Peru once", "Drives a truck"],
        "created_at": [NOW, NOW, NOW, NOW - 3000 * DAY, NOW],
        "importance": [0.9, 0.9, 0.9, 0.0, 0.5],
    })
    report = remember(store, rows, embedder=HashEmbedder(), max_items=3)
    assert report.results.column("status").to_pylist() == ["stored", "stored", "stored", "evicted", "stored"]
    assert report.evicted == 3  # both old memories, and the backdated row
    assert texts_of(store, "ann") == ["Has a dog", "Speaks Italian", "Works as a nurse"]
    assert texts_of(store, "bob") == ["Drives a truck"]


def test_a_duplicate_of_a_memory_evicted_by_the_same_write_has_no_memory_id(store: Store) -> None:
    ltm(store, "ann", max_items=0).remember("Plays the violin", importance=0.0, created_at=NOW - 900 * DAY)
    rows = pa.table({"user_id": ["ann", "ann"], "text": ["Plays the violin", "Has a dog"], "importance": [0.5, 0.9]})
    report = remember(store, rows, embedder=HashEmbedder(), max_items=1)
    got = report.results.to_pylist()
    assert [(r["status"], r["memory_id"] is None) for r in got] == [("duplicate", True), ("stored", False)]
    assert texts_of(store, "ann") == ["Has a dog"]


# -- validation before any write ------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "message"), [
    ({"user_id": None}, r"rows\[7\]: user_id: expected a non-empty string, got None"),
    ({"user_id": ""}, r"rows\[7\]: user_id"),
    ({"text": "   "}, r"rows\[7\]: text: expected a non-blank string"),
    ({"text": "x" * 2001}, r"rows\[7\]: text: 2,001 characters"),
    ({"kind": "rumour"}, r"rows\[7\]: kind: expected one of"),
    ({"importance": 2.0}, r"rows\[7\]: importance: expected a number in \[0, 1\], got 2.0"),
    ({"workspace_id": ""}, r"rows\[7\]: workspace_id"),
    ({"thread": "t", "position": -1}, r"rows\[7\]: position: expected a non-negative int"),
    ({"position": 3}, r"rows\[7\]: position: a position is a place in a thread"),
])
def test_a_bad_row_raises_before_anything_is_written(store: Store, change: dict[str, Any], message: str) -> None:
    ltm(store, "seed").remember("a memory")
    before = version(store)
    rows = [{"user_id": f"user-{i}", "text": f"fact {i}", "kind": "fact", "importance": 0.5,
             "workspace_id": None, "thread": None, "position": None} for i in range(10)]
    rows[7].update(change)
    with pytest.raises(InvalidInputError, match=message):
        remember(store, pa.Table.from_pylist(rows), embedder=HashEmbedder(), chunk_size=2)
    assert version(store) == before
    assert store.open_table(TABLE).count(ALL_NAMESPACES) == 1


@pytest.mark.parametrize(("table", "message"), [
    (pa.table({"user_id": ["a"]}), "missing column 'text'"),
    (pa.table({"user_id": ["a"], "text": ["t"], "importanc": [0.2]}), r"unknown columns \['importanc'\]"),
    (pa.table({"user_id": [1], "text": ["t"]}), "column 'user_id': expected strings, got int64"),
    (pa.table({"user_id": ["a"], "text": ["t"], "created_at": [1.5]}), "created_at.*fractional"),
    (pa.table({"user_id": ["a"], "text": ["t"], "thread": ["t"], "position": ["1"]}),
     "column 'position': expected non-negative ints, got string"),
])
def test_bad_columns_raise(store: Store, table: pa.Table, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        remember(store, table, embedder=HashEmbedder())


def test_a_store_written_with_another_embedder_is_refused_before_any_write(store: Store) -> None:
    ltm(store, "ann").remember("Likes tea")
    before = version(store)
    with pytest.raises(EmbedderMismatchError):
        remember(store, pa.table({"user_id": ["ann"], "text": ["Lives in Lyon"]}), embedder=HashEmbedder(64))
    assert version(store) == before and texts_of(store, "ann") == ["Likes tea"]


def test_no_rows_store_nothing(store: Store) -> None:
    empty = pa.table({"user_id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
    report = remember(store, empty, embedder=HashEmbedder(), progress=lambda d, t: pytest.fail("no chunk"))
    assert (report.rows, report.stored, report.commits, report.results.num_rows) == (0, 0, 0, 0)


def test_bad_options_raise(store: Store) -> None:
    rows = pa.table({"user_id": ["a"], "text": ["t"]})
    for kwargs in ({"chunk_size": 0}, {"namespace": ""}, {"max_items": -1}, {"progress": 3}, {"source": ""}):
        with pytest.raises((InvalidInputError, ValueError, TypeError)):
            remember(store, rows, embedder=HashEmbedder(), **kwargs)
    assert store.table_names() == []


# -- chunks, commits, progress ---------------------------------------------------------------------------


def test_one_commit_per_chunk_and_progress_per_chunk(store: Store, tmp_path: Path) -> None:
    store = open_store(tmp_path / "counted")
    ltm(store, "seed").remember("a memory")
    rows = pa.table({"user_id": [f"user-{i // 5:02d}" for i in range(100)],
                     "text": [f"likes {WORDS[i % 26]} and {WORDS[(7 * i + 3) % 26]}" for i in range(100)]})
    calls: list[tuple[int, int]] = []
    before = version(store)
    report = remember(store, rows, embedder=HashEmbedder(), chunk_size=30, progress=lambda d, t: calls.append((d, t)))
    # 20 users of 5 rows: chunks of 6 whole users (30 rows), the last of 2.
    assert calls == [(30, 100), (60, 100), (90, 100), (100, 100)]
    assert report.commits == 4 and version(store) - before == 4
    assert report.stored == 100
    # Duplicates bump the last access of the memories they repeat: one commit per chunk again.
    again = remember(store, rows, embedder=HashEmbedder(), chunk_size=30)
    assert again.duplicates == 100 and again.commits == 4 and version(store) - before == 8
    # A chunk with nothing to write commits nothing (duplicates seen before the last access bump nothing).
    old = rows.append_column("created_at", pa.array([NOW - 900 * DAY] * 100, pa.int64()))
    nothing = remember(store, old, embedder=HashEmbedder(), chunk_size=30)
    assert nothing.duplicates == 100 and nothing.commits == 0 and version(store) - before == 8


def test_a_user_is_never_split_across_chunks(store: Store) -> None:
    rows = pa.table({"user_id": ["a"] * 7 + ["b"] * 2, "text": [f"fact {WORDS[i]}" for i in range(9)]})
    calls: list[int] = []
    remember(store, rows, embedder=HashEmbedder(), chunk_size=3, progress=lambda d, t: calls.append(d))
    assert calls == [7, 9]


def test_the_cache_follows_the_bulk_write(tmp_path: Path) -> None:
    # A memory opened on the same store before the write recalls what the write stored (the write
    # patched the cached scopes) and agrees with a fresh process's view.
    store = open_store(tmp_path / "s")
    ann = ltm(store, "ann")
    ann.remember("Likes green tea")
    assert [m.text for m in ann.recall("green tea", k=5)] == ["Likes green tea"]
    remember(store, pa.table({"user_id": ["ann", "ann"], "text": ["Plays the cello", "Likes green tea"]}),
             embedder=HashEmbedder())
    assert sorted(m.text for m in ann.recall("cello tea", k=5)) == ["Likes green tea", "Plays the cello"]
    assert len(ann) == 2
    fresh = open_store(tmp_path / "s")
    assert texts_of(fresh, "ann") == ["Likes green tea", "Plays the cello"]


# -- inputs ---------------------------------------------------------------------------------------------


ROWS = [{"user_id": "ann", "text": "Likes green tea", "kind": "preference", "importance": 0.8,
         "created_at": NOW - DAY, "context": None, "workspace_id": None},
        {"user_id": "bob", "text": "Lives in Lyon", "kind": None, "importance": None, "created_at": None,
         "context": "Alice: where do you live?\nBob:", "workspace_id": "w1"}]


def check_rows_stored(store: Store) -> None:
    (tea,) = ltm(store, "ann").memories()
    assert (tea.text, tea.kind, tea.importance, tea.created_at, tea.source) == (
        "Likes green tea", "preference", 0.8, NOW - DAY, "import")
    (lyon,) = ltm(store, "bob", workspace_id="w1").memories()
    assert (lyon.kind, lyon.importance, lyon.context) == ("fact", 0.5, "Alice: where do you live?\nBob:")


@pytest.mark.parametrize("form", ["table", "reader", "batch", "pandas", "polars", "parquet", "csv", "jsonl"])
def test_every_input_form(tmp_path: Path, form: str) -> None:
    table = pa.Table.from_pylist(ROWS, schema=as_table(ROWS).schema)
    given: Any
    if form == "table":
        given = table
    elif form == "reader":
        given = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    elif form == "batch":
        given = table.combine_chunks().to_batches()[0]
    elif form == "pandas":
        pytest.importorskip("pandas")
        given = table.to_pandas()
    elif form == "polars":
        polars = pytest.importorskip("polars")
        given = polars.from_arrow(table)
    elif form == "parquet":
        import pyarrow.parquet as pq

        given = tmp_path / "rows.parquet"
        pq.write_table(table, given)
    elif form == "csv":
        import pyarrow.csv as csv

        given = tmp_path / "rows.csv"
        csv.write_csv(table, given)
    else:
        given = tmp_path / "rows.jsonl"
        given.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in ROWS))
    store = open_store(tmp_path / "store")
    report = remember(store, given, embedder=HashEmbedder())
    assert isinstance(report, BulkReport) and report.stored == 2
    assert report.results.schema.names == ["row_index", "user_id", "status", "memory_id"]
    check_rows_stored(store)


def test_the_package_face_reaches_it() -> None:
    assert mindcore.batch.remember is remember and mindcore.batch.BulkReport is BulkReport
    assert "batch" in dir(mindcore)


def test_a_store_path_is_opened_and_closed(tmp_path: Path) -> None:
    report = remember(tmp_path / "store", pa.table({"user_id": ["ann"], "text": ["Likes tea"]}),
                      embedder=HashEmbedder(), namespace="chat")
    assert report.stored == 1
    assert texts_of(open_store(tmp_path / "store"), "ann", namespace="chat") == ["Likes tea"]


def test_hostile_ids_stay_in_their_own_scope(store: Store) -> None:
    users = ["o'brien", "a') OR 1=1 --", "x\", \"y", "ünïcødé 🙂", "ann"]
    rows = pa.table({"user_id": users, "text": [f"fact of user {i} {WORDS[i]}" for i in range(len(users))]})
    remember(store, rows, embedder=HashEmbedder())
    for i, user in enumerate(users):
        assert texts_of(store, user) == [f"fact of user {i} {WORDS[i]}"]


def test_a_file_and_a_store_on_object_storage(tmp_path: Path, s3: dict[str, str]) -> None:
    import boto3
    import pyarrow.parquet as pq

    client = boto3.client("s3", endpoint_url=s3["aws_endpoint"], aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    pq.write_table(pa.Table.from_pylist(ROWS, schema=as_table(ROWS).schema), tmp_path / "rows.parquet")
    client.upload_file(str(tmp_path / "rows.parquet"), S3_BUCKET, "bulk/in/rows.parquet")
    report = remember(f"s3://{S3_BUCKET}/bulk/store", f"s3://{S3_BUCKET}/bulk/in/rows.parquet",
                      embedder=HashEmbedder(), storage_options=s3)
    assert report.stored == 2
    check_rows_stored(mindcore.open(f"s3://{S3_BUCKET}/bulk/store", storage_options=s3))


# -- a concurrent single-user writer --------------------------------------------------------------------


WRITER = textwrap.dedent(
    """
    import json, sys
    import mindcore
    from mindcore.embed import HashEmbedder
    from mindcore.ltm import LongTermMemory

    uri, facts_path, out_path, ready = sys.argv[1:5]
    facts = json.loads(open(facts_path).read())
    ltm = LongTermMemory(mindcore.open(uri), user_id="user-003", embedder=HashEmbedder(), max_items=0)
    statuses = []
    for n, text in enumerate(facts):  # one commit per fact: as many as possible racing the bulk write
        statuses.append(ltm.try_remember(text).status)
        if n == 0:
            open(ready, "w").write("1")
    ltm.close()
    open(out_path, "w").write(json.dumps(statuses))
    """
)


def test_a_concurrent_single_user_writer_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    # The process and the bulk write store the same facts for user-003 at the same time: each fact
    # must end up stored exactly once (the other writer sees it and reports a duplicate), and no
    # write of either may be lost.
    uri = tmp_path / "store"
    store = mindcore.open(uri)
    ltm(store, "user-003").remember("first fact")  # creates the table before both writers start
    rng = random.Random(3)
    # Random words: distinct facts (numbered ones would contradict each other: "fact 1" / "fact 2").
    shared = [" ".join(rng.sample(WORDS, 5)) for _ in range(60)]
    ours = [(f"user-{u:03d}", " ".join(rng.sample(WORDS, 5))) for u in range(40) for _ in range(6)]
    ours[18:18] = [("user-003", text) for text in shared]
    (tmp_path / "facts.json").write_text(json.dumps(shared))
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, str(script), str(uri), str(tmp_path / "facts.json"),
                             str(tmp_path / "out.json"), str(ready)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        # Start once the process has stored its first fact (a marker it writes), however long it takes.
        deadline = time.monotonic() + HANG
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), "the writer process never stored its first fact"
        report = remember(store, pa.table({"user_id": [u for u, _ in ours], "text": [t for _, t in ours]}),
                          embedder=HashEmbedder(), max_items=0, chunk_size=12)
    finally:
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    theirs = json.loads((tmp_path / "out.json").read_text())
    bulk = {t: s for (u, t), s in zip(ours, report.results.column("status").to_pylist(), strict=True)
            if u == "user-003"}
    for text, status in zip(shared, theirs, strict=True):
        assert sorted([status, bulk[text]]) == ["duplicate", "stored"], text
    everything = store.open_table(TABLE).scan(ALL_NAMESPACES)
    ids = [(r["namespace"], r["id"]) for r in everything]
    assert len(ids) == len(set(ids)), "duplicate ids"
    expected = {"first fact", *(t for u, t in ours if u == "user-003")}
    assert texts_of(store, "user-003") == sorted(expected), "a fact was lost or stored twice"
    for u in range(40):
        if u != 3:
            assert texts_of(store, f"user-{u:03d}") == sorted(t for user, t in ours if user == f"user-{u:03d}")
