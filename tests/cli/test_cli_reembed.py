"""``mindcore reembed``: every vector rewritten with the model asked for, progress lines, a no-op rerun,
and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _cli_helpers import populate, run_cli

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm.types import embedded_text
from mindcore.store import EmbedderMismatchError, EmbeddingInfo


def test_reembed_rewrites_every_vector_and_a_rerun_does_nothing(tmp_path: Path) -> None:
    path = populate(tmp_path / "store")
    done = run_cli("reembed", "--store", path, "--embedder", "hash", "--dim", "128", "--seed", "3",
                   "--chunk-size", "2")
    new = HashEmbedder(128, seed=3)
    assert "re-embedded 5 rows of 2 tables" in done.stdout and "ltm_memories: 3 rows" in done.stdout
    # not a terminal: plain progress lines on stderr, one bar per phase and table
    lines = done.stderr.strip().splitlines()
    assert "copy ltm_memories: 3/3 rows" in lines and lines[-1] == "switch: 2/2 tables"
    store = mindcore.open(path, read_only=True)
    assert store.embedding == EmbeddingInfo(new.model_id, 128)
    for r in store.open_table("ltm_memories").scan(mindcore.store.ALL_NAMESPACES):
        assert np.array_equal(r["vector"], new.embed([embedded_text(r["text"], r["context"])])[0])
    ltm = mindcore.LongTermMemory(mindcore.open(path), user_id="user-7", namespace="chat", embedder=new)
    assert ltm.recall("Lives in Lyon", touch=False)[0].text == "Lives in Lyon"
    with pytest.raises(EmbedderMismatchError):
        mindcore.LongTermMemory(mindcore.open(path), user_id="user-7", namespace="chat", embedder=HashEmbedder())
    again = run_cli("reembed", "--store", path, "--embedder", "hash", "--dim", "128", "--seed", "3")
    assert "nothing to re-embed" in again.stdout


def test_reembed_refuses_a_table_of_unknown_text_and_bad_options(tmp_path: Path) -> None:
    path = populate(tmp_path / "store")
    store = mindcore.open(path, embedder=HashEmbedder())
    notes = store.table("notes", {"body": pa.string()}, vectors=True)
    notes.upsert("me", [{"id": "n1", "body": "buy milk", "vector": HashEmbedder().embed(["buy milk"])[0]}])
    store.close()
    refused = run_cli("reembed", "--store", path, "--embedder", "hash", "--dim", "64", check=False)
    assert refused.returncode == 1 and "['notes']" in refused.stderr and "nothing was written" in refused.stderr
    bad = run_cli("reembed", "--store", path, "--embedder", "hash", "--text", "notes", check=False)
    assert bad.returncode == 1 and "TABLE=COLUMN" in bad.stderr
    bad_dim = run_cli("reembed", "--store", path, "--embedder", "hash", "--dim", "3", check=False)
    assert bad_dim.returncode == 1 and "--dim" in bad_dim.stderr
    done = run_cli("reembed", "--store", path, "--embedder", "hash", "--dim", "64", "--text", "notes=body")
    assert "notes: 1 rows" in done.stdout
