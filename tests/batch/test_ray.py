"""mindcore.batch.recall(engine="ray") on a local Ray cluster (two CPUs, one for the module): the same
table as the local engine, on a folder store and on object storage (the moto S3 server), with the
store given as a path, a URI or an open Store; bad input refused on the driver before Ray runs.
The tests that use the cluster are marked ``ray`` (``-m "not ray"`` leaves them out). The module needs
the ``ray`` extra beside the ``test`` one (``pip install -e '.[test,ray]'``) and skips without it."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
import warnings
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
from mindcore.errors import EmbedderMismatchError, EmbeddingError, InvalidInputError
from mindcore.ltm import LongTermMemory
from mindcore.store import Store
from mindcore.store._lance_logs import LANCE_FORK_WARNING

# Ray is not in the test extra (it is large): without it this module skips, with one line saying why.
ray = pytest.importorskip("ray", reason="Ray is not installed (the ray extra: pip install -e '.[test,ray]')")

T0 = 1_700_000_000_000
DAY = 86_400_000
USERS = [f"user-{i}" for i in range(6)]
TOPICS = ["tea", "hiking", "python", "jazz", "paris", "chess", "rust", "cats", "sailing", "bread"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray cluster for the module (the engine uses it rather than starting its own)."""
    with warnings.catch_warnings():  # Ray forks only to exec its processes (see mindcore.batch._ray)
        warnings.filterwarnings("ignore", message=LANCE_FORK_WARNING, category=UserWarning)
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


@pytest.mark.ray
def test_open_folder_store_with_query_vectors(cluster: None, folder: Path) -> None:
    queries = _queries()
    vectors = _emb().embed(queries.column("query").to_pylist())
    queries = queries.append_column("vector", pa.array(list(vectors), pa.list_(pa.float32())))
    with mindcore.open(folder, read_only=True) as store:
        # An open Store goes to the workers as its folder; the vectors are used as given (no embedder).
        # chunk_size 8: several blocks, so both workers get work.
        hits = _assert_same_as_local(store, queries, embedder=None, chunk_size=8)
    assert set(hits.column("query_index").to_pylist()) == set(range(queries.num_rows))
    assert ray.is_initialized()  # the caller's cluster is left running


@pytest.mark.ray
def test_ray_is_started_only_when_not_connected(cluster: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _ray._connect(ray, {"num_cpus": 1}) is False  # connected: used as it is, never stopped
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: started.append(kwargs))
    assert _ray._connect(ray, {"num_cpus": 1, "runtime_env": {"pip": ["mindcore"]}}) is True
    assert started == [{"include_dashboard": False, "num_cpus": 1, "runtime_env": {"pip": ["mindcore"]}}]


@pytest.mark.ray
def test_starting_ray_after_the_store_loaded_lance_says_nothing() -> None:
    """A process that used a store (pylance loaded, with its fork warning) and then has mindcore
    start Ray: Ray's processes are forked to exec, and nothing is said of it."""
    script = (
        "import warnings, lance, ray\n"
        "warnings.simplefilter('error')\n"
        "from mindcore.batch import _ray\n"
        "assert _ray._connect(ray, {'num_cpus': 1})\n"
        "ray.shutdown()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "fork" not in done.stderr


@pytest.mark.ray
def test_object_storage_uri_and_options_reach_the_workers(cluster: None, s3: dict[str, str]) -> None:
    uri = f"s3://{S3_BUCKET}/{uuid.uuid4().hex}"
    with mindcore.open(uri, storage_options=s3) as store:
        _fill(store)
    queries = _queries(30)
    opts: dict[str, Any] = {"k": 5, "embedder": _emb(), "now_ms": T0 + DAY, "storage_options": s3}
    local = mindcore.batch.recall(uri, queries, **opts)
    # The workers embed with the (pickled) embedder, open the store with the moto endpoint and,
    # touching, write the hits' last access there (after scoring: the hits are the untouched ones).
    hits = mindcore.batch.recall(uri, queries, engine="ray", num_workers=2, touch=True, **opts)
    assert _sorted(hits).equals(_sorted(local)) and hits.num_rows > 0
    first = hits.slice(0, 1).to_pylist()[0]
    with mindcore.open(uri, storage_options=s3) as store:
        ltm = LongTermMemory(store, user_id=first["user_id"], embedder=_emb())
        memory = ltm.get(first["memory_id"])
        ltm.close()
    assert memory is not None and memory.last_accessed_at == T0 + DAY


class _DownEmbedder(HashEmbedder):
    """The store's embedder by name and dimension, whose model cannot be reached from the workers."""

    def embed(self, texts: Any) -> np.ndarray:
        raise EmbeddingError("embedding endpoint unreachable from this worker")


@pytest.mark.ray
def test_a_worker_error_reaches_the_caller_as_itself(cluster: None, folder: Path) -> None:
    from ray import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)  # the workers cannot import the tests
    try:
        with pytest.raises(EmbeddingError, match="unreachable from this worker"):
            mindcore.batch.recall(folder, _queries(4), engine="ray", num_workers=1, embedder=_DownEmbedder(dim=64))
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def test_an_open_store_is_sent_as_its_uri_and_options(s3: dict[str, str], tmp_path: Path) -> None:
    uri = f"s3://{S3_BUCKET}/{uuid.uuid4().hex}"
    with mindcore.open(uri, storage_options=s3) as store:
        assert _ray._location(store, None) == (uri, s3)
    with mindcore.open(tmp_path / "s") as store:
        assert _ray._location(store, None) == (str(tmp_path / "s"), {})
    # Workers do not share the driver's working directory: a relative folder is made absolute.
    assert _ray._location("rel/store", None) == (str(Path.cwd() / "rel/store"), {})


def test_a_worker_error_is_raised_as_itself() -> None:
    from ray.exceptions import RayTaskError

    error = EmbedderMismatchError("memories were embedded with model a, not b")
    wrapped = RayTaskError("MapWorker.submit", "Traceback ...", error).as_instanceof_cause()
    assert _ray._worker_error(wrapped) is error
    assert _ray._worker_error(RayTaskError("f", "Traceback ...", ValueError("x"))) is None


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if the engine starts Ray or hands it any work."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray was used before the input was checked")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray, "is_initialized", refuse)
    monkeypatch.setattr(ray.data, "from_arrow", refuse)


@pytest.mark.parametrize(("queries", "options", "error"), [
    (pa.table({"user_id": ["user-1"]}), {}, r"missing column\(s\) \['query'\]"),
    (pa.table({"user_id": ["user-1", None], "query": ["a", "b"]}), {}, "queries row 1: user_id is null"),
    (pa.table({"user_id": ["user-1", "user-2"], "query": ["a", " "]}), {}, "queries row 1: query is blank"),
    (pa.table({"user_id": ["user-1"], "query": ["a"]}), {"num_workers": 0}, "num_workers"),
    (pa.table({"user_id": ["user-1"], "query": ["a"]}), {"k": 0}, "k"),
])
def test_bad_input_raises_before_ray_runs(
    no_ray: None, folder: Path, queries: pa.Table, options: dict[str, Any], error: str
) -> None:
    opts = {"embedder": _emb(), **options}
    with pytest.raises(InvalidInputError, match=error):
        mindcore.batch.recall(folder, queries, engine="ray", **opts)


@pytest.mark.parametrize("option", [{"num_workers": 2}, {"ray_init_kwargs": {"num_cpus": 1}}])
def test_ray_options_are_refused_by_the_local_engine(folder: Path, option: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match=f"{next(iter(option))}: only used with engine='ray'"):
        mindcore.batch.recall(folder, _queries(4), embedder=_emb(), **option)


def test_another_embedder_is_refused_before_ray_runs(no_ray: None, folder: Path) -> None:
    with pytest.raises(EmbedderMismatchError):
        mindcore.batch.recall(folder, _queries(4), engine="ray", embedder=HashEmbedder(dim=32))


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
