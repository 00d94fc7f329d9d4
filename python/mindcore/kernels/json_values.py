"""JSON values (dicts, lists, tuples, strings, numbers, booleans, ``None``) written and copied in
one walk in Rust, with the standard library's answers: :func:`json_dumps` is
``json.dumps(value, ensure_ascii=False, allow_nan=False)`` and :func:`json_copy` is
``json.loads`` of that text, at a fraction of their cost (a copy shares the strings and
numbers it can, which are immutable, rather than parsing them again).

Errors are the standard library's too: a ``TypeError`` (:class:`~mindcore.errors.KernelTypeError`)
for what is not JSON, a ``ValueError`` (:class:`~mindcore.errors.KernelError`) for NaN, infinities,
cycles and nesting deeper than 1,000 levels.
"""

from __future__ import annotations

import json
from typing import Any

import mindcore._core as _core

__all__ = ["json_copy", "json_dumps"]


def json_dumps(value: Any) -> str:
    """``value`` as ``json.dumps(value, ensure_ascii=False, allow_nan=False)`` writes it.

    >>> json_dumps({"city": "Zürich", 1: [True, None, 2.5]})
    '{"city": "Zürich", "1": [true, null, 2.5]}'
    """
    try:
        return _core.json_dumps(value)
    except UnicodeEncodeError:  # a lone surrogate cannot cross to Rust as UTF-8
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


def json_copy(value: Any) -> Any:
    """A deep copy of ``value`` as ``json.loads(json.dumps(value, allow_nan=False))`` builds it:
    new dicts and lists, keys made strings, tuples made lists, subclasses made plain.

    >>> json_copy({"a": (1, 2), None: "x"})
    {'a': [1, 2], 'null': 'x'}
    """
    try:
        return _core.json_copy(value)
    except UnicodeEncodeError:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
