"""Every Python block in README.md runs, offline, as written, prints what it says it prints, and
prints nothing on stderr (no warning or log line from mindcore, Lance or LanceDB).

Each block runs in a fresh temporary working directory (``mindcore.open()`` with no argument
puts the store there) in a subprocess, so one block's state cannot help another. A block followed
by an ``output`` block must print exactly that text. Then the README is run the way a reader runs
it, every block in order in one folder, twice: the stores persist between the passes, and the second
pass prints what the first did.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import user_env

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def _python_blocks() -> list[tuple[str, str | None]]:
    """(code, expected output or None) for each ```python block of the README."""
    blocks = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(README.read_text(encoding="utf-8"))]
    out: list[tuple[str, str | None]] = []
    for i, (lang, body) in enumerate(blocks):
        if lang != "python":
            continue
        expected = blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "output" else None
        out.append((body, expected))
    return out


BLOCKS = _python_blocks()


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 2


def _run(code: str, folder: Path) -> str:
    """What ``code`` prints, run in a subprocess in ``folder`` (which must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300, env=user_env(),
    )
    assert done.returncode == 0, f"README block failed:\n{code}\n--- stderr ---\n{done.stderr}"
    assert done.stderr == "", f"README block printed on stderr:\n{code}\n--- stderr ---\n{done.stderr}"
    return done.stdout.strip()


@pytest.mark.parametrize(("code", "expected"), BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code: str, expected: str | None, tmp_path: Path) -> None:
    out = _run(code, tmp_path)
    assert out, "a README block should show its result"
    if expected is not None:
        assert out == expected.strip()


def test_readme_rerun_in_one_folder_prints_the_same(tmp_path: Path) -> None:
    first = [_run(code, tmp_path) for code, _ in BLOCKS]
    # The blocks share their stores here ("agent-store"), and still print what the README shows.
    shown = [out if expected is None else expected.strip() for out, (_, expected) in zip(first, BLOCKS, strict=True)]
    assert first == shown
    again = [_run(code, tmp_path) for code, _ in BLOCKS]
    assert {f"block{i}": out for i, out in enumerate(again)} == {f"block{i}": out for i, out in enumerate(first)}
