"""Deep merge for structured working memory: objects merge, everything else replaces."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mindcore.errors import MergeError

__all__ = ["MAX_DEPTH", "UNSAFE_KEYS", "MergeError", "deep_merge", "sanitize"]

# Keys that pollute prototypes in the JavaScript tools our state is often handed to; never stored.
UNSAFE_KEYS = frozenset({"__proto__", "constructor", "prototype"})
MAX_DEPTH = 32


def sanitize(value: Any, *, _depth: int = 0) -> Any:
    """A deep copy of JSON-like ``value`` without :data:`UNSAFE_KEYS`, rejecting nesting over :data:`MAX_DEPTH`.

    >>> sanitize({"a": {"__proto__": {"x": 1}, "b": [1, {"constructor": 2}]}})
    {'a': {'b': [1, {}]}}
    """
    if _depth > MAX_DEPTH:
        raise MergeError(f"nesting deeper than {MAX_DEPTH} levels is not allowed")
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise MergeError(f"object keys must be strings, got {type(key).__name__}")
            if key not in UNSAFE_KEYS:
                out[key] = sanitize(item, _depth=_depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [sanitize(item, _depth=_depth + 1) for item in value]
    return copy.deepcopy(value)


def deep_merge(state: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ``state``: nested objects merge recursively; arrays, primitives and
    ``None`` replace. ``patch`` is sanitized (see :func:`sanitize`); neither input is modified.

    The result is a new dict that shares the subtrees the patch does not touch with ``state`` (an
    update of one key of a large state costs the keys on its path, not a copy of the state);
    deep-copy it before mutating it in place.

    >>> deep_merge({"a": {"x": 1, "y": [1]}, "b": 1}, {"a": {"y": [2]}, "b": None})
    {'a': {'x': 1, 'y': [2]}, 'b': None}
    """
    return _merge(state, sanitize(patch))


def _merge(base: Mapping[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in patch.items():
        current = merged.get(key)
        merged[key] = _merge(current, value) if isinstance(value, dict) and isinstance(current, Mapping) else value
    return merged
