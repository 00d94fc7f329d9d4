"""Run every bench (release build) and write BENCHMARKS.md: one table per group, each row an
implementation, with its speed relative to mindcore measured in the same run.

    python benches/report.py                # full sizes
    MINDCORE_BENCH_QUICK=1 python benches/report.py --out /tmp/B.md   # smoke run
    python benches/report.py --update benches/bench_mind.py   # re-measure some files, keep the rest

The raw pytest-benchmark results are kept beside the report (``BENCHMARKS.json``) so that
``--update`` can replace the groups of the files it re-runs and keep every other group.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _p99(bench: dict[str, Any]) -> float | None:
    data = bench["stats"].get("data")
    if not data or len(data) < 2:
        return None
    return statistics.quantiles(data, n=100, method="inclusive")[98]


def _per_item(bench: dict[str, Any]) -> float:
    """The median time per item when the case counts items (rows of one group may handle different
    numbers of them, e.g. a batch of every query against a loop over a sample), else the median."""
    median: float = bench["stats"]["median"]
    return median / bench.get("extra_info", {}).get("items", 1)


def _row(bench: dict[str, Any], reference: float | None) -> str:
    stats, extra = bench["stats"], bench.get("extra_info", {})
    median = stats["median"]
    p99 = _p99(bench)
    cells = [
        f"`{extra.get('impl', bench['name'])}`",
        _fmt_time(median),
        _fmt_time(p99) if p99 is not None else "",
    ]
    throughput = []
    if "bytes" in extra:
        throughput.append(f"{extra['bytes'] / median / 1e9:.2f} GB/s")
    if "items" in extra:
        throughput.append(f"{extra['items'] / median:,.0f} items/s")
    cells.append(", ".join(throughput))
    if reference is None:
        cells.append("")
    elif extra.get("impl") == "mindcore":
        cells.append("1.00x")
    else:
        cells.append(f"{_per_item(bench) / reference:.2f}x")
    notes = {k: v for k, v in extra.items() if k not in ("impl", "bytes", "items", "curve")}  # a curve is plotted
    cells.append(", ".join(f"{k}={v}" for k, v in notes.items()))
    return "| " + " | ".join(cells) + " |"


def render(results: dict[str, Any]) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for bench in results["benchmarks"]:
        groups[bench.get("group") or bench["name"]].append(bench)
    machine = results.get("machine_info", {})
    lines = [
        "# Benchmarks",
        "",
        "Written by `python benches/report.py` (release build, pytest-benchmark). Every table is one case; each row",
        "is an implementation measured in the same run. The last numeric column is the baseline's median divided",
        "by mindcore's, per item where the case counts items (above 1: mindcore is faster).",
        "",
        f"Machine: {machine.get('cpu', {}).get('brand_raw', platform.processor())}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
    ]
    for group in sorted(groups):
        benches = sorted(groups[group], key=lambda b: b["stats"]["median"])
        mine = [b for b in benches if b.get("extra_info", {}).get("impl") == "mindcore"]
        reference = _per_item(mine[0]) if mine else None
        lines += [
            f"## {group}",
            "",
            "| impl | median | p99 | throughput | time vs mindcore | notes |",
            "|---|---|---|---|---|---|",
        ]
        lines += [_row(bench, reference) for bench in benches]
        lines.append("")
    notes = ROOT / "benches" / "NOTES.md"  # hand-written notes on how settings were chosen
    if notes.exists():
        lines.append(notes.read_text(encoding="utf-8").rstrip())
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--json", help="render an existing pytest-benchmark JSON instead of running")
    parser.add_argument("--update", action="store_true",
                        help="re-run only FILES and merge their groups into the kept results")
    parser.add_argument("files", nargs="*", help="bench files (default: all of benches/)")
    args = parser.parse_args()
    kept = Path(args.out).with_suffix(".json")
    if args.json:
        results = json.loads(Path(args.json).read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.json"
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                *(args.files or ["benches"]),
                "--benchmark-only",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--benchmark-json={out}",
                "--override-ini=testpaths=benches",
            ]
            code = subprocess.call(cmd, cwd=ROOT)
            if code != 0 or not out.exists():
                print(f"benchmarks failed (exit {code})", file=sys.stderr)
                return code or 1
            results = json.loads(out.read_text())
        if args.update and kept.exists():
            old = json.loads(kept.read_text())
            fresh = {b.get("group") or b["name"] for b in results["benchmarks"]}
            results["benchmarks"] = [b for b in old["benchmarks"] if (b.get("group") or b["name"]) not in fresh] + results["benchmarks"]
        kept.write_text(json.dumps(results))
    Path(args.out).write_text(render(results))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
