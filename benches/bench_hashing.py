"""hash_embed throughput on 10k LoCoMo turns (dim 384, char 3-5-grams + words) vs scikit-learn.

Baseline: scikit-learn's ``HashingVectorizer``, configured as the closest equivalent: a word
vectorizer plus a ``char_wb`` 3-5-gram vectorizer (signed hashing, no per-vectorizer norm) summed,
L2-normalised and made dense float32, the same shape of output mindcore returns. The two hash
different strings with different functions (murmur3 vs FNV-1a + fmix64), so the values cannot
match: the bench checks shape, dtype, unit (or zero) norms and which rows are zero. Without
scikit-learn, a pure-Python implementation of mindcore's exact algorithm is the baseline (on
fewer texts) and must agree to float tolerance.

    pytest benches/bench_hashing.py --benchmark-only -q
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

from mindcore.eval import data_dir
from mindcore.kernels import bm25_tokenize, hash_embed

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
N_TEXTS = 1_000 if QUICK else 10_000
DIM = 384
GROUP = f"hashing: {N_TEXTS // 1000}k LoCoMo turns dim={DIM}"


@pytest.fixture(scope="module")
def turns() -> list[str]:
    path = data_dir() / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip(f"LoCoMo not found at {path}")
    texts: list[str] = []
    for conv in json.loads(path.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    caption = turn.get("blip_caption")
                    texts.append(f"{turn['text']} {caption}" if caption else turn["text"])
    # 5,882 turns; cycle them to the bench size (a stateless embedder gains nothing from repeats).
    return [texts[i % len(texts)] for i in range(N_TEXTS)]


def _mark(benchmark: Any, impl: str, texts: list[str]) -> None:
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["items"] = len(texts)
    benchmark.extra_info["bytes"] = sum(len(t.encode()) for t in texts)


def test_mindcore(benchmark: Any, turns: list[str]) -> None:
    _mark(benchmark, "mindcore", turns)
    out = benchmark(lambda: hash_embed(turns, dim=DIM))
    assert out.shape == (len(turns), DIM) and out.dtype == np.float32
    _unit_or_zero(out)
    # Exactly the turns without a word (emoticons like ";)") embed to zero.
    np.testing.assert_array_equal(~out.any(axis=1), [not bm25_tokenize(t) for t in turns])


def _unit_or_zero(x: np.ndarray) -> None:
    norms = np.linalg.norm(x, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_scikit_learn(benchmark: Any, turns: list[str]) -> None:
    text = pytest.importorskip("sklearn.feature_extraction.text")
    words = text.HashingVectorizer(
        n_features=DIM, token_pattern=r"(?u)[^\W_]+", alternate_sign=True, norm=None, dtype=np.float32
    )
    chars = text.HashingVectorizer(
        n_features=DIM, analyzer="char_wb", ngram_range=(3, 5), alternate_sign=True, norm=None, dtype=np.float32
    )

    def run() -> np.ndarray:
        dense = (words.transform(turns) + chars.transform(turns)).toarray()
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        return np.divide(dense, norms, out=np.zeros_like(dense), where=norms > 0)

    _mark(benchmark, "scikit-learn", turns)
    out = benchmark.pedantic(run, rounds=3 if QUICK else 5, iterations=1)
    ours = hash_embed(turns, dim=DIM)
    assert out.shape == ours.shape and out.dtype == ours.dtype
    _unit_or_zero(out)
    # char_wb also hashes punctuation-only turns, so it has at least mindcore's non-zero rows.
    assert out.any(axis=1)[ours.any(axis=1)].all()


_M64 = (1 << 64) - 1


def _python_embed(texts: list[str], dim: int = DIM) -> np.ndarray:
    """mindcore's algorithm in plain Python (see tests/test_hashing.py for the spelled-out reference)."""

    def fnv(h: int, data: bytes) -> int:
        for byte in data:
            h = ((h ^ byte) * 0x100000001B3) & _M64
        return h

    def fmix(h: int) -> int:
        h ^= h >> 33
        h = (h * 0xFF51AFD7ED558CCD) & _M64
        h ^= h >> 33
        h = (h * 0xC4CEB9FE1A85EC53) & _M64
        return h ^ (h >> 33)

    base = fnv(0xCBF29CE484222325, bytes(8))
    word_base, gram_base = fnv(base, b"w"), fnv(base, b"c")
    out = np.zeros((len(texts), dim), dtype=np.float64)
    for row, t in enumerate(texts):
        for word in bm25_tokenize(t):
            hashes = [fnv(word_base, word.encode())]
            padded = f"<{word}>"
            for n in range(3, 6):
                hashes.extend(fnv(gram_base, padded[i : i + n].encode()) for i in range(len(padded) - n + 1))
            for h in map(fmix, hashes):
                out[row, (h * dim) >> 64] += -1.0 if h & 1 else 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0).astype(np.float32)


def test_pure_python_fallback(benchmark: Any, turns: list[str]) -> None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("scikit-learn is installed: it is the baseline")
    subset = turns[:500]
    _mark(benchmark, "python", subset)
    benchmark.group = f"hashing: 500 LoCoMo turns dim={DIM}"
    out = benchmark.pedantic(lambda: _python_embed(subset), rounds=2, iterations=1)
    np.testing.assert_allclose(out, hash_embed(subset, dim=DIM), rtol=1e-6, atol=1e-7)


def test_mindcore_small(benchmark: Any, turns: list[str]) -> None:
    """The fallback's case, so its group has mindcore too (skipped along with the fallback)."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("scikit-learn is installed: the fallback case does not run")
    subset = turns[:500]
    _mark(benchmark, "mindcore", subset)
    benchmark.group = f"hashing: 500 LoCoMo turns dim={DIM}"
    benchmark(lambda: hash_embed(subset, dim=DIM))
