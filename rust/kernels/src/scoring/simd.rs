//! Dot products and the batch score scan, on the best instruction-set path the CPU has
//! (AVX-512F, AVX2+FMA, NEON on aarch64, or a portable path for every other CPU), picked once
//! per process at run time and capped by `MINDCORE_SIMD` (see [`path`]).
//!
//! Each path keeps one fixed summation order (4 accumulators of 16, 8 or 8 lanes, folded the same
//! way), so within a process `dot(a, b) == dot(b, a)` and `dot_norm(q, r) == (dot(q, r), dot(r, r))`
//! bit for bit: both top-k paths and `grouped_recall` see the same dot products and row norms, and
//! `near_duplicates` and `dedupe_within` the same similarities. The scan turns raw dot products into
//! scores with the same operations, in the same order, lane-wise as `score_at` does one at a time.

use super::select::TopSel;
use super::{non_finite_row, score_overflow};

/// `1/‖x‖` from a squared norm, with 0 for a zero vector (its cosine is defined as 0).
#[inline]
pub fn inv_norm(sq: f32) -> f32 {
    if sq > 0.0 {
        1.0 / sq.sqrt()
    } else {
        0.0
    }
}

/// Cosine from a dot product and the two inverse norms; the evaluation order is part of the
/// contract (the batch scan does the same operations lane-wise), the clamp absorbs rounding.
#[inline]
pub fn cosine(dot: f32, inv_a: f32, inv_b: f32) -> f32 {
    (dot * inv_a * inv_b).clamp(-1.0, 1.0)
}

/// An instruction-set path for the hot loops. Each path keeps its own fixed summation order, so
/// results agree bit for bit between kernels on one path (and may differ in the last bits
/// between paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Path {
    /// Plain Rust the compiler vectorises for the build target (SSE2 on x86_64, NEON on aarch64).
    Portable,
    /// aarch64 NEON: the AVX2 layout on pairs of 4-lane registers (see `neon.rs`).
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// AVX2 + FMA, 8 lanes.
    Avx2,
    /// AVX-512F, 16 lanes.
    Avx512,
}

impl Path {
    #[cfg(not(target_arch = "aarch64"))]
    pub const ALL: [Path; 3] = [Path::Portable, Path::Avx2, Path::Avx512];
    #[cfg(target_arch = "aarch64")]
    pub const ALL: [Path; 4] = [Path::Portable, Path::Neon, Path::Avx2, Path::Avx512];

    /// The name `MINDCORE_SIMD` takes and [`path`] reports.
    pub fn name(self) -> &'static str {
        match self {
            Path::Portable => "portable",
            #[cfg(target_arch = "aarch64")]
            Path::Neon => "neon",
            Path::Avx2 => "avx2",
            Path::Avx512 => "avx512",
        }
    }

    pub fn parse(name: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether this CPU can run the path.
    pub fn supported(self) -> bool {
        match self {
            Path::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => avx2::available(),
            #[cfg(target_arch = "x86_64")]
            Path::Avx512 => avx512::available(),
            #[cfg(target_arch = "aarch64")]
            Path::Neon => neon::available(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// The environment variable that caps the path (`avx512`, `avx2`, `neon` or `portable`), for tests
/// and benchmarks: a path the CPU lacks falls back to the best one below it (on aarch64, `avx2` and
/// `avx512` mean NEON); other values are ignored.
pub const ENV: &str = "MINDCORE_SIMD";

/// The path every kernel takes in this process: the best the CPU supports, capped by
/// `MINDCORE_SIMD`; decided on first use.
pub fn path() -> Path {
    static PATH: std::sync::OnceLock<Path> = std::sync::OnceLock::new();
    *PATH.get_or_init(|| {
        let cap = std::env::var(ENV)
            .ok()
            .and_then(|v| Path::parse(v.trim().to_ascii_lowercase().as_str()))
            .unwrap_or(Path::Avx512);
        Path::ALL
            .into_iter()
            .rev()
            .find(|p| *p <= cap && p.supported())
            .unwrap_or(Path::Portable)
    })
}

/// The hot functions of one path.
#[derive(Clone, Copy)]
pub struct Simd {
    #[cfg_attr(not(test), allow(dead_code))]
    pub path: Path,
    pub dot: fn(&[f32], &[f32]) -> f32,
    pub dot_norm: fn(&[f32], &[f32]) -> (f32, f32),
    /// `out[i] = dot(qs[i], r)` bit for bit, for several queries against one row at once.
    pub dots: fn(&[&[f32]], &[f32], &mut [f32]),
    /// Offers every unmasked lane of a scan row (global row index `r0 + j`) to `top`; a
    /// non-finite dot product or score is an error naming the row.
    pub scan: fn(&ScanRow<'_>, usize, &mut TopSel) -> crate::Result<()>,
    /// `out[j] = Σ q[i]·codes[j·d + i]`: a float32 query against `out.len()` int8 rows of
    /// length `d = q.len()` (the shadow's first pass). Only approximate: callers bound its
    /// rounding error, they never compare it bit for bit.
    pub dots_i8: fn(&[f32], &[i8], &mut [f32]),
}

/// A run of rows to score for one query: `s` are the raw dot products against rows
/// `r0..r0 + s.len()` (`r0` is passed to `scan`).
pub struct ScanRow<'a> {
    pub s: &'a [f32],
    /// Per-row `1/‖r‖` (cosine) or `None` (dot).
    pub inv_r: Option<&'a [f32]>,
    /// Per-row additive term; `-inf` marks a masked-out row.
    pub bias: &'a [f32],
    pub inv_q: f32,
    pub w_sim: f32,
}

/// The functions of the process's path (see [`path`]).
pub fn simd() -> Simd {
    Simd::of(path()).unwrap_or_else(Simd::portable)
}

impl Simd {
    fn portable() -> Simd {
        Simd {
            path: Path::Portable,
            dot: portable::dot,
            dot_norm: portable::dot_norm,
            dots: portable::dots,
            scan: |row, r0, top| portable::scan(row, 0, r0, top),
            dots_i8: portable::dots_i8,
        }
    }

    /// The functions of `path`, or `None` when this CPU cannot run it.
    pub fn of(path: Path) -> Option<Simd> {
        if !path.supported() {
            return None;
        }
        Some(match path {
            Path::Portable => Simd::portable(),
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => Simd {
                path,
                dot: avx2::dot_safe,
                dot_norm: avx2::dot_norm_safe,
                dots: avx2::dots_safe,
                scan: avx2::scan_safe,
                dots_i8: avx2::dots_i8_safe,
            },
            #[cfg(target_arch = "x86_64")]
            Path::Avx512 => Simd {
                path,
                dot: avx512::dot_safe,
                dot_norm: avx512::dot_norm_safe,
                dots: avx512::dots_safe,
                scan: avx512::scan_safe,
                dots_i8: avx512::dots_i8_safe,
            },
            #[cfg(target_arch = "aarch64")]
            Path::Neon => Simd {
                path,
                dot: neon::dot_safe,
                dot_norm: neon::dot_norm_safe,
                dots: neon::dots_safe,
                scan: neon::scan_safe,
                // The compiler vectorises the portable widening loop with NEON.
                dots_i8: portable::dots_i8,
            },
            #[cfg(not(target_arch = "x86_64"))]
            _ => return None,
        })
    }
}

/// `(qu, codes, out)`: see [`int8_dots`].
pub type Int8Dots = fn(&[u8], &[i8], &mut [i32]);

/// `Σ (qu[i] − 128)·codes[j·d + i]` per row `j`, exact in int32, when the process's path has
/// an integer instruction for it (AVX-512 VNNI); the shadow's first pass then quantizes the query too.
pub fn int8_dots() -> Option<Int8Dots> {
    #[cfg(target_arch = "x86_64")]
    if path() == Path::Avx512 && avx512::vnni_available() {
        return Some(avx512::dots_u8i8_safe);
    }
    None
}

/// Score lane `j` of a scan row exactly as the single-query path does.
#[inline]
pub fn score_at(row: &ScanRow<'_>, j: usize) -> (f32, f32) {
    let sim = match row.inv_r {
        Some(inv_r) => cosine(row.s[j], row.inv_q, inv_r[j]),
        None => row.s[j],
    };
    (row.w_sim * sim + row.bias[j], sim)
}

/// The slow path for one lane that passed the cheap filter.
#[cold]
#[inline(never)]
fn take(row: &ScanRow<'_>, j: usize, r0: usize, top: &mut TopSel) -> crate::Result<()> {
    if row.bias[j] == f32::NEG_INFINITY {
        return Ok(()); // masked out (reaches here only while the threshold is still −inf)
    }
    if !row.s[j].is_finite() {
        return Err(non_finite_row(r0 + j));
    }
    let (score, sim) = score_at(row, j);
    if !score.is_finite() {
        return Err(score_overflow(r0 + j));
    }
    top.offer(score, r0 + j, sim);
    Ok(())
}

/// The first unmasked lane whose dot product is NaN/inf, as an error.
#[cold]
#[inline(never)]
fn first_bad(row: &ScanRow<'_>, r0: usize) -> crate::Result<()> {
    match (0..row.s.len()).find(|&j| row.bias[j] != f32::NEG_INFINITY && !row.s[j].is_finite()) {
        Some(j) => Err(non_finite_row(r0 + j)),
        None => Ok(()),
    }
}

mod portable {
    use super::{first_bad, score_at, take, ScanRow, TopSel};

    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        dot_norm_impl::<false>(a, b).0
    }

    pub fn dot_norm(q: &[f32], r: &[f32]) -> (f32, f32) {
        dot_norm_impl::<true>(q, r)
    }

    pub fn dots(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
        for (o, q) in out.iter_mut().zip(qs) {
            *o = dot(q, r);
        }
    }

    /// Mirrors the AVX2 layout (4 x 8 accumulators, same fold) so the compiler can vectorise it.
    #[inline(always)]
    fn dot_norm_impl<const NORM: bool>(q: &[f32], r: &[f32]) -> (f32, f32) {
        let n = q.len().min(r.len());
        let (q, r) = (&q[..n], &r[..n]);
        let mut d = [[0f32; 8]; 4];
        let mut s = [[0f32; 8]; 4];
        let mut i = 0;
        while i + 32 <= n {
            for u in 0..4 {
                for l in 0..8 {
                    let (x, y) = (q[i + 8 * u + l], r[i + 8 * u + l]);
                    d[u][l] += x * y;
                    if NORM {
                        s[u][l] += y * y;
                    }
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            for l in 0..8 {
                let (x, y) = (q[i + l], r[i + l]);
                d[0][l] += x * y;
                if NORM {
                    s[0][l] += y * y;
                }
            }
            i += 8;
        }
        let fold = |a: &[[f32; 8]; 4]| {
            let mut v = [0f32; 8];
            for (l, x) in v.iter_mut().enumerate() {
                *x = (a[0][l] + a[1][l]) + (a[2][l] + a[3][l]);
            }
            let h = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
            let h = [h[0] + h[2], h[1] + h[3]];
            h[0] + h[1]
        };
        let (mut dt, mut nn) = (fold(&d), if NORM { fold(&s) } else { 0.0 });
        while i < n {
            dt += q[i] * r[i];
            if NORM {
                nn += r[i] * r[i];
            }
            i += 1;
        }
        (dt, nn)
    }

    pub fn dots_i8(q: &[f32], codes: &[i8], out: &mut [f32]) {
        let d = q.len();
        for (j, o) in out.iter_mut().enumerate() {
            *o = dot_i8(q, &codes[j * d..(j + 1) * d]);
        }
    }

    fn dot_i8(q: &[f32], c: &[i8]) -> f32 {
        let n = q.len().min(c.len());
        let (q, c) = (&q[..n], &c[..n]);
        let mut acc = [0f32; 16];
        let mut i = 0;
        while i + 16 <= n {
            for l in 0..16 {
                acc[l] += q[i + l] * c[i + l] as f32;
            }
            i += 16;
        }
        let mut s: f32 = acc.iter().sum();
        while i < n {
            s += q[i] * c[i] as f32;
            i += 1;
        }
        s
    }

    pub fn scan(row: &ScanRow<'_>, from: usize, r0: usize, top: &mut TopSel) -> crate::Result<()> {
        for j in from..row.s.len() {
            if row.bias[j] == f32::NEG_INFINITY {
                continue;
            }
            if !row.s[j].is_finite() {
                return first_bad(row, r0);
            }
            if score_at(row, j).0 >= top.threshold() {
                take(row, j, r0, top)?;
            }
        }
        Ok(())
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{first_bad, portable, take, ScanRow, TopSel};
    use std::arch::x86_64::*;

    pub fn available() -> bool {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }

    pub fn dot_safe(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only installed by `simd()` after `available()` returned true.
        unsafe { dot_norm::<false>(a, b).0 }
    }

    pub fn dot_norm_safe(q: &[f32], r: &[f32]) -> (f32, f32) {
        // SAFETY: as above.
        unsafe { dot_norm::<true>(q, r) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        // Same fold as the portable path: lanes (l, l+4), then (l, l+2), then (0, 1).
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)))
    }

    pub fn dots_safe(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
        // SAFETY: only reachable through `simd()` after `available()`.
        unsafe { dots(qs, r, out) }
    }

    pub fn scan_safe(row: &ScanRow<'_>, r0: usize, top: &mut TopSel) -> crate::Result<()> {
        // SAFETY: as above.
        unsafe { scan(row, r0, top) }
    }

    pub fn dots_i8_safe(q: &[f32], codes: &[i8], out: &mut [f32]) {
        // SAFETY: as above.
        unsafe { dots_i8(q, codes, out) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dots_i8(q: &[f32], codes: &[i8], out: &mut [f32]) {
        let d = q.len();
        for (j, o) in out.iter_mut().enumerate() {
            *o = dot_i8(q, &codes[j * d..(j + 1) * d]);
        }
    }

    /// Eight int8 values widened to float32 per step, four independent FMA chains.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_i8(q: &[f32], c: &[i8]) -> f32 {
        let n = q.len().min(c.len());
        let (pq, pc) = (q.as_ptr(), c.as_ptr());
        let widen = |p: *const i8| {
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p as *const __m128i)))
        };
        let mut d = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for u in 0..4 {
                let x = _mm256_loadu_ps(pq.add(i + 8 * u));
                d[u] = _mm256_fmadd_ps(x, widen(pc.add(i + 8 * u)), d[u]);
            }
            i += 32;
        }
        while i + 8 <= n {
            d[0] = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(i)), widen(pc.add(i)), d[0]);
            i += 8;
        }
        let mut dt = hsum(_mm256_add_ps(
            _mm256_add_ps(d[0], d[1]),
            _mm256_add_ps(d[2], d[3]),
        ));
        while i < n {
            dt += q[i] * c[i] as f32;
            i += 1;
        }
        dt
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dots(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
        // Three queries at a time: 12 independent FMA chains (the single dot has 4, and waits on
        // FMA latency) and one load of the row for three FMAs; 12 accumulators fit the 16 registers.
        let mut i = 0;
        while i + 3 <= qs.len() {
            let [a, b, c] = dot_n::<3>([qs[i], qs[i + 1], qs[i + 2]], r);
            (out[i], out[i + 1], out[i + 2]) = (a, b, c);
            i += 3;
        }
        if i + 2 <= qs.len() {
            let [a, b] = dot_n::<2>([qs[i], qs[i + 1]], r);
            (out[i], out[i + 1]) = (a, b);
            i += 2;
        }
        if i < qs.len() {
            out[i] = dot_norm::<false>(qs[i], r).0;
        }
    }

    // Indexing by `u` and `k` mirrors `dot_norm` line for line (the point of this function).
    #[allow(clippy::needless_range_loop)]
    /// `dot_norm::<false>(q, r).0` for each of `N` queries, with each query's accumulators
    /// updated by exactly the same FMAs in the same order (only interleaved with the others'),
    /// the same fold and the same scalar tail: equal bit for bit.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_n<const N: usize>(qs: [&[f32]; N], r: &[f32]) -> [f32; N] {
        let n = qs.iter().fold(r.len(), |n, q| n.min(q.len()));
        let pr = r.as_ptr();
        let pq = qs.map(|q| q.as_ptr());
        let mut d = [[_mm256_setzero_ps(); 4]; N];
        let mut i = 0;
        while i + 32 <= n {
            for u in 0..4 {
                let y = _mm256_loadu_ps(pr.add(i + 8 * u));
                for k in 0..N {
                    let x = _mm256_loadu_ps(pq[k].add(i + 8 * u));
                    d[k][u] = _mm256_fmadd_ps(x, y, d[k][u]);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            let y = _mm256_loadu_ps(pr.add(i));
            for k in 0..N {
                let x = _mm256_loadu_ps(pq[k].add(i));
                d[k][0] = _mm256_fmadd_ps(x, y, d[k][0]);
            }
            i += 8;
        }
        let mut out = [0f32; N];
        for k in 0..N {
            let a = d[k];
            let mut dt = hsum(_mm256_add_ps(
                _mm256_add_ps(a[0], a[1]),
                _mm256_add_ps(a[2], a[3]),
            ));
            for j in i..n {
                dt += qs[k][j] * r[j];
            }
            out[k] = dt;
        }
        out
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_norm<const NORM: bool>(q: &[f32], r: &[f32]) -> (f32, f32) {
        let n = q.len().min(r.len());
        let (pq, pr) = (q.as_ptr(), r.as_ptr());
        let mut d = [_mm256_setzero_ps(); 4];
        let mut s = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for u in 0..4 {
                let x = _mm256_loadu_ps(pq.add(i + 8 * u));
                let y = _mm256_loadu_ps(pr.add(i + 8 * u));
                d[u] = _mm256_fmadd_ps(x, y, d[u]);
                if NORM {
                    s[u] = _mm256_fmadd_ps(y, y, s[u]);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            let x = _mm256_loadu_ps(pq.add(i));
            let y = _mm256_loadu_ps(pr.add(i));
            d[0] = _mm256_fmadd_ps(x, y, d[0]);
            if NORM {
                s[0] = _mm256_fmadd_ps(y, y, s[0]);
            }
            i += 8;
        }
        let fold = |a: [__m256; 4]| {
            hsum(_mm256_add_ps(
                _mm256_add_ps(a[0], a[1]),
                _mm256_add_ps(a[2], a[3]),
            ))
        };
        let (mut dt, mut nn) = (fold(d), if NORM { fold(s) } else { 0.0 });
        while i < n {
            dt += q[i] * r[i];
            if NORM {
                nn += r[i] * r[i];
            }
            i += 1;
        }
        (dt, nn)
    }

    /// Eight lanes at a time: score, compare with the threshold, and hand the rare
    /// candidates (or non-finite lanes) to `hit`. Same operations as `score_at`, lane-wise.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn scan(row: &ScanRow<'_>, r0: usize, top: &mut TopSel) -> crate::Result<()> {
        let n = row.s.len();
        let (ps, pb) = (row.s.as_ptr(), row.bias.as_ptr());
        let inv_q = _mm256_set1_ps(row.inv_q);
        let w = _mm256_set1_ps(row.w_sim);
        let (lo, hi) = (_mm256_set1_ps(-1.0), _mm256_set1_ps(1.0));
        let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let inf = _mm256_set1_ps(f32::INFINITY);
        let mut t = _mm256_set1_ps(top.threshold());
        let mut bad = _mm256_setzero_ps();
        let mut j = 0;
        while j + 8 <= n {
            let s = _mm256_loadu_ps(ps.add(j));
            let b = _mm256_loadu_ps(pb.add(j));
            let sim = match row.inv_r {
                Some(inv_r) => {
                    let x = _mm256_mul_ps(
                        _mm256_mul_ps(s, inv_q),
                        _mm256_loadu_ps(inv_r.as_ptr().add(j)),
                    );
                    _mm256_min_ps(_mm256_max_ps(x, lo), hi)
                }
                None => s,
            };
            // Masked lanes have bias −inf, so their score is −inf and passes only while the
            // threshold is −inf (`take` skips them). A NaN/inf dot product is collected for the
            // whole row (|s| < inf is false for both) and reported after it.
            let score = _mm256_add_ps(_mm256_mul_ps(w, sim), b);
            bad = _mm256_or_ps(
                bad,
                _mm256_cmp_ps::<_CMP_NLT_UQ>(_mm256_and_ps(s, abs_mask), inf),
            );
            let mut bits = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(score, t)) as u32;
            if bits != 0 {
                while bits != 0 {
                    let l = bits.trailing_zeros() as usize;
                    take(row, j + l, r0, top)?;
                    bits &= bits - 1;
                }
                t = _mm256_set1_ps(top.threshold());
            }
            j += 8;
        }
        if _mm256_movemask_ps(bad) != 0 {
            first_bad(row, r0)?;
        }
        portable::scan(row, j, r0, top)
    }
}

#[cfg(target_arch = "aarch64")]
#[path = "neon.rs"]
mod neon;

/// The AVX-512F path: the AVX2 path's layout at twice the width (4 accumulators of 16 lanes,
/// folded pairwise, then to 8 lanes and on as the AVX2 fold), so one register load covers 16
/// values and a 384-dimensional row takes 6 steps instead of 12.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{first_bad, portable, take, ScanRow, TopSel};
    use std::arch::x86_64::*;

    pub fn available() -> bool {
        is_x86_feature_detected!("avx512f") && super::avx2::available()
    }

    pub fn dot_safe(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only installed by `Simd::of` after `available()` returned true.
        unsafe { dot_n::<1>([a], b)[0] }
    }

    pub fn dot_norm_safe(q: &[f32], r: &[f32]) -> (f32, f32) {
        // SAFETY: as above.
        unsafe { dot_norm(q, r) }
    }

    pub fn dots_safe(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
        // SAFETY: as above.
        unsafe { dots(qs, r, out) }
    }

    pub fn scan_safe(row: &ScanRow<'_>, r0: usize, top: &mut TopSel) -> crate::Result<()> {
        // SAFETY: as above.
        unsafe { scan(row, r0, top) }
    }

    pub fn dots_i8_safe(q: &[f32], codes: &[i8], out: &mut [f32]) {
        // SAFETY: as above.
        unsafe { dots_i8(q, codes, out) }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dots_i8(q: &[f32], codes: &[i8], out: &mut [f32]) {
        let d = q.len();
        for (j, o) in out.iter_mut().enumerate() {
            *o = dot_i8(q, &codes[j * d..(j + 1) * d]);
        }
    }

    /// Whether [`dots_u8i8`] can run (AVX-512 VNNI, on the AVX-512 path).
    pub fn vnni_available() -> bool {
        is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("avx512bw")
            && available()
    }

    pub fn dots_u8i8_safe(qu: &[u8], codes: &[i8], out: &mut [i32]) {
        // SAFETY: only installed by `super::int8_dots` after `vnni_available()` returned true.
        unsafe { dots_u8i8(qu, codes, out) }
    }

    /// `out[j] = Σ (qu[i] − 128)·codes[j·d + i]`, exact in int32 (for d up to 2^16): 64 products
    /// per instruction, so the first pass is bound by memory, not by widening int8 to float32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
    unsafe fn dots_u8i8(qu: &[u8], codes: &[i8], out: &mut [i32]) {
        let d = qu.len();
        let p = codes.as_ptr();
        let ones = _mm512_set1_epi8(1);
        for (j, o) in out.iter_mut().enumerate() {
            let c = p.add(j * d);
            let (mut acc, mut sum) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            let mut i = 0;
            while i + 64 <= d {
                let cv = _mm512_loadu_si512(c.add(i) as *const _);
                let qv = _mm512_loadu_si512(qu.as_ptr().add(i) as *const _);
                acc = _mm512_dpbusd_epi32(acc, qv, cv);
                sum = _mm512_dpbusd_epi32(sum, ones, cv);
                i += 64;
            }
            let mut t = _mm512_reduce_add_epi32(acc) - 128 * _mm512_reduce_add_epi32(sum);
            while i < d {
                t += (qu[i] as i32 - 128) * *c.add(i) as i32;
                i += 1;
            }
            *o = t;
        }
    }

    /// Sixteen int8 values widened to float32 per step, four independent FMA chains.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dot_i8(q: &[f32], c: &[i8]) -> f32 {
        let n = q.len().min(c.len());
        let (pq, pc) = (q.as_ptr(), c.as_ptr());
        let widen = |p: *const i8| {
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(p as *const __m128i)))
        };
        let mut d = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= n {
            for u in 0..4 {
                let x = _mm512_loadu_ps(pq.add(i + 16 * u));
                d[u] = _mm512_fmadd_ps(x, widen(pc.add(i + 16 * u)), d[u]);
            }
            i += 64;
        }
        while i + 16 <= n {
            d[0] = _mm512_fmadd_ps(_mm512_loadu_ps(pq.add(i)), widen(pc.add(i)), d[0]);
            i += 16;
        }
        let mut dt = fold(d);
        while i < n {
            dt += q[i] * c[i] as f32;
            i += 1;
        }
        dt
    }

    /// Sum of the 16 lanes: halves added (lanes l and l+8), then the AVX2 fold of the 8.
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn hsum(v: __m512) -> f32 {
        let lo = _mm512_castps512_ps256(v);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        let v = _mm256_add_ps(lo, hi);
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<1>(s, s)))
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn fold(a: [__m512; 4]) -> f32 {
        hsum(_mm512_add_ps(
            _mm512_add_ps(a[0], a[1]),
            _mm512_add_ps(a[2], a[3]),
        ))
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dots(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
        // Four queries at a time: 16 independent FMA chains and one load of the row for four
        // FMAs; 16 accumulators leave half of the 32 registers for the loads.
        let mut i = 0;
        while i + 4 <= qs.len() {
            let [a, b, c, d] = dot_n::<4>([qs[i], qs[i + 1], qs[i + 2], qs[i + 3]], r);
            (out[i], out[i + 1], out[i + 2], out[i + 3]) = (a, b, c, d);
            i += 4;
        }
        if i + 2 <= qs.len() {
            let [a, b] = dot_n::<2>([qs[i], qs[i + 1]], r);
            (out[i], out[i + 1]) = (a, b);
            i += 2;
        }
        if i < qs.len() {
            out[i] = dot_n::<1>([qs[i]], r)[0];
        }
    }

    // Indexing by `u` and `k` mirrors `dot_norm` line for line (the point of this function).
    #[allow(clippy::needless_range_loop)]
    /// The dot product of each of `N` queries with `r`, each query's accumulators updated by
    /// the same FMAs in the same order as `dot_norm`'s (only interleaved with the others'),
    /// the same fold and the same scalar tail: equal bit for bit.
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dot_n<const N: usize>(qs: [&[f32]; N], r: &[f32]) -> [f32; N] {
        let n = qs.iter().fold(r.len(), |n, q| n.min(q.len()));
        let pr = r.as_ptr();
        let pq = qs.map(|q| q.as_ptr());
        let mut d = [[_mm512_setzero_ps(); 4]; N];
        let mut i = 0;
        while i + 64 <= n {
            for u in 0..4 {
                let y = _mm512_loadu_ps(pr.add(i + 16 * u));
                for k in 0..N {
                    let x = _mm512_loadu_ps(pq[k].add(i + 16 * u));
                    d[k][u] = _mm512_fmadd_ps(x, y, d[k][u]);
                }
            }
            i += 64;
        }
        while i + 16 <= n {
            let y = _mm512_loadu_ps(pr.add(i));
            for k in 0..N {
                let x = _mm512_loadu_ps(pq[k].add(i));
                d[k][0] = _mm512_fmadd_ps(x, y, d[k][0]);
            }
            i += 16;
        }
        let mut out = [0f32; N];
        for k in 0..N {
            let mut dt = fold(d[k]);
            for j in i..n {
                dt += qs[k][j] * r[j];
            }
            out[k] = dt;
        }
        out
    }

    /// `(dot(q, r), dot(r, r))` in one read of `r`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dot_norm(q: &[f32], r: &[f32]) -> (f32, f32) {
        let n = q.len().min(r.len());
        let (pq, pr) = (q.as_ptr(), r.as_ptr());
        let mut d = [_mm512_setzero_ps(); 4];
        let mut s = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= n {
            for u in 0..4 {
                let x = _mm512_loadu_ps(pq.add(i + 16 * u));
                let y = _mm512_loadu_ps(pr.add(i + 16 * u));
                d[u] = _mm512_fmadd_ps(x, y, d[u]);
                s[u] = _mm512_fmadd_ps(y, y, s[u]);
            }
            i += 64;
        }
        while i + 16 <= n {
            let x = _mm512_loadu_ps(pq.add(i));
            let y = _mm512_loadu_ps(pr.add(i));
            d[0] = _mm512_fmadd_ps(x, y, d[0]);
            s[0] = _mm512_fmadd_ps(y, y, s[0]);
            i += 16;
        }
        let (mut dt, mut nn) = (fold(d), fold(s));
        while i < n {
            dt += q[i] * r[i];
            nn += r[i] * r[i];
            i += 1;
        }
        (dt, nn)
    }

    /// Sixteen lanes at a time, the same operations as `score_at` lane-wise (see the AVX2 scan).
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn scan(row: &ScanRow<'_>, r0: usize, top: &mut TopSel) -> crate::Result<()> {
        let n = row.s.len();
        let (ps, pb) = (row.s.as_ptr(), row.bias.as_ptr());
        let inv_q = _mm512_set1_ps(row.inv_q);
        let w = _mm512_set1_ps(row.w_sim);
        let (lo, hi) = (_mm512_set1_ps(-1.0), _mm512_set1_ps(1.0));
        let inf = _mm512_set1_ps(f32::INFINITY);
        let mut t = _mm512_set1_ps(top.threshold());
        let mut bad: __mmask16 = 0;
        let mut j = 0;
        while j + 16 <= n {
            let s = _mm512_loadu_ps(ps.add(j));
            let b = _mm512_loadu_ps(pb.add(j));
            let sim = match row.inv_r {
                Some(inv_r) => {
                    let x = _mm512_mul_ps(
                        _mm512_mul_ps(s, inv_q),
                        _mm512_loadu_ps(inv_r.as_ptr().add(j)),
                    );
                    _mm512_min_ps(_mm512_max_ps(x, lo), hi)
                }
                None => s,
            };
            let score = _mm512_add_ps(_mm512_mul_ps(w, sim), b);
            bad |= _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(_mm512_abs_ps(s), inf);
            let mut bits = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(score, t) as u32;
            if bits != 0 {
                while bits != 0 {
                    let l = bits.trailing_zeros() as usize;
                    take(row, j + l, r0, top)?;
                    bits &= bits - 1;
                }
                t = _mm512_set1_ps(top.threshold());
            }
            j += 16;
        }
        if bad != 0 {
            first_bad(row, r0)?;
        }
        portable::scan(row, j, r0, top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The portable path is what non-AVX2 machines run: check it against the dispatched one.
    #[test]
    fn dots_equal_dot_bit_for_bit() {
        let mut seed = 23u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % 100_003) as f32 / 50_000.0 - 1.0
        };
        for s in paths() {
            for d in [0, 1, 7, 8, 9, 31, 32, 33, 41, 100, 384] {
                let qs: Vec<Vec<f32>> = (0..8).map(|_| (0..d).map(|_| next()).collect()).collect();
                let r: Vec<f32> = (0..d).map(|_| next()).collect();
                for nq in 0..=qs.len() {
                    let refs: Vec<&[f32]> = qs[..nq].iter().map(|q| &q[..]).collect();
                    let mut out = vec![f32::NAN; nq];
                    (s.dots)(&refs, &r, &mut out);
                    for (q, o) in refs.iter().zip(&out) {
                        assert_eq!(o.to_bits(), (s.dot)(q, &r).to_bits(), "d={d} nq={nq}");
                        assert_eq!(
                            o.to_bits(),
                            (s.dot_norm)(q, &r).0.to_bits(),
                            "d={d} nq={nq}"
                        );
                    }
                }
            }
        }
    }

    /// Every path this CPU has, against the portable one (skipped: paths the CPU lacks).
    fn paths() -> Vec<Simd> {
        let got: Vec<Simd> = Path::ALL.into_iter().filter_map(Simd::of).collect();
        for p in Path::ALL {
            if !p.supported() {
                eprintln!("skipped: this CPU has no {} path", p.name());
            }
        }
        got
    }

    #[test]
    fn every_path_is_exact_on_small_integers_and_close_on_floats() {
        let mut seed = 29u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for s in paths() {
            for d in [0, 1, 7, 15, 16, 17, 63, 64, 65, 100, 384, 1000] {
                let a: Vec<f32> = (0..d).map(|_| next(13) as f32 - 6.0).collect();
                let b: Vec<f32> = (0..d).map(|_| next(13) as f32 - 6.0).collect();
                let exact = |x: &[f32], y: &[f32]| {
                    x.iter().zip(y).map(|(u, v)| (u * v) as f64).sum::<f64>() as f32
                };
                assert_eq!((s.dot)(&a, &b), exact(&a, &b), "{:?} d={d}", s.path);
                assert_eq!(
                    (s.dot_norm)(&a, &b),
                    (exact(&a, &b), exact(&b, &b)),
                    "{:?} d={d}",
                    s.path
                );
                let fa: Vec<f32> = (0..d)
                    .map(|_| next(100_003) as f32 / 50_000.0 - 1.0)
                    .collect();
                let fb: Vec<f32> = (0..d)
                    .map(|_| next(100_003) as f32 / 50_000.0 - 1.0)
                    .collect();
                let want: f64 = fa.iter().zip(&fb).map(|(x, y)| *x as f64 * *y as f64).sum();
                let (dot, nn) = (s.dot_norm)(&fa, &fb);
                assert!((dot as f64 - want).abs() < 1e-4, "{:?} d={d}", s.path);
                assert_eq!(
                    dot.to_bits(),
                    (s.dot)(&fa, &fb).to_bits(),
                    "{:?} d={d}",
                    s.path
                );
                assert_eq!(
                    dot.to_bits(),
                    (s.dot)(&fb, &fa).to_bits(),
                    "{:?} d={d}",
                    s.path
                );
                assert_eq!(
                    nn.to_bits(),
                    (s.dot)(&fb, &fb).to_bits(),
                    "{:?} d={d}",
                    s.path
                );
            }
        }
    }

    #[test]
    fn the_env_var_caps_the_path() {
        // `path()` is decided once per process; the cap rule itself is checked here.
        let p = path();
        assert!(p.supported());
        match std::env::var(ENV).ok().and_then(|v| Path::parse(&v)) {
            Some(cap) => assert!(p <= cap),
            None => assert_eq!(
                p,
                Path::ALL.into_iter().rev().find(|p| p.supported()).unwrap()
            ),
        }
        assert_eq!(Path::parse("avx512"), Some(Path::Avx512));
        assert_eq!(Path::parse("sse"), None);
    }

    #[test]
    fn portable_matches_dispatched() {
        let mut seed = 17u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) % 13) as f32 - 6.0
        };
        for s in paths() {
            for d in [0, 3, 8, 40, 384] {
                let a: Vec<f32> = (0..d).map(|_| next()).collect();
                let b: Vec<f32> = (0..d).map(|_| next()).collect();
                // Small integers: exact in any order, so both paths must agree exactly.
                assert_eq!(portable::dot_norm(&a, &b), (s.dot_norm)(&a, &b));
                assert_eq!(portable::dot(&a, &b), (s.dot)(&a, &b));
            }
            let n = 37;
            let raw: Vec<f32> = (0..n).map(|_| next()).collect();
            let inv_r: Vec<f32> = (0..n).map(|j| 1.0 / (1.0 + j as f32)).collect();
            let bias: Vec<f32> = (0..n)
                .map(|j| {
                    if j % 7 == 3 {
                        f32::NEG_INFINITY
                    } else {
                        (j % 3) as f32
                    }
                })
                .collect();
            for inv in [Some(&inv_r[..]), None] {
                let row = ScanRow {
                    s: &raw,
                    inv_r: inv,
                    bias: &bias,
                    inv_q: 0.5,
                    w_sim: 2.0,
                };
                let mut a = TopSel::new(5, -1.0, 5);
                let mut b = TopSel::new(5, -1.0, 5);
                (s.scan)(&row, 100, &mut a).unwrap();
                portable::scan(&row, 0, 100, &mut b).unwrap();
                let (a, b) = (
                    super::super::select::merge([a.into_vec()], 5),
                    super::super::select::merge([b.into_vec()], 5),
                );
                assert_eq!(a, b);
                assert!(a.iter().all(|h| h.index >= 100 && (h.index - 100) % 7 != 3));
            }
        }
    }
}
