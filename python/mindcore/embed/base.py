"""The `Embedder` protocol and the input/output checks every embedder shares."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

# typing_extensions' Protocol checks isinstance() without evaluating attributes (as Python 3.12+
# does): reading OpenAIEmbedder.dim may send a request, and isinstance must never do that.
from typing_extensions import Protocol, runtime_checkable

from mindcore.errors import EmbeddingError, InvalidTypeError
from mindcore.validation import describe

__all__ = ["Embedder", "EmbeddingError", "check_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    Implementations return float32 arrays of shape ``(len(texts), dim)``, C-contiguous, each row of
    L2 norm 1. `model_id` names the model *and* every setting that changes its vectors, so vectors
    stored under one id are comparable with new ones of the same id.

    Examples
    --------
    >>> from mindcore.embed import Embedder, HashEmbedder
    >>> isinstance(HashEmbedder(), Embedder)
    True
    """

    # Read-only: an embedder may compute them (or ask its endpoint once).
    @property
    def dim(self) -> int:
        """The length of each vector."""
        ...

    @property
    def model_id(self) -> str:
        """The model and every setting that changes its vectors."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts`: float32 ``(len(texts), dim)``."""
        ...

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts` without blocking the event loop."""
        ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """`texts` as a list of str; a bare str (a common slip for ``[text]``) or a non-str item is refused."""
    if isinstance(texts, str | bytes):
        raise TypeError(f"texts: expected a sequence of str, got {type(texts).__name__} (wrap it in a list)")
    try:
        items = list(texts)
    except TypeError:
        raise TypeError(f"texts: expected a sequence of str, got {type(texts).__name__}") from None
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}]: expected str, got {type(text).__name__}")
    return items


def empty(dim: int) -> NDArray[np.float32]:
    """The result for zero texts."""
    return np.zeros((0, dim), dtype=np.float32)


def bad_vector_row(vectors: NDArray[np.float32]) -> tuple[int, str] | None:
    """The first row of a 2-d float32 array that no scorer can use, and why: NaN or infinity, or a
    squared norm that overflows float32 (every component near 3e38 is finite, but cosine and dot
    products over it are not). ``None`` when every row is usable.

    >>> bad_vector_row(np.array([[1, 0], [3e38, 3e38]], dtype=np.float32))
    (1, 'its squared norm overflows float32')
    """
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        return int(np.argmin(finite)), "it contains NaN or infinity"
    with np.errstate(over="ignore"):
        squares = np.einsum("ij,ij->i", vectors, vectors)
    usable = np.isfinite(squares)
    if not usable.all():
        return int(np.argmin(usable)), "its squared norm overflows float32"
    return None


def check_vectors(vectors: object, count: int, dim: int, source: str) -> NDArray[np.float32]:
    """``count`` usable ``dim``-wide vectors from an embedder, as C-contiguous float32, or an
    :class:`EmbeddingError` naming ``source``, the text and the problem."""
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    if out.shape != (count, dim):
        raise EmbeddingError(f"{source}: returned shape {out.shape} for {count} text(s); expected ({count}, {dim})")
    bad = bad_vector_row(out)
    if bad is not None:
        raise EmbeddingError(f"{source}: the vector for text {bad[0]} is unusable: {bad[1]}")
    return out


def normalize_rows(vectors: NDArray[np.floating], source: str, *, allow_zero: bool = False) -> NDArray[np.float32]:
    """Rows of `vectors` scaled to L2 norm 1, as a C-contiguous float32 array.

    A NaN/inf anywhere, or an all-zero row (unless `allow_zero`), is a broken model output:
    raise :class:`EmbeddingError` naming `source` and the first bad row.
    """
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise EmbeddingError(f"{source}: expected a 2-d array of vectors, got shape {out.shape}")
    finite = np.isfinite(out).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise EmbeddingError(f"{source}: the vector for text {row} contains NaN or inf")
    # float64 norms: float32 squares of large components would overflow to inf.
    norms = np.linalg.norm(out.astype(np.float64), axis=1)
    zero = norms == 0.0
    if zero.any() and not allow_zero:
        raise EmbeddingError(f"{source}: the vector for text {int(np.argmax(zero))} is all zeros")
    norms[zero] = 1.0
    out = (out / norms[:, None]).astype(np.float32, copy=False)
    return np.ascontiguousarray(out)


def check_embedder(value: object, name: str = "embedder") -> Embedder:
    """An :class:`~mindcore.embed.Embedder`, checked by what is used (``embed``), so small test
    doubles without the async twin still pass."""
    if value is None or not callable(getattr(value, "embed", None)):
        raise InvalidTypeError(
            f"{name}: expected an Embedder (an object with dim and embed(texts)), got {describe(value)}"
        )
    return value  # type: ignore[return-value]
