"""Ids that cannot collide: time-ordered, 128 bits (48-bit ms timestamp + 80 random bits)."""

from __future__ import annotations

import os
import time

__all__ = ["new_id"]

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
