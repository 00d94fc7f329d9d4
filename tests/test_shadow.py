"""hybrid_topk with an int8 shadow (``shadow=row_shadow(matrix)``) returns the plain scan's result bit
for bit: indices, scores and similarities, whatever the data, weights, mask, min_score and k."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import cpu_flags
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mindcore
from mindcore.errors import KernelError
from mindcore.kernels import SHADOW_MIN_ROWS, TopK, hybrid_topk, row_norms, row_shadow

TESTS = Path(__file__).parent
NOW = 1_700_000_000_000
DAY = 86_400_000


def make_case(seed: int, n: int, d: int, layout: str, unit: bool) -> tuple[np.ndarray, np.ndarray]:
    """A matrix with the awkward rows in it (duplicates, zero rows, ties, rows far from unit norm)
    and a query near one of its rows (so the top k is well separated, the case the shadow speeds up)
    or at random (a crowded top, where it must still be exact)."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, d), dtype=np.float32)
    if layout == "clustered":  # many near-equal rows: bounds overlap, candidates pile up
        m = (m[:1] + 1e-3 * m).astype(np.float32)
    if layout == "integers":  # small integers: exact ties in score everywhere
        m = rng.integers(-2, 3, (n, d)).astype(np.float32)
    m[rng.integers(0, n, 40)] = m[rng.integers(0, n, 40)]  # duplicate rows
    m[rng.integers(0, n, 20)] = 0  # zero rows
    if unit:
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        m = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0).astype(np.float32)
    else:
        m[rng.integers(0, n, 30)] *= np.float32(1e3)
        m[rng.integers(0, n, 30)] *= np.float32(1e-3)
    near = m[rng.integers(0, n)] + 0.05 * rng.standard_normal(d, dtype=np.float32)
    q = near if rng.random() < 0.7 else rng.standard_normal(d, dtype=np.float32)
    return np.ascontiguousarray(m), np.ascontiguousarray(q, dtype=np.float32)


def same(a: TopK, b: TopK) -> bool:
    pairs = ((a.indices, b.indices), (a.scores, b.scores), (a.similarities, b.similarities))
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in pairs)


def check(m: np.ndarray, q: np.ndarray, **kw: Any) -> None:
    plain = hybrid_topk(q, m, **kw)
    shadowed = hybrid_topk(q, m, shadow=row_shadow(m), **kw)
    assert same(plain, shadowed), (kw, plain, shadowed)


def kwargs(rng: np.random.Generator, n: int, *, w_sim: float, w_rec: float, w_extra: float, k: int,
           masked: bool, min_score: float | None, metric: str, norms: str, extra_kind: str) -> dict[str, Any]:
    if extra_kind == "ties":
        extra = rng.integers(0, 3, n).astype(np.float32)
    else:
        extra = rng.random(n, dtype=np.float32)
    kw: dict[str, Any] = dict(k=k, metric=metric, w_sim=w_sim, w_rec=w_rec, w_extra=w_extra, extra=extra,
                              timestamps=NOW - rng.integers(0, 90 * DAY, n), now_ms=NOW, half_life_ms=30.0 * DAY,
                              min_score=min_score)
    if masked:
        kw["mask"] = rng.random(n) < 0.6
    return kw


CASES = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "n": st.sampled_from([SHADOW_MIN_ROWS, SHADOW_MIN_ROWS + 1, SHADOW_MIN_ROWS + 900]),
    "d": st.sampled_from([1, 3, 16, 33, 64, 100, 384]),
    "layout": st.sampled_from(["random", "random", "clustered", "integers"]),
    "unit": st.booleans(),
    "w_sim": st.sampled_from([1.0, 0.7, 0.6, 0.0, -0.5, -1.0, 25.0]),
    "w_rec": st.sampled_from([0.0, 0.2]),
    "w_extra": st.sampled_from([0.0, 0.1, 0.2]),
    "k": st.sampled_from([1, 5, 12, 100, 10**6]),
    "masked": st.booleans(),
    "min_score": st.sampled_from([None, None, -0.5, 0.1, 0.5, 2.0]),
    "metric": st.sampled_from(["cosine", "cosine", "dot"]),
    "norms": st.sampled_from(["compute", "inverse", "normalized"]),
    "extra_kind": st.sampled_from(["random", "ties"]),
})


def run_case(c: dict[str, Any]) -> None:
    m, q = make_case(c["seed"], c["n"], c["d"], c["layout"], c["unit"])
    rng = np.random.default_rng(c["seed"] + 1)
    kw = kwargs(rng, c["n"], **{k: c[k] for k in ("w_sim", "w_rec", "w_extra", "k", "masked", "min_score",
                                                  "metric", "norms", "extra_kind")})
    if c["metric"] == "cosine" and c["norms"] == "inverse":
        kw["inv_norms"] = row_norms(m).inv
    if c["metric"] == "cosine" and c["norms"] == "normalized" and c["unit"]:
        kw["normalized"] = True
    check(m, q, **kw)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
def test_shadow_equals_plain_scan(case: dict[str, Any]) -> None:
    run_case(case)


def test_the_shadow_is_read() -> None:
    """A shadow of other rows changes the answer: the path above is taken, not skipped."""
    m, q = make_case(7, SHADOW_MIN_ROWS + 1000, 64, "random", True)
    q = m[123].copy()
    wrong = row_shadow(np.ascontiguousarray(m[::-1]))
    assert hybrid_topk(q, m, k=5).indices[0] == 123
    assert not same(hybrid_topk(q, m, k=5), hybrid_topk(q, m, k=5, shadow=wrong))


def test_small_matrices_and_batches_take_the_plain_scan() -> None:
    """Below SHADOW_MIN_ROWS, and for a batch of queries, the shadow is not read (even a wrong one)."""
    m, q = make_case(3, SHADOW_MIN_ROWS - 1, 16, "random", True)
    wrong = row_shadow(np.ascontiguousarray(m[::-1]))
    assert same(hybrid_topk(q, m, k=5), hybrid_topk(q, m, k=5, shadow=wrong))
    m, q = make_case(4, SHADOW_MIN_ROWS + 10, 16, "random", True)
    qs = np.stack([q, m[9]])
    wrong = row_shadow(np.ascontiguousarray(m[::-1]))
    assert same(hybrid_topk(qs, m, k=5), hybrid_topk(qs, m, k=5, shadow=wrong))


def test_row_shadow_bounds_hold() -> None:
    rng = np.random.default_rng(0)
    m = rng.standard_normal((500, 37), dtype=np.float32)
    m[3] = 0
    sh = row_shadow(m)
    approx = sh.codes.astype(np.float64) * sh.meta[:, :1]
    assert sh.codes.dtype == np.int8 and sh.meta.shape == (500, 3)
    assert np.all(np.linalg.norm(m - approx, axis=1) <= sh.meta[:, 1])
    assert np.all(np.linalg.norm(m.astype(np.float64), axis=1) <= sh.meta[:, 2])
    assert not sh.codes[3].any() and not sh.meta[3].any()


def test_bad_inputs_raise() -> None:
    m = np.ones((SHADOW_MIN_ROWS, 4), dtype=np.float32)
    m[17, 2] = np.nan
    with pytest.raises(KernelError, match="row 17"):
        row_shadow(m)
    good = np.ones((10, 4), dtype=np.float32)
    sh = row_shadow(good)
    with pytest.raises(KernelError, match="shadow"):
        hybrid_topk(np.ones(4, np.float32), np.ones((11, 4), np.float32), k=1, shadow=sh)
    with pytest.raises(KernelError, match=r"shadow\.codes"):
        hybrid_topk(np.ones(4, np.float32), good, k=1, shadow=(sh.codes.astype(np.float32), sh.meta))  # type: ignore[arg-type]


def test_errors_are_the_plain_scans() -> None:
    """An input the bounds cannot vouch for runs the plain scan, which reports what it reports."""
    m, q = make_case(5, SHADOW_MIN_ROWS + 100, 8, "random", False)
    sh = row_shadow(m)
    m2 = m.copy()
    m2[4000] = np.float32(3e19)  # its squared norm overflows float32
    sh2 = row_shadow(m2)
    with pytest.raises(KernelError, match="row 4000"):
        hybrid_topk(q, m2, k=3)
    with pytest.raises(KernelError, match="row 4000"):
        hybrid_topk(q, m2, k=3, shadow=sh2)
    with pytest.raises(KernelError, match="w_sim"):
        hybrid_topk(q, m, k=3, w_sim=3e38, metric="dot", shadow=sh)


# Runs in the child: the hypothesis cases above, drawn from a fixed list, under one forced path.
CHILD = textwrap.dedent(
    """
    import itertools, random
    from mindcore.kernels import simd_path
    from test_shadow import SHADOW_MIN_ROWS, run_case
    print(simd_path())
    rnd = random.Random(11)
    keys = dict(n=[SHADOW_MIN_ROWS, SHADOW_MIN_ROWS + 77], d=[1, 16, 33, 100, 384], layout=["random", "clustered", "integers"],
                unit=[True, False], w_sim=[0.7, 0.0, -1.0], w_rec=[0.0, 0.2], w_extra=[0.0, 0.1],
                k=[1, 5, 100, 10**6], masked=[True, False], min_score=[None, 0.1], metric=["cosine", "dot"],
                norms=["compute", "inverse", "normalized"], extra_kind=["random", "ties"])
    for i in range(60):
        run_case({"seed": i, **{k: rnd.choice(v) for k, v in keys.items()}})
    print("ok")
    """
)


@pytest.mark.parametrize("path", ["avx512", "avx2", "portable"])
def test_shadow_under_each_forced_path(path: str) -> None:
    need = {"portable": set(), "avx2": {"avx2", "fma"}, "avx512": {"avx512f", "avx2", "fma"}}[path]
    if not need <= cpu_flags():
        pytest.skip(f"this CPU has no {path} path")
    package = str(Path(mindcore.__file__).parent.parent)
    env = {**os.environ, "MINDCORE_SIMD": path, "PYTHONPATH": os.pathsep.join([package, str(TESTS)])}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [path, "ok"]
