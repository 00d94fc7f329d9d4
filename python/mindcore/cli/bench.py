"""Run the benches (pytest-benchmark, every implementation and its baselines in the same run) and write
BENCHMARKS.md with one table per case, the raw results beside it (BENCHMARKS.json), and PNG plots:
latency against size for each kernel and capability, and mindcore against each baseline.

The benches live in a source checkout of mindcore (``benches/``), not in the installed package:
``--benches`` names that folder (default: ``./benches`` when it exists). They need the ``bench``
extra (``pip install 'mindcore[bench]'``: the baselines), the evaluation data for the benches that read
it (``--data``, default: ``$MINDCORE_DATA_DIR``, else ``shared/data`` beside the checkout; the kernel
and store benches run without it) and, for the plots, the ``plots`` extra (matplotlib). ``--json`` draws the report and plots from existing results without running anything.

The report goes to a new temporary folder (printed) unless ``--update`` is given: only then are the
checkout's committed BENCHMARKS.md and BENCHMARKS.json replaced. A full run takes a long while on a
small machine: ``--quick`` runs smaller sizes, and naming bench files runs only those (with
``--update``, their groups replace the same groups of the kept results). The report and results are
written only when the run completes: Ctrl-C stops the benches and leaves the previous BENCHMARKS.md
and BENCHMARKS.json as they were.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from mindcore.cli._common import Progress
from mindcore.errors import MindcoreError

HELP = "run the benches, write BENCHMARKS.md and PNG plots"
EXAMPLE = "mindcore bench --benches ./benches --quick benches/bench_tokens.py"

_PERCENT = re.compile(r"\[\s*(\d+)%\]\s*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benches", default=None, metavar="DIR",
                        help="the benches folder of a mindcore checkout (default: ./benches when present)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="the report to write (default: BENCHMARKS.md in a new temporary folder; with "
                             "--update, the committed one beside the benches folder)")
    parser.add_argument("--plots", default=None, metavar="DIR",
                        help="where the PNG plots go (default: benchmarks-plots/ beside the report)")
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="draw the report and plots from these pytest-benchmark results; run nothing")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (MINDCORE_BENCH_QUICK=1)")
    parser.add_argument("--update", action="store_true",
                        help="write the committed BENCHMARKS.md and BENCHMARKS.json, merging the groups of FILES "
                             "into the kept results")
    parser.add_argument("--data", default=None, metavar="DIR", help="the evaluation data folder the benches read")
    parser.add_argument("files", nargs="*", help="bench files to run (default: every bench)")


def benches_folder(given: str | None) -> Path:
    """The benches folder: ``given``, else ``./benches``; a clear error when there is none."""
    folder = Path(given) if given is not None else Path("benches")
    if not (folder / "report.py").is_file():
        where = f"--benches {given}" if given is not None else f"no benches folder in {Path.cwd()}"
        raise MindcoreError(
            f"{where}: the benches live in a source checkout of mindcore (benches/report.py), not in the "
            "installed package; run this from a checkout or give --benches DIR"
        )
    return folder.resolve()


def data_folder(given: str | None, benches: list[Path]) -> Path | None:
    """The evaluation data the benches read: ``given``, else :func:`mindcore.eval.data_dir`. With none
    found, ``None`` when no bench of ``benches`` reads it, else one clear error before anything runs
    (the bench would fail on it)."""
    from mindcore.eval import data_dir

    if given is None:
        try:
            return data_dir(option="--data DIR")
        except MindcoreError as missing:
            readers = [b.name for b in benches if _reads_data(b)]
            if readers:
                raise MindcoreError(f"{', '.join(readers[:3])}{' ...' if len(readers) > 3 else ''}: "
                                    f"{missing}") from None
            return None
    if not Path(given).is_dir():
        raise MindcoreError(f"--data {given}: not a folder")
    return Path(given).resolve()


def _reads_data(bench: Path) -> bool:
    """Whether a bench file reads the evaluation data (every such bench finds it with ``data_dir()``)."""
    return "data_dir(" in bench.read_text(encoding="utf-8")


def bench_files(folder: Path, files: list[str]) -> list[Path]:
    """The bench files a run covers: those named, else every ``bench_*.py`` of the folder."""
    if files:
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise MindcoreError(f"{missing[0]}: no such bench file")
        return [Path(f) for f in files]
    return sorted(folder.glob("bench_*.py"))


def report_path(args: argparse.Namespace, folder: Path | None) -> Path:
    """Where the report goes: ``--out``, else with ``--update`` the committed BENCHMARKS.md beside the
    benches folder, else BENCHMARKS.md in a new temporary folder. Without ``--update`` the committed
    report is never the target, so a trial run cannot replace the measured figures."""
    committed = folder.parent / "BENCHMARKS.md" if folder is not None else None
    if args.out is not None:
        out = Path(args.out).resolve()
        if out == committed and not args.update:
            raise MindcoreError(f"--out {args.out} is the committed report: give --update to replace it")
        return out
    if args.update and committed is not None:
        return committed
    return Path(tempfile.mkdtemp(prefix="mindcore-bench-")) / "BENCHMARKS.md"


def _run_report(report: Path, out: Path, data: Path | None, args: argparse.Namespace) -> int:
    """benches/report.py in a subprocess, its pytest progress turned into a progress bar."""
    from mindcore.eval import DATA_ENV

    cmd = [sys.executable, str(report), "--out", str(out), *(["--update"] if args.update else []),
           *[str(Path(f).resolve()) for f in args.files]]
    env = {**os.environ, **({DATA_ENV: str(data)} if data is not None else {}),
           **({"MINDCORE_BENCH_QUICK": "1"} if args.quick else {})}
    with Progress("bench", total=100, unit="%") as bar, subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        assert proc.stdout is not None
        tail: list[str] = []
        try:
            for line in proc.stdout:
                tail = [*tail[-40:], line.rstrip("\n")]
                m = _PERCENT.search(line)
                if m and int(m.group(1)) > bar.done:
                    bar.update(int(m.group(1)) - bar.done)
            code = proc.wait()
        except KeyboardInterrupt:
            proc.wait()  # the benches got the same Ctrl-C; report.py writes nothing then
            raise
    if code != 0:
        print("\n".join(tail), file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from mindcore.cli.plots import plot_all

    if args.json is not None:
        results_path = Path(args.json)
        if not results_path.is_file():
            raise MindcoreError(f"--json {args.json}: no such file")
        folder = benches_folder(args.benches) if args.benches is not None or Path("benches/report.py").is_file() \
            else None
        out = report_path(args, folder)
        if folder is not None:
            code = subprocess.call([sys.executable, str(folder / "report.py"), "--json", str(results_path),
                                    "--out", str(out)], stdout=subprocess.DEVNULL)
            if code != 0:
                raise MindcoreError(f"{folder / 'report.py'} failed (exit {code})")
        results = json.loads(results_path.read_text(encoding="utf-8"))
    else:
        folder = benches_folder(args.benches)
        data = data_folder(args.data, bench_files(folder, args.files))
        out = report_path(args, folder)
        print(f"writing {out.name} and {out.with_suffix('.json').name} to {out.parent}", flush=True)
        code = _run_report(folder / "report.py", out, data, args)
        if code != 0:
            print(f"mindcore bench: the benches failed (exit {code}); {out} is unchanged", file=sys.stderr)
            return code
        results = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    plots = Path(args.plots) if args.plots is not None else out.parent / "benchmarks-plots"
    files = plot_all(results, plots)
    if out.exists():
        _link_plots(out, files)
    print(f"wrote {out}" if out.exists() else "no report written (no benches folder to render it)")
    print(f"wrote {len(files)} plots to {plots}")
    return 0


def _link_plots(report: Path, files: list[Path]) -> None:
    """Append a Plots section to the report, linking each PNG relative to it."""
    text = report.read_text(encoding="utf-8").split("\n## Plots\n", 1)[0].rstrip()
    lines = ["", "", "## Plots", ""]
    for f in files:
        rel = os.path.relpath(f, report.parent)
        lines.append(f"![{f.stem}]({rel})")
    report.write_text(text + "\n".join(lines) + "\n", encoding="utf-8")
