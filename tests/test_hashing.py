"""The hashing embedder against a pure-Python reference of its features and hash; determinism, norms,
validation and a little retrieval quality."""

from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mindcore.kernels.hashing
from mindcore.kernels import bm25_tokenize, hash_embed

_M64 = (1 << 64) - 1
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def _fnv1a(h: int, data: bytes) -> int:
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _M64
    return h


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def ref_features(text: str, ngram_min: int, ngram_max: int) -> list[tuple[bytes, str]]:
    """(kind, feature) pairs: every word, then the char n-grams of '<word>'."""
    out: list[tuple[bytes, str]] = []
    for word in bm25_tokenize(text):
        out.append((b"w", word))
        padded = f"<{word}>"
        for n in range(ngram_min, ngram_max + 1):
            out.extend((b"c", padded[i : i + n]) for i in range(len(padded) - n + 1))
    return out


def ref_embed(text: str, dim: int = 384, ngram_min: int = 3, ngram_max: int = 5, seed: int = 0) -> np.ndarray:
    v = np.zeros(dim)
    base = _fnv1a(_FNV_OFFSET, seed.to_bytes(8, "little"))
    for kind, feat in ref_features(text, ngram_min, ngram_max):
        h = _fmix64(_fnv1a(_fnv1a(base, kind), feat.encode()))
        v[(h * dim) >> 64] += -1.0 if h & 1 else 1.0
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def test_feature_extraction_by_hand() -> None:
    assert ref_features("Hi!", 3, 5) == [(b"w", "hi"), (b"c", "<hi"), (b"c", "hi>"), (b"c", "<hi>")]
    # A dimension per feature, no collisions at this size: 4 features of weight 1/2 each.
    v = hash_embed(["Hi!"], dim=8192)[0]
    assert sorted(np.abs(v[v != 0]).tolist()) == [0.5] * 4


TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Caroline went to the LGBTQ support group yesterday and it was powerful!",
    "a",
    "ÜBER straße — naïve café 東京タワー 2024",
    "repeat repeat repeat",
    "",
]


@pytest.mark.parametrize(
    ("dim", "ngram_min", "ngram_max", "seed"),
    [(384, 3, 5, 0), (8, 3, 5, 0), (1000, 1, 2, 7), (64, 4, 4, 2**64 - 1), (8192, 2, 6, 12345)],
)
def test_matches_reference(dim: int, ngram_min: int, ngram_max: int, seed: int) -> None:
    got = hash_embed(TEXTS, dim=dim, ngram_min=ngram_min, ngram_max=ngram_max, seed=seed)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), dim)
    want = np.stack([ref_embed(t, dim, ngram_min, ngram_max, seed) for t in TEXTS])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30), st.integers(8, 300), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2**64 - 1))
def test_matches_reference_on_random_text(text: str, dim: int, nmin: int, extra: int, seed: int) -> None:
    got = hash_embed([text], dim=dim, ngram_min=nmin, ngram_max=nmin + extra, seed=seed)[0]
    np.testing.assert_allclose(got, ref_embed(text, dim, nmin, nmin + extra, seed), rtol=1e-6, atol=1e-7)


# Pinned from this implementation (checked against the reference above): any change to the tokenizer,
# the hash, the feature set or the normalisation shows up here, on every platform.
# "hello world": 2 words + 24 n-grams; signed counts per dimension at dim=64, norm sqrt(30).
HELLO_COUNTS_DIM64 = {
    5: -2, 6: -1, 17: -1, 18: -1, 21: -1, 29: -1, 31: -2, 33: -1, 35: -2,
    39: 1, 41: -1, 42: -1, 45: -2, 48: -1, 50: 1, 51: -1, 56: -1, 58: 1,
}  # fmt: skip


def test_pinned_values() -> None:
    v = hash_embed(["hello world"], dim=64)[0]
    want = np.zeros(64, dtype=np.float32)
    for i, c in HELLO_COUNTS_DIM64.items():
        want[i] = np.float32(c / np.sqrt(30.0))
    np.testing.assert_array_equal(v, want)
    w = hash_embed(["Memory for LLM agents"], dim=384, seed=42)[0]
    assert np.flatnonzero(w)[:3].tolist() == [4, 19, 27]
    assert w[[4, 19, 27]].tolist() == [np.float32(-0.15811388194561005)] * 3


def test_deterministic_across_processes() -> None:
    code = "from mindcore.kernels import hash_embed; print(hash_embed(['hello world'], dim=16).tobytes().hex())"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    assert runs == {hash_embed(["hello world"], dim=16).tobytes().hex() + "\n"}


def test_unit_norm_and_zero_vector() -> None:
    v = hash_embed(["some text", "", "   \t\n", "!!! ...", "x"])
    norms = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(norms, [1, 0, 0, 0, 1], atol=1e-6)
    assert not v[1:4].any()


def test_batch_equals_single_and_parallel_is_stable() -> None:
    texts = [f"turn {i}: we talked about topic {i % 17} and plan {i * 7}" for i in range(2000)]
    batch = hash_embed(texts, dim=128)
    for i in (0, 1, 999, 1999):
        np.testing.assert_array_equal(batch[i], hash_embed([texts[i]], dim=128)[0])
    np.testing.assert_array_equal(batch, hash_embed(texts, dim=128))
    np.testing.assert_array_equal(batch[:50], hash_embed(texts[:50], dim=128))


def test_empty_batch() -> None:
    out = hash_embed([], dim=32)
    assert out.shape == (0, 32) and out.dtype == np.float32


PARAPHRASES = [
    ("How do I reset my password?", "I forgot my password and need to reset it", "What time does the train to Berlin leave?"),
    ("The cat is sleeping on the sofa", "A cat sleeps on the couch", "Quarterly revenue grew by ten percent"),
    ("Book a flight to New York", "Please book me a flight to New York", "My favourite colour is blue"),
    ("She loves hiking in the mountains", "Hiking in the mountains is her passion", "The compiler reported a syntax error"),
    ("Send an email to my manager", "Email my manager about the meeting", "Bananas are rich in potassium"),
    ("What's the weather forecast for tomorrow?", "Tomorrow's weather forecast", "I adopted a puppy last week"),
]


@pytest.mark.parametrize(("anchor", "paraphrase", "unrelated"), PARAPHRASES)
def test_paraphrases_score_clearly_higher(anchor: str, paraphrase: str, unrelated: str) -> None:
    a, p, u = hash_embed([anchor, paraphrase, unrelated])
    assert float(a @ p) > float(a @ u) + 0.15


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"dim": 7}, ValueError, r"dim: must be in \[8, 8192\], got 7"),
        ({"dim": 8193}, ValueError, r"dim: must be in \[8, 8192\]"),
        ({"dim": 64.0}, TypeError, r"dim: expected int"),
        ({"ngram_min": 0}, ValueError, r"ngram_min"),
        ({"ngram_min": 4, "ngram_max": 3}, ValueError, r"ngram_max"),
        ({"ngram_max": 33}, ValueError, r"ngram_max"),
        ({"seed": -1}, ValueError, r"seed"),
        ({"seed": 2**64}, ValueError, r"seed"),
        ({"seed": True}, TypeError, r"seed"),
    ],
)  # fmt: skip
def test_parameter_validation(kwargs: dict[str, object], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        hash_embed(["x"], **kwargs)  # type: ignore[arg-type]


def test_dim_bounds_are_inclusive() -> None:
    assert hash_embed(["x"], dim=8).shape == (1, 8)
    assert hash_embed(["x"], dim=8192).shape == (1, 8192)


def test_texts_validation() -> None:
    with pytest.raises(TypeError, match="texts: expected a sequence of str, got str"):
        hash_embed("just one string")
    with pytest.raises(TypeError, match=r"texts: .*item 1 is NoneType"):
        hash_embed(["ok", None])  # type: ignore[list-item]
    assert hash_embed(t for t in ["a", "b"]).shape == (2, 384)


def test_docstring_examples() -> None:
    assert doctest.testmod(mindcore.kernels.hashing).failed == 0
