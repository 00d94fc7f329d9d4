"""mindcore.batch.recall: the same hits as LongTermMemory.recall for every query, from every kind of
input, whatever the chunking; precise errors before any work; nothing written unless touch=True."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import S3_BUCKET

import mindcore
from mindcore.batch import recall
from mindcore.embed import HashEmbedder
from mindcore.errors import EmbedderMismatchError, InvalidInputError, InvalidTypeError
from mindcore.ltm import LongTermMemory, RecallWeights
from mindcore.ltm._lexical import lexical_terms
from mindcore.ltm._repo import COLUMNS, TABLE, scope_key
from mindcore.store import Store

DAY = 86_400_000
NOW = 1_750_000_000_000
EMB = HashEmbedder(dim=64)
WORDS = ["tea", "coffee", "bike", "red", "green", "paris", "tokyo", "dog", "cat", "music", "piano", "guitar",
         "runs", "swims", "likes", "hates", "sister", "brother", "job", "nurse", "teacher", "garden"]
# (user, workspace, number of memories): empty users, one-memory users, a big one, a workspace.
USERS: list[tuple[str, str | None, int]] = [
    *[(f"user-{i}", None, n) for i, n in enumerate([0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233] * 3)],
    ("ws-user", "thread-1", 40), ("ws-user", "thread-2", 7), ("ws-user", None, 12),
    ("émoji 🍵 'quote\" user", None, 9), ("big", None, 400), ("no-memories", None, 0),
]
NAMES = sorted({u for u, _, _ in USERS})


def _sentence(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, int(rng.integers(2, 7))))


def _build(path: Path) -> None:
    rng = np.random.default_rng(7)
    store = mindcore.open(path)
    for u, (user, ws, n) in enumerate(USERS):
        if n == 0:
            continue
        ltm = LongTermMemory.create(store, user_id=user, workspace_id=ws, embedder=EMB, enabled=True, max_items=0)
        assert ltm is not None
        texts = [_sentence(rng) for _ in range(n)]
        if n > 3:  # duplicate texts with equal stamps: equal scores, ties in memory-id order
            texts[-1] = texts[-2] = texts[0]
        items = [{"text": t, "kind": str(rng.choice(["fact", "preference", "event"])),
                  "importance": float(rng.choice([0.2, 0.5, 0.9])),
                  "created_at": NOW - int(rng.integers(0, 90)) * DAY if t != texts[0] else NOW - 3 * DAY}
                 for t in texts]
        ltm.remember_many(items, dedupe=False)
        if u % 5 == 1 and n > 2:  # a recall that touched some memories, as in real use
            ltm.recall(texts[1], k=2)
        ltm.close()
    # Rows written without a vector (another writer's): they never match, but count for BM25.
    table = store.table(TABLE, COLUMNS, vectors=True, embedder=EMB)
    ns = scope_key("user-7", "default", None)
    table.upsert(ns, [{"id": f"novec-{i}", "text": "tea coffee piano", "kind": "fact", "importance": 0.9,
                       "recency_at": NOW, "last_accessed_at": NOW, "terms": lexical_terms("tea coffee piano"),
                       "vector": None, "created_at": NOW} for i in range(3)])
    # Rows written before the terms column existed: their terms are analysed when read.
    old_rows = [{"id": f"old-{i}", "text": text, "kind": "fact", "importance": 0.5, "recency_at": NOW - DAY,
                 "last_accessed_at": NOW - DAY, "terms": None, "vector": EMB.embed([text])[0], "created_at": NOW - DAY}
                for i, text in enumerate(["drinks green tea daily", "has a dog called Rex"])]
    table.upsert(scope_key("user-8", "default", None), old_rows)
    store.close()


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batch") / "store"
    _build(path)
    return path


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    s = mindcore.open(store_path)
    yield s
    s.close()


def _queries(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    users, workspaces, texts = [], [], []
    for _ in range(n):
        user, ws, _size = USERS[int(rng.integers(len(USERS)))]
        users.append(user)
        workspaces.append(ws)
        texts.append(_sentence(rng) + ("?" if rng.random() < 0.5 else ""))
    return pa.table({"user_id": users, "query": texts, "workspace_id": pa.array(workspaces, pa.string())})


def _expected(path: Path, queries: pa.Table, k: int, weights: RecallWeights | None = None,
              namespace: str = "default") -> list[list[tuple[str, float, float]]]:
    """LongTermMemory.recall(touch=False) for each query, from a store opened afresh."""
    store = mindcore.open(path)
    memories: dict[tuple[str, str | None], LongTermMemory] = {}
    out = []
    ws_col = queries.column("workspace_id").to_pylist() if "workspace_id" in queries.column_names else None
    for i, (user, query) in enumerate(zip(queries.column("user_id").to_pylist(),
                                          queries.column("query").to_pylist(), strict=True)):
        ws = None if ws_col is None else ws_col[i]
        ltm = memories.get((user, ws))
        if ltm is None:
            made = LongTermMemory.create(store, user_id=user, namespace=namespace, workspace_id=ws, embedder=EMB,
                                         enabled=True, weights=weights, clock=lambda: NOW)
            assert made is not None
            ltm = memories[(user, ws)] = made
        out.append([(m.id, m.score, m.similarity) for m in ltm.recall(query, k, touch=False)])
    store.close()
    return out


def _got(hits: pa.Table, n: int) -> list[list[tuple[str, float, float]]]:
    out: list[list[tuple[str, float, float]]] = [[] for _ in range(n)]
    ranks: list[list[int]] = [[] for _ in range(n)]
    for row in hits.to_pylist():
        out[row["query_index"]].append((row["memory_id"], row["score"], row["similarity"]))
        ranks[row["query_index"]].append(row["rank"])
    assert all(r == list(range(len(r))) for r in ranks)
    return out


@pytest.mark.parametrize("k", [1, 5, 10])
def test_equals_a_loop_of_ltm_recall(store_path: Path, store: Store, k: int) -> None:
    queries = _queries(1500, seed=k)
    hits = recall(store, queries, k=k, embedder=EMB, now_ms=NOW)
    assert hits.schema.names == ["user_id", "query_index", "rank", "memory_id", "text", "kind", "score",
                                 "similarity"]
    expected = _expected(store_path, queries, k)
    assert _got(hits, queries.num_rows) == expected
    assert sum(map(len, expected)) > queries.num_rows * min(k, 3) // 2  # most queries have hits
    # The user and the memory's text and kind are reported as LTM has them.
    first = hits.slice(0, 1).to_pylist()[0]
    assert first["user_id"] == queries.column("user_id")[first["query_index"]].as_py()


def test_equals_ltm_without_lexical_fusion_and_other_weights(store_path: Path, store: Store) -> None:
    queries = _queries(600, seed=11)
    for weights in (RecallWeights(lexical=0), RecallWeights(similarity=0.3, recency=0.5, importance=0.4,
                                                            half_life_days=3, lexical=0.5)):
        hits = recall(store, queries, k=7, embedder=EMB, now_ms=NOW, weights=weights)
        assert _got(hits, queries.num_rows) == _expected(store_path, queries, 7, weights)


def test_ties_go_to_the_row_ltm_picks(store_path: Path, store: Store) -> None:
    # Duplicated texts score equally; the query is that very text, so the tie is at the top.
    big = mindcore.open(store_path).table(TABLE, COLUMNS, vectors=True, embedder=EMB)
    rows = big.scan_arrow(scope_key("big", "default", None), columns=["text"]).column("text").to_pylist()
    dup = max(set(rows), key=rows.count)
    assert rows.count(dup) >= 3
    queries = pa.table({"user_id": ["big"] * 2, "query": [dup, dup.upper()]})
    hits = recall(store, queries, k=5, embedder=EMB, now_ms=NOW)
    got = _got(hits, 2)
    assert got == _expected(store_path, queries, 5)
    assert got[0][0][1] == got[0][1][1]  # a real tie


def test_a_long_run_of_ties_is_ordered_by_id_whatever_the_row_order(tmp_path: Path) -> None:
    """Twenty copies of one memory tie on every term; stored in the reverse of their ids' order
    (rows come back in storage order), single and batch recall still give the same hits: equal
    scores in memory-id order, at any k."""
    from mindcore.ltm import Memory

    path = tmp_path / "ties"
    store = mindcore.open(path)
    ltm = LongTermMemory(store, user_id="tie", embedder=EMB, max_items=0)
    text = "Keeps bees on the roof"
    memories = [Memory(id=f"m{i:02d}", text=text, created_at=NOW - DAY, last_accessed_at=NOW - DAY)
                for i in reversed(range(20))]
    ltm._repo.write(memories, np.repeat(EMB.embed([text]), 20, axis=0))
    stored = ltm._repo.table.scan_arrow(ltm._repo.ns, columns=["id"]).column("id").to_pylist()
    assert stored[:3] == ["m19", "m18", "m17"]  # rows against id order
    for k in (1, 5, 19):
        single = [m.id for m in ltm.recall("bees on the roof", k=k, touch=False)]
        assert single == [f"m{i:02d}" for i in range(k)]
        queries = pa.table({"user_id": ["tie"], "query": ["bees on the roof"]})
        hits = recall(mindcore.open(path), queries, k=k, embedder=EMB, now_ms=NOW)
        assert hits.column("memory_id").to_pylist() == single


def test_chunking_and_memory_bound_do_not_change_the_result(store: Store) -> None:
    queries = _queries(700, seed=3)
    reference = recall(store, queries, k=4, embedder=EMB, now_ms=NOW)
    for chunk_size, max_rows in [(1, 10**6), (37, 50), (5000, 1), (64, 400)]:
        got = recall(store, queries, k=4, embedder=EMB, now_ms=NOW, chunk_size=chunk_size,
                     max_rows_in_memory=max_rows)
        assert got.equals(reference), (chunk_size, max_rows)


def test_every_input_type_gives_the_same_hits(store: Store, tmp_path: Path) -> None:
    queries = _queries(300, seed=5)
    reference = recall(store, queries, k=3, embedder=EMB, now_ms=NOW)

    def run(q: Any, **kw: Any) -> pa.Table:
        return recall(store, q, k=3, embedder=EMB, now_ms=NOW, **kw)

    assert run(pa.RecordBatchReader.from_batches(queries.schema, queries.to_batches(max_chunksize=50))).equals(
        reference)
    assert run(queries.to_pandas()).equals(reference)
    pq.write_table(queries, tmp_path / "q.parquet", row_group_size=64)
    assert run(tmp_path / "q.parquet", chunk_size=100).equals(reference)
    assert run(str(tmp_path / "q.parquet")).equals(reference)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        pq.write_table(queries.slice(i * 100, 100), folder / f"part-{i}.parquet")
    assert run(folder).equals(reference)
    with open(tmp_path / "q.jsonl", "w", encoding="utf-8") as f:
        for row in queries.to_pylist():
            f.write(json.dumps(row) + "\n")
    assert run(tmp_path / "q.jsonl").equals(reference)
    queries.to_pandas().to_csv(tmp_path / "q.csv", index=False)
    assert run(tmp_path / "q.csv").equals(reference)
    # Given vectors: nothing is embedded, the same hits.
    vectors = EMB.embed(queries.column("query").to_pylist())
    with_vectors = queries.append_column("vector", pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.reshape(-1)), vectors.shape[1]))

    class Refuses:
        dim, model_id = EMB.dim, EMB.model_id

        def embed(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("queries with vectors must not be embedded")

    assert recall(store, with_vectors, k=3, embedder=Refuses(), now_ms=NOW).equals(reference)
    assert recall(store, with_vectors, k=3, now_ms=NOW).equals(reference)  # no embedder needed at all
    as_lists = with_vectors.set_column(3, "vector", pa.array([list(map(float, v)) for v in vectors]))
    assert recall(store, as_lists, k=3, now_ms=NOW).equals(reference)


def test_polars_frames_convert_through_arrow(store: Store) -> None:
    pl = pytest.importorskip("polars")
    queries = _queries(50, seed=8)
    reference = recall(store, queries, k=3, embedder=EMB, now_ms=NOW)
    assert recall(store, pl.from_arrow(queries), k=3, embedder=EMB, now_ms=NOW).equals(reference)


def test_the_store_may_be_a_path_and_namespace_and_workspace_are_scopes(store_path: Path) -> None:
    queries = pa.table({"user_id": ["ws-user"] * 3, "query": ["tea garden"] * 3})
    by_path = recall(store_path, queries, k=3, embedder=EMB, now_ms=NOW, workspace_id="thread-1")
    assert by_path.num_rows == 9
    expected = _expected(store_path, queries.append_column("workspace_id", pa.array(["thread-1"] * 3)), 3)
    assert _got(by_path, 3) == expected
    assert recall(store_path, queries, k=3, embedder=EMB, now_ms=NOW, namespace="other").num_rows == 0
    assert recall(store_path, queries, k=3, embedder=EMB, now_ms=NOW, workspace_id="nope").num_rows == 0


def test_a_store_without_memories_gives_no_hits(tmp_path: Path) -> None:
    empty = mindcore.open(tmp_path / "empty")
    hits = recall(empty, _queries(20, seed=1), k=3, embedder=EMB)
    assert hits.num_rows == 0 and hits.schema.names[0] == "user_id"
    with pytest.raises(InvalidInputError, match="row 1: user_id"):  # still checked
        recall(empty, pa.table({"user_id": ["a", None], "query": ["x", "y"]}), embedder=EMB)
    assert empty.table_names() == []  # nothing created
    empty.close()


def _version(store_path: Path) -> int:
    s = mindcore.open(store_path, read_only=True)
    v = s.open_table(TABLE).version
    s.close()
    return v


def test_recall_writes_nothing_by_default(store_path: Path, store: Store) -> None:
    before = _version(store_path)
    recall(store, _queries(200, seed=2), k=5, embedder=EMB)
    recall(store_path, _queries(200, seed=2), k=5, embedder=EMB)
    assert _version(store_path) == before


def test_touch_bumps_last_access_of_the_returned_memories(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = mindcore.open(path)
    ltm = LongTermMemory.create(store, user_id="u", embedder=EMB, enabled=True)
    assert ltm is not None
    for i, text in enumerate(["likes green tea", "rides a red bike", "plays the piano"]):
        ltm.remember(text, created_at=NOW - (10 + i) * DAY)
    ltm.close()
    table = store.table(TABLE, COLUMNS, vectors=True, embedder=EMB)
    ns = scope_key("u", "default", None)
    other = LongTermMemory.create(store, user_id="v", embedder=EMB, enabled=True)
    assert other is not None
    other.remember("owns a green bike", created_at=NOW - DAY)
    other.close()
    before = table.version
    hits = recall(store, pa.table({"user_id": ["u", "u", "v"], "query": ["green tea", "tea?", "bike"]}), k=1,
                  embedder=EMB, now_ms=NOW, touch=True)
    assert table.version == before + 2  # one commit per scope
    touched = set(hits.column("memory_id").to_pylist()[:2])
    assert len(touched) == 1
    for row in table.scan(ns, columns=["id", "last_accessed_at", "recency_at", "created_at"]):
        if row["id"] in touched:
            assert row["last_accessed_at"] == NOW and row["recency_at"] == NOW
        else:
            assert row["last_accessed_at"] == row["created_at"] < NOW
    store.close()


@pytest.mark.parametrize(("queries", "match"), [
    (pa.table({"user": ["a"], "query": ["x"]}), r"missing column\(s\) \['user_id'\]"),
    (pa.table({"user_id": ["a"], "text": ["x"]}), r"missing column\(s\) \['query'\]"),
    (pa.table({"user_id": ["a", None], "query": ["x", "y"]}), "queries row 1: user_id is null"),
    (pa.table({"user_id": ["a", ""], "query": ["x", "y"]}), "queries row 1: user_id: expected a non-empty"),
    (pa.table({"user_id": ["a", "  "], "query": ["x", "y"]}), "queries row 1: user_id"),
    (pa.table({"user_id": ["a", "b\x00c"], "query": ["x", "y"]}), "queries row 1: user_id: contains a NUL"),
    (pa.table({"user_id": ["a", "u" * 1001], "query": ["x", "y"]}), "queries row 1: user_id: is 1001 characters"),
    (pa.table({"user_id": [1, 2], "query": ["x", "y"]}), "column 'user_id' must hold strings, got int64"),
    (pa.table({"user_id": ["a", "b"], "query": ["x", None]}), "queries row 1: query is null"),
    (pa.table({"user_id": ["a", "b", "c"], "query": ["x", "y", " \n"]}), "queries row 2: query is blank"),
    (pa.table({"user_id": ["a", "b"], "query": ["x", ""]}), "queries row 1: query is blank"),
    (pa.table({"user_id": ["a"], "query": ["x"], "workspace_id": ["w\x00"]}), "queries row 0: workspace_id"),
    (pa.table({"user_id": ["a", "b"], "query": ["x", "y"], "vector": [[0.1] * 64, [0.1] * 63]}),
     "queries row 1: vector has 63 dimensions; the memories' embedding has 64"),
    (pa.table({"user_id": ["a", "b"], "query": ["x", "y"], "vector": [[0.1] * 64, [float("nan")] * 64]}),
     "queries row 1: vector contains NaN"),
    (pa.table({"user_id": ["a", "b"], "query": ["x", "y"], "vector": [[0.1] * 64, None]}),
     "queries row 1: vector is null"),
    (pa.table({"user_id": ["a"], "query": ["x"], "vector": ["no"]}), "column 'vector' must hold lists of floats"),
])
def test_bad_input_is_refused_naming_the_row_or_column(store: Store, queries: pa.Table, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        recall(store, queries, embedder=EMB)


def test_bad_rows_late_in_a_file_are_refused_before_any_work(store: Store, tmp_path: Path) -> None:
    queries = _queries(500, seed=9)
    users = queries.column("user_id").to_pylist()
    users[480] = None
    pq.write_table(queries.set_column(0, "user_id", pa.array(users, pa.string())), tmp_path / "q.parquet")
    calls: list[int] = []

    class Counting:
        dim, model_id = EMB.dim, EMB.model_id

        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return EMB.embed(texts)

    with pytest.raises(InvalidInputError, match="queries row 480: user_id is null"):
        recall(store, tmp_path / "q.parquet", embedder=Counting(), chunk_size=100)
    assert calls == []  # nothing was embedded (or scored) before the bad row was found


def test_bad_options_and_inputs(store: Store, tmp_path: Path) -> None:
    q = pa.table({"user_id": ["a"], "query": ["x"]})
    with pytest.raises(InvalidInputError, match="k: must be at most 1000"):
        recall(store, q, k=1001, embedder=EMB)
    with pytest.raises(InvalidTypeError, match="k: expected an integer"):
        recall(store, q, k=True, embedder=EMB)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="engine: 'spark' is not one of"):
        recall(store, q, engine="spark", embedder=EMB)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="namespace: contains a NUL"):
        recall(store, q, namespace="a\x00", embedder=EMB)
    with pytest.raises(InvalidInputError, match="given both as an argument and as a column"):
        recall(store, q.append_column("workspace_id", pa.array(["w"])), workspace_id="w", embedder=EMB)
    with pytest.raises(InvalidTypeError, match="queries: expected a pyarrow Table"):
        recall(store, [("a", "x")], embedder=EMB)
    with pytest.raises(InvalidInputError, match="no file or folder"):
        recall(store, tmp_path / "missing.parquet", embedder=EMB)
    (tmp_path / "q.txt").write_text("user_id,query\n")
    with pytest.raises(InvalidInputError, match="cannot tell the format"):
        recall(store, tmp_path / "q.txt", embedder=EMB)
    with pytest.raises(InvalidTypeError, match="weights: expected a RecallWeights"):
        recall(store, q, weights={"lexical": 0}, embedder=EMB)  # type: ignore[arg-type]


def test_a_store_built_with_another_embedder_is_refused(store: Store) -> None:
    q = pa.table({"user_id": ["user-3"], "query": ["tea"]})
    with pytest.raises(EmbedderMismatchError, match="mindcore-hash-v1-d64"):
        recall(store, q, embedder=HashEmbedder(dim=64, seed=1))
    with pytest.raises(EmbedderMismatchError):
        recall(store, q, embedder=HashEmbedder(dim=32))


def test_long_queries_are_cut_as_ltm_cuts_them(store_path: Path, store: Store) -> None:
    queries = pa.table({"user_id": ["big"], "query": ["tea " * 3000]})
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        expected = _expected(store_path, queries, 3)
    with pytest.warns(UserWarning, match="cut to that length"):
        hits = recall(store, queries, k=3, embedder=EMB, now_ms=NOW)
    assert _got(hits, 1) == expected


def test_mindcore_batch_is_reachable_from_the_package() -> None:
    assert mindcore.batch.recall is recall
    assert "batch" in dir(mindcore)
    assert NAMES  # every user id of the fixture is a valid id


def test_a_failure_midway_returns_nothing_and_writes_nothing(store_path: Path) -> None:
    calls: list[int] = []

    class FailsLater:
        dim, model_id = EMB.dim, EMB.model_id

        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            if len(calls) == 3:
                raise RuntimeError("model server went away")
            return EMB.embed(texts)

    before = _version(store_path)
    with pytest.raises(RuntimeError, match="went away"):
        recall(store_path, _queries(400, seed=4), k=3, embedder=FailsLater(), touch=True, chunk_size=50,
               embed_batch_size=20)
    assert len(calls) == 3 and _version(store_path) == before  # no last-access bump of earlier chunks


def test_an_object_storage_store_with_storage_options(s3: dict[str, str]) -> None:
    uri = f"s3://{S3_BUCKET}/batch-recall/store"
    remote = mindcore.open(uri, storage_options=s3)
    for user, facts in [("ann", ["drinks green tea", "lives in paris"]), ("bob", ["rides a red bike"])]:
        ltm = LongTermMemory.create(remote, user_id=user, embedder=EMB, enabled=True)
        assert ltm is not None
        ltm.remember_many(facts)
        ltm.close()
    queries = pa.table({"user_id": ["ann", "bob", "ann"], "query": ["tea", "bike", "paris"]})
    by_uri = recall(uri, queries, k=2, embedder=EMB, now_ms=NOW, storage_options=s3)
    assert by_uri.equals(recall(remote, queries, k=2, embedder=EMB, now_ms=NOW))
    assert by_uri.column("text").to_pylist()[0] == "drinks green tea" and by_uri.num_rows == 5
    remote.close()
    with pytest.raises(InvalidInputError, match="storage_options: only used with a store given as a URI"):
        recall(mindcore.open("memory://x"), queries, embedder=EMB, storage_options=s3)


def test_a_bad_row_late_in_a_reader_fails_the_call_and_writes_nothing(store_path: Path) -> None:
    queries = _queries(300, seed=6)
    texts = queries.column("query").to_pylist()
    texts[250] = "   "
    bad = queries.set_column(1, "query", pa.array(texts))
    reader = pa.RecordBatchReader.from_batches(bad.schema, bad.to_batches(max_chunksize=40))
    before = _version(store_path)
    with pytest.raises(InvalidInputError, match="queries row 250: query is blank"):
        recall(store_path, reader, k=3, embedder=EMB, touch=True, chunk_size=100)
    assert _version(store_path) == before


def test_loads_stay_under_max_rows_in_memory(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    module = sys.modules["mindcore.batch.recall"]
    real = module.load_scopes
    loads: list[tuple[int, int]] = []

    def counting(table: Any, keys: Any) -> Any:
        scopes = real(table, keys)
        loads.append((len(scopes.keys), int(scopes.offsets[-1])))
        return scopes

    queries = _queries(400, seed=12)
    reference = recall(store, queries, k=3, embedder=EMB, now_ms=NOW)
    monkeypatch.setattr(module, "load_scopes", counting)
    assert recall(store, queries, k=3, embedder=EMB, now_ms=NOW, max_rows_in_memory=200).equals(reference)
    assert len(loads) > 5
    # Two loads may be held at once (one scored, one read ahead): each is at most half the bound,
    # unless it is a single scope larger than that.
    assert all(rows <= 100 or scopes == 1 for scopes, rows in loads), loads


def test_engine_ray_hands_every_option_to_the_ray_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    seen: dict[str, Any] = {}
    fake = types.ModuleType("mindcore.batch._ray")

    def recall_ray(store: Any, queries: Any, **options: Any) -> str:
        seen.update(options, store=store, queries=queries)
        return "from ray"

    fake.recall_ray = recall_ray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mindcore.batch._ray", fake)
    weights = RecallWeights(lexical=0)
    out = recall("s3://b/p", "q.parquet", 4, namespace="n", embedder=EMB, workspace_id="w", weights=weights,
                 now_ms=5, touch=True, engine="ray", chunk_size=7, max_rows_in_memory=9, embed_batch_size=3,
                 storage_options={"a": "b"}, num_workers=2, ray_init_kwargs={"num_cpus": 2})
    assert out == "from ray"
    assert seen == {"store": "s3://b/p", "queries": "q.parquet", "k": 4, "namespace": "n", "embedder": EMB,
                    "workspace_id": "w", "weights": weights, "options": None, "now_ms": 5, "touch": True, "chunk_size": 7,
                    "max_rows_in_memory": 9, "embed_batch_size": 3, "storage_options": {"a": "b"},
                    "num_workers": 2, "ray_init_kwargs": {"num_cpus": 2}}


def test_an_in_memory_input_loads_each_scope_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    module = sys.modules["mindcore.batch.recall"]
    real = module.load_scopes
    loaded: list[str] = []

    def recording(table: Any, keys: Any) -> Any:
        scopes = real(table, keys)
        loaded.extend(scopes.keys)
        return scopes

    queries = _queries(600, seed=13)  # about 12 queries per scope, in random order
    reference = recall(store, queries, k=3, embedder=EMB, now_ms=NOW)
    monkeypatch.setattr(module, "load_scopes", recording)
    assert recall(store, queries, k=3, embedder=EMB, now_ms=NOW, chunk_size=50).equals(reference)
    assert len(loaded) == len(set(loaded)) > 30  # chunks end where a scope ends
