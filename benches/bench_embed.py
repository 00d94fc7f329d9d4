"""Embedding throughput on real conversation turns (LoCoMo): the default MiniLM embedder on one and
two onnxruntime threads (batches of 32), and the Rust hashing embedder for comparison.

    pytest benches/bench_embed.py --benchmark-only -q
    MINDCORE_BENCH_QUICK=1 pytest benches/bench_embed.py --benchmark-only -q   # seconds
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from mindcore.embed import HashEmbedder, MiniLMEmbedder
from mindcore.eval import data_dir

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
N_SENTENCES = 64 if QUICK else 512
BATCH = 32
GROUP = "embed: sentences"


@cache
def sentences() -> list[str]:
    path = data_dir() / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip(f"LoCoMo data not found at {path}")
    turns = [
        turn["text"]
        for conversation in json.loads(path.read_text())
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return turns[:N_SENTENCES]  # in conversation order: real length mix, real duplicates


@cache
def reference() -> NDArray[np.float32]:
    return MiniLMEmbedder(threads=1, batch_size=BATCH, cache=False).embed(sentences())


IMPLS: dict[str, Callable[[], Any]] = {
    "minilm-1t": lambda: MiniLMEmbedder(threads=1, batch_size=BATCH, cache=False),
    "minilm-2t": lambda: MiniLMEmbedder(threads=2, batch_size=BATCH, cache=False),
    "hash": lambda: HashEmbedder(dim=384),
}


@pytest.mark.parametrize("impl", list(IMPLS))
def test_embed_sentences(benchmark: Any, impl: str) -> None:
    texts = sentences()
    embedder = IMPLS[impl]()
    out = embedder.embed(texts)  # warm-up, and the result checked below (outside the timed calls)
    assert out.shape == (len(texts), 384) and out.dtype == np.float32
    if impl.startswith("minilm"):
        np.testing.assert_allclose(out, reference(), atol=1e-6)
    else:
        norms = np.linalg.norm(out, axis=1)
        assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["items"] = len(texts)
    benchmark(embedder.embed, texts)
