"""The checked-in stubs (`mindcore/_core.pyi`) must describe the built native module exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ALLOWLIST = Path(__file__).with_name("stubtest_allowlist.txt")


def test_core_stubs_match_native_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "mindcore._core", "--concise", "--allowlist", str(ALLOWLIST)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"stubtest found mismatches:\n{result.stdout}\n{result.stderr}"


def test_import_is_fast_and_lazy() -> None:
    """`import mindcore` must not pull in LanceDB (it costs ~1.5 s); the store imports it on first use."""
    code = "import sys, mindcore, mindcore.kernels; print('lancedb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
