"""Deprecated: the LoCoMo harness lives in :mod:`mindcore.eval.locomo`, above the capabilities."""

from __future__ import annotations

import warnings
from typing import Any

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    from mindcore.eval import locomo

    value = getattr(locomo, name)  # AttributeError for unknown names, as for any module
    warnings.warn(
        f"mindcore.ltm.locomo is deprecated; import {name} from mindcore.eval.locomo",
        DeprecationWarning,
        stacklevel=2,
    )
    return value
