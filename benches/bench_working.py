"""Working memory: one ``update`` + ``render`` round trip on the embedded store, for a 1 KB and a
20 KB state (target <= 5 ms p50).

``mindcore-bulk-10``: the bulk path beside it, one ``update`` carrying ten changes (items =
changes), then ``render``.

Baseline ``json-file``: the least a persistent scratchpad can do: read a JSON file, deep-merge
the patch, validate it with the same JSON Schema, write it atomically (temp file + rename), render.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _bench import finish

import mindcore
from mindcore.working import WorkingMemory
from mindcore.working.merge import deep_merge

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
SIZES = {"1KB": 1_000, "20KB": 20_000}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"goal": {"type": "string"}, "notes": {"type": "object"}, "step": {"type": "integer"}},
}


def _state(size: int) -> dict[str, Any]:
    notes = {f"note{i:04d}": "lorem ipsum dolor sit amet " * 2 for i in range(size // 70)}
    return {"goal": "ship the release", "notes": notes, "step": 0}


class JsonFileScratchpad:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.validator = jsonschema.Draft202012Validator(SCHEMA)

    def update(self, patch: dict[str, Any]) -> dict[str, Any]:
        current = json.loads(self.path.read_text()) if self.path.exists() else {}
        new = deep_merge(current, patch)
        self.validator.validate(new)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(new))
        os.replace(tmp, self.path)
        return new

    def render(self) -> str:
        return "<working_memory>\n" + json.dumps(json.loads(self.path.read_text()), indent=2) + "\n</working_memory>"


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("impl", ["mindcore", "mindcore-bulk-10", "json-file"])
def test_update_render(benchmark: Any, tmp_path: Path, size: str, impl: str) -> None:
    state = _state(SIZES[size])
    target: Any
    if impl.startswith("mindcore"):
        target = WorkingMemory(mindcore.open(tmp_path / "store"), thread_id="t", schema=SCHEMA, max_tokens=100_000)
    else:
        target = JsonFileScratchpad(tmp_path / "state.json")
    target.update(state)
    assert 0.8 * SIZES[size] < len(json.dumps(state)) < 1.3 * SIZES[size]
    step = iter(range(1, 10**9))

    changes = 10 if impl == "mindcore-bulk-10" else 1

    def round_trip() -> str:
        i = next(step)
        patch: dict[str, Any] = {"step": i}
        if changes > 1:
            patch["notes"] = {f"note{k:04d}": f"revised {i}" for k in range(changes - 1)}
        target.update(patch)
        return str(target.render())

    finish(benchmark, impl, f"working memory: update+render {size}", changes)
    rounds = 30 if QUICK else 300
    out = benchmark.pedantic(round_trip, rounds=rounds, warmup_rounds=5)
    assert '"step":' in out and "ship the release" in out
