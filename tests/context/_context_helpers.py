"""Test doubles and oracles shared by the context tests."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np


class TableEmbedder:
    """Embeds the texts of a fixed table to its vectors (unit-normalised); other texts to a vector
    of their own made from a hash, so a test can say exactly what every cosine is."""

    def __init__(self, table: dict[str, Sequence[float]], dim: int = 4) -> None:
        self.table = table
        self.dim = dim
        self.model_id = f"table-{dim}-{id(self)}"
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for t in texts:
            v = np.asarray(self.table[t], dtype=np.float64) if t in self.table else _hashed(t, self.dim)
            n = np.linalg.norm(v)
            rows.append(v / n if n else v)
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def _hashed(text: str, dim: int) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(text)) % (2**32))
    return rng.normal(size=dim)


def tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^0-9a-z]+", text.lower()) if t]


def bm25_oracle(query: str, documents: Sequence[str], k1: float = 0.9, b: float = 0.4) -> list[float]:
    """BM25 written out as the agentified server does it, min-max normalised (all equal: 0)."""
    docs = [tokens(d) for d in documents]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    raw = []
    for d in docs:
        tf = Counter(d)
        score = 0.0
        for q in tokens(query):
            idf = math.log((n - df[q] + 0.5) / (df[q] + 0.5) + 1.0)
            score += idf * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(d) / avgdl))
        raw.append(score)
    lo, hi = min(raw), max(raw)
    return [(s - lo) / (hi - lo) if hi > lo else 0.0 for s in raw]
