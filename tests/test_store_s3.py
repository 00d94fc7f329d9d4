"""The store on object storage: an S3-compatible server (moto) on 127.0.0.1, started by the tests.

Create, write, recall, compact, and two processes writing at once with nothing lost and no
duplicate ids (the lease lock).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import HANG, start_together
from conftest import S3_BUCKET as BUCKET

import mindcore
from mindcore.store import LockTimeoutError, StoreConfig, col
from mindcore.store.locks import LeaseLock

pytest.importorskip("moto.server", reason="moto[server] is part of the test extra")
boto3 = pytest.importorskip("boto3")


def _uri() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"


def test_create_write_read_compact(s3: dict[str, str]) -> None:
    uri = _uri()
    store = mindcore.open(uri, storage_options=s3, config=StoreConfig(compact_every=4, compact_in_background=False))
    assert store.kind == "remote"
    t = store.table("facts", {"text": pa.string(), "importance": pa.float32()})
    for i in range(10):
        t.upsert("u1", [{"id": f"f{i}", "text": f"fact {i}", "importance": i / 10, "tags": ["t"]}])
    t.upsert("u2", [{"id": "f0", "text": "other user"}])
    with t.unit_of_work("u1") as uow:
        uow.update(["f1"], {"text": "updated"})
        uow.delete(where=col("importance").ge(0.8))
    t.compact()
    assert t.count("u1") == 8 and t.count("u2") == 1
    assert t.get_one("u1", "f1")["text"] == "updated"  # type: ignore[index]
    assert int(t._tbl.stats()["fragment_stats"]["num_fragments"]) <= 4
    other = mindcore.open(uri, storage_options=s3)  # a second client sees the same memory
    assert other.table_names() == ["facts"]
    assert other.table("facts").count("u1", col("tags").contains_all(["t"])) == 8


class _Emb:
    dim = 8
    model_id = "s3-test-embedder"

    def embed(self, texts: Any) -> np.ndarray:
        rng = np.random.default_rng(abs(hash(tuple(texts))) % 2**32)
        v = rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_recall_and_embedder_record(s3: dict[str, str]) -> None:
    uri = _uri()
    store = mindcore.open(uri, storage_options=s3, embedder=_Emb())
    t = store.table("mem", {"text": pa.string()}, vectors=True)
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    t.upsert("u", [{"id": f"m{i}", "text": str(i), "vector": v} for i, v in enumerate(vecs)])
    hits = t.search("u", vecs[17], k=3)
    assert hits[0].id == "m17" and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    expected = np.argsort(-(vecs @ vecs[17]), kind="stable")[:3]
    assert [h.id for h in hits] == [f"m{i}" for i in expected]
    from mindcore.store import EmbedderMismatchError

    class Other(_Emb):
        model_id = "another-model"

    with pytest.raises(EmbedderMismatchError, match=r"s3-test-embedder.*another-model"):
        mindcore.open(uri, storage_options=s3, embedder=Other())


WRITER = r"""
import sys, json, mindcore, pyarrow as pa
uri, opts, who, mode = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
t = mindcore.open(uri, storage_options=opts).table("t", {"who": pa.string()})
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(15):
    key = f"k{i}" if mode == "same" else f"{who}{i}"
    t.upsert("ns", [{"id": key, "who": who}])
"""


@pytest.mark.parametrize("mode", ["same", "distinct"])
def test_two_processes_writing_at_once(s3: dict[str, str], mode: str) -> None:
    uri = _uri()
    t = mindcore.open(uri, storage_options=s3, config=StoreConfig(compact_every=0)).table("t", {"who": pa.string()})
    t.upsert("warm", [{"id": f"w{i}"} for i in range(200)])
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, uri, json.dumps(s3), who, mode],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for who in ("A", "B")
    ]
    start_together(procs)
    for p in procs:
        assert p.wait(timeout=600) == 0
    ids = [r["id"] for r in t.scan("ns")]
    if mode == "same":
        assert sorted(ids) == sorted(f"k{i}" for i in range(15)), "duplicate or missing rows"
    else:
        assert sorted(ids) == sorted([f"A{i}" for i in range(15)] + [f"B{i}" for i in range(15)])


def test_lease_lock_blocks_then_expires(s3: dict[str, str]) -> None:
    uri = _uri()
    a = LeaseLock(uri, "_mindcore_locks/x.lock", "x", s3, ttl=1.5)
    b = LeaseLock(uri, "_mindcore_locks/x.lock", "x", s3, ttl=1.5)
    with a.hold(5):
        with pytest.raises(LockTimeoutError, match="table 'x'"), b.hold(0.3):
            pass
        time.sleep(2.0)  # longer than the ttl: the renewer keeps the lease alive
        with pytest.raises(LockTimeoutError), b.hold(0.3):
            pass
    with b.hold(1.0):  # released: taken at once
        pass
    # A holder that died without releasing: its lease expires after ttl.
    import obstore

    expires = time.time_ns() // 1_000_000 + 1000
    obstore.put(a._store, a.key, json.dumps({"owner": "dead", "expires_ms": expires}).encode())
    with b.hold(HANG):
        taken = time.time_ns() // 1_000_000
    assert taken >= expires, f"taken {expires - taken} ms before the dead holder's lease ran out"


def test_read_only_on_object_storage(s3: dict[str, str]) -> None:
    from mindcore.store import StoreNotWritableError

    uri = _uri()
    mindcore.open(uri, storage_options=s3).table("facts", {"text": pa.string()}).upsert("u", [{"id": "a", "text": "x"}])
    client = boto3.client("s3", endpoint_url=s3["aws_endpoint"], aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    prefix = uri.split(f"{BUCKET}/", 1)[1]

    def objects() -> list[str]:
        return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))

    before = objects()
    writer = mindcore.open(uri, storage_options=s3)
    writer.check_writable()  # object storage is not probed: nothing is written
    reader = mindcore.open(uri, storage_options=s3, read_only=True)
    t = reader.table("facts", {"text": pa.string()})
    assert t.get_one("u", "a")["text"] == "x"  # type: ignore[index]
    with pytest.raises(StoreNotWritableError, match=f"store {uri} was opened read_only=True"):
        t.upsert("u", [{"id": "b"}])
    with pytest.raises(StoreNotWritableError):
        reader.lock("job").hold()
    with pytest.raises(StoreNotWritableError):
        reader.check_writable()
    assert objects() == before


def test_refresh_sees_what_another_client_just_committed(s3: dict[str, str]) -> None:
    uri = _uri()
    writer = mindcore.open(uri, storage_options=s3).table("t", {"n": pa.int64()})
    reader = mindcore.open(uri, storage_options=s3).table("t", {"n": pa.int64()})
    assert reader.count("ns") == 0
    version = writer.upsert("ns", [{"id": "a", "n": 1}]).version
    assert reader.refresh() == version  # within the read-consistency interval, yet current
    assert reader.count("ns") == 1
