"""Evaluation harnesses that sit above the capabilities: they build capabilities, feed them a public
data set and score what comes back. Nothing in the capabilities imports this package.

- :mod:`mindcore.eval.locomo`: LoCoMo turn-level recall@k for long-term memory.

:func:`data_dir` finds the evaluation data (LoCoMo, tool-retrieval sets, secret-detection cases),
which is never shipped with the package.
"""

from __future__ import annotations

import os
from pathlib import Path

from mindcore.errors import MindcoreError

__all__ = ["DATA_ENV", "data_dir"]

DATA_ENV = "MINDCORE_DATA_DIR"


def data_dir() -> Path:
    """The evaluation data folder: ``$MINDCORE_DATA_DIR`` if set, else ``shared/data`` beside a
    source checkout of mindcore (the layout the project's tests and benches run in).

    Raises :class:`~mindcore.errors.MindcoreError` naming both places when neither exists.
    """
    given = os.environ.get(DATA_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_dir():
            raise MindcoreError(f"{DATA_ENV}={given!r} is not a folder")
        return path
    # python/mindcore/eval/__init__.py -> the checkout's parent folder holds shared/.
    checkout = Path(__file__).resolve().parents[3]
    path = checkout.parent / "shared" / "data"
    if not path.is_dir():
        raise MindcoreError(f"evaluation data not found: set {DATA_ENV} or place shared/data beside {checkout}")
    return path
