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


def data_dir(*, option: str | None = None) -> Path:
    """The evaluation data folder: ``$MINDCORE_DATA_DIR`` if set, else ``shared/data`` beside a
    source checkout of mindcore (the layout the project's tests and benches run in).

    Raises :class:`~mindcore.errors.MindcoreError` when neither exists, with one line saying how to
    provide the data; ``option`` (a command's own flag, e.g. ``"--data DIR"``) is named there too.
    """
    given = os.environ.get(DATA_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_dir():
            raise MindcoreError(f"evaluation data not found: {DATA_ENV}={given!r} is not a folder")
        return path
    # python/mindcore/eval/__init__.py -> the checkout's parent folder holds shared/.
    checkout = Path(__file__).resolve().parents[3]
    path = checkout.parent / "shared" / "data"
    if not path.is_dir():
        point = f"give {option} or set {DATA_ENV}" if option else f"set {DATA_ENV}"
        raise MindcoreError(
            "evaluation data not found (LoCoMo, tool and secret sets; not shipped with mindcore): "
            f"{point} to a copy of the project's shared/data folder, or place it at {path}"
        )
    return path
