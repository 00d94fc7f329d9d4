"""Errors raised by :mod:`mindcore.store` (defined in :mod:`mindcore.errors`, under :class:`MindcoreError`)."""

from __future__ import annotations

from mindcore.errors import (
    EmbedderMismatchError,
    LockTimeoutError,
    SchemaError,
    StoreError,
    StoreNotWritableError,
)

__all__ = [
    "EmbedderMismatchError",
    "LockTimeoutError",
    "SchemaError",
    "StoreError",
    "StoreNotWritableError",
]
