"""The hashing embedder: deterministic vectors from words and character n-grams, no model files."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mindcore.embed.base import check_texts, empty

__all__ = ["HASH_VERSION", "HashEmbedder"]

# Bump whenever mindcore.kernels.hash_embed changes its output for the same arguments (features,
# hash function, sign rule): stored vectors carry the model id and must not mix versions.
# tests/test_embed.py pins golden values of the kernel for this version.
HASH_VERSION = 1

_ASYNC_INLINE_MAX = 256  # smaller batches take microseconds: a worker thread would cost more than it saves


class HashEmbedder:
    """Feature-hashing embeddings from the Rust kernel :func:`mindcore.kernels.hash_embed`.

    Words and character n-grams (3 to 5 characters) are hashed into `dim` signed buckets and the
    vector is L2-normalised. Deterministic on every run and platform, no model files, thousands of
    texts per millisecond; it knows no synonyms, so it is the fallback and the embedder for tests,
    not a default. A text without any word (empty, only punctuation) gets the zero vector, the one
    exception to unit rows: it scores 0 against everything.

    Parameters
    ----------
    dim
        Output dimension, 8 to 8192.
    seed
        Selects an independent hash family; part of `model_id`.

    Examples
    --------
    >>> emb = HashEmbedder(dim=384)
    >>> emb.model_id
    'mindcore-hash-v1-d384-n3-5-s0'
    >>> v = emb.embed(["reset my password", "how to reset a password", "sunny weather in Paris"])
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """

    ngram_min = 3
    ngram_max = 5

    def __init__(self, dim: int = 384, *, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"dim: expected int, got {type(dim).__name__}")
        if not 8 <= dim <= 8192:
            raise ValueError(f"dim: must be in [8, 8192], got {dim}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed: expected int, got {type(seed).__name__}")
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed: must be in [0, 2**64), got {seed}")
        self.dim = dim
        self.seed = seed
        self.model_id = f"mindcore-hash-v{HASH_VERSION}-d{dim}-n{self.ngram_min}-{self.ngram_max}-s{seed}"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts`: float32 ``(len(texts), dim)``, C-contiguous (the kernel releases the GIL)."""
        items = check_texts(texts)
        if not items:
            return empty(self.dim)
        from mindcore.kernels import hash_embed

        out = hash_embed(items, dim=self.dim, ngram_min=self.ngram_min, ngram_max=self.ngram_max, seed=self.seed)
        return np.ascontiguousarray(out, dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async twin of :meth:`embed`; large batches run in a worker thread."""
        items = check_texts(texts)
        if len(items) <= _ASYNC_INLINE_MAX:
            return self.embed(items)
        return await asyncio.to_thread(self.embed, items)

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim}, seed={self.seed})"
