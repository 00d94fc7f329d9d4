"""near_duplicates and dedupe_within against plain Python references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from mindcore.kernels import dedupe_within, near_duplicates

F32 = np.float32


def ref_sims(a: NDArray[Any], b: NDArray[Any], metric: str) -> NDArray[np.float64]:
    """All pairwise similarities in float64 (cosine of a zero vector is 0)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    dot = a64 @ b64.T
    if metric == "dot":
        return dot
    norms = np.outer(np.linalg.norm(a64, axis=1), np.linalg.norm(b64, axis=1))
    return np.divide(dot, norms, out=np.zeros_like(dot), where=norms > 0)


def ref_near(new: NDArray[Any], existing: NDArray[Any], threshold: float, metric: str) -> list[tuple[int, float]]:
    sims = ref_sims(new, existing, metric)
    out = []
    for row in sims:
        if not len(row):
            out.append((-1, float("nan")))
            continue
        best = int(np.argmax(row))  # the first maximum: lowest index on ties
        out.append((best if row[best] >= threshold else -1, float(row[best])))
    return out


def ref_dedupe(vectors: NDArray[Any], threshold: float, metric: str) -> list[bool]:
    sims = ref_sims(vectors, vectors, metric)
    kept: list[int] = []
    keep = []
    for i in range(len(vectors)):
        dup = any(sims[i, j] >= threshold for j in kept)
        keep.append(not dup)
        if not dup:
            kept.append(i)
    return keep


@st.composite
def int_rows(draw: st.DrawFn, d: int, max_rows: int) -> NDArray[np.float32]:
    """Rows from a small pool, some scaled: duplicates and exact ties are common."""
    pool = draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=1, max_size=5))
    n = draw(st.integers(0, max_rows))
    picks = draw(st.lists(st.tuples(st.sampled_from(range(len(pool))), st.sampled_from([1, 2])), min_size=n, max_size=n))
    return np.array([[x * s for x in pool[p]] for p, s in picks], dtype=F32).reshape(n, d)


# Dot products of small integers are exact in float32, so with metric="dot" the kernel must
# agree with the reference exactly, including at the threshold.
@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 5), st.sampled_from([-2.0, 0.0, 1.0, 4.0, 9.0]))
def test_near_duplicates_dot_exact(data: st.DataObject, d: int, threshold: float) -> None:
    new = data.draw(int_rows(d, 12))
    existing = data.draw(int_rows(d, 40))
    idx, sims = near_duplicates(new, existing, threshold=threshold, metric="dot")
    assert idx.dtype == np.int64 and sims.dtype == F32 and idx.shape == sims.shape == (len(new),)
    for i, (j, s) in enumerate(ref_near(new, existing, threshold, "dot")):
        assert idx[i] == j
        np.testing.assert_equal(sims[i], np.float32(s))


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 5), st.sampled_from([-2.0, 0.0, 1.0, 4.0, 9.0]))
def test_dedupe_within_dot_exact(data: st.DataObject, d: int, threshold: float) -> None:
    vectors = data.draw(int_rows(d, 80))
    keep = dedupe_within(vectors, threshold=threshold, metric="dot")
    assert keep.dtype == np.bool_ and keep.shape == (len(vectors),)
    assert keep.tolist() == ref_dedupe(vectors, threshold, "dot")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 150), st.integers(1, 40), st.floats(0.3, 0.99), st.integers(0, 2**32 - 1))
def test_cosine_matches_reference(n: int, d: int, threshold: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((max(n // 3, 1), d)).astype(F32)
    # Noisy copies of a few base vectors, plus scaled copies and a zero row: real near-duplicates.
    vectors = base[rng.integers(0, len(base), size=n)] * rng.uniform(0.5, 2, size=(n, 1)).astype(F32)
    vectors += rng.normal(0, 0.3, size=vectors.shape).astype(F32)
    if n:
        vectors[0] = 0
    assume((np.abs(ref_sims(vectors, vectors, "cosine") - threshold) > 1e-5).all())  # float noise must not decide
    assert dedupe_within(vectors, threshold=threshold).tolist() == ref_dedupe(vectors, threshold, "cosine")
    new, existing = vectors[: n // 2], vectors[n // 2 :]
    idx, sims = near_duplicates(new, existing, threshold=threshold)
    for i, (j, s) in enumerate(ref_near(new, existing, threshold, "cosine")):
        np.testing.assert_allclose(sims[i], s, atol=1e-5)
        if j >= 0:
            assert idx[i] >= 0 and abs(ref_sims(new[i : i + 1], existing[idx[i] : idx[i] + 1], "cosine")[0, 0] - s) <= 1e-5
        else:
            assert idx[i] == -1


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 300), st.integers(1, 24), st.floats(0.0, 0.99), st.integers(0, 2**32 - 1))
def test_dropped_rows_always_find_their_kept_twin(n: int, d: int, threshold: float, seed: int) -> None:
    """The contract long-term memory relies on: no float noise between the two functions."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(F32)
    vectors[rng.random(n) < 0.3] *= -1
    keep = dedupe_within(vectors, threshold=threshold)
    assert keep[0]
    if keep.all():
        return
    idx, sims = near_duplicates(vectors[~keep], vectors[keep], threshold=threshold)
    assert (idx >= 0).all() and (sims >= np.float32(threshold)).all()


def test_examples() -> None:
    store = np.array([[1, 0], [0, 1], [1, 0]], F32)
    idx, sims = near_duplicates(np.array([[3, 0], [1, 1], [0, 0]], F32), store, threshold=0.9)
    assert idx.tolist() == [0, -1, -1]  # tie between rows 0 and 2 -> 0; zero vector -> sim 0
    np.testing.assert_allclose(sims, [1.0, np.sqrt(0.5), 0.0], rtol=1e-6)
    # Greedy over *kept* rows: b is dropped (dup of a); c is close to b only, so it stays.
    a, b, c = [1.0, 0.0], [0.8, 0.6], [0.28, 0.96]
    assert dedupe_within(np.array([a, b, c], F32), threshold=0.75).tolist() == [True, False, True]


def test_empty_inputs() -> None:
    idx, sims = near_duplicates(np.ones((2, 3), F32), np.zeros((0, 3), F32), threshold=0.5)
    assert idx.tolist() == [-1, -1] and np.isnan(sims).all()
    idx, sims = near_duplicates(np.zeros((0, 3), F32), np.ones((2, 3), F32), threshold=0.5)
    assert idx.shape == sims.shape == (0,)
    assert dedupe_within(np.zeros((0, 3), F32), threshold=0.5).shape == (0,)


def test_bad_input() -> None:
    m = np.eye(3, dtype=F32)
    with pytest.raises(ValueError, match=r"^new: new has dimension 2 but existing has dimension 3"):
        near_duplicates(np.ones((1, 2), F32), m, threshold=0.5)
    with pytest.raises(ValueError, match=r"^threshold: must be finite"):
        near_duplicates(m, m, threshold=float("nan"))
    with pytest.raises(ValueError, match=r"^threshold: must be finite"):
        dedupe_within(m, threshold=float("inf"))
    with pytest.raises(ValueError, match=r"^metric: expected"):
        dedupe_within(m, threshold=0.5, metric="l2")
    with pytest.raises(TypeError, match=r"^existing: expected dtype float32"):
        near_duplicates(m, m.astype(np.float64), threshold=0.5)
    with pytest.raises(ValueError, match=r"^new: expected a 2-D array"):
        near_duplicates(m[0], m, threshold=0.5)
    with pytest.raises(ValueError, match=r"^vectors: array must be C-contiguous"):
        dedupe_within(np.ones((4, 4), F32)[:, ::2], threshold=0.5)
    bad = m.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"^existing: row 2, column 1 is NaN"):
        near_duplicates(m, bad, threshold=0.5)
    with pytest.raises(ValueError, match=r"^vectors: row 2, column 1 is NaN"):
        dedupe_within(bad, threshold=0.5)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 300),
    m=st.integers(1, 4),
    d=st.sampled_from([3, 8, 40, 384]),
    head=st.integers(0, 400),
    threshold=st.sampled_from([-1.0, 0.0, 0.5, 0.92, 0.99]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pruned_scan_finds_what_the_full_scan_finds(n: int, m: int, d: int, head: int, threshold: float,
                                                      seed: int) -> None:
    from mindcore.kernels import near_duplicates_pruned, row_norms

    rng = np.random.default_rng(seed)
    new = rng.standard_normal((m, d)).astype(F32)
    existing = rng.standard_normal((n, d)).astype(F32)
    # Noisy copies of the new rows, spread around the threshold, and a zero row.
    for j in range(0, n, 3):
        existing[j] = 3 * new[j % m] + rng.uniform(0, 0.6) * existing[j]
    existing[n // 2] = 0
    idx, sims = near_duplicates(new, existing, threshold=threshold)
    got, got_sims = near_duplicates_pruned(new, existing, row_norms(existing, head=head), threshold=threshold)
    assert got.tolist() == idx.tolist()
    assert np.array_equal(got_sims[idx >= 0], sims[idx >= 0]) and np.isnan(got_sims[idx < 0]).all()


def test_row_norms_reject_what_near_duplicates_rejects() -> None:
    from mindcore.kernels import near_duplicates_pruned, row_norms

    bad = np.array([[1, 0], [np.inf, 0]], dtype=F32)
    with pytest.raises(ValueError, match=r"existing: row 1, column 0 is inf") as full:
        near_duplicates(bad[:1], bad, threshold=0.5)
    with pytest.raises(ValueError, match=r"existing: row 1, column 0 is inf") as pruned:
        row_norms(bad)
    assert str(full.value) == str(pruned.value)
    good = np.eye(2, dtype=F32)
    norms = row_norms(good)
    with pytest.raises(ValueError, match="inv_norms: has 2 entries but existing has 1 rows"):
        near_duplicates_pruned(good[:1], good[:1], norms, threshold=0.5)
