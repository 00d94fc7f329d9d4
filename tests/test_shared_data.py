"""The suite's one way to the evaluation data (``conftest.shared_data``): the path when the data is
there; without it the test skips with a one-line reason, or fails under ``$MINDCORE_REQUIRE_DATA``
(CI), where a skipped quality test would hide a regression."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REQUIRE_DATA, shared_data

from mindcore.eval import DATA_ENV

TESTS = Path(__file__).resolve().parent


def test_the_data_folder_and_a_file_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_text("[]")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert shared_data() == tmp_path
    assert shared_data("locomo", "locomo10.json") == tmp_path / "locomo" / "locomo10.json"


def test_missing_data_skips_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    monkeypatch.delenv(REQUIRE_DATA, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^evaluation data not found: ") as skipped:
        shared_data("locomo", "locomo10.json")
    assert "\n" not in str(skipped.value)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))  # the folder, without the file asked for
    with pytest.raises(pytest.skip.Exception, match=r"^evaluation data incomplete: no .*locomo10\.json$"):
        shared_data("locomo", "locomo10.json")


def test_missing_data_fails_where_it_is_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    monkeypatch.setenv(REQUIRE_DATA, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"evaluation data not found: .*{REQUIRE_DATA} is set"):
        shared_data()
    monkeypatch.setenv(REQUIRE_DATA, "0")  # "0" means not required
    with pytest.raises(pytest.skip.Exception):
        shared_data()


@pytest.mark.parametrize(("required", "outcome"), [("", "1 skipped"), ("1", "1 failed")])
def test_a_run_without_data(tmp_path: Path, required: str, outcome: str) -> None:
    """A whole pytest run of a test that reads the data: skipped (the reason in the summary), or
    under $MINDCORE_REQUIRE_DATA a failure and a failing exit code."""
    (tmp_path / "test_reads_data.py").write_text(
        "from conftest import shared_data\n\n"
        "def test_reads() -> None:\n"
        "    assert shared_data('locomo', 'locomo10.json').is_file()\n")
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, DATA_ENV: str(tmp_path / "nowhere"), REQUIRE_DATA: required}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_reads_data.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert outcome in done.stdout, done.stdout
    assert done.returncode == (1 if required else 0), done.stdout
    assert "evaluation data not found" in done.stdout
