"""Embedders: the default MiniLM model (real weights), the hashing embedder, the embedding cache, bad input."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from mindcore.embed import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    EmbeddingError,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    default_embedder,
)
from mindcore.embed import minilm as minilm_mod
from mindcore.embed.base import normalize_rows

# Hand-made (anchor, paraphrase) pairs; every other pair's second text is unrelated to an anchor.
PAIRS = [
    ("How do I reset my password?", "I forgot my password and need to change it."),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("What will the weather be like in Paris tomorrow?", "Tomorrow's forecast for Paris."),
    ("I love hiking in the mountains.", "Walking up hills is my favourite hobby."),
    ("My flight to Tokyo was delayed by three hours.", "The plane to Japan left three hours late."),
    ("She bought a new laptop for work.", "She purchased a computer for her job."),
    ("The restaurant serves excellent Italian food.", "That place has great pasta and pizza."),
    ("He is allergic to peanuts.", "Peanuts give him an allergic reaction."),
]

SENTENCES = [
    "Hello, World!",
    "",
    "a",
    "Caroline went to the LGBTQ support group yesterday and felt really welcomed.",
    "Melanie painted a sunrise over the lake last year.",
    "naïve café crème brûlée",
    "東京タワー 🗼 https://example.com/path?q=1",
    "word " * 40,
    "The quick brown fox jumps over the lazy dog. " * 5,
    "   leading and trailing spaces   ",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(cache=False)


# --- protocol and shared contract --------------------------------------------------------------


def test_embedders_satisfy_the_protocol(minilm: MiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert isinstance(HashEmbedder(), Embedder)
    assert isinstance(CachedEmbedder(HashEmbedder()), Embedder)
    assert isinstance(OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", dim=4), Embedder)
    assert not isinstance(object(), Embedder)


@pytest.mark.parametrize("make", [lambda: MiniLMEmbedder(cache=False), lambda: HashEmbedder(dim=32)])
def test_bad_input_is_refused_with_the_index(make: Any) -> None:
    emb = make()
    with pytest.raises(TypeError, match=r"texts\[2\]: expected str, got int"):
        emb.embed(["a", "b", 3])
    with pytest.raises(TypeError, match=r"texts\[0\]: expected str, got bytes"):
        emb.embed([b"raw"])
    with pytest.raises(TypeError, match="wrap it in a list"):
        emb.embed("a bare string")
    with pytest.raises(TypeError, match="expected a sequence of str, got int"):
        emb.embed(5)
    with pytest.raises(TypeError, match=r"texts\[1\]: expected str, got NoneType"):
        asyncio.run(emb.aembed(["ok", None]))


@pytest.mark.parametrize("make", [lambda: MiniLMEmbedder(cache=False), lambda: HashEmbedder(dim=32)])
def test_empty_input_gives_empty_output(make: Any) -> None:
    emb = make()
    for out in (emb.embed([]), emb.embed(()), asyncio.run(emb.aembed([]))):
        assert out.shape == (0, emb.dim)
        assert out.dtype == np.float32


def test_normalize_rows_refuses_nan_and_zero_rows() -> None:
    good = normalize_rows(np.array([[3.0, 4.0]]), "m")
    np.testing.assert_allclose(good, [[0.6, 0.8]])
    assert good.dtype == np.float32 and good.flags.c_contiguous
    with pytest.raises(EmbeddingError, match=r"m: the vector for text 1 contains NaN or inf"):
        normalize_rows(np.array([[1.0, 0.0], [np.nan, 1.0]]), "m")
    with pytest.raises(EmbeddingError, match=r"text 0 contains NaN or inf"):
        normalize_rows(np.array([[np.inf, 0.0]]), "m")
    with pytest.raises(EmbeddingError, match=r"text 0 is all zeros"):
        normalize_rows(np.zeros((1, 3)), "m")
    assert (normalize_rows(np.zeros((1, 3)), "m", allow_zero=True) == 0).all()
    # float32 overflow in the norm must not turn into zeros
    big = normalize_rows(np.array([[3e38, 3e38]], dtype=np.float32), "m")
    np.testing.assert_allclose(big, [[2**-0.5, 2**-0.5]], rtol=1e-6)


# --- the default embedder (real model) ------------------------------------------------------------


def _reference_embed(texts: list[str]) -> NDArray[np.float32]:
    """A from-scratch path: the vendored tokenizer with its own fixed 128 padding, the ONNX model,
    mean pooling and L2 normalisation in plain numpy (what sentence-transformers does)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_mod.tokenizer_path()))  # padding/truncation: fixed 128 from the file
    session = ort.InferenceSession(str(minilm_mod.model_path()), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden[0] * mask[0][:, None]).sum(0) / mask.sum()
        out.append(pooled / np.linalg.norm(pooled))
    return np.array(out, dtype=np.float32)


def test_minilm_matches_a_from_scratch_reference(minilm: MiniLMEmbedder) -> None:
    texts = [t for t in SENTENCES if len(t) < 200]  # the reference pads/truncates at 128 tokens
    np.testing.assert_allclose(minilm.embed(texts), _reference_embed(texts), atol=2e-5)


def test_minilm_output_contract(minilm: MiniLMEmbedder) -> None:
    out = minilm.embed(SENTENCES)
    assert out.shape == (len(SENTENCES), 384)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert minilm.dim == 384
    assert "all-MiniLM-L6-v2" in minilm.model_id and "int8" in minilm.model_id


def test_minilm_tokenizer_is_bert_uncased() -> None:
    tok = minilm_mod._load_tokenizer()
    assert tok.get_vocab_size() == 30522
    assert tok.encode("Hello, World!").ids == [101, 7592, 1010, 2088, 999, 102]
    assert tok.encode("naïve CAFÉ").tokens == ["[CLS]", "naive", "cafe", "[SEP]"]
    assert len(tok.encode("word " * 1000).ids) == 256  # truncation at the model's 256-token limit


def test_minilm_is_deterministic_across_batches_order_and_threads(minilm: MiniLMEmbedder) -> None:
    reference = minilm.embed(SENTENCES)
    for batch_size in (1, 3, 32):
        other = MiniLMEmbedder(batch_size=batch_size, cache=False)
        np.testing.assert_array_equal(other.embed(SENTENCES), reference)
    perm = np.random.default_rng(0).permutation(len(SENTENCES))
    np.testing.assert_array_equal(minilm.embed([SENTENCES[i] for i in perm]), reference[perm])
    np.testing.assert_array_equal(MiniLMEmbedder(threads=2, cache=False).embed(SENTENCES), reference)
    for i, text in enumerate(SENTENCES):
        np.testing.assert_array_equal(minilm.embed([text])[0], reference[i])


def test_minilm_truncates_long_texts_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    long = " ".join(f"memory{i % 17}" for i in range(600))
    a, b = minilm.embed([long, long + " and then something completely different about volcanoes"])
    np.testing.assert_array_equal(a, b)


def test_minilm_separates_paraphrases_from_unrelated_pairs(minilm: MiniLMEmbedder) -> None:
    anchors = minilm.embed([a for a, _ in PAIRS])
    others = minilm.embed([b for _, b in PAIRS])
    sims = anchors @ others.T
    para = np.diag(sims)
    unrelated = sims[~np.eye(len(PAIRS), dtype=bool)]
    assert para.min() > 0.5, para
    assert unrelated.max() < 0.35, unrelated.max()
    assert para.mean() - unrelated.mean() > 0.5
    # every anchor ranks its own paraphrase first
    assert (sims.argmax(axis=1) == np.arange(len(PAIRS))).all()


def test_minilm_aembed_equals_embed(minilm: MiniLMEmbedder) -> None:
    np.testing.assert_array_equal(asyncio.run(minilm.aembed(SENTENCES)), minilm.embed(SENTENCES))


def test_minilm_nan_from_the_model_is_a_clear_error(minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    model = minilm._model()
    real = model.session

    class NaNSession:
        def run(self, names: list[str], feeds: dict[str, Any]) -> list[Any]:
            (hidden,) = real.run(names, feeds)
            hidden[-1, 0, 0] = np.nan  # last row of the batch: the longest text
            return [hidden]

    monkeypatch.setattr(model, "session", NaNSession())
    with pytest.raises(EmbeddingError, match=r"returned NaN or inf for text 1 \('a longer text"):
        minilm.embed(["short", "a longer text than the first one"])


def test_minilm_argument_checks() -> None:
    with pytest.raises(ValueError, match="threads: must be >= 1"):
        MiniLMEmbedder(threads=0)
    with pytest.raises(TypeError, match="batch_size: expected int"):
        MiniLMEmbedder(batch_size=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cache: expected bool or EmbeddingCache"):
        MiniLMEmbedder(cache="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="threads: expected int"):
        default_embedder(threads="2")  # type: ignore[arg-type]


def test_model_files_are_checked_by_hash(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(EmbeddingError, match=r"has sha256 .* expected 8199be6f"):
        minilm_mod._check_file(fake, minilm_mod._MODEL_SHA256, "the MiniLM ONNX model")
    with pytest.raises(EmbeddingError, match="not found"):
        minilm_mod._check_file(tmp_path / "missing", minilm_mod._MODEL_SHA256, "the MiniLM ONNX model")


def test_default_embedder_is_shared_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = default_embedder()
    assert default_embedder() is emb
    assert default_embedder(threads=2) is not emb
    assert emb.threads == 1 and emb.cache is EmbeddingCache.shared()
    seen: list[str] = []
    real = emb._embed

    def counting(texts: list[str]) -> NDArray[np.float32]:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(emb, "_embed", counting)
    texts = ["a text only this test embeds 1", "a text only this test embeds 2"]
    first = emb.embed([texts[0], texts[1], texts[0]])
    second = emb.embed(texts[::-1])
    assert sorted(seen) == sorted(texts)  # each distinct text embedded once, in one process
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second, first[[1, 0]])
    np.testing.assert_array_equal(first[:2], MiniLMEmbedder(cache=False).embed(texts))


def _no_network_prefix() -> list[str]:
    """``unshare -rn`` (a private network namespace with no interfaces) where the system allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def test_embedding_needs_no_network() -> None:
    """The default embedder loads and runs with no network: Python sockets refuse to connect, and
    where possible the process runs in a network namespace without interfaces (this catches native code too)."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network is disabled in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from mindcore.embed import default_embedder\n"
        "print(default_embedder().embed(['offline please']).shape)\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    cmd = [*_no_network_prefix(), sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 384)"


def test_importing_embed_and_llm_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, mindcore.embed, mindcore.llm\n"
        "print(sorted(m for m in ('openai', 'onnxruntime', 'tokenizers', 'httpx', 'httpx2') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


# --- the hashing embedder ------------------------------------------------------------------------


def test_hash_embedder_wraps_the_kernel() -> None:
    from mindcore.kernels import hash_embed

    emb = HashEmbedder(dim=96, seed=7)
    texts = ["reset my password", "how to reset a password", "", "sunny weather in Paris"]
    out = emb.embed(texts)
    np.testing.assert_array_equal(out, hash_embed(texts, dim=96, ngram_min=3, ngram_max=5, seed=7))
    assert out.shape == (4, 96) and out.dtype == np.float32 and out.flags.c_contiguous
    norms = np.linalg.norm(out, axis=1)
    np.testing.assert_allclose(norms[[0, 1, 3]], 1.0, atol=1e-6)
    assert norms[2] == 0.0  # no word at all: the zero vector (documented)
    assert out[0] @ out[1] > out[0] @ out[3]
    np.testing.assert_array_equal(asyncio.run(emb.aembed(texts)), out)
    big = [f"text number {i}" for i in range(300)]  # the async path that uses a worker thread
    np.testing.assert_array_equal(asyncio.run(emb.aembed(big)), emb.embed(big))


def test_hash_embedder_model_id_encodes_dim_seed_and_version() -> None:
    from mindcore.embed.hashing import HASH_VERSION

    assert HashEmbedder().model_id == f"mindcore-hash-v{HASH_VERSION}-d384-n3-5-s0"
    assert HashEmbedder(dim=64, seed=3).model_id == f"mindcore-hash-v{HASH_VERSION}-d64-n3-5-s3"
    assert HashEmbedder().dim == 384


def test_hash_version_pins_the_kernel_output() -> None:
    """If this fails, the kernel's hashing changed: bump HASH_VERSION (stored vectors carry it) and
    update these golden values."""
    from mindcore.embed.hashing import HASH_VERSION

    out = HashEmbedder(dim=16).embed(["mindcore remembers", "Tokyo"])
    assert HASH_VERSION == 1
    golden = GOLDEN_HASH_V1
    np.testing.assert_allclose(out, golden, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dim": 4}, ValueError, r"dim: must be in \[8, 8192\]"),
        ({"dim": 10_000}, ValueError, r"dim: must be in \[8, 8192\]"),
        ({"dim": 32.0}, TypeError, "dim: expected int"),
        ({"dim": True}, TypeError, "dim: expected int"),
        ({"seed": -1}, ValueError, "seed: must be in"),
        ({"seed": "0"}, TypeError, "seed: expected int"),
    ],
)
def test_hash_embedder_argument_checks(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        HashEmbedder(**kwargs)


# --- the cache -------------------------------------------------------------------------------------


class CountingEmbedder:
    """A deterministic embedder that records what it was asked to embed."""

    def __init__(self, dim: int = 8, model_id: str = "counting-v1") -> None:
        self.dim = dim
        self.model_id = model_id
        self.seen: list[str] = []

    def _vectors(self, texts: list[str]) -> NDArray[np.float32]:
        rng = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts]
        return normalize_rows(np.array(rng).reshape(len(texts), self.dim), self.model_id)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return self._vectors(list(texts))

    async def aembed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.embed(texts)


def test_cache_get_put_and_model_isolation() -> None:
    cache = EmbeddingCache()
    v = np.array([0.6, 0.8], dtype=np.float32)
    cache.put("m1", "x", v)
    v[0] = 99.0  # the cache holds a copy
    stored = cache.get("m1", "x")
    assert stored is not None
    np.testing.assert_array_equal(stored, np.array([0.6, 0.8], dtype=np.float32))
    assert not stored.flags.writeable
    assert cache.get("m2", "x") is None
    assert cache.get("m1", "y") is None
    assert (cache.hits, cache.misses) == (1, 2)
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.hits == 0


def test_cache_evicts_least_recently_used_by_bytes() -> None:
    one = EmbeddingCache._size(("m", "t0"), np.zeros(16, dtype=np.float32))
    cache = EmbeddingCache(max_bytes=3 * one)
    for i in range(3):
        cache.put("m", f"t{i}", np.full(16, i, dtype=np.float32))
    assert cache.get("m", "t0") is not None  # t0 becomes the most recently used
    cache.put("m", "t3", np.zeros(16, dtype=np.float32))
    assert len(cache) == 3 and cache.nbytes <= cache.max_bytes
    assert cache.get("m", "t1") is None  # t1 was the least recently used
    assert all(cache.get("m", t) is not None for t in ("t0", "t2", "t3"))
    cache.put("m", "t2", np.ones(16, dtype=np.float32))  # overwrite keeps the byte count right
    assert cache.nbytes == 3 * one
    tiny = EmbeddingCache(max_bytes=10)
    tiny.put("m", "x", np.zeros(16, dtype=np.float32))  # larger than the whole cache: not kept
    assert len(tiny) == 0
    with pytest.raises(ValueError, match="max_bytes: must be >= 0"):
        EmbeddingCache(max_bytes=-1)


def test_cached_embedder_embeds_each_text_once() -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, cache=EmbeddingCache())
    assert emb.dim == 8 and emb.model_id == "counting-v1"
    out = emb.embed(["a", "b", "a", "c"])
    assert inner.seen == ["a", "b", "c"]
    np.testing.assert_array_equal(out, inner._vectors(["a", "b", "a", "c"]))
    out2 = emb.embed(["c", "d", "a"])
    assert inner.seen == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(out2, inner._vectors(["c", "d", "a"]))
    out2[:] = 0.0  # callers own their arrays: the cache is untouched
    np.testing.assert_array_equal(emb.embed(["c"]), inner._vectors(["c"]))
    assert emb.embed([]).shape == (0, 8)
    np.testing.assert_array_equal(asyncio.run(emb.aembed(["a", "e"])), inner._vectors(["a", "e"]))
    assert inner.seen[-1] == "e"


def test_cached_embedder_keys_by_model_id() -> None:
    cache = EmbeddingCache()
    one, two = CountingEmbedder(model_id="one"), CountingEmbedder(model_id="two")
    CachedEmbedder(one, cache=cache).embed(["same text"])
    CachedEmbedder(two, cache=cache).embed(["same text"])
    assert one.seen == ["same text"] and two.seen == ["same text"]


def test_cached_embedder_checks_its_inner_embedder() -> None:
    with pytest.raises(TypeError, match="inner: expected an Embedder"):
        CachedEmbedder(object())  # type: ignore[arg-type]

    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
            return np.zeros((1, self.dim), dtype=np.float32)

    with pytest.raises(EmbeddingError, match=r"counting-v1: embedder returned \(1, 8\) for 2 texts"):
        CachedEmbedder(Broken(), cache=EmbeddingCache()).embed(["x", "y"])
    assert CachedEmbedder(HashEmbedder()).cache is EmbeddingCache.shared()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "é", "", "long text"]), max_size=8), max_size=6))
def test_cached_embedder_equals_its_inner_embedder(calls: list[list[str]]) -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, cache=EmbeddingCache())
    for texts in calls:
        np.testing.assert_array_equal(emb.embed(texts), inner._vectors(texts).reshape(len(texts), 8))
    seen_all = [t for texts in calls for t in texts]
    assert sorted(inner.seen) == sorted(set(seen_all))  # each distinct text exactly once


def test_cache_is_thread_safe() -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, cache=EmbeddingCache(max_bytes=40_000))  # small: evictions race too
    texts = [f"t{i}" for i in range(200)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(50):
                pick = [texts[i] for i in rng.integers(0, len(texts), 10)]
                np.testing.assert_array_equal(emb.embed(pick), inner._vectors(pick))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert emb.cache.nbytes <= emb.cache.max_bytes


# HashEmbedder(dim=16).embed(["mindcore remembers", "Tokyo"]) from the v1 kernel.
GOLDEN_HASH_V1: list[list[float]] = [
    [0.280056, 0.000000, 0.280056, 0.280056, -0.140028, -0.140028, -0.140028, 0.000000, 0.000000, 0.000000, -0.140028, 0.420084, 0.000000, 0.420084, -0.140028, 0.560112],
    [-0.301511, 0.301511, 0.000000, 0.301511, 0.000000, -0.301511, 0.000000, 0.000000, 0.000000, -0.301511, 0.000000, 0.301511, -0.301511, 0.000000, -0.603023, 0.000000],
]
