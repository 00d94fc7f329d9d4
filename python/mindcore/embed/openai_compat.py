"""Embeddings over any OpenAI-compatible HTTP endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import base64
import functools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from mindcore._openai import AsyncClients, Endpoint, explain, request_errors, resolve_endpoint
from mindcore.embed.base import EmbeddingError, check_texts, empty, normalize_rows
from mindcore.embed.cache import EmbeddingCache, aembed_cached, embed_cached, resolve_cache

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["OpenAIEmbedder"]

_MAX_BATCH = 2048  # the OpenAI API's limit on inputs per request


def _int_arg(value: int | None, arg: str, lo: int, hi: int | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{arg}: expected int, got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{arg}: must be {bound}, got {value}")


class OpenAIEmbedder:
    """An :class:`~mindcore.embed.Embedder` over the OpenAI embeddings API, with the official `openai` SDK.

    Settings come from the arguments, else the environment: ``OPENAI_BASE_URL`` (default
    ``https://api.openai.com/v1``), ``OPENAI_API_KEY`` (optional for other hosts: local servers
    ignore it) and ``OPENAI_EMBEDDING_MODEL``. Texts are sent in batches of `batch_size`; failed
    requests (connection errors, timeouts, HTTP 408/409/429/5xx) are retried `max_retries` times
    with exponential backoff and jitter, honouring ``Retry-After``. The vectors are L2-normalised
    here (not every server does it). Texts already embedded in this process come from the
    :class:`~mindcore.embed.EmbeddingCache`. The empty string, which the OpenAI API refuses, is
    sent as a single space.

    Parameters
    ----------
    model
        Embedding model name (else ``OPENAI_EMBEDDING_MODEL``).
    base_url, api_key
        Endpoint and key (else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``).
    dim
        The model's dimension, checked against every response. If None, it is learnt from the
        first response; reading :attr:`dim` before any call sends one small request.
    batch_size
        Texts per request, 1 to 2048.
    max_retries
        Retries after the first attempt.
    timeout
        Seconds per attempt.
    cache
        ``True`` (default) for the process-wide cache, ``False`` for none, or a cache of your own.

    Raises
    ------
    EmbeddingError
        A request failed after the retries, or the answer is malformed (wrong count, wrong
        dimension, NaN): the message names the endpoint and the cause.

    Examples
    --------
    >>> emb = OpenAIEmbedder("nomic-embed-text", base_url="http://localhost:11434/v1")  # Ollama
    >>> emb.embed(["hello"]).shape  # doctest: +SKIP
    (1, 768)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 256,
        max_retries: int = 3,
        timeout: float = 30,
        cache: EmbeddingCache | bool = True,
    ) -> None:
        self.endpoint: Endpoint = resolve_endpoint(
            model=model,
            base_url=base_url,
            api_key=api_key,
            model_env="OPENAI_EMBEDDING_MODEL",
            timeout=timeout,
            max_retries=max_retries,
        )
        _int_arg(dim, "dim", 1)
        _int_arg(batch_size, "batch_size", 1, _MAX_BATCH)
        self._dim = dim
        self._dim_lock = threading.Lock()
        self.batch_size = batch_size
        self.cache = resolve_cache(cache)
        self.model_id = f"openai-compatible:{self.endpoint.model}@{self.endpoint.base_url}"
        self._aclients = AsyncClients(self.endpoint)

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def dim(self) -> int:
        """The vector dimension (given, or learnt from the first response)."""
        if self._dim is None:
            self._embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    @functools.cached_property
    def _client(self) -> OpenAI:
        return self.endpoint.sync_client()  # built on first use: importing `openai` takes ~0.5 s

    def _where(self) -> str:
        return f"embedding model {self.model!r} at POST {self.endpoint.url('embeddings')}"

    def _params(self, batch: list[str]) -> dict[str, Any]:
        # "float" explicitly: the SDK would ask for base64, which some compatible servers lack.
        return {"model": self.model, "input": [t or " " for t in batch], "encoding_format": "float"}

    def _vectors(self, response: Any, n: int) -> NDArray[np.float32]:
        """The response's vectors in input order, checked and normalised."""
        where = self._where()
        try:
            data = list(response.data)
            rows: dict[int, Any] = {int(item.index): item.embedding for item in data}
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"{where} failed: malformed response: {exc}") from exc
        if len(data) != n or sorted(rows) != list(range(n)):
            raise EmbeddingError(f"{where} failed: malformed response: {len(data)} vectors for {n} texts")
        try:
            vectors = [
                np.frombuffer(base64.b64decode(e), dtype="<f4") if isinstance(e, str) else np.asarray(e, dtype=np.float64)
                for e in (rows[i] for i in range(n))
            ]
            matrix = np.stack(vectors).astype(np.float32) if vectors else empty(0)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{where} failed: malformed response: vectors are not lists of numbers ({exc})") from exc
        with self._dim_lock:
            if self._dim is None:
                if matrix.shape[1] == 0:
                    raise EmbeddingError(f"{where} failed: malformed response: empty vectors")
                self._dim = int(matrix.shape[1])
        if matrix.shape[1] != self._dim:
            raise EmbeddingError(f"{where} returned {matrix.shape[1]}-d vectors, expected dim={self._dim}")
        return normalize_rows(matrix, where)

    def _batches(self, texts: list[str]) -> list[list[str]]:
        return [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        parts = []
        for batch in self._batches(texts):
            try:
                response = self._client.embeddings.create(**self._params(batch))
            except request_errors() as exc:
                raise EmbeddingError(f"{self._where()} failed: {explain(exc, self.endpoint)}") from exc
            parts.append(self._vectors(response, len(batch)))
        return np.ascontiguousarray(np.concatenate(parts))

    async def _aembed(self, texts: list[str]) -> NDArray[np.float32]:
        client = self._aclients.get()
        parts = []
        for batch in self._batches(texts):
            try:
                response = await client.embeddings.create(**self._params(batch))
            except request_errors() as exc:
                raise EmbeddingError(f"{self._where()} failed: {explain(exc, self.endpoint)}") from exc
            parts.append(self._vectors(response, len(batch)))
        return np.ascontiguousarray(np.concatenate(parts))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts`: float32 ``(len(texts), dim)``, unit rows, C-contiguous."""
        items = check_texts(texts)
        if not items:
            return empty(self.dim)
        if self.cache is None:
            return self._embed(items)
        return embed_cached(self.cache, self.model_id, items, self._embed)

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async twin of :meth:`embed` (``AsyncOpenAI``)."""
        items = check_texts(texts)
        if not items:
            if self._dim is None:
                await self._aembed(["dimension probe"])
            return empty(self.dim)
        if self.cache is None:
            return await self._aembed(items)
        return await aembed_cached(self.cache, self.model_id, items, self._aembed)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, dim={self._dim})"
