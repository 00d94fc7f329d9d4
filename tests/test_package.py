"""The package face: help() gives a tour, the command answers --version, python -m mindcore works,
and the layers import only downwards."""

from __future__ import annotations

import pydoc
import subprocess
import sys

import pytest

import mindcore


def test_help_gives_a_tour_with_an_example_per_capability() -> None:
    text = pydoc.render_doc(mindcore, renderer=pydoc.plaintext)
    for name in ("mindcore.Mind(", "mindcore.WorkingMemory(", "mindcore.LongTermMemory.create(", "MindcoreError"):
        assert name in text


def test_version_from_the_command_and_from_python_m() -> None:
    for cmd in (["mindcore", "--version"], [sys.executable, "-m", "mindcore", "--version"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"mindcore {mindcore.__version__}"


def test_import_mindcore_stays_light() -> None:
    # Capabilities, the store and LanceDB load on first use, not on `import mindcore`.
    code = "import sys, mindcore; print(sorted(m for m in ('lancedb', 'mindcore.store', 'mindcore.mind') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_ltm_locomo_module_still_answers_with_a_deprecation() -> None:
    import warnings

    import mindcore.eval.locomo as moved
    import mindcore.ltm.locomo as old

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert old.evaluate_locomo is moved.evaluate_locomo
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)


def test_the_version_has_one_source_the_cargo_workspace() -> None:
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not (root / "Cargo.toml").exists():
        pytest.skip("a copy of the tests run against an installed wheel (tests/wheel checks its version)")
    workspace = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    # maturin reads the wheel's version from the crate, so pyproject names none of its own.
    assert "version" not in project and "version" in project["dynamic"]
    assert tomllib.loads((root / "rust/python/Cargo.toml").read_text())["package"]["version"] == {"workspace": True}
    assert mindcore.__version__ == workspace
    assert f"## [{workspace}]" in (root / "CHANGELOG.md").read_text()
