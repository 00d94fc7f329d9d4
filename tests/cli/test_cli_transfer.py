"""``mindcore export`` / ``mindcore import``: a store round-trips through JSONL row by row (vectors
bit for bit), or without vectors re-embedded on import; a cut file imports nothing; Ctrl-C stops
between committed batches and a second run finishes the import."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cli_helpers import interrupt_cli, populate, run_cli

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.store import ALL_NAMESPACES


def rows_of(path: Path, *, skip: frozenset[str] = frozenset()) -> dict[str, list[dict[str, Any]]]:
    store = mindcore.open(path, read_only=True)
    out = {}
    for name in store.table_names():
        if name in skip:
            continue
        rows = store.open_table(name).scan(ALL_NAMESPACES)
        out[name] = sorted(rows, key=lambda r: (r["namespace"], r["id"]))
    return out


def assert_same_rows(a: dict[str, list[dict[str, Any]]], b: dict[str, list[dict[str, Any]]]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert len(a[name]) == len(b[name]), name
        for left, right in zip(a[name], b[name], strict=True):
            assert sorted(left) == sorted(right), name
            for column, value in left.items():
                if isinstance(value, np.ndarray):
                    assert value.dtype == np.float32 and np.array_equal(value, right[column]), (name, column)
                else:
                    assert value == right[column], (name, left["id"], column)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return populate(tmp_path_factory.mktemp("transfer") / "store")


def test_round_trip_with_vectors_is_lossless(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    done = run_cli("export", "--store", source, out)
    assert done.stdout.startswith("exported ") and not (tmp_path / "memory.jsonl.partial").exists()
    run_cli("import", "--store", tmp_path / "copy", out)
    assert_same_rows(rows_of(source), rows_of(tmp_path / "copy"))
    original, copy = mindcore.open(source, read_only=True), mindcore.open(tmp_path / "copy", read_only=True)
    assert copy.embedding == original.embedding
    for name in original.table_names():
        assert copy.table_embedding(name) == original.table_embedding(name)
        assert copy.open_table(name).schema.equals(original.open_table(name).schema), name
    # The copy works as a store of its capabilities: recall finds the imported memories.
    ltm = mindcore.LongTermMemory(copy.uri, user_id="user-7", namespace="chat", embedder=HashEmbedder())
    assert ltm.recall("what does the user drink? tea or coffee", k=1)[0].text == "Prefers green tea over coffee"
    ltm.close()


def test_round_trip_without_vectors_embeds_again(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    run_cli("export", "--store", source, out, "--no-vectors")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert all("vector" not in json.loads(line).get("row", {}) for line in lines[1:])
    assert sum(1 for line in lines if json.loads(line).get("embed")) == 5  # a belief, a reflection, 3 memories (goals have no vector)
    done = run_cli("import", "--store", tmp_path / "copy", out, "--embedder", "hash")
    assert "embedded again with mindcore-hash-" in done.stdout
    # The source was embedded with the same hashing model: the new vectors are the same bits. The
    # context's embedding cache is left out (rebuilt on first use).
    skip = frozenset({"context_embeddings"})
    assert_same_rows(rows_of(source, skip=skip), rows_of(tmp_path / "copy", skip=skip))
    assert mindcore.open(tmp_path / "copy", read_only=True).open_table("context_embeddings").count(ALL_NAMESPACES) == 0


def test_a_cut_file_imports_nothing(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    run_cli("export", "--store", source, out)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:-3]), encoding="utf-8")
    done = run_cli("import", "--store", tmp_path / "copy", out, check=False)
    assert done.returncode == 1 and "a cut file?" in done.stderr
    assert not (tmp_path / "copy").exists() or mindcore.open(tmp_path / "copy").table_names() == []


def test_ctrl_c_stops_between_committed_batches_and_a_rerun_finishes(tmp_path: Path) -> None:
    emb = HashEmbedder()
    store = mindcore.open(tmp_path / "big", embedder=emb)
    ltm = mindcore.LongTermMemory(store, user_id="u", embedder=emb, max_items=0)
    ltm.remember_many([f"fact number {i} about topic {i % 17}" for i in range(400)], dedupe=False)
    ltm.close()
    store.close()
    out = tmp_path / "big.jsonl"
    run_cli("export", "--store", tmp_path / "big", out)
    stdout, stderr = interrupt_cli("import", "--store", tmp_path / "copy", out, "--batch-size", "1", first="import: ")
    assert "stopping after the batch in progress" in stderr
    imported = int(stdout.split("stopped: ")[1].split(" of ")[0])
    assert 1 <= imported < 400
    assert mindcore.open(tmp_path / "copy", read_only=True).open_table("ltm_memories").count(ALL_NAMESPACES) == imported
    run_cli("import", "--store", tmp_path / "copy", out, "--batch-size", "200")
    assert_same_rows(rows_of(tmp_path / "big"), rows_of(tmp_path / "copy"))


def test_an_export_interrupted_leaves_no_file(source: Path, tmp_path: Path) -> None:
    done = run_cli("export", "--store", source, tmp_path / "x.jsonl", "--table", "nope", check=False)
    assert done.returncode == 1 and "no table 'nope'" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_version_1_export_with_vectors_as_lists_still_imports(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    run_cli("export", "--store", source, out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["version"] == 2 and any("vec" in d for d in lines[1:-1])
    lines[0]["version"] = 1  # as an earlier mindcore wrote it: the vector a list inside the row
    for doc in lines[1:-1]:
        if "vec" in doc:
            vector = np.frombuffer(base64.b64decode(doc.pop("vec")), dtype="<f4")
            doc["row"]["vector"] = vector.tolist()
    old = tmp_path / "v1.jsonl"
    old.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    run_cli("import", "--store", tmp_path / "copy", old)
    assert_same_rows(rows_of(source), rows_of(tmp_path / "copy"))


def test_a_damaged_vector_imports_nothing(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    run_cli("export", "--store", source, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "vec" in json.loads(line))
    doc = json.loads(lines[at])
    doc["vec"] = doc["vec"][:-8] + "!!!!!!!!"
    lines[at] = json.dumps(doc)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run_cli("import", "--store", tmp_path / "copy", out, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "vector" in done.stderr
