"""A child process for tests/batch/test_reembed.py: re-embeds a store slowly (the embedder sleeps
before each call) and prints each progress step as a JSON line, so the test can kill it mid-way."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mindcore.batch import ReembedProgress, reembed
from mindcore.embed import HashEmbedder


class SlowHash:
    """The hashing embedder (same model id, same vectors) that sleeps ``delay`` seconds per call."""

    def __init__(self, dim: int, seed: int, delay: float) -> None:
        self._inner = HashEmbedder(dim, seed=seed)
        self.dim = dim
        self.model_id = self._inner.model_id
        self.delay = delay

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        time.sleep(self.delay)
        return self._inner.embed(texts)

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.embed(texts)


def main() -> None:
    path, dim, seed, delay, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])

    def progress(p: ReembedProgress) -> None:
        print(json.dumps([p.phase, p.table, p.done, p.total]), flush=True)

    report = reembed(path, embedder=SlowHash(dim, seed, delay), chunk_size=chunk, progress=progress,
                     texts={"notes": "text"})
    print(json.dumps(["done", report.rows]), flush=True)


if __name__ == "__main__":
    main()
