"""``mindcore bench``: BENCHMARKS.md and PNG plots from pytest-benchmark results (synthetic ones here,
never the real benches), a real run of a tiny bench through ``benches/report.py`` (into a temporary
folder, or with ``--update`` over the committed report), and a clear error where there are no benches
or no evaluation data."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import fresh_clone, run_cli

from mindcore.cli.plots import curves, families, size_of, speedups

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def _bench(group: str, impl: str, median: float) -> dict[str, Any]:
    return {"group": group, "name": f"test_{impl}", "fullname": f"benches/bench_x.py::test_{impl}", "params": None,
            "param": None, "extra_info": {"impl": impl},
            "stats": {"median": median, "mean": median, "min": median, "max": median, "data": [median] * 5}}


def synthetic() -> dict[str, Any]:
    benches = []
    for n, label in ((1_000, "1k"), (10_000, "10k"), (100_000, "100k")):
        benches += [_bench(f"mind: recall n={label}", "mindcore", 1e-6 * n),
                    _bench(f"mind: recall n={label}", "lancedb", 5e-6 * n)]
    benches += [_bench("context: discover bm25 (1k tools)", "mindcore", 1e-4),
                _bench("context: discover bm25 (10k tools)", "mindcore", 1e-3),
                _bench("context: discover bm25 (10k tools)", "rank-bm25", 4e-2),
                _bench("tokens: encode one document", "mindcore", 2e-3),
                _bench("tokens: encode one document", "tiktoken", 6e-3)]
    disk = _bench("ltm: disk under single writes", "mindcore", 1.0)
    disk["extra_info"]["curve"] = {"x": [100, 200, 300], "y": [1.5, 2.5, 1.2], "x_label": "turns stored",
                                   "y_label": "disk / bulk size", "limit": 3.0}
    benches.append(disk)
    return {"machine_info": {"cpu": {"brand_raw": "test cpu"}}, "benchmarks": benches}


def test_families_group_sizes_and_speedups_divide_by_ours() -> None:
    results = synthetic()
    found = families(results)
    assert set(found) == {"mind: recall n=*", "context: discover bm25 (* tools)"}
    assert found["mind: recall n=*"]["lancedb"] == [(1e3, 5e-3), (1e4, 5e-2), (1e5, 0.5)]
    assert found["context: discover bm25 (* tools)"]["rank-bm25"] == [(1e4, 4e-2)]
    ratios = speedups(results)
    assert ratios["tokens"] == {"tokens: encode one document": {"tiktoken": pytest.approx(3.0)}}
    assert ratios["mind"]["mind: recall n=10k"] == {"lancedb": pytest.approx(5.0)}
    assert size_of("topk: single n=1M d=384") == ("topk: single n=* d=384", 1e6)
    assert size_of("ltm: recall top-5 n=500") == ("ltm: recall top-5 n=*", 500.0)
    assert curves(results) == {"ltm: disk under single writes": {"mindcore": {
        "x": [100, 200, 300], "y": [1.5, 2.5, 1.2], "x_label": "turns stored", "y_label": "disk / bulk size",
        "limit": 3.0}}}


def test_bench_from_results_writes_the_report_and_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results = tmp_path / "results.json"
    results.write_text(json.dumps(synthetic()))
    out = tmp_path / "B.md"
    done = run_cli("bench", "--benches", REPO / "benches", "--json", results, "--out", out,
                   "--plots", tmp_path / "plots")
    assert f"wrote {out}" in done.stdout and "wrote 6 plots" in done.stdout
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert pngs == ["curve-ltm-disk-under-single-writes.png",
                    "latency-context-discover-bm25-n-tools.png", "latency-mind-recall-n-n.png",
                    "vs-baselines-context.png", "vs-baselines-mind.png", "vs-baselines-tokens.png"]
    for name in pngs:
        assert (tmp_path / "plots" / name).read_bytes().startswith(PNG)
    report = out.read_text(encoding="utf-8")
    assert "## mind: recall n=10k" in report and "| `lancedb` |" in report and "5.00x" in report
    assert "## Plots" in report and "![latency-mind-recall-n-n](plots/latency-mind-recall-n-n.png)" in report
    assert "curve-ltm-disk-under-single-writes.png" in report and "curve=" not in report  # plotted, not listed


def _tiny_checkout(tmp_path: Path) -> Path:
    """A checkout holding benches/report.py, one tiny bench file and committed BENCHMARKS.md/.json."""
    benches = tmp_path / "checkout" / "benches"
    benches.mkdir(parents=True)
    shutil.copy(REPO / "benches" / "report.py", benches / "report.py")
    (benches / "test_tiny.py").write_text(
        "def test_sum(benchmark):\n"
        "    benchmark.group = 'tiny: sum n=100'\n"
        "    benchmark.extra_info['impl'] = 'mindcore'\n"
        "    benchmark(sum, range(100))\n"
        "def test_sum_big(benchmark):\n"
        "    benchmark.group = 'tiny: sum n=1k'\n"
        "    benchmark.extra_info['impl'] = 'mindcore'\n"
        "    benchmark(sum, range(1000))\n")
    (benches.parent / "BENCHMARKS.md").write_text("committed\n")
    (benches.parent / "BENCHMARKS.json").write_text(json.dumps(synthetic()))
    return benches


def test_bench_runs_into_a_temporary_folder_and_update_replaces_the_committed_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    benches = _tiny_checkout(tmp_path)
    checkout = benches.parent
    (tmp_path / "tmp").mkdir()
    # No evaluation data anywhere: the tiny bench reads none, so it runs without.
    no_data = fresh_clone(tmp_path)
    args = ("bench", "--benches", benches, benches / "test_tiny.py")
    done = run_cli(*args, timeout=300, env={**no_data, "TMPDIR": str(tmp_path / "tmp")})
    where = re.search(r"^writing BENCHMARKS\.md and BENCHMARKS\.json to (.+)$", done.stdout, re.MULTILINE)
    assert where is not None, done.stdout
    out = Path(where.group(1))
    assert out.parent == tmp_path / "tmp" and f"wrote {out / 'BENCHMARKS.md'}" in done.stdout
    assert "## tiny: sum n=100" in (out / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert json.loads((out / "BENCHMARKS.json").read_text())["benchmarks"]
    assert (out / "benchmarks-plots" / "latency-tiny-sum-n-n.png").read_bytes().startswith(PNG)
    assert "bench: 100/100 %" in done.stderr
    # Without --update the committed report and results are never replaced.
    assert (checkout / "BENCHMARKS.md").read_text() == "committed\n"
    assert json.loads((checkout / "BENCHMARKS.json").read_text()) == synthetic()
    refused = run_cli(*args, "--out", checkout / "BENCHMARKS.md", check=False, env=no_data)
    assert refused.returncode == 1 and "give --update to replace it" in refused.stderr, refused.stderr
    # --update merges the run's groups into the committed results and rewrites the report there.
    done = run_cli(*args, "--update", timeout=300, env=no_data)
    assert f"to {checkout}\n" in done.stdout
    report = (checkout / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert "## tiny: sum n=100" in report and "## mind: recall n=10k" in report
    assert (checkout / "benchmarks-plots" / "latency-tiny-sum-n-n.png").read_bytes().startswith(PNG)


def test_bench_without_data_says_how_to_provide_it(tmp_path: Path) -> None:
    """Before running anything: the benches that read the data are named."""
    done = run_cli("bench", "--benches", REPO / "benches", check=False, env=fresh_clone(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("mindcore bench: bench_"), line
    assert "bench_bm25.py" in line and "evaluation data not found" in line, line
    assert "give --data DIR or set MINDCORE_DATA_DIR" in line, line
    one = run_cli("bench", "--benches", REPO / "benches", REPO / "benches" / "bench_locomo.py", check=False,
                  env=fresh_clone(tmp_path / "again"))
    assert one.returncode == 1 and one.stderr.startswith("mindcore bench: bench_locomo.py: evaluation data not found")


def test_bench_without_benches_says_where_they_live(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mindcore", "bench"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 1
    assert f"no benches folder in {tmp_path}" in done.stderr and "--benches DIR" in done.stderr
