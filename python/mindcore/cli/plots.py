"""PNG plots of pytest-benchmark results (``BENCHMARKS.json``), drawn with matplotlib (the ``plots``
extra: ``pip install 'mindcore[plots]'``).

- **Latency against size**: bench groups that differ only in their size (``mind: recall n=100``,
  ``n=1k``, ``n=10k``; ``context: discover bm25 (1k tools)``, ``(10k tools)``; ``working memory:
  update+render 1KB``, ``20KB``) form one family; each family gets a log-log plot of the median
  time of every implementation against the size, mindcore drawn bold, each baseline beside it.
- **Ours against each baseline**: per area (the group name before ``:``, e.g. ``topk``, ``store``),
  each baseline's median divided by mindcore's in every group measuring both (above 1: mindcore is
  faster), on a log scale.
- **Curves**: a bench that samples a quantity as it runs (disk use as turns are stored) records it
  in its ``extra_info`` under ``curve`` (:class:`Curve`'s keys); each group with curves gets one
  plot of them, a row's ``limit`` drawn as a dashed line.
"""

from __future__ import annotations

import importlib
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from mindcore.errors import MindcoreError

__all__ = ["CURVE_KEY", "Curve", "Family", "curves", "families", "plot_all", "size_of", "speedups"]

OURS = "mindcore"
_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "KB": 1e3, "MB": 1e6, "KiB": 1024.0, "MiB": 1024.0**2}
# A size in a group name: "n=10k", "n=100000", "(1k tools)", "20KB", "10.0 MiB".
_SIZE = re.compile(r"(?P<pre>\bn=|\()?(?P<num>\d+(?:\.\d+)?)(?P<unit>KiB|MiB|KB|MB|[kKM])?(?=\b|\s|$)"
                   r"(?P<post> (?:tools|messages|turns)\))?")

Family = dict[str, list[tuple[float, float]]]  # impl -> [(size, median seconds)], sorted by size

#: The ``extra_info`` key a bench records a curve under (a mapping with :class:`Curve`'s keys).
CURVE_KEY = "curve"


class Curve(TypedDict, total=False):
    """A quantity sampled as a bench ran: ``x`` and ``y`` (equal lengths), their axis labels, and
    optionally ``limit``, a bound on ``y`` the plot draws (a target)."""

    x: list[float]
    y: list[float]
    x_label: str
    y_label: str
    limit: float


def size_of(group: str) -> tuple[str, float] | None:
    """``(family, size)`` for a group name with a size in it, the size replaced by ``*`` in the family.

    >>> size_of("mind: recall n=10k")
    ('mind: recall n=*', 10000.0)
    >>> size_of("context: discover bm25 (1k tools)")
    ('context: discover bm25 (* tools)', 1000.0)
    >>> size_of("working memory: update+render 20KB")
    ('working memory: update+render *KB', 20000.0)
    >>> size_of("tokens: encode one document o200k_base") is None
    True
    """
    for m in _SIZE.finditer(group):
        pre, unit, post = m.group("pre") or "", m.group("unit") or "", m.group("post") or ""
        if not (pre == "n=" or (pre == "(" and post) or unit in ("KB", "MB", "KiB", "MiB")):
            continue
        value = float(m.group("num")) * _SCALE[unit]
        starred = pre + "*" + (unit if unit in ("KB", "MB", "KiB", "MiB") else "") + post
        return group[: m.start()] + starred + group[m.end():], value
    return None


def _impl(bench: Mapping[str, Any]) -> str:
    return str(bench.get("extra_info", {}).get("impl") or bench["name"])


def families(results: Mapping[str, Any]) -> dict[str, Family]:
    """Every family of groups measured at two sizes or more."""
    found: dict[str, dict[str, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    for bench in results["benchmarks"]:
        sized = size_of(bench.get("group") or bench["name"])
        if sized is not None:
            family, size = sized
            found[family][_impl(bench)][size] = float(bench["stats"]["median"])
    out: dict[str, Family] = {}
    for family, impls in sorted(found.items()):
        sizes = {s for points in impls.values() for s in points}
        if len(sizes) >= 2:
            out[family] = {impl: sorted(points.items()) for impl, points in sorted(impls.items())}
    return out


def speedups(results: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """area -> group -> baseline -> baseline median / mindcore median, for groups measuring both."""
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in results["benchmarks"]:
        groups[bench.get("group") or bench["name"]][_impl(bench)] = float(bench["stats"]["median"])
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for group, medians in sorted(groups.items()):
        ours = medians.get(OURS)
        others = {impl: t / ours for impl, t in sorted(medians.items()) if impl != OURS and ours}
        if others:
            out[group.split(":", 1)[0].strip()][group] = others
    return dict(out)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text.replace("*", "N")).strip("-").lower()


def _pyplot() -> Any:
    # Imported by name: matplotlib is an optional extra, absent from most installs.
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        raise MindcoreError("plots need matplotlib: pip install 'mindcore[plots]'") from None
    matplotlib.use("Agg")  # files only, no display
    return importlib.import_module("matplotlib.pyplot")


def plot_family(family: str, data: Family, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for impl, points in data.items():
        xs, ys = zip(*points, strict=True)
        ours = impl == OURS
        ax.plot(xs, [y * 1e3 for y in ys], marker="o", linewidth=2.5 if ours else 1.2, zorder=3 if ours else 2,
                label=impl, color="black" if ours else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("size (" + family.split(":", 1)[-1].strip() + ")")
    ax.set_ylabel("median time (ms)")
    ax.set_title(family)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_speedups(area: str, data: dict[str, dict[str, float]], path: Path) -> Path:
    plt = _pyplot()
    labels, values = [], []
    for group, ratios in data.items():
        for impl, ratio in ratios.items():
            labels.append(f"{group.split(':', 1)[-1].strip()} — {impl}")
            values.append(ratio)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.32 * len(labels)))
    ax.barh(range(len(values)), values, color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("baseline time / mindcore time (above 1: mindcore is faster)")
    ax.set_title(f"{area}: mindcore against each baseline")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def curves(results: Mapping[str, Any]) -> dict[str, dict[str, Curve]]:
    """group -> implementation -> the curve its row recorded (rows without one left out).

    >>> row = {"name": "t", "group": "ltm: disk", "extra_info": {"impl": "mindcore", "curve": {"x": [1], "y": [2]}}}
    >>> curves({"benchmarks": [row, {"name": "u", "group": "ltm: disk", "extra_info": {}}]})
    {'ltm: disk': {'mindcore': {'x': [1], 'y': [2]}}}
    """
    out: dict[str, dict[str, Curve]] = defaultdict(dict)
    for bench in results.get("benchmarks", []):
        curve = bench.get("extra_info", {}).get(CURVE_KEY)
        if isinstance(curve, Mapping) and curve.get("x") and len(curve["x"]) == len(curve.get("y") or ()):
            out[bench.get("group") or bench["name"]][_impl(bench)] = Curve(**curve)  # type: ignore[typeddict-item]
    return dict(out)


def plot_curves(group: str, data: Mapping[str, Curve], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    first = next(iter(data.values()))
    for impl, curve in data.items():
        ours = impl == OURS
        ax.plot(curve["x"], curve["y"], linewidth=2.5 if ours else 1.2, zorder=3 if ours else 2, label=impl,
                color="black" if ours else None)
        if "limit" in curve:
            ax.axhline(curve["limit"], linestyle="--", color="tab:red", linewidth=1, label=f"{impl}: limit")
    ax.set_xlabel(first.get("x_label", "x"))
    ax.set_ylabel(first.get("y_label", "y"))
    ax.set_title(group)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(results: Mapping[str, Any], folder: Path) -> list[Path]:
    """Every latency-against-size, speed-up and curve plot of ``results`` as PNG files in ``folder``."""
    _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = [plot_family(family, data, folder / f"latency-{_slug(family)}.png")
               for family, data in families(results).items()]
    written += [plot_speedups(area, data, folder / f"vs-baselines-{_slug(area)}.png")
                for area, data in speedups(results).items()]
    written += [plot_curves(group, data, folder / f"curve-{_slug(group)}.png")
                for group, data in curves(results).items()]
    return written
