"""The scoring kernels under each instruction-set path (`MINDCORE_SIMD`), each in its own process:
the path is decided once per process. A path this CPU lacks is skipped."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import cpu_flags

import mindcore

TESTS = Path(__file__).parent


def _supported(path: str) -> bool:
    flags = cpu_flags()
    return {
        "portable": True,
        "avx2": {"avx2", "fma"} <= flags,
        "avx512": {"avx512f", "avx2", "fma"} <= flags,
        "neon": platform.machine().lower() in ("aarch64", "arm64"),
    }[path]


# Runs in the child: every check compares kernels of one path with each other (bit for bit) or
# with a float64 reference (to rounding).
CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from mindcore.kernels import hybrid_topk, row_norms, simd_path
    from test_grouped_recall import NOW, DAY, LEXICAL_FLOOR, Case, assert_matches_oracle

    print(simd_path())
    rng = np.random.default_rng(3)
    # Dimensions around every path's vector widths and unroll (8, 16, 32, 64) and their tails.
    for d in (1, 15, 16, 33, 64, 100, 384):
        n = 3000
        m = rng.standard_normal((n, d), dtype=np.float32)
        m[5] = m[2900]  # a tie
        m[9] = 0  # a zero row
        qs = rng.standard_normal((5, d), dtype=np.float32)
        ts = NOW - rng.integers(0, 90 * DAY, n)
        extra = rng.random(n, dtype=np.float32)
        kw = dict(k=12, w_sim=0.6, w_rec=0.2, w_extra=0.2, timestamps=ts, now_ms=NOW, tau_ms=30 * DAY, extra=extra)
        norms = np.linalg.norm(m.astype(np.float64), axis=1)
        inv = row_norms(m).inv
        for q in qs:
            top = hybrid_topk(q, m, **kw)
            ref = np.divide(m.astype(np.float64) @ q, norms * np.linalg.norm(q.astype(np.float64)),
                            out=np.zeros(n), where=norms > 0)
            score = 0.6 * ref + 0.2 * np.exp(-(NOW - ts) / (30 * DAY)) + 0.2 * extra
            best = np.sort(score)[::-1][:12]
            np.testing.assert_allclose(score[top.indices], best, atol=1e-5)
            np.testing.assert_allclose(top.scores, best, atol=1e-5)
            given = hybrid_topk(q, m, inv_norms=inv, **kw)
            assert all(a.tobytes() == b.tobytes() for a, b in zip(top, given)), d
        batch = hybrid_topk(qs, m, **kw)
        for i, q in enumerate(qs):
            np.testing.assert_allclose(batch.scores[i], hybrid_topk(q, m, **kw).scores, atol=1e-5)
        # grouped_recall equals hybrid_topk one query at a time, bit for bit.
        c = Case(
            queries=np.concatenate([qs, m[[5, 40]]]),
            query_group=np.array([0, 1, 1, 2, 0, 1, 2], np.int64),
            query_texts=["tea", "green tea", "", "dogs", "x", "tea dogs", "park"],
            matrix=m,
            offsets=np.array([0, 1000, 2950, n], np.int64),
            timestamps=ts,
            importance=extra,
            terms=[("tea green dogs park".split())[j % 4] for j in range(n)],
            has_vector=np.arange(n) % 13 != 4,
            k=10,
            weights={"w_sim": 0.7, "w_rec": 0.2, "w_importance": 0.1, "w_lexical": 1.0,
                     "half_life_ms": 30.0 * DAY, "lexical_floor": LEXICAL_FLOOR},
        )
        assert_matches_oracle(c, c.run())
        c.weights["w_lexical"] = 0.0
        assert_matches_oracle(c, c.run())
    print("ok")
    """
)


@pytest.mark.parametrize("path", ["avx512", "avx2", "neon", "portable"])
def test_kernels_under_each_forced_path(path: str) -> None:
    if not _supported(path):
        pytest.skip(f"this CPU has no {path} path")
    package = str(Path(mindcore.__file__).parent.parent)
    env = {
        **os.environ,
        "MINDCORE_SIMD": path,
        "PYTHONPATH": os.pathsep.join([package, str(TESTS)]),
    }
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [path, "ok"]


def test_unknown_or_unsupported_values_fall_back() -> None:
    package = str(Path(mindcore.__file__).parent.parent)
    best = next(p for p in ["avx512", "avx2", "neon", "portable"] if _supported(p))
    # "neon" is the best path on 64-bit ARM and names no path elsewhere.
    for value, want in [("sse9", best), ("", best), ("PORTABLE", "portable"), ("neon", best)]:
        env = {**os.environ, "MINDCORE_SIMD": value, "PYTHONPATH": package}
        code = "from mindcore.kernels import simd_path; print(simd_path())"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == want, out.stderr
