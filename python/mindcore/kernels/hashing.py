"""The hashing embedder: deterministic feature-hashing vectors with no model files."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError
from mindcore.kernels.bm25 import _str_list

__all__ = ["hash_embed"]

_U64_MAX = 2**64 - 1


def _int(value: int, arg: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise KernelTypeError(f"{arg}: expected int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise KernelError(f"{arg}: must be in [{lo}, {hi}], got {value}")
    return int(value)


def hash_embed(
    texts: Iterable[str], *, dim: int = 384, ngram_min: int = 3, ngram_max: int = 5, seed: int = 0
) -> NDArray[np.float32]:
    """Embed `texts` by feature hashing: float32 of shape ``(len(texts), dim)``, rows of L2 norm 1.

    Features are the words of :func:`~mindcore.kernels.bm25_tokenize` (lower-cased alphanumeric
    runs) and the character n-grams, ``ngram_min <= n <= ngram_max`` Unicode characters, of each
    word wrapped as ``<word>``. Each feature is hashed with 64-bit FNV-1a (over `seed` as 8
    little-endian bytes, a kind byte ``w``/``c`` and the feature's UTF-8) and murmur3's fmix64;
    the high bits choose the dimension and the low bit a sign of ±1, so collisions cancel on
    average. The result is identical on every run and platform. A text without any word
    (empty, whitespace, punctuation) gives the zero vector. Runs in parallel with the GIL released.

    It is the zero-model fallback embedder and the embedder for tests: texts sharing words or
    word pieces score higher than unrelated ones, but it knows no synonyms.

    Parameters
    ----------
    texts
        The texts (a sequence of str; a bare str is refused).
    dim
        Output dimension, 8 to 8192.
    ngram_min, ngram_max
        Character n-gram lengths, ``1 <= ngram_min <= ngram_max <= 32``.
    seed
        Selects an independent hash family (0 to 2**64 - 1).

    Examples
    --------
    >>> v = hash_embed(["reset my password", "how to reset a password", "sunny weather in Paris"])
    >>> v.shape, v.dtype
    ((3, 384), dtype('float32'))
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """
    items = _str_list(texts, "texts")
    dim = _int(dim, "dim", 8, 8192)
    ngram_min = _int(ngram_min, "ngram_min", 1, 32)
    ngram_max = _int(ngram_max, "ngram_max", ngram_min, 32)
    seed = _int(seed, "seed", 0, _U64_MAX)
    return _core.hash_embed(items, dim, ngram_min, ngram_max, seed)
