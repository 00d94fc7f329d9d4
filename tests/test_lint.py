"""The code base stays `ruff` and `mypy --strict` clean (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_clean() -> None:
    result = _run("ruff", "check", "python", "tests", "benches")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = _run("mypy", "python/mindcore")
    assert result.returncode == 0, result.stdout + result.stderr
