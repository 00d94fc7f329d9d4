"""Row keys: ids that cannot collide (time-ordered, 128 bits: 48-bit ms timestamp + 80 random
bits), and the checks every namespace and id passes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

__all__ = ["check_ids", "check_namespace", "new_id", "new_id_array", "new_ids"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def new_id() -> str:
    """A new 26-character id (ULID layout): sorts by creation time, unique across processes.

    >>> a, b = new_id(), new_id()
    >>> len(a), a != b
    (26, True)
    """
    return _encode(((time.time_ns() // 1_000_000) << 80) | int.from_bytes(os.urandom(10), "big"))


def new_ids(n: int) -> list[str]:
    """``n`` new ids at once, each as :func:`new_id` makes them (for bulk writes: one random read
    and a few array operations instead of ``n`` calls).

    >>> ids = new_ids(3)
    >>> len(ids), len(set(ids)), all(len(i) == 26 for i in ids)
    (3, 3, True)
    """
    text = _encode_many(_random_ids(n)).decode("ascii")
    return [text[i:i + 26] for i in range(0, 26 * n, 26)]


def new_id_array(n: int) -> pa.StringArray:
    """:func:`new_ids` as an Arrow string array, built from one buffer (no str per id).

    >>> new_id_array(2).to_pylist()[0][:1] in "0123456789abcdefghjkmnpqrstvwxyz"
    True
    """
    data = _encode_many(_random_ids(n))
    offsets = np.arange(0, 26 * n + 1, 26, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def _random_ids(n: int) -> np.ndarray:
    """``n`` ids as ``(n, 16)`` bytes: the time in ms (48 bits), then 80 random bits."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n: expected a non-negative int, got {n!r}")
    raw = np.empty((n, 16), dtype=np.uint8)
    raw[:, :6] = np.frombuffer((time.time_ns() // 1_000_000).to_bytes(6, "big"), dtype=np.uint8)
    raw[:, 6:] = np.frombuffer(os.urandom(10 * n), dtype=np.uint8).reshape(n, 10)
    return raw


def _encode(n: int) -> str:
    """The 128-bit ``n`` as 26 Crockford base32 digits (the first carries 3 bits)."""
    out = []
    for _ in range(26):
        out.append(_ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))


_DIGITS = np.frombuffer(_ALPHABET.encode("ascii"), dtype=np.uint8)
_FIVE = np.uint64(31)


def _encode_many(raw: np.ndarray) -> bytes:
    """:func:`_encode` of each row of ``raw`` (``(n, 16)`` uint8, big-endian 128-bit numbers), as
    ASCII bytes, 26 per id: the digits taken from the two 64-bit halves by shifts, a few array
    operations in all."""
    n = len(raw)
    halves = np.ascontiguousarray(raw).view(">u8").astype(np.uint64)
    hi, lo = halves[:, 0], halves[:, 1]
    digits = np.empty((n, 26), dtype=np.uint8)
    for k in range(26):  # digit k from the right holds bits 5k .. 5k + 4
        shift = 5 * k
        if shift + 5 <= 64:
            value = lo >> np.uint64(shift)
        elif shift < 64:  # straddles the halves
            value = (lo >> np.uint64(shift)) | (hi << np.uint64(64 - shift))
        else:
            value = hi >> np.uint64(shift - 64)
        digits[:, 25 - k] = value & _FIVE
    return _DIGITS[digits].tobytes()


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
