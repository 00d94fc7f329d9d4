"""The package face: help() gives a tour, the command answers --version, python -m mindcore works,
and the layers import only downwards."""

from __future__ import annotations

import pydoc
import subprocess
import sys

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
