"""Row keys: ids that cannot collide (time-ordered, 128 bits: 48-bit ms timestamp + 80 random
bits), and the checks every namespace and id passes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

__all__ = ["check_ids", "check_namespace", "new_id"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def new_id() -> str:
    """A new 26-character id (ULID layout): sorts by creation time, unique across processes.

    >>> a, b = new_id(), new_id()
    >>> len(a), a != b
    (26, True)
    """
    n = ((time.time_ns() // 1_000_000) << 80) | int.from_bytes(os.urandom(10), "big")
    out = []
    for _ in range(26):
        out.append(_ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))


def check_namespace(namespace: object) -> str:
    """``namespace`` if it is a non-empty str (every read and write names one)."""
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"namespace: expected a non-empty str, got {namespace!r}")
    return namespace


def check_ids(ids: Iterable[str]) -> list[str]:
    """``ids`` as a list, each a non-empty str (a single str is refused, not split into characters)."""
    if isinstance(ids, str | bytes):
        raise TypeError("ids: expected a list of str, got a single str")
    out = list(ids)
    for i in out:
        if not isinstance(i, str) or not i:
            raise ValueError(f"ids: every id must be a non-empty str, got {i!r}")
    return out
