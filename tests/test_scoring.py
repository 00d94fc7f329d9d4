"""hybrid_topk against a straightforward numpy reference (float64 scores, stable sort)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from mindcore.errors import KernelError, KernelTypeError
from mindcore.kernels import TopK, hybrid_topk, row_norms

F32 = np.float32
DAY = 86_400_000


def ref_scores(
    q: NDArray[Any],
    m: NDArray[Any],
    *,
    metric: str = "cosine",
    w_sim: float = 1.0,
    w_rec: float = 0.0,
    w_extra: float = 0.0,
    timestamps: NDArray[np.int64] | None = None,
    now_ms: int = 0,
    half_life_ms: float | None = None,
    tau_ms: float | None = None,
    extra: NDArray[Any] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    q64, m64 = q.astype(np.float64), m.astype(np.float64)
    dot = m64 @ q64 if len(m64) else np.zeros(0)
    if metric == "cosine":
        norms = np.linalg.norm(m64, axis=1) * np.linalg.norm(q64)
        sim = np.divide(dot, norms, out=np.zeros_like(dot), where=norms > 0)
    else:
        sim = dot
    score = w_sim * sim
    if w_rec:
        assert timestamps is not None
        age = np.maximum(now_ms - timestamps, 0).astype(np.float64)
        decay = np.exp2(-age / half_life_ms) if half_life_ms is not None else np.exp(-age / tau_ms)
        score = score + w_rec * decay
    if w_extra:
        assert extra is not None
        score = score + w_extra * extra.astype(np.float64)
    return score, sim


def ref_topk(
    score: NDArray[np.float64], k: int, mask: NDArray[np.bool_] | None = None, min_score: float | None = None
) -> NDArray[np.int64]:
    keep = np.ones(len(score), bool) if mask is None else mask.copy()
    if min_score is not None:
        keep &= score >= min_score
    idx = np.flatnonzero(keep)
    order = np.argsort(-score[idx], kind="stable")  # stable: equal scores keep the lower index first
    return idx[order][:k]


# --- exact properties on small-integer data -------------------------------------------------------
# With small integers every dot product is exact in float32 whatever the summation order, and
# with dyadic weights, whole half-lives and quarter-step extras every score is exact too: the
# kernel must then match the reference index for index, ties included.


@st.composite
def int_problem(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 60))
    d = draw(st.integers(1, 6))
    # Rows drawn from a small pool, so exact ties (duplicate rows) are common.
    pool = draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=1, max_size=6))
    rows = draw(st.lists(st.sampled_from(range(len(pool))), min_size=n, max_size=n))
    m = np.array([pool[r] for r in rows], dtype=F32).reshape(n, d)
    q = np.array(draw(st.lists(st.integers(-3, 3), min_size=d, max_size=d)), dtype=F32)
    now = 1_700_000_000_000
    h = 3_600_000
    kw: dict[str, Any] = {
        "metric": "dot",
        "w_sim": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        "w_rec": draw(st.sampled_from([0.0, 0.25, 1.0])),
        "w_extra": draw(st.sampled_from([0.0, 0.5, -1.0])),
        # Whole half-lives, some in the future (age clamps to 0).
        "timestamps": now - h * np.array(draw(st.lists(st.integers(-2, 5), min_size=n, max_size=n)), np.int64),
        "now_ms": now,
        "half_life_ms": float(h),
        "extra": np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), F32) / 4,
    }
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool) if draw(st.booleans()) else None
    min_score = draw(st.sampled_from([None, 0.0, 1.5, -2.0]))
    k = draw(st.integers(1, 70))
    return {"q": q, "m": m, "k": k, "kw": kw, "mask": mask, "min_score": min_score}


@settings(max_examples=300, deadline=None)
@given(int_problem())
def test_topk_equals_stable_sort_exactly(p: dict[str, Any]) -> None:
    score, sim = ref_scores(p["q"], p["m"], **p["kw"])
    want = ref_topk(score, p["k"], p["mask"], p["min_score"])
    got = hybrid_topk(p["q"], p["m"], k=p["k"], mask=p["mask"], min_score=p["min_score"], **p["kw"])
    assert isinstance(got, TopK)
    assert got.indices.dtype == np.int64 and got.scores.dtype == F32 and got.similarities.dtype == F32
    np.testing.assert_array_equal(got.indices, want)
    np.testing.assert_array_equal(got.scores, score[want].astype(F32))
    np.testing.assert_array_equal(got.similarities, sim[want].astype(F32))


@settings(max_examples=150, deadline=None)
@given(int_problem(), st.integers(1, 5), st.sampled_from(["cosine", "dot"]))
def test_batch_equals_single_for_each_row(p: dict[str, Any], nq: int, metric: str) -> None:
    rng = np.random.default_rng(nq)
    d = p["m"].shape[1]
    queries = rng.integers(-3, 4, size=(nq, d)).astype(F32)
    if len(p["m"]):
        queries[0] = p["m"][0]  # a query equal to a row: exact top hit (and ties with its duplicates)
    kw = {**p["kw"], "metric": metric, "mask": p["mask"], "min_score": p["min_score"], "k": p["k"]}
    batch = hybrid_topk(queries, p["m"], **kw)
    width = min(p["k"], len(p["m"]))
    assert batch.indices.shape == batch.scores.shape == batch.similarities.shape == (nq, width)
    for i in range(nq):
        one = hybrid_topk(queries[i], p["m"], **kw)
        n_hits = len(one.indices)
        # Exact data: the GEMM path and the fused path agree bit for bit.
        np.testing.assert_array_equal(batch.indices[i, :n_hits], one.indices)
        np.testing.assert_array_equal(batch.scores[i, :n_hits], one.scores)
        np.testing.assert_array_equal(batch.similarities[i, :n_hits], one.similarities)
        assert (batch.indices[i, n_hits:] == -1).all()
        assert np.isneginf(batch.scores[i, n_hits:]).all()
        assert np.isnan(batch.similarities[i, n_hits:]).all()


# --- float data: equal to the reference within float32 tolerance --------------------------------


def assert_close_topk(got: TopK, score: NDArray[np.float64], sim: NDArray[np.float64], k: int, tol: float) -> None:
    """A top-k under float noise: the right scores, best first, ties by index, nothing better left out."""
    want = ref_topk(score, k)
    assert len(got.indices) == len(want)
    np.testing.assert_allclose(got.scores, score[got.indices], atol=tol)
    np.testing.assert_allclose(got.similarities, sim[got.indices], atol=tol)
    np.testing.assert_allclose(np.sort(got.scores)[::-1], score[want], atol=tol)
    assert (np.diff(got.scores) <= 0).all()
    same = np.diff(got.scores) == 0
    assert (np.diff(got.indices)[same] > 0).all()
    if len(want):
        left_out = np.setdiff1d(np.arange(len(score)), got.indices)
        assert (score[left_out] <= got.scores[-1] + tol).all()


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 400),
    st.integers(1, 70),
    st.integers(1, 30),
    st.sampled_from(["cosine", "dot"]),
    st.integers(0, 2**32 - 1),
)
def test_float_data_matches_reference(n: int, d: int, k: int, metric: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, d)).astype(F32)
    m[rng.integers(0, n, size=n // 10)] = 0  # zero rows: cosine 0
    q = rng.standard_normal(d).astype(F32)
    now = 1_700_000_000_000
    kw: dict[str, Any] = {
        "metric": metric,
        "w_sim": 0.6,
        "w_rec": 0.2,
        "w_extra": 0.2,
        "timestamps": now - rng.integers(-DAY, 90 * DAY, size=n),
        "now_ms": now,
        "tau_ms": 30.0 * DAY,
        "extra": rng.random(n).astype(F32),
    }
    score, sim = ref_scores(q, m, **kw)
    assert_close_topk(hybrid_topk(q, m, k=k, **kw), score, sim, k, tol=1e-5 * max(1.0, float(np.abs(sim).max())))
    queries = rng.standard_normal((3, d)).astype(F32)
    batch = hybrid_topk(queries, m, k=k, **kw)
    for i in range(3):
        score, sim = ref_scores(queries[i], m, **kw)
        real = batch.indices[i] >= 0
        row = TopK(batch.indices[i][real], batch.scores[i][real], batch.similarities[i][real])
        assert_close_topk(row, score, sim, k, tol=1e-5 * max(1.0, float(np.abs(sim).max())))


def test_mind_and_ltm_weightings() -> None:
    rng = np.random.default_rng(0)
    n, d = 5000, 384
    m = rng.standard_normal((n, d)).astype(F32)
    q = rng.standard_normal(d).astype(F32)
    now = 1_760_000_000_000
    ts = now - rng.integers(0, 365 * DAY, size=n)
    extra = rng.random(n).astype(F32)
    for weights, decay in (((0.6, 0.2, 0.2), {"tau_ms": 30 * DAY}), ((0.7, 0.2, 0.1), {"half_life_ms": 30 * DAY})):
        kw: dict[str, Any] = dict(zip(("w_sim", "w_rec", "w_extra"), weights, strict=True))
        kw.update(decay, timestamps=ts, now_ms=now, extra=extra)
        score, sim = ref_scores(q, m, **kw)
        assert_close_topk(hybrid_topk(q, m, k=10, **kw), score, sim, 10, tol=1e-5)


def test_decay_values() -> None:
    m = np.ones((4, 2), F32)
    q = np.ones(2, F32)
    now = 10 * DAY
    ts = np.array([now, now - DAY, now - 3 * DAY, now + DAY])  # the last is in the future: age 0
    top = hybrid_topk(q, m, k=4, w_sim=0, w_rec=1, timestamps=ts, now_ms=now, half_life_ms=DAY)
    assert top.indices.tolist() == [0, 3, 1, 2]
    np.testing.assert_array_equal(top.scores, np.array([1, 1, 0.5, 0.125], F32))
    top = hybrid_topk(q, m, k=4, w_sim=0, w_rec=2, timestamps=ts, now_ms=now, tau_ms=DAY)
    np.testing.assert_allclose(top.scores, 2 * np.exp([0, 0, -1, -3]), rtol=1e-6)


def test_now_defaults_to_the_current_time() -> None:
    m = np.ones((2, 2), F32)
    now = time.time_ns() // 1_000_000
    ts = np.array([now, now - 3_600_000])
    top = hybrid_topk(m[0], m, k=2, w_sim=0, w_rec=1, timestamps=ts, half_life_ms=3_600_000)
    np.testing.assert_allclose(top.scores, [1.0, 0.5], rtol=1e-3)


def test_mask_and_min_score() -> None:
    m = np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0]], F32)
    q = np.array([1, 0], F32)
    top = hybrid_topk(q, m, k=3, mask=np.array([False, True, True, True]))
    assert top.indices.tolist() == [1, 2, 3]
    assert hybrid_topk(q, m, k=4, min_score=0.0).indices.tolist() == [0, 1, 2]  # inclusive: cos 0 kept
    assert hybrid_topk(q, m, k=4, min_score=1e-6).indices.tolist() == [0, 1]
    assert hybrid_topk(q, m, k=4, min_score=2.0).indices.tolist() == []
    batch = hybrid_topk(np.stack([q, -q]), m, k=2, min_score=0.5)
    assert batch.indices.tolist() == [[0, 1], [3, -1]]


def test_zero_vectors_have_similarity_zero() -> None:
    m = np.array([[0, 0], [1, 0], [-1, 0]], F32)
    top = hybrid_topk(np.array([1, 0], F32), m, k=3)
    assert top.indices.tolist() == [1, 0, 2]
    assert top.similarities.tolist() == [1.0, 0.0, -1.0]
    top = hybrid_topk(np.zeros(2, F32), m, k=3)
    assert top.indices.tolist() == [0, 1, 2] and top.similarities.tolist() == [0, 0, 0]


def test_views_and_read_only_arrays_are_read_in_place() -> None:
    rng = np.random.default_rng(1)
    big = rng.standard_normal((100, 8)).astype(F32)
    view = big[40:60]  # C-contiguous view with an offset
    view.flags.writeable = False
    q = big[45]
    assert hybrid_topk(q, view, k=1).indices.tolist() == [5]


def test_empty_inputs() -> None:
    q = np.ones(3, F32)
    top = hybrid_topk(q, np.zeros((0, 3), F32), k=5)
    assert top.indices.shape == (0,) and top.scores.shape == (0,) and top.similarities.shape == (0,)
    top = hybrid_topk(np.ones((2, 3), F32), np.zeros((0, 3), F32), k=2)
    assert top.indices.shape == (2, 0)  # no row can be a hit: rows are min(k, n) = 0 wide
    top = hybrid_topk(np.zeros((0, 3), F32), np.ones((4, 3), F32), k=2)
    assert top.indices.shape == (0, 2)


def test_k_larger_than_n() -> None:
    m = np.eye(3, dtype=F32)
    assert hybrid_topk(m[1], m, k=100).indices.tolist() == [1, 0, 2]
    assert hybrid_topk(m[:2], m, k=4).indices.tolist() == [[0, 1, 2], [1, 0, 2]]  # min(k, n) wide


def test_a_huge_k_allocates_nothing_huge() -> None:
    m = np.eye(3, dtype=F32)
    top = hybrid_topk(m[:2], m, k=60_000_000)
    assert top.indices.shape == top.scores.shape == top.similarities.shape == (2, 3)
    assert hybrid_topk(m[0], m, k=60_000_000).indices.shape == (3,)


def test_large_batch_matches_single_on_float_data() -> None:
    """The blocked GEMM path (several row blocks and segments) against the fused path."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((3000, 64)).astype(F32)
    queries = rng.standard_normal((40, 64)).astype(F32)
    planted = [7, 2999, 1024, 1500, 0]
    queries[:5] = m[planted]
    mask = rng.random(3000) > 0.1
    mask[planted] = True
    kw: dict[str, Any] = {"k": 10, "mask": mask, "w_extra": 0.1, "extra": rng.random(3000).astype(F32)}
    batch = hybrid_topk(queries, m, **kw)
    assert batch.indices[:5, 0].tolist() == planted
    assert mask[batch.indices].all()
    for i in range(40):
        one = hybrid_topk(queries[i], m, **kw)
        np.testing.assert_allclose(batch.scores[i], one.scores, atol=1e-5)
        np.testing.assert_allclose(batch.similarities[i], one.similarities, atol=1e-5)
        # Same hits except where float noise reorders a near-tie.
        gaps = np.abs(np.diff(one.scores)) > 1e-5
        assert (batch.indices[i][:-1][gaps] == one.indices[:-1][gaps]).all()


# --- bad input -----------------------------------------------------------------------------------

M = np.eye(3, dtype=F32)
Q = np.ones(3, F32)
TS = np.zeros(3, np.int64)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"k": 0}, ValueError, r"^k: must be >= 1, got 0"),
        ({"k": -3}, ValueError, r"^k: must be >= 1, got -3"),
        ({"k": 2.5}, TypeError, r"^k: expected int"),
        ({"k": 1, "metric": "euclid"}, ValueError, r"^metric: expected \"cosine\" or \"dot\""),
        ({"k": 1, "w_sim": float("nan")}, ValueError, r"^w_sim: must be a finite"),
        ({"k": 1, "w_extra": float("inf")}, ValueError, r"^w_extra: must be a finite"),
        ({"k": 1, "w_rec": 1.0}, ValueError, r"^timestamps: required when w_rec != 0"),
        ({"k": 1, "w_rec": 1.0, "timestamps": TS}, ValueError, r"^half_life_ms: w_rec != 0 needs a decay"),
        ({"k": 1, "half_life_ms": 1.0, "tau_ms": 1.0}, ValueError, r"not both"),
        ({"k": 1, "w_rec": 1.0, "timestamps": TS, "half_life_ms": 0.0}, ValueError, r"^half_life_ms: must be"),
        ({"k": 1, "w_rec": 1.0, "timestamps": TS, "tau_ms": -5.0}, ValueError, r"^tau_ms: must be"),
        ({"k": 1, "timestamps": TS[:2]}, ValueError, r"^timestamps: has 2 entries but matrix has 3 rows"),
        ({"k": 1, "timestamps": TS.astype(np.int32)}, TypeError, r"^timestamps: expected dtype int64"),
        ({"k": 1, "w_extra": 1.0}, ValueError, r"^extra: required when w_extra != 0"),
        ({"k": 1, "extra": np.ones(4, F32)}, ValueError, r"^extra: has 4 entries"),
        ({"k": 1, "extra": np.array([0, np.nan, 0], F32)}, ValueError, r"^extra: entry 1 is NaN"),
        ({"k": 1, "extra": [0.0, 0.0, 0.0]}, TypeError, r"^extra: expected a numpy.ndarray"),
        ({"k": 1, "mask": np.ones(2, bool)}, ValueError, r"^mask: has 2 entries"),
        ({"k": 1, "mask": np.ones(3, np.int8)}, TypeError, r"^mask: expected dtype bool"),
        ({"k": 1, "min_score": float("nan")}, ValueError, r"^min_score: must not be NaN"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        hybrid_topk(Q, M, **kwargs)


def test_bad_arrays() -> None:
    with pytest.raises(ValueError, match=r"^query: query has dimension 4 but matrix rows have dimension 3"):
        hybrid_topk(np.ones(4, F32), M, k=1)
    with pytest.raises(ValueError, match=r"dimension 2 but matrix rows have dimension 3"):
        hybrid_topk(np.ones((5, 2), F32), M, k=1)
    with pytest.raises(TypeError, match=r"^matrix: expected dtype float32, got float64"):
        hybrid_topk(Q, M.astype(np.float64), k=1)
    with pytest.raises(TypeError, match=r"^query: expected dtype float32"):
        hybrid_topk(Q.astype(np.float16), M, k=1)
    with pytest.raises(TypeError, match=r"^matrix: expected a numpy.ndarray, got list"):
        hybrid_topk(Q, M.tolist(), k=1)
    with pytest.raises(ValueError, match=r"^matrix: array must be C-contiguous"):
        hybrid_topk(Q, np.asfortranarray(np.arange(12, dtype=F32).reshape(3, 4))[:, :3], k=1)
    with pytest.raises(ValueError, match=r"^matrix: array must be C-contiguous"):
        hybrid_topk(Q[:2], np.ones((3, 4), F32)[:, ::2], k=1)
    with pytest.raises(ValueError, match=r"^matrix: expected a 2-D array"):
        hybrid_topk(Q, np.ones(3, F32), k=1)
    with pytest.raises(ValueError, match=r"^query: expected a 1-D or 2-D array, got 3-D"):
        hybrid_topk(np.ones((1, 1, 3), F32), M, k=1)
    with pytest.raises(ValueError, match=r"^query: entry 2 is NaN \(must be finite\)"):
        hybrid_topk(np.array([1, 0, np.nan], F32), M, k=1)
    with pytest.raises(ValueError, match=r"^query: row 1, column 0 is inf"):
        hybrid_topk(np.array([[1, 0, 0], [np.inf, 0, 0]], F32), M, k=1)


@pytest.mark.parametrize("nq", [1, 3])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_row_is_named(nq: int, metric: str, bad: float) -> None:
    m = np.random.default_rng(0).standard_normal((2000, 16)).astype(F32)
    m[1234, 3] = bad
    q = np.ones((nq, 16), F32) if nq > 1 else np.ones(16, F32)
    with pytest.raises(ValueError, match=r"^matrix: row 1234 contains NaN or inf$"):
        hybrid_topk(q, m, k=5, metric=metric)
    mask = np.ones(2000, bool)
    mask[1234] = False  # excluded rows are never read
    assert hybrid_topk(q, m, k=5, metric=metric, mask=mask).indices.size


@pytest.mark.parametrize("nq", [1, 2])
def test_huge_finite_row_is_an_overflow_error(nq: int) -> None:
    m = np.array([[1e30, 0], [1, 0], [0, 1]], F32)
    q = np.ones((nq, 2), F32) if nq > 1 else np.ones(2, F32)
    with pytest.raises(ValueError, match=r"^matrix: row 0: squared norm overflows float32$"):
        hybrid_topk(q, m, k=1)
    assert hybrid_topk(q, m, k=1, metric="dot").indices.ravel()[0] == 0  # the dot product itself is finite


def test_gil_is_released() -> None:
    """Another Python thread keeps running while a batch is scored."""
    import threading

    rng = np.random.default_rng(5)
    m = rng.standard_normal((20_000, 256)).astype(F32)
    queries = rng.standard_normal((400, 256)).astype(F32)
    done = threading.Event()
    ticks = 0

    def work() -> None:
        for _ in range(6):  # >= 90 ms of native work
            hybrid_topk(queries, m, k=5)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    # Holding the GIL would allow a tick only between calls (about 6).
    assert ticks > 20


@pytest.mark.parametrize("nq", [1, 4])
def test_norms_given_or_unit_rows_equal_computed_ones(nq: int) -> None:
    rng = np.random.default_rng(8)
    m = rng.standard_normal((2000, 48), dtype=F32)
    m[3] = 0
    q = rng.standard_normal((nq, 48), dtype=F32)[0 if nq == 1 else slice(None)]
    extra = rng.random(2000, dtype=F32)
    kw: dict[str, Any] = {"k": 7, "w_sim": 0.7, "w_extra": 0.3, "extra": extra}
    want = hybrid_topk(q, m, **kw)
    got = hybrid_topk(q, m, inv_norms=row_norms(m).inv, **kw)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want, strict=True))
    unit = (m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-30)).astype(F32)
    got = hybrid_topk(q, unit, normalized=True, **kw)
    assert got.indices.tolist() == want.indices.tolist()
    np.testing.assert_allclose(got.scores, want.scores, atol=1e-6)


def test_bad_norms() -> None:
    m = np.eye(3, dtype=F32)
    q = np.ones(3, F32)
    with pytest.raises(KernelError, match="inv_norms: has 2 entries but matrix has 3 rows"):
        hybrid_topk(q, m, k=1, inv_norms=np.ones(2, F32))
    with pytest.raises(KernelError, match="inv_norms: entry 1 is NaN"):
        hybrid_topk(q, m, k=1, inv_norms=np.array([1, np.nan, 1], F32))
    with pytest.raises(KernelError, match="not both"):
        hybrid_topk(q, m, k=1, inv_norms=np.ones(3, F32), normalized=True)
    with pytest.raises(KernelError, match="only used by metric"):
        hybrid_topk(q, m, k=1, metric="dot", normalized=True)
    with pytest.raises(KernelTypeError, match="inv_norms"):
        hybrid_topk(q, m, k=1, inv_norms=np.ones(3))
