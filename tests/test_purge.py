"""Right to be forgotten: after ``forget(id, purge=True)`` / ``clear(purge=True)`` the text is in no
file of the store, on a folder and on an S3 server (moto).

Every test scans every byte of every file (or object) of the store for a marker string, and first
proves the scan sees the marker while it is stored, and still sees it after a plain delete and a
compaction (the deleted text stays in old versions and in data files whose other rows live on):
the scans below cannot pass because Lance compressed or encoded the text out of sight.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import S3_BUCKET

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, StoreNotWritableError
from mindcore.ltm import LongTermMemory
from mindcore.store import StoreConfig
from mindcore.working import WorkingMemory

MARKER = "purplewombat"
# Each test stores its own markers: distinct words, so one test's leftovers cannot satisfy another.
CONFIG = StoreConfig(compact_every=0)


def folder_files_with(root: Path, marker: str) -> list[str]:
    """Every file under ``root`` whose bytes contain ``marker``."""
    needle = marker.encode()
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                if needle in f.read():
                    found.append(os.path.relpath(path, root))
    return found


def objects_with(s3: dict[str, str], prefix: str, marker: str) -> list[str]:
    """Every object under ``prefix`` of the test bucket whose bytes contain ``marker``."""
    boto3 = pytest.importorskip("boto3")
    client = boto3.client("s3", endpoint_url=s3["aws_endpoint"], aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    needle = marker.encode()
    found = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            if needle in client.get_object(Bucket=S3_BUCKET, Key=obj["Key"])["Body"].read():
                found.append(obj["Key"])
    return found


Scan = Callable[[str], list[str]]


@pytest.fixture(params=["folder", "s3"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str], Scan]:
    """Where the store lives: ``(uri, storage_options, scan)``, ``scan(marker)`` naming every file
    or object of the store that holds ``marker``."""
    if request.param == "folder":
        root = tmp_path / "store"
        return str(root), {}, lambda m: folder_files_with(root, m)
    s3: dict[str, str] = request.getfixturevalue("s3")
    prefix = uuid.uuid4().hex
    return f"s3://{S3_BUCKET}/{prefix}", s3, lambda m: objects_with(s3, prefix + "/", m)


def _open(place: tuple[str, dict[str, str], Scan], **kwargs: object) -> mindcore.Store:
    uri, options, _ = place
    return mindcore.open(uri, storage_options=options or None, config=CONFIG, **kwargs)  # type: ignore[arg-type]


# -- the store primitive ----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_table_delete_purge_leaves_no_trace_in_a_shared_fragment(place: tuple[str, dict[str, str], Scan]) -> None:
    scan = place[2]
    emb = HashEmbedder(dim=64)
    t = _open(place, embedder=emb).table("notes", {"text": pa.string()}, vectors=True)
    texts = [f"note {i} about the weather" for i in range(300)]
    texts[150] = f"note {MARKER}one lives at 12 Rue Oberkampf"
    # One commit: one data file holds the marked row and 299 others that stay.
    vectors = emb.embed(texts)
    t.upsert("u1", [{"id": f"n{i}", "text": s, "vector": vectors[i]} for i, s in enumerate(texts)])
    t.create_vector_index()
    assert scan(f"{MARKER}one"), "positive control: the scan sees the stored text"

    t.delete("u1", ids=["n150"])
    t.compact(cleanup_grace=timedelta(0))
    t.compact(cleanup_grace=timedelta(0))
    assert t.stats().versions == 1
    assert scan(f"{MARKER}one"), "positive control: with no old version left, the data file keeps the text"

    res = t.delete("u1", ids=["n150"], purge=True)  # already deleted: purging still erases it
    assert res.deleted == 0
    assert scan(f"{MARKER}one") == []
    assert t.count("u1") == 299 and t.get_one("u1", "n150") is None
    assert t.get_one("u1", "n7")["text"] == "note 7 about the weather"  # type: ignore[index]
    assert t.search("u1", emb.embed([texts[7]])[0], k=1)[0].id == "n7"
    assert t.stats().versions == 1


def test_delete_purge_keeps_other_namespaces(place: tuple[str, dict[str, str], Scan]) -> None:
    scan = place[2]
    t = _open(place).table("notes", {"text": pa.string()})
    t.upsert("u1", [{"id": "a", "text": f"{MARKER}one-b secret"}, {"id": "b", "text": "stays"}])
    t.upsert("u2", [{"id": "a", "text": f"{MARKER}two other user"}])
    t.compact()
    t.delete("u1", ids=["a"])
    t.compact()
    assert scan(f"{MARKER}one-b"), "positive control: a plain delete and compaction leave the text in a file"
    assert t.delete("u1", ids=["a"], purge=True).deleted == 0
    assert scan(f"{MARKER}one-b") == [] and scan(f"{MARKER}two")
    assert [r["text"] for r in t.scan("u1")] == ["stays"] and [r["text"] for r in t.scan("u2")] == [f"{MARKER}two other user"]


def test_clear_purge_erases_the_namespace_value_from_the_index_files(tmp_path: Path) -> None:
    root = tmp_path / "store"
    t = mindcore.open(root, config=CONFIG).table("notes", {"text": pa.string()})
    t.upsert("keep", [{"id": str(i), "text": "x"} for i in range(5)])
    t.upsert(f"{MARKER}-user", [{"id": "z", "text": "y"}])
    t.compact()  # folds the rows into the namespace index
    assert folder_files_with(root / "notes.lance" / "_indices", f"{MARKER}-user"), "positive control"
    t.clear(f"{MARKER}-user", purge=True)
    assert folder_files_with(root, f"{MARKER}-user") == []
    assert t.count("keep") == 5 and t.namespaces() == ["keep"]


def test_purge_on_a_memory_store_and_a_read_only_store(tmp_path: Path) -> None:
    t = mindcore.open("memory://").table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": "a", "text": "keep"}, {"id": "b", "text": "go"}])
    assert t.clear("u", purge=True).deleted == 2 and t.count("u") == 0
    folder = tmp_path / "s"
    mindcore.open(folder).table("notes", {"text": pa.string()}).upsert("u", [{"id": "a", "text": "x"}])
    ro = mindcore.open(folder, read_only=True).table("notes")
    with pytest.raises(StoreNotWritableError, match="purge"):
        ro.purge()
    with pytest.raises(InvalidInputError, match="purge"):
        t.delete("u", ids=["a"], purge="yes")  # type: ignore[arg-type]


# -- long-term memory ---------------------------------------------------------------------------------


def test_ltm_forget_purge(place: tuple[str, dict[str, str], Scan]) -> None:
    scan = place[2]
    store = _open(place)
    emb = HashEmbedder(dim=64)
    alice = LongTermMemory(store, user_id="alice", embedder=emb)
    bob = LongTermMemory(store, user_id="bob", embedder=emb)
    gone = alice.remember(f"Alice's {MARKER}three address is 12 Rue Oberkampf")
    kept = alice.remember("Alice prefers green tea")
    bob.remember(f"Bob's {MARKER}four address is 3 Baker Street")
    assert gone is not None and kept is not None
    alice.recall("address", k=2)  # a pending last-access bump of the memory about to go
    assert scan(f"{MARKER}three"), "positive control: the scan sees the stored text"

    assert alice.forget(gone.id) is True
    store.compact()
    assert scan(f"{MARKER}three"), "positive control: forget and compact leave the text in a file"

    assert alice.forget(gone.id, purge=True) is False  # already forgotten: the purge still erases it
    alice.flush()  # the pending bump must not bring the row back
    assert scan(f"{MARKER}three") == []
    assert alice.get(gone.id) is None and [m.text for m in alice.memories()] == ["Alice prefers green tea"]
    assert [m.text for m in bob.memories()] == [f"Bob's {MARKER}four address is 3 Baker Street"]
    assert scan(f"{MARKER}four")


def test_ltm_clear_purge_takes_the_history_with_it(place: tuple[str, dict[str, str], Scan]) -> None:
    scan = place[2]
    store = _open(place)
    emb = HashEmbedder(dim=64)
    alice = LongTermMemory(store, user_id="alice", embedder=emb)
    bob = LongTermMemory(store, user_id="bob", embedder=emb)
    facts = ["works at the bakery", "plays the cello on Sundays", "was born in Lisbon", "keeps two cats",
             "is training for a marathon"]
    # Stored as they are: the marker they share is not a fact they share.
    assert all(r.status == "stored" for r in alice.remember_many([f"Alice {fact} ({MARKER}five)" for fact in facts],
                                                                  dedupe=False))
    bob.remember("Bob likes chess")
    # The history table (namespace: the scope key), as long-term memory writes it.
    history = store.table("ltm_history", {"memory_id": pa.string(), "text": pa.string()})
    history.upsert(alice._repo.ns, [{"id": "h1", "memory_id": "m1", "text": f"was: {MARKER}six"}])
    history.upsert(bob._repo.ns, [{"id": "h2", "memory_id": "m2", "text": f"was: {MARKER}seven"}])
    assert scan(f"{MARKER}five") and scan(f"{MARKER}six")

    assert alice.clear(purge=True) == 5
    assert scan(f"{MARKER}five") == [] and scan(f"{MARKER}six") == []
    assert len(alice) == 0 and [m.text for m in bob.memories()] == ["Bob likes chess"]
    assert history.count(bob._repo.ns) == 1 and scan(f"{MARKER}seven")


def test_ltm_forget_purge_takes_that_memorys_history(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = mindcore.open(root, config=CONFIG)
    ltm = LongTermMemory(store, user_id="alice", embedder=HashEmbedder(dim=64))
    m = ltm.remember("Alice works at the bakery")
    other = ltm.remember("Alice plays the cello")
    assert m is not None and other is not None
    history = store.table("ltm_history", {"memory_id": pa.string(), "text": pa.string()})
    history.upsert(ltm._repo.ns, [{"id": "h1", "memory_id": m.id, "text": f"was: {MARKER}eight"},
                                  {"id": "h2", "memory_id": other.id, "text": f"was: {MARKER}nine"}])
    assert [r.id for r in ltm.recall("Where does Alice work? the bakery", k=1)] == [m.id]  # a bump is pending
    assert ltm.forget(m.id, purge=True) is True
    ltm.flush()
    assert ltm.get(m.id) is None and len(ltm) == 1
    assert folder_files_with(root, f"{MARKER}eight") == []
    assert [r["id"] for r in history.scan(ltm._repo.ns)] == ["h2"] and folder_files_with(root, f"{MARKER}nine")


def test_ltm_async_twins_purge(tmp_path: Path) -> None:
    root = tmp_path / "store"
    ltm = LongTermMemory(mindcore.open(root, config=CONFIG), user_id="alice", embedder=HashEmbedder(dim=64))
    m = ltm.remember(f"Alice {MARKER}ten code word")
    assert m is not None
    assert asyncio.run(ltm.aforget(m.id, purge=True)) is True
    assert folder_files_with(root, f"{MARKER}ten") == []
    ltm.remember(f"Alice {MARKER}eleven code word")
    assert asyncio.run(ltm.aclear(purge=True)) == 1
    assert folder_files_with(root, f"{MARKER}eleven") == []


# -- working memory -----------------------------------------------------------------------------------


def test_working_memory_clear_purge(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = mindcore.open(root, config=CONFIG)
    wm = WorkingMemory(store, scope="thread", thread_id="t1")
    other = WorkingMemory(store, scope="thread", thread_id="t2")
    wm.update({"content": f"{MARKER}twelve draft one"})
    wm.update({"content": f"{MARKER}thirteen draft two"})
    other.update({"content": f"{MARKER}fourteen"})
    wm.clear()
    store.compact()
    assert folder_files_with(root, f"{MARKER}twelve"), "positive control: earlier states stay in files"
    wm.clear(purge=True)
    assert folder_files_with(root, f"{MARKER}twelve") == [] and folder_files_with(root, f"{MARKER}thirteen") == []
    assert f"{MARKER}fourteen" in other.render()


# -- readers in other processes -----------------------------------------------------------------------

READER = r"""
import json, sys
from datetime import timedelta
import mindcore
from mindcore.store import StoreConfig
uri, options, first_read = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
# A long read-consistency interval: on object storage this reader keeps using the version it
# loaded, so its next read is of a version the purge deleted.
cfg = StoreConfig(read_consistency=timedelta(hours=1), compact_every=0)
t = mindcore.open(uri, storage_options=options or None, config=cfg).table("notes")
# The cached read is of every column: before the purge this reader reads only ids, so no text
# of the version it loaded is in LanceDB's caches.
columns = None if first_read == "count" else ["id"]
print(json.dumps({"ids": sorted(r["id"] for r in t.scan("u", columns=columns)), "version": t.version}), flush=True)
sys.stdin.readline()  # the purge happens now
# Either read goes to the data files: on object storage, those of the version this reader
# loaded, which the purge deleted.
count = t.count("u") if first_read == "count" else t.cached_many(["u"])["u"].n
print(json.dumps({"count": count, "version": t.version, "ids": sorted(r["id"] for r in t.scan("u")),
                  "texts": sorted(r["text"][:20].strip("x ") for r in t.scan("u"))}), flush=True)
"""


@pytest.mark.parametrize("first_read", ["count", "cached_many"])
def test_a_reader_opened_before_the_purge_reads_the_latest_after_it(
    place: tuple[str, dict[str, str], Scan], first_read: str
) -> None:
    uri, options, scan = place
    t = _open(place).table("notes", {"text": pa.string()})
    # Several versions and data files. Rows of 200 kB: LanceDB keeps small files whole in its
    # metadata cache, from which a stale reader could answer without touching the store at all.
    pad = " " + "x" * 200_000
    for i in range(6):
        t.upsert("u", [{"id": f"n{i}", "text": (f"note {i}" if i != 2 else f"{MARKER}fifteen") + pad}])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    reader = subprocess.Popen([sys.executable, "-c", READER, uri, json.dumps(options), first_read], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert reader.stdout is not None and reader.stdin is not None
    first_line = reader.stdout.readline()
    assert first_line, reader.stderr.read() if reader.stderr else ""
    first = json.loads(first_line)
    assert first["ids"] == [f"n{i}" for i in range(6)]
    t.delete("u", ids=["n2"], purge=True)
    t.upsert("u", [{"id": "n9", "text": "note 9" + pad}])
    assert scan(f"{MARKER}fifteen") == []
    out, err = reader.communicate("go\n", timeout=120)
    assert reader.returncode == 0, err
    after = json.loads(out)
    want = ["n0", "n1", "n3", "n4", "n5", "n9"]
    # On object storage this reader would keep its version for an hour: it moved because its
    # version's files were gone.
    assert after.pop("version") > first["version"]
    assert after == {"count": 6, "ids": want, "texts": sorted(f"note {i}" for i in (0, 1, 3, 4, 5, 9))}
