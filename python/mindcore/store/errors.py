"""Errors raised by :mod:`mindcore.store`."""

from __future__ import annotations

__all__ = [
    "EmbedderMismatchError",
    "LockTimeoutError",
    "SchemaError",
    "StoreError",
]


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""


class SchemaError(StoreError, ValueError):
    """A table's stored schema and the one asked for cannot be reconciled (a column changed type,
    or a new column is not nullable)."""


class EmbedderMismatchError(StoreError, ValueError):
    """The store (or a table) was built with another embedding model or dimension."""


class LockTimeoutError(StoreError, TimeoutError):
    """Another writer held a table's write lock for longer than the configured timeout."""
