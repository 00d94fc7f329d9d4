"""A process-wide LRU cache of embeddings keyed by ``(model_id, text)``, and the wrapper that uses it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from mindcore.embed.base import Embedder, EmbeddingError, check_texts, empty

__all__ = ["CachedEmbedder", "EmbeddingCache"]

Vector = NDArray[np.float32]
# Per-entry bookkeeping beyond the vector and the text (key tuple, dict slot, array header).
_ENTRY_OVERHEAD = 200


class EmbeddingCache:
    """A thread-safe LRU map from ``(model_id, text)`` to a unit vector, bounded in bytes.

    :meth:`shared` is the one cache of the process: `default_embedder`, `OpenAIEmbedder` and
    `CachedEmbedder` use it unless given another, so a text is embedded once per model and process
    (two threads asking for the same new text at the same moment may both compute it).

    Parameters
    ----------
    max_bytes
        Upper bound on the memory held (vectors, texts and bookkeeping); least recently used
        entries are dropped first.

    Examples
    --------
    >>> cache = EmbeddingCache(max_bytes=1 << 20)
    >>> cache.put("m", "hello", np.ones(4, dtype=np.float32) / 2)
    >>> cache.get("m", "hello")
    array([0.5, 0.5, 0.5, 0.5], dtype=float32)
    >>> cache.get("other-model", "hello") is None
    True
    """

    _shared: EmbeddingCache | None = None
    _shared_lock = threading.Lock()

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
            raise TypeError(f"max_bytes: expected int, got {type(max_bytes).__name__}")
        if max_bytes < 0:
            raise ValueError(f"max_bytes: must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @classmethod
    def shared(cls) -> EmbeddingCache:
        """The process-wide cache (64 MiB)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    @staticmethod
    def _size(key: tuple[str, str], vector: Vector) -> int:
        return vector.nbytes + len(key[0]) + len(key[1]) + _ENTRY_OVERHEAD

    def get(self, model_id: str, text: str) -> Vector | None:
        """The cached vector (read-only), or None."""
        return self.get_many(model_id, [text])[0]

    def get_many(self, model_id: str, texts: Sequence[str]) -> list[Vector | None]:
        """Cached vectors for `texts` in order, None where absent; counts hits and misses."""
        out: list[Vector | None] = []
        with self._lock:
            for text in texts:
                key = (model_id, text)
                vector = self._entries.get(key)
                if vector is None:
                    self.misses += 1
                else:
                    self._entries.move_to_end(key)
                    self.hits += 1
                out.append(vector)
        return out

    def put(self, model_id: str, text: str, vector: NDArray[np.float32]) -> None:
        """Store a copy of `vector` (1-d) for ``(model_id, text)``."""
        self.put_many(model_id, [text], vector.reshape(1, -1))

    def put_many(self, model_id: str, texts: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Store row ``i`` of `vectors` for ``texts[i]``, evicting the least recently used entries."""
        with self._lock:
            for text, row in zip(texts, vectors, strict=True):
                key = (model_id, text)
                vector = np.array(row, dtype=np.float32)  # a copy: never keep the caller's batch alive
                vector.flags.writeable = False
                size = self._size(key, vector)
                if size > self.max_bytes:
                    continue
                old = self._entries.pop(key, None)
                if old is not None:
                    self._nbytes -= self._size(key, old)
                self._entries[key] = vector
                self._nbytes += size
            while self._nbytes > self.max_bytes:
                key, old = self._entries.popitem(last=False)
                self._nbytes -= self._size(key, old)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._nbytes = 0
            self.hits = self.misses = 0

    @property
    def nbytes(self) -> int:
        """Approximate memory held, in bytes."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (
            f"EmbeddingCache(entries={len(self)}, nbytes={self._nbytes}, max_bytes={self.max_bytes}, "
            f"hits={self.hits}, misses={self.misses})"
        )


def _plan(cache: EmbeddingCache, model_id: str, texts: list[str]) -> tuple[list[Vector | None], list[str]]:
    """Cached rows (None where missing) and the distinct missing texts, in first-seen order."""
    found = cache.get_many(model_id, texts)
    missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
    return found, missing


def _assemble(
    cache: EmbeddingCache,
    model_id: str,
    texts: list[str],
    found: list[Vector | None],
    missing: list[str],
    computed: NDArray[np.float32] | None,
) -> NDArray[np.float32]:
    fresh: dict[str, Vector] = {}
    if computed is not None:
        cache.put_many(model_id, missing, computed)
        fresh = {text: computed[i] for i, text in enumerate(missing)}
    rows = [fresh[text] if vector is None else vector for text, vector in zip(texts, found, strict=True)]
    return np.stack(rows).astype(np.float32, copy=False)


def embed_cached(
    cache: EmbeddingCache,
    model_id: str,
    texts: list[str],
    compute: Callable[[list[str]], NDArray[np.float32]],
) -> NDArray[np.float32]:
    """Embed `texts` (checked, non-empty), computing only the distinct ones not in `cache`.

    `compute` must return one row per text it is given, of the same dimension as any cached row.
    """
    found, missing = _plan(cache, model_id, texts)
    return _assemble(cache, model_id, texts, found, missing, compute(missing) if missing else None)


async def aembed_cached(
    cache: EmbeddingCache,
    model_id: str,
    texts: list[str],
    compute: Callable[[list[str]], Awaitable[NDArray[np.float32]]],
) -> NDArray[np.float32]:
    """Async twin of :func:`embed_cached`."""
    found, missing = _plan(cache, model_id, texts)
    return _assemble(cache, model_id, texts, found, missing, await compute(missing) if missing else None)


def resolve_cache(cache: EmbeddingCache | bool | None) -> EmbeddingCache | None:
    """``True``/``None`` -> the shared cache, ``False`` -> no cache, an instance -> itself."""
    if cache is True or cache is None:
        return EmbeddingCache.shared()
    if cache is False:
        return None
    if isinstance(cache, EmbeddingCache):
        return cache
    raise TypeError(f"cache: expected bool or EmbeddingCache, got {type(cache).__name__}")


class CachedEmbedder:
    """Wraps any :class:`Embedder` so each distinct text is embedded once per process.

    Lookups are keyed by ``(inner.model_id, text)``; repeated texts inside one call are embedded
    once too. The default cache is :meth:`EmbeddingCache.shared`.

    Parameters
    ----------
    inner
        The embedder doing the work.
    cache
        The cache to use (default: the process-wide one).

    Examples
    --------
    >>> from mindcore.embed import CachedEmbedder, HashEmbedder
    >>> emb = CachedEmbedder(HashEmbedder(dim=64), cache=EmbeddingCache())
    >>> emb.embed(["hi there", "hi there", "bye"]).shape
    (3, 64)
    >>> emb.cache.misses, len(emb.cache)
    (3, 2)
    """

    def __init__(self, inner: Embedder, *, cache: EmbeddingCache | None = None) -> None:
        if not isinstance(inner, Embedder):
            raise TypeError(f"inner: expected an Embedder (dim, model_id, embed, aembed), got {type(inner).__name__}")
        if cache is not None and not isinstance(cache, EmbeddingCache):
            raise TypeError(f"cache: expected EmbeddingCache or None, got {type(cache).__name__}")
        self.inner = inner
        self.cache: EmbeddingCache = EmbeddingCache.shared() if cache is None else cache

    @property
    def dim(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dim

    @property
    def model_id(self) -> str:
        """The inner embedder's model id (the cache adds nothing to it)."""
        return self.inner.model_id

    def _checked(self, texts: list[str], vectors: NDArray[np.float32]) -> NDArray[np.float32]:
        if not isinstance(vectors, np.ndarray) or vectors.shape != (len(texts), self.dim):
            shape = getattr(vectors, "shape", type(vectors).__name__)
            raise EmbeddingError(
                f"{self.model_id}: embedder returned {shape} for {len(texts)} texts, expected {(len(texts), self.dim)}"
            )
        return vectors

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts`, reusing cached vectors: float32 ``(len(texts), dim)``."""
        items = check_texts(texts)
        if not items:
            return empty(self.dim)
        return embed_cached(self.cache, self.model_id, items, lambda miss: self._checked(miss, self.inner.embed(miss)))

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async twin of :meth:`embed`."""
        items = check_texts(texts)
        if not items:
            return empty(self.dim)

        async def compute(miss: list[str]) -> NDArray[np.float32]:
            return self._checked(miss, await self.inner.aembed(miss))

        return await aembed_cached(self.cache, self.model_id, items, compute)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r})"
