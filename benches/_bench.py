"""Conventions every bench shares (read by ``report.py``): the group a case belongs to, the
implementation it measures, and how a size is written in a group name. p50/p99 need no
bookkeeping here: the report computes them from every round's time."""

from __future__ import annotations

from typing import Any


def finish(benchmark: Any, impl: str, group: str, items: int | None = None) -> None:
    """Label a benchmark: its table (``group``), its row (``impl``) and, for throughput, the
    items one call handles."""
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    if items is not None:
        benchmark.extra_info["items"] = items


def size_label(n: int) -> str:
    """``100``, ``10k``, ``1M``: a size as group names write it."""
    if n >= 1_000_000:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 else str(n)
