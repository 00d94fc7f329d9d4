"""Embedders behind one protocol: `Embedder.embed(texts) -> float32 (n, dim)`, unit rows, and its async twin.

- :func:`default_embedder` / :class:`MiniLMEmbedder`: all-MiniLM-L6-v2 (384-d), bundled, offline;
  the model loads in a background thread and the first embedding waits for it.
- :class:`HashEmbedder`: feature hashing in Rust; no model, for tests and as a fallback.
- :class:`OpenAIEmbedder`: any OpenAI-compatible embeddings endpoint.
- :class:`CachedEmbedder` / :class:`EmbeddingCache`: each text is embedded once per model and
  process (the default and OpenAI embedders use the shared cache already).

Examples
--------
>>> from mindcore.embed import HashEmbedder
>>> HashEmbedder(dim=64).embed(["hello world"]).shape
(1, 64)
"""

from __future__ import annotations

from mindcore.embed.base import Embedder, EmbeddingError
from mindcore.embed.cache import CachedEmbedder, EmbeddingCache
from mindcore.embed.hashing import HashEmbedder
from mindcore.embed.minilm import MiniLMEmbedder, default_embedder
from mindcore.embed.openai_compat import OpenAIEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "default_embedder",
]
