"""mindcore.batch.recall(engine="ray") on a local Ray cluster (two CPUs, one for the module): the same
table as the local engine, on a folder store and on object storage (the moto S3 server), with the
store given as a path, a URI or an open Store; bad input refused on the driver before Ray runs."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import S3_BUCKET

import mindcore
from mindcore.batch import _ray
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.ltm import LongTermMemory
from mindcore.store import Store

ray = pytest.importorskip("ray", reason="ray[data] is part of the test extra")

pytestmark = pytest.mark.ray

T0 = 1_700_000_000_000
DAY = 86_400_000
USERS = [f"user-{i}" for i in range(6)]
TOPICS = ["tea", "hiking", "python", "jazz", "paris", "chess", "rust", "cats", "sailing", "bread"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray cluster for the module (the engine uses it rather than starting its own)."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def _emb() -> HashEmbedder:
    return HashEmbedder(dim=64)


def _fill(store: Store) -> None:
    """Twenty memories per user, written at different times with different importances."""
    rng = np.random.default_rng(7)
    for u, user in enumerate(USERS):
        ltm = LongTermMemory(store, user_id=user, embedder=_emb(), max_items=0, clock=lambda: T0)
        ltm.remember_many([
            {"text": f"{user} likes {TOPICS[(u + i) % len(TOPICS)]} number {i}", "importance": float(rng.random()),
             "created_at": T0 - int(rng.integers(0, 90)) * DAY}
            for i in range(20)
        ], dedupe=False)
        ltm.close()


def _queries(n: int = 60) -> pa.Table:
    rng = np.random.default_rng(11)
    users = [USERS[int(i)] for i in rng.integers(0, len(USERS), n)]
    texts = [f"does {TOPICS[int(a)]} or {TOPICS[int(b)]} matter" for a, b in rng.integers(0, len(TOPICS), (n, 2))]
    return pa.table({"user_id": users, "query": texts})


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("query_index", "ascending"), ("rank", "ascending")])


def _assert_same_as_local(store: Any, queries: pa.Table, **options: Any) -> pa.Table:
    opts: dict[str, Any] = {"k": 5, "embedder": _emb(), "now_ms": T0 + DAY, **options}
    local = mindcore.batch.recall(store, queries, engine="local", **opts)
    hits = mindcore.batch.recall(store, queries, engine="ray", num_workers=2, **opts)
    assert hits.num_rows == local.num_rows > 0
    assert _sorted(hits).equals(_sorted(local))
    return hits


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ray") / "store"
    with mindcore.open(path) as store:
        _fill(store)
    return path


def test_folder_store_by_path_equals_local(cluster: None, folder: Path) -> None:
    queries = _queries()
    # chunk_size 8: several blocks, so both workers get work and users are cut into blocks.
    hits = _assert_same_as_local(str(folder), queries, chunk_size=8)
    assert set(hits.column("query_index").to_pylist()) == set(range(queries.num_rows))


def test_open_store_object_is_sent_by_uri(cluster: None, folder: Path) -> None:
    with mindcore.open(folder, read_only=True) as store:
        _assert_same_as_local(store, _queries(20))


def test_object_storage_options_reach_the_workers(cluster: None, s3: dict[str, str]) -> None:
    uri = f"s3://{S3_BUCKET}/{uuid.uuid4().hex}"
    with mindcore.open(uri, storage_options=s3) as store:
        _fill(store)
        # An open store: its storage options (the moto endpoint, the keys) go to the workers.
        _assert_same_as_local(store, _queries(30))
    # A URI: the caller's storage_options go to the workers.
    queries = _queries(10)
    local = mindcore.batch.recall(uri, queries, k=3, embedder=_emb(), now_ms=T0, storage_options=s3)
    hits = mindcore.batch.recall(uri, queries, k=3, embedder=_emb(), now_ms=T0, storage_options=s3,
                                 engine="ray", num_workers=2)
    assert _sorted(hits).equals(_sorted(local))


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if the engine starts Ray or hands it any work."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray was used before the input was checked")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray, "is_initialized", refuse)
    monkeypatch.setattr(ray.data, "from_arrow", refuse)


@pytest.mark.parametrize(("queries", "options", "names"), [
    (pa.table({"user_id": ["user-1"]}), {}, "query"),
    (pa.table({"user_id": ["user-1", None], "query": ["a", "b"]}), {}, "user_id"),
    (pa.table({"user_id": ["user-1"], "query": ["a"]}), {"num_workers": 0}, "num_workers"),
])
def test_bad_input_raises_before_ray_runs(
    no_ray: None, folder: Path, queries: pa.Table, options: dict[str, Any], names: str
) -> None:
    opts = {"embedder": _emb(), **options}
    with pytest.raises(InvalidInputError, match=names):
        mindcore.batch.recall(folder, queries, engine="ray", **opts)


class _Unpicklable(HashEmbedder):
    """A working embedder that cannot be sent to another process."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self._lock = threading.Lock()


def test_unpicklable_embedder_is_refused_on_the_driver(no_ray: None, folder: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"embedder: _Unpicklable cannot be sent to Ray workers"):
        mindcore.batch.recall(folder, _queries(4), engine="ray", embedder=_Unpicklable())


def test_memory_store_is_refused(no_ray: None) -> None:
    queries = _queries(4)
    with (mindcore.open("memory://ray-refused") as store,
          pytest.raises(InvalidInputError, match=r"memory://ray-refused lives in this process only")):
        mindcore.batch.recall(store, queries, engine="ray", embedder=_emb())
    with pytest.raises(InvalidInputError, match=r"Ray workers cannot open it"):
        mindcore.batch.recall("memory://ray-refused", queries, engine="ray", embedder=_emb())


def test_blocks_hold_whole_users() -> None:
    queries = _queries(200)
    table = queries.append_column(_ray._INDEX, pa.array(np.arange(queries.num_rows, dtype=np.int64)))
    blocks = list(_ray._blocks(table, workers=2, max_rows=16))
    assert sum(b.num_rows for b in blocks) == queries.num_rows
    assert len(blocks) >= 4  # enough blocks for both workers
    owner: dict[str, int] = {}
    for i, block in enumerate(blocks):
        for user in set(block.column("user_id").to_pylist()):
            assert owner.setdefault(user, i) == i, f"{user} is in blocks {owner[user]} and {i}"
    # Every row is there once, with its original position.
    rows = pa.concat_tables(blocks).sort_by(_ray._INDEX)
    assert rows.drop_columns([_ray._INDEX]).equals(queries)
