"""The checked-in stubs (`mindcore/_core.pyi`) must describe the built native module exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import mindcore._core

ALLOWLIST = Path(__file__).with_name("stubtest_allowlist.txt")


def test_core_stubs_match_native_module(tmp_path: Path) -> None:
    # The stub and the built module checked as a top-level module `_core` in a folder of their own:
    # the same comparison as `stubtest mindcore._core`, without mypy analysing the whole package
    # above it (a tenth of the time).
    built = Path(mindcore._core.__file__)
    shutil.copy(built, tmp_path / built.name)
    shutil.copy(built.with_name("_core.pyi"), tmp_path / "_core.pyi")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "_core", "--concise", "--allowlist", str(ALLOWLIST)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "MYPYPATH": str(tmp_path)},
    )
    assert result.returncode == 0, f"stubtest found mismatches:\n{result.stdout}\n{result.stderr}"


def test_import_is_fast_and_lazy() -> None:
    """`import mindcore` must not pull in LanceDB (it costs ~1.5 s); the store imports it on first use."""
    code = "import sys, mindcore, mindcore.kernels; print('lancedb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
