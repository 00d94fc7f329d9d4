"""Conventions every bench shares (read by ``report.py``): the group a case belongs to, the
implementation it measures, and how a size is written in a group name. p50/p99 need no
bookkeeping here: the report computes them from every round's time."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np


def finish(benchmark: Any, impl: str, group: str, items: int | None = None) -> None:
    """Label a benchmark: its table (``group``), its row (``impl``) and, for throughput, the
    items one call handles."""
    benchmark.group = group + forced_path()
    benchmark.extra_info["impl"] = impl
    if items is not None:
        benchmark.extra_info["items"] = items


def forced_path() -> str:
    """`` [avx2 path]`` when ``MINDCORE_SIMD`` caps the kernels below what this CPU has, so a run
    on the capped path gets tables of its own beside the host's best path (``report.py --update``
    keeps both)."""
    if not os.environ.get("MINDCORE_SIMD"):
        return ""
    from mindcore.kernels import simd_path

    return f" [{simd_path()} path]"


def size_label(n: int) -> str:
    """``100``, ``10k``, ``1M``: a size as group names write it."""
    if n >= 1_000_000:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 else str(n)


def cpu_model() -> str:
    """The CPU's model name (``lscpu``), for the bench report: kernels pick their path by CPU."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown"


class PrecomputedEmbedder:
    """Another embedder's vectors for a fixed set of texts, computed once in batches: quality
    benches embed every text of a data set up front, then each retriever under test looks them up."""

    def __init__(self, inner: Any, texts: Sequence[str]) -> None:
        self.dim = inner.dim
        self.model_id = inner.model_id
        unique = list(dict.fromkeys(texts))
        self._table = dict(zip(unique, inner.embed(unique), strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._table[t] for t in texts])


class LookupEmbedder:
    """Random unit vectors (384 dimensions, seeded) made up front for a fixed set of texts: the write
    benches exclude embedding cost from their timings."""

    dim = 384
    model_id = "bench-lookup-384"

    def __init__(self, texts: Sequence[str]) -> None:
        unique = list(dict.fromkeys(texts))
        v = np.random.default_rng(0).standard_normal((len(unique), self.dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        self._table = dict(zip(unique, v, strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._table[t] for t in texts])
