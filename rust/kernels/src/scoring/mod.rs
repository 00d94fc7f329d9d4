//! Hybrid scoring with top-k selection.
//!
//! `score = w_sim·sim + w_rec·decay(now − t) + w_extra·extra`, where `sim` is the cosine (or the
//! raw dot product for pre-normalised rows), `decay` is `2^(−age/half_life)` or `e^(−age/τ)` with
//! the age clamped at 0, and `extra` is a per-row value such as importance. Rows can be masked
//! out and a minimum score applied; results are best first, ties broken by the lower row index.
//!
//! Two paths share one scoring formula (so they agree bit for bit when the dot products do):
//! - one query: a single fused pass (dot, row norm, score, bounded heap) over row chunks in parallel;
//! - a batch: a blocked GEMM over row blocks, each score block scanned while it is in cache.

mod batch;
pub mod grouped;
pub(crate) mod select;
pub mod shadow;
pub(crate) mod simd;

use crate::{KernelError, Result};
use rayon::prelude::*;
use select::{merge, Hit, TopSel};
use simd::{inv_norm, ScanRow};

/// How similarity is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Cosine similarity; a zero-norm row or query has similarity 0.
    Cosine,
    /// Raw dot product (for rows that are already L2-normalised).
    Dot,
}

impl Metric {
    pub fn parse(name: &str) -> Result<Metric> {
        match name {
            "cosine" => Ok(Metric::Cosine),
            "dot" => Ok(Metric::Dot),
            other => Err(KernelError::invalid(
                "metric",
                format!("expected \"cosine\" or \"dot\", got {other:?}"),
            )),
        }
    }
}

/// What the kernel knows of the rows' norms (cosine only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Norms<'a> {
    /// Computed in the same pass as the dot products.
    Compute,
    /// `1/‖row‖` per row (0 for a zero row), kept by the caller: a query reads each row once
    /// for its dot product alone.
    Inverse(&'a [f32]),
    /// Every row has norm 1 (or is zero).
    Unit,
}

/// Everything but the vectors. `Params::new(k)` gives pure cosine similarity.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    pub k: usize,
    pub metric: Metric,
    pub w_sim: f64,
    pub w_rec: f64,
    pub w_extra: f64,
    /// Unix ms per row; required when `w_rec != 0`.
    pub timestamps: Option<&'a [i64]>,
    pub now_ms: i64,
    pub half_life_ms: Option<f64>,
    pub tau_ms: Option<f64>,
    /// Per-row extra term (importance, confidence); required when `w_extra != 0`.
    pub extra: Option<&'a [f32]>,
    /// `false` excludes the row (it is not even read).
    pub mask: Option<&'a [bool]>,
    /// Inclusive lower bound on the score.
    pub min_score: Option<f64>,
    /// The rows' norms, when the caller knows them (cosine only).
    pub norms: Norms<'a>,
}

impl Params<'_> {
    pub fn new(k: usize) -> Self {
        Params {
            k,
            metric: Metric::Cosine,
            w_sim: 1.0,
            w_rec: 0.0,
            w_extra: 0.0,
            timestamps: None,
            now_ms: 0,
            half_life_ms: None,
            tau_ms: None,
            extra: None,
            mask: None,
            min_score: None,
            norms: Norms::Compute,
        }
    }
}

/// Results for `nq` queries, row-major `nq x width` with `width = min(k, n)` (no query can
/// have more hits than there are rows); short rows are padded with index −1, score −inf and
/// similarity NaN.
#[derive(Debug, Clone, PartialEq)]
pub struct TopK {
    pub nq: usize,
    pub width: usize,
    /// How many real hits each query has (the rest of its row is padding).
    pub lens: Vec<usize>,
    pub indices: Vec<i64>,
    pub scores: Vec<f32>,
    pub similarities: Vec<f32>,
}

impl TopK {
    /// The real hits of query `i`: `(indices, scores, similarities)`.
    pub fn hits(&self, i: usize) -> (&[i64], &[f32], &[f32]) {
        let (a, b) = (i * self.width, i * self.width + self.lens[i]);
        (
            &self.indices[a..b],
            &self.scores[a..b],
            &self.similarities[a..b],
        )
    }

    fn padded(nq: usize, width: usize) -> Result<TopK> {
        let too_big = || {
            KernelError::invalid(
                "k",
                format!("{nq} queries x {width} results do not fit in memory"),
            )
        };
        let len = nq.checked_mul(width).ok_or_else(too_big)?;
        let (mut indices, mut scores, mut similarities) = (Vec::new(), Vec::new(), Vec::new());
        indices.try_reserve_exact(len).map_err(|_| too_big())?;
        scores.try_reserve_exact(len).map_err(|_| too_big())?;
        similarities.try_reserve_exact(len).map_err(|_| too_big())?;
        indices.resize(len, -1);
        scores.resize(len, f32::NEG_INFINITY);
        similarities.resize(len, f32::NAN);
        Ok(TopK {
            nq,
            width,
            lens: vec![0; nq],
            indices,
            scores,
            similarities,
        })
    }

    fn fill(&mut self, i: usize, hits: &[Hit]) {
        let base = i * self.width;
        for (o, h) in hits.iter().enumerate() {
            self.indices[base + o] = h.index as i64;
            self.scores[base + o] = h.score;
            self.similarities[base + o] = h.sim;
        }
        self.lens[i] = hits.len();
    }
}

pub(crate) fn non_finite_row(row: usize) -> KernelError {
    KernelError::invalid("matrix", format!("row {row} contains NaN or inf"))
}

pub(crate) fn norm_overflow(row: usize) -> KernelError {
    KernelError::invalid(
        "matrix",
        format!("row {row}: squared norm overflows float32"),
    )
}

pub(crate) fn score_overflow(row: usize) -> KernelError {
    KernelError::invalid(
        "w_sim",
        format!(
            "the score of row {row} overflows float32 (are the weights or the dot products huge?)"
        ),
    )
}

/// Validated parameters in the form the scans use.
#[derive(Clone)]
pub(crate) struct Prepared<'a> {
    k: usize,
    metric: Metric,
    w_sim: f32,
    /// `(timestamps, now_ms, decay, w_rec)`.
    recency: Option<(&'a [i64], i64, Decay, f64)>,
    extra: Option<(&'a [f32], f64)>,
    mask: Option<&'a [bool]>,
    min_score: f32,
    norms: Norms<'a>,
    /// Added to row numbers in hits and errors: the arrays cover rows `base..` of a larger matrix.
    base: usize,
}

#[derive(Clone, Copy)]
enum Decay {
    /// `2^(−age/half_life)`.
    HalfLife(f64),
    /// `e^(−age/τ)`.
    Tau(f64),
}

fn finite_weight(arg: &'static str, w: f64) -> Result<f32> {
    if !w.is_finite() || !(w as f32).is_finite() {
        return Err(KernelError::invalid(
            arg,
            format!("must be a finite float32 value, got {w}"),
        ));
    }
    Ok(w as f32)
}

fn check_len(arg: &'static str, len: usize, n: usize) -> Result<()> {
    if len != n {
        return Err(KernelError::invalid(
            arg,
            format!("has {len} entries but matrix has {n} rows"),
        ));
    }
    Ok(())
}

fn positive(arg: &'static str, v: f64) -> Result<f64> {
    if !(v.is_finite() && v > 0.0) {
        return Err(KernelError::invalid(
            arg,
            format!("must be a finite number > 0, got {v}"),
        ));
    }
    Ok(v)
}

/// Validates a 2-D row-major `(rows, d)` buffer.
pub(crate) fn check_shape(arg: &'static str, data: &[f32], rows: usize, d: usize) -> Result<()> {
    if rows.checked_mul(d) != Some(data.len()) {
        return Err(KernelError::invalid(
            arg,
            format!("buffer of {} values is not {rows} x {d}", data.len()),
        ));
    }
    Ok(())
}

/// Index of the first non-finite value, as `(row, column)`.
pub(crate) fn first_non_finite(data: &[f32], d: usize) -> Option<(usize, usize)> {
    data.iter()
        .position(|x| !x.is_finite())
        .map(|p| (p / d.max(1), p % d.max(1)))
}

impl<'a> Prepared<'a> {
    fn new(p: &Params<'a>, n: usize) -> Result<Prepared<'a>> {
        if p.k == 0 {
            return Err(KernelError::invalid("k", "must be >= 1, got 0"));
        }
        let w_sim = finite_weight("w_sim", p.w_sim)?;
        finite_weight("w_rec", p.w_rec)?;
        finite_weight("w_extra", p.w_extra)?;
        if let Some(t) = p.timestamps {
            check_len("timestamps", t.len(), n)?;
        }
        if let Some(e) = p.extra {
            check_len("extra", e.len(), n)?;
            if let Some(i) = e.iter().position(|x| !x.is_finite()) {
                return Err(KernelError::invalid(
                    "extra",
                    format!("entry {i} is {} (must be finite)", e[i]),
                ));
            }
        }
        if let Some(m) = p.mask {
            check_len("mask", m.len(), n)?;
        }
        let decay = match (p.half_life_ms, p.tau_ms) {
            (Some(_), Some(_)) => {
                return Err(KernelError::invalid(
                    "half_life_ms",
                    "give either half_life_ms or tau_ms, not both",
                ))
            }
            (Some(h), None) => Some(Decay::HalfLife(positive("half_life_ms", h)?)),
            (None, Some(t)) => Some(Decay::Tau(positive("tau_ms", t)?)),
            (None, None) => None,
        };
        let recency = if p.w_rec != 0.0 {
            let ts = p
                .timestamps
                .ok_or_else(|| KernelError::invalid("timestamps", "required when w_rec != 0"))?;
            let decay = decay.ok_or_else(|| {
                KernelError::invalid(
                    "half_life_ms",
                    "w_rec != 0 needs a decay: give half_life_ms or tau_ms",
                )
            })?;
            Some((ts, p.now_ms, decay, p.w_rec))
        } else {
            None
        };
        let extra = if p.w_extra != 0.0 {
            let e = p
                .extra
                .ok_or_else(|| KernelError::invalid("extra", "required when w_extra != 0"))?;
            Some((e, p.w_extra))
        } else {
            None
        };
        match p.norms {
            Norms::Compute => {}
            _ if p.metric != Metric::Cosine => {
                return Err(KernelError::invalid(
                    "inv_norms",
                    "row norms are only used by metric=\"cosine\"",
                ))
            }
            Norms::Inverse(inv) => {
                check_len("inv_norms", inv.len(), n)?;
                if let Some(i) = inv.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
                    return Err(KernelError::invalid(
                        "inv_norms",
                        format!("entry {i} is {} (must be finite and >= 0)", inv[i]),
                    ));
                }
            }
            Norms::Unit => {}
        }
        let min_score = match p.min_score {
            None => f32::NEG_INFINITY,
            Some(m) if m.is_nan() => {
                return Err(KernelError::invalid("min_score", "must not be NaN"))
            }
            Some(m) => m as f32,
        };
        Ok(Prepared {
            k: p.k,
            metric: p.metric,
            w_sim,
            recency,
            extra,
            mask: p.mask,
            min_score,
            norms: p.norms,
            base: 0,
        })
    }

    /// The query-independent part of the score for rows `r0..r0+out.len()`; `-inf` marks a masked row.
    fn fill_bias(&self, r0: usize, out: &mut [f32]) -> Result<()> {
        // The same f64 operations on every path (no FMA contraction), only wider.
        #[cfg(target_arch = "x86_64")]
        let ok = match simd::path() {
            // SAFETY: `path()` returns only paths the CPU supports.
            simd::Path::Avx512 => unsafe { self.bias_avx512(r0, out) },
            // SAFETY: as above.
            simd::Path::Avx2 => unsafe { self.bias_avx2(r0, out) },
            simd::Path::Portable => self.bias_body(r0, out),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let ok = self.bias_body(r0, out);
        if !ok {
            let j = self.base + r0 + out.iter().position(|b| !b.is_finite()).unwrap_or(0);
            return Err(KernelError::invalid(
                "w_extra",
                format!("the score of row {j} overflows float32"),
            ));
        }
        if let Some(mask) = self.mask {
            for (b, &keep) in out.iter_mut().zip(&mask[r0..]) {
                if !keep {
                    *b = f32::NEG_INFINITY;
                }
            }
        }
        Ok(())
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn bias_avx2(&self, r0: usize, out: &mut [f32]) -> bool {
        self.bias_body(r0, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn bias_avx512(&self, r0: usize, out: &mut [f32]) -> bool {
        self.bias_body(r0, out)
    }

    /// `w_rec·decay + w_extra·extra` in f64, rounded once to f32; false if any overflowed.
    /// Branch-free per row so the loop vectorises.
    #[inline(always)]
    fn bias_body(&self, r0: usize, out: &mut [f32]) -> bool {
        let n = out.len();
        let (w_extra, extra) = match self.extra {
            Some((e, w)) => (w, &e[r0..r0 + n]),
            None => (0.0, &[][..]),
        };
        let mut finite = true;
        match self.recency {
            Some((ts, now, decay, w_rec)) => {
                // 2^(−age/h) = exp2(−age/c) with c = h (a division, so whole half-lives are
                // exact); e^(−age/τ) = exp2(−age/c) with c = τ·ln 2.
                let c = match decay {
                    Decay::HalfLife(h) => h,
                    Decay::Tau(t) => t * std::f64::consts::LN_2,
                };
                let ts = &ts[r0..r0 + n];
                for j in 0..n {
                    let d = w_rec * exp2_nonpositive(-age_ms(now, ts[j]) / c);
                    let v = (if extra.is_empty() {
                        d
                    } else {
                        d + w_extra * extra[j] as f64
                    }) as f32;
                    finite &= v.abs() <= f32::MAX;
                    out[j] = v;
                }
            }
            None if extra.is_empty() => out.fill(0.0),
            None => {
                for (o, &e) in out.iter_mut().zip(extra) {
                    let v = (w_extra * e as f64) as f32;
                    finite &= v.abs() <= f32::MAX;
                    *o = v;
                }
            }
        }
        finite
    }
}

/// `now − t` in ms as f64, 0 for future timestamps (and for ages that overflow i64, which
/// only absurd inputs reach: they decay to 0 either way).
#[inline(always)]
fn age_ms(now: i64, t: i64) -> f64 {
    let age = now.wrapping_sub(t);
    let age = if t > now {
        0
    } else if age < 0 {
        i64::MAX
    } else {
        age
    };
    age as f64
}

/// `2^x` for `x <= 0`, relative error below 1e-13 (far under float32 resolution), exact at
/// integers. Branch-free (round by the 1.5·2^52 trick, degree-11 polynomial on [−½, ½], scale
/// by building the exponent bits) so it vectorises, unlike `f64::exp2`.
#[inline(always)]
fn exp2_nonpositive(x: f64) -> f64 {
    const ROUND: f64 = 6_755_399_441_055_744.0; // 1.5·2^52
    let x = if x > -1000.0 { x } else { -1000.0 }; // 2^-1000 is 0 in f32; keeps the exponent valid
    let t = x + ROUND;
    let r = t - ROUND; // round(x)
    let f = x - r; // in [−½, ½]
    let n = (t.to_bits() as i64).wrapping_sub(ROUND.to_bits() as i64);
    let scale = f64::from_bits(((n + 1023) as u64) << 52);
    // Taylor coefficients of e^(f·ln2): ln2^k / k!.
    const C: [f64; 12] = [
        1.0,
        std::f64::consts::LN_2,
        0.2402265069591007,
        0.055504108664821576,
        0.009618129107628477,
        0.0013333558146428441,
        0.00015403530393381606,
        1.5252733804059838e-05,
        1.3215486790144305e-06,
        1.0178086009239696e-07,
        7.054911620801121e-09,
        4.44553827187081e-10,
    ];
    let mut p = C[11];
    for k in (0..11).rev() {
        p = p * f + C[k];
    }
    p * scale
}

/// The instruction-set path the scoring kernels take in this process (`"avx512"`, `"avx2"` or
/// `"portable"`): the best the CPU supports, capped by the `MINDCORE_SIMD` environment variable.
pub fn simd_path() -> &'static str {
    simd::path().name()
}

/// A row-major `(n, d)` block of float32 vectors, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    pub data: &'a [f32],
    pub n: usize,
    pub d: usize,
}

impl<'a> Rows<'a> {
    pub fn new(data: &'a [f32], n: usize, d: usize) -> Self {
        Rows { data, n, d }
    }
}

/// Best `k` rows of `matrix` for each query row.
///
/// One query takes the fused single pass; several take the blocked GEMM path. Both allocate
/// only the output and small per-thread state.
pub fn hybrid_topk(queries: Rows<'_>, matrix: Rows<'_>, p: &Params<'_>) -> Result<TopK> {
    topk_with(queries, matrix, None, p)
}

/// [`hybrid_topk`] with the matrix's int8 shadow ([`shadow::quantize`] of exactly these rows):
/// the same result bit for bit, faster for one query over many rows (a batch, or fewer than
/// [`shadow::MIN_ROWS`] rows, takes the plain path).
pub fn hybrid_topk_shadowed(
    queries: Rows<'_>,
    matrix: Rows<'_>,
    shadow: shadow::Shadow<'_>,
    p: &Params<'_>,
) -> Result<TopK> {
    shadow::check(&shadow, matrix.n, matrix.d)?;
    topk_with(queries, matrix, Some(shadow), p)
}

fn topk_with(
    queries: Rows<'_>,
    matrix: Rows<'_>,
    shadow: Option<shadow::Shadow<'_>>,
    p: &Params<'_>,
) -> Result<TopK> {
    let (
        Rows {
            data: queries,
            n: nq,
            d: dq,
        },
        Rows {
            data: matrix,
            n,
            d: dm,
        },
    ) = (queries, matrix);
    check_shape("query", queries, nq, dq)?;
    check_shape("matrix", matrix, n, dm)?;
    if dq != dm {
        return Err(KernelError::invalid(
            "query",
            format!("query has dimension {dq} but matrix rows have dimension {dm}"),
        ));
    }
    let prep = Prepared::new(p, n)?;
    if let Some((r, c)) = first_non_finite(queries, dq) {
        let at = if nq == 1 {
            format!("entry {c}")
        } else {
            format!("row {r}, column {c}")
        };
        return Err(KernelError::invalid(
            "query",
            format!("{at} is {} (must be finite)", queries[r * dq.max(1) + c]),
        ));
    }
    let mut out = TopK::padded(nq, prep.k.min(n))?;
    if nq == 0 || n == 0 {
        return Ok(out);
    }
    let inv_q = query_inv_norms(queries, nq, dq, prep.metric)?;
    if nq == 1 {
        let shadowed = match shadow {
            Some(sh) if n >= shadow::MIN_ROWS => {
                shadow::single(queries, inv_q[0], matrix, n, dm, sh, &prep)?
            }
            _ => None,
        };
        let hits = match shadowed {
            Some(hits) => hits,
            None => single(queries, inv_q[0], matrix, n, dm, &prep)?,
        };
        out.fill(0, &hits);
    } else {
        let per_query = batch::topk(queries, &inv_q, nq, matrix, n, dm, &prep)?;
        for (i, hits) in per_query.iter().enumerate() {
            out.fill(i, hits);
        }
    }
    Ok(out)
}

/// `1/‖q‖` per query (cosine), or 1 (dot, unused).
fn query_inv_norms(queries: &[f32], nq: usize, d: usize, metric: Metric) -> Result<Vec<f32>> {
    let s = simd::simd();
    (0..nq)
        .map(|i| {
            if metric == Metric::Dot {
                return Ok(1.0);
            }
            let q = &queries[i * d..(i + 1) * d];
            let qq = (s.dot)(q, q);
            if !qq.is_finite() {
                let at = if nq == 1 {
                    String::new()
                } else {
                    format!("row {i}: ")
                };
                return Err(KernelError::invalid(
                    "query",
                    format!("{at}squared norm overflows float32"),
                ));
            }
            Ok(inv_norm(qq))
        })
        .collect()
}

/// Work (in multiply-adds) below which a parallel step runs on the calling thread: handing
/// it to the pool and waking a worker costs more than it saves.
const PAR_MIN_WORK: usize = 1 << 18;

/// `f` over `0..items`, in parallel when `work` makes it worth it; the first error wins.
pub(crate) fn par_map<T: Send>(
    items: usize,
    work: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    if items <= 1 || work < PAR_MIN_WORK {
        (0..items).map(f).collect()
    } else {
        (0..items).into_par_iter().map(f).collect()
    }
}

/// Rows per parallel work item: enough work to amortise the hand-off (~64K multiply-adds),
/// small enough to balance the threads.
pub(crate) fn chunk_rows(n: usize, d: usize) -> usize {
    let balanced = n.div_ceil(rayon::current_num_threads().max(1) * 8);
    balanced.max((1 << 16) / d.max(1)).clamp(1, 16_384)
}

/// One query: dot product, row norm and score in one pass over each row, a heap per chunk.
/// Hits (and errors) number rows from `prep.base`.
fn single(
    q: &[f32],
    inv_q: f32,
    matrix: &[f32],
    n: usize,
    d: usize,
    prep: &Prepared<'_>,
) -> Result<Vec<Hit>> {
    /// Rows scored per step: the dot products land in small stack buffers, then the same
    /// vectorised scan as the batch path scores them and feeds the heap.
    const STEP: usize = 256;
    /// `1/‖r‖` of unit rows.
    static ONES: [f32; STEP] = [1.0; STEP];
    let s = simd::simd();
    // The row norms to compute in the pass (cosine without norms given).
    let fused_norms = prep.metric == Metric::Cosine && prep.norms == Norms::Compute;
    let rows = chunk_rows(n, d);
    let parts = par_map(n.div_ceil(rows), n * d.max(1), |c| {
        let (r0, r1) = (c * rows, ((c + 1) * rows).min(n));
        let mut top = TopSel::new(prep.k, prep.min_score, r1 - r0);
        let (mut bias, mut dots, mut inv_r) = ([0f32; STEP], [0f32; STEP], [0f32; STEP]);
        for b0 in (r0..r1).step_by(STEP) {
            let len = STEP.min(r1 - b0);
            let (bias, dots, inv_r) = (&mut bias[..len], &mut dots[..len], &mut inv_r[..len]);
            prep.fill_bias(b0, bias)?;
            for (o, &b) in bias.iter().enumerate() {
                if b == f32::NEG_INFINITY {
                    continue; // masked out: not even read
                }
                let row = &matrix[(b0 + o) * d..(b0 + o + 1) * d];
                // NaN/inf in a row makes its dot product non-finite (the query is finite): the
                // scan reports it. A finite row whose squared norm overflows is reported here.
                if fused_norms {
                    let (dot, rr) = (s.dot_norm)(q, row);
                    if rr.is_infinite() && dot.is_finite() {
                        return Err(norm_overflow(prep.base + b0 + o));
                    }
                    (dots[o], inv_r[o]) = (dot, rr);
                } else {
                    dots[o] = (s.dot)(q, row);
                }
            }
            if fused_norms {
                for x in inv_r.iter_mut() {
                    *x = inv_norm(*x);
                }
            }
            let inv_r: Option<&[f32]> = match (prep.metric, prep.norms) {
                (Metric::Dot, _) => None,
                (Metric::Cosine, Norms::Compute) => Some(inv_r),
                (Metric::Cosine, Norms::Inverse(inv)) => Some(&inv[b0..b0 + len]),
                (Metric::Cosine, Norms::Unit) => Some(&ONES[..len]),
            };
            let row = ScanRow {
                s: dots,
                inv_r,
                bias,
                inv_q,
                w_sim: prep.w_sim,
            };
            (s.scan)(&row, prep.base + b0, &mut top)?;
        }
        Ok(top.into_vec())
    })?;
    Ok(merge(parts, prep.k))
}

/// Several queries over the same rows, each scored exactly as [`single`] scores it alone: the
/// same dot product per (query, row) (a pure function of the two), the same row norm (`dot(r, r)`
/// is the norm `dot_norm` returns, bit for bit, so it is computed once per row here), the same
/// bias and scan. Only the loop order differs: each row stays in cache while every query's dot
/// product with it is computed (several FMA chains at once instead of one query's four), so a
/// group's rows are read from memory once, not once per query. `preps[i]` is query `i`'s (they
/// may differ in their extra term); they share one metric and mask. Hits number rows from each prep's `base`.
pub(crate) fn multi(
    queries: &[&[f32]],
    inv_q: &[f32],
    matrix: &[f32],
    n: usize,
    d: usize,
    preps: &[Prepared<'_>],
) -> Result<Vec<Vec<Hit>>> {
    let Some(first) = preps.first() else {
        return Ok(Vec::new());
    };
    /// Rows per block: each row is read once for all queries (`dots`), then each query scans the block.
    const STEP: usize = 128;
    let block = STEP;
    let s = simd::simd();
    let cosine_metric = first.metric == Metric::Cosine;
    let mask = first.mask;
    let rows = chunk_rows(n, d);
    let nq = queries.len();
    let parts = par_map(n.div_ceil(rows), n * d.max(1) * nq, |c| {
        let (r0, r1) = (c * rows, ((c + 1) * rows).min(n));
        let mut tops: Vec<TopSel> = preps
            .iter()
            .map(|p| TopSel::new(p.k, p.min_score, r1 - r0))
            .collect();
        let (mut bias, mut inv_r, mut sq) = ([0f32; STEP], [0f32; STEP], [0f32; STEP]);
        // Row-major (row, query) dot products of the block; `per_row` is one row's.
        let mut all = vec![0f32; block * nq];
        let mut per_row = vec![0f32; nq];
        let mut dots = [0f32; STEP];
        for b0 in (r0..r1).step_by(block) {
            let len = block.min(r1 - b0);
            for o in 0..len {
                if mask.is_some_and(|m| !m[b0 + o]) {
                    continue; // masked out: not even read
                }
                let row = &matrix[(b0 + o) * d..(b0 + o + 1) * d];
                if cosine_metric {
                    sq[o] = (s.dot)(row, row);
                    inv_r[o] = inv_norm(sq[o]);
                }
                (s.dots)(queries, row, &mut per_row);
                all[o * nq..(o + 1) * nq].copy_from_slice(&per_row);
            }
            for (qi, prep) in preps.iter().enumerate() {
                let (bias, dots) = (&mut bias[..len], &mut dots[..len]);
                prep.fill_bias(b0, bias)?;
                for (o, &b) in bias.iter().enumerate() {
                    if b == f32::NEG_INFINITY {
                        continue; // masked out: not read above either
                    }
                    let dot = all[o * nq + qi];
                    if cosine_metric && sq[o].is_infinite() && dot.is_finite() {
                        return Err(norm_overflow(prep.base + b0 + o));
                    }
                    dots[o] = dot;
                }
                let row = ScanRow {
                    s: dots,
                    inv_r: cosine_metric.then_some(&inv_r[..len]),
                    bias,
                    inv_q: inv_q[qi],
                    w_sim: prep.w_sim,
                };
                (s.scan)(&row, prep.base + b0, &mut tops[qi])?;
            }
        }
        Ok(tops.into_iter().map(TopSel::into_vec).collect::<Vec<_>>())
    })?;
    let mut per_query: Vec<Vec<Vec<Hit>>> =
        (0..nq).map(|_| Vec::with_capacity(parts.len())).collect();
    for part in parts {
        for (qi, hits) in part.into_iter().enumerate() {
            per_query[qi].push(hits);
        }
    }
    Ok(per_query
        .into_iter()
        .zip(preps)
        .map(|(parts, p)| merge(parts, p.k))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// Small integers: every dot product and squared norm is exact in f32, so the single and
    /// batch paths must agree bit for bit and ties are real ties.
    fn int_matrix(rows: usize, d: usize, seed: &mut u64) -> Vec<f32> {
        (0..rows * d)
            .map(|_| (lcg(seed) % 7) as f32 - 3.0)
            .collect()
    }

    /// Straightforward reference: every score in f64, stable sort, best first.
    fn reference(q: &[f32], m: &[f32], n: usize, p: &Params<'_>) -> Vec<(usize, f64)> {
        let d = q.len();
        let norm = |x: &[f32]| x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        let mut scored: Vec<(usize, f64)> = (0..n)
            .filter(|&j| !matches!(p.mask, Some(mk) if !mk[j]))
            .map(|j| {
                let r = &m[j * d..(j + 1) * d];
                let dot: f64 = q.iter().zip(r).map(|(a, b)| *a as f64 * *b as f64).sum();
                let sim = match p.metric {
                    Metric::Dot => dot,
                    Metric::Cosine if norm(q) == 0.0 || norm(r) == 0.0 => 0.0,
                    Metric::Cosine => dot / (norm(q) * norm(r)),
                };
                let mut s = p.w_sim * sim;
                if p.w_rec != 0.0 {
                    let age = (p.now_ms - p.timestamps.unwrap()[j]).max(0) as f64;
                    s += p.w_rec
                        * match (p.half_life_ms, p.tau_ms) {
                            (Some(h), _) => (-age / h).exp2(),
                            (_, Some(t)) => (-age / t).exp(),
                            _ => unreachable!(),
                        };
                }
                if p.w_extra != 0.0 {
                    s += p.w_extra * p.extra.unwrap()[j] as f64;
                }
                (j, s)
            })
            .filter(|&(_, s)| !matches!(p.min_score, Some(m) if s < m))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1)); // stable: ties keep the lower index first
        scored.truncate(p.k);
        scored
    }

    fn check_against_reference(q: &[f32], m: &[f32], n: usize, p: &Params<'_>, exact: bool) {
        let d = q.len();
        let got = hybrid_topk(Rows::new(q, 1, d), Rows::new(m, n, d), p).unwrap();
        let (idx, scores, _) = got.hits(0);
        let want = reference(q, m, n, p);
        assert_eq!(idx.len(), want.len());
        for (o, (j, s)) in want.iter().enumerate() {
            assert!(
                (scores[o] as f64 - s).abs() <= 1e-5 * (1.0 + s.abs()),
                "rank {o}: {} vs {s}",
                scores[o]
            );
            if exact {
                assert_eq!(idx[o], *j as i64, "rank {o}");
            }
        }
    }

    #[test]
    fn single_matches_reference_with_ties() {
        let mut seed = 3;
        let (n, d) = (2000, 19);
        let mut m = int_matrix(n, d, &mut seed);
        for t in 0..d {
            m[1500 * d + t] = m[7 * d + t]; // exact tie between rows 7 and 1500
            m[900 * d + t] = 0.0; // zero row: cosine 0
        }
        let q: Vec<f32> = m[7 * d..8 * d].to_vec();
        for metric in [Metric::Dot, Metric::Cosine] {
            for k in [1, 2, 5, 64, 5000] {
                let p = Params {
                    metric,
                    ..Params::new(k)
                };
                check_against_reference(&q, &m, n, &p, metric == Metric::Dot);
                let got = hybrid_topk(Rows::new(&q, 1, d), Rows::new(&m, n, d), &p).unwrap();
                assert_eq!(&got.hits(0).0[..k.min(2)], &[7, 1500][..k.min(2)]);
            }
        }
    }

    #[test]
    fn weights_decay_extra_mask_and_min_score() {
        let mut seed = 11;
        let (n, d) = (3000, 8);
        let m = int_matrix(n, d, &mut seed);
        let q: Vec<f32> = (0..d).map(|t| t as f32 - 3.0).collect();
        let now = 1_700_000_000_000i64;
        let h = 1000.0;
        // Ages are whole half-lives (some in the future): decay is an exact power of two.
        let ts: Vec<i64> = (0..n)
            .map(|_| now - (lcg(&mut seed) % 6) as i64 * 1000 + 1000)
            .collect();
        let extra: Vec<f32> = (0..n).map(|_| (lcg(&mut seed) % 5) as f32 * 0.25).collect();
        let mask: Vec<bool> = (0..n).map(|j| j % 3 != 1).collect();
        let base = Params {
            metric: Metric::Dot,
            w_sim: 0.5,
            w_rec: 2.0,
            w_extra: 4.0,
            timestamps: Some(&ts),
            now_ms: now,
            half_life_ms: Some(h),
            extra: Some(&extra),
            ..Params::new(50)
        };
        check_against_reference(&q, &m, n, &base, true);
        check_against_reference(
            &q,
            &m,
            n,
            &Params {
                mask: Some(&mask),
                ..base.clone()
            },
            true,
        );
        check_against_reference(
            &q,
            &m,
            n,
            &Params {
                min_score: Some(9.0),
                k: 10_000,
                ..base.clone()
            },
            true,
        );
        let tau = Params {
            half_life_ms: None,
            tau_ms: Some(2500.0),
            metric: Metric::Cosine,
            ..base.clone()
        };
        check_against_reference(&q, &m, n, &tau, false);
        let got = hybrid_topk(
            Rows::new(&q, 1, d),
            Rows::new(&m, n, d),
            &Params {
                min_score: Some(9.0),
                k: 10_000,
                ..base.clone()
            },
        )
        .unwrap();
        assert!(got.hits(0).1.iter().all(|&s| s >= 9.0) && got.lens[0] > 0);
    }

    #[test]
    fn batch_equals_single_bit_for_bit() {
        let mut seed = 5;
        let (n, d, nq) = (1337, 24, 9);
        let mut m = int_matrix(n, d, &mut seed);
        for t in 0..d {
            m[1000 * d + t] = m[3 * d + t];
        }
        let mut qs = int_matrix(nq, d, &mut seed);
        qs[..d].copy_from_slice(&m[3 * d..4 * d]);
        qs[d..2 * d].fill(0.0); // zero query
        let extra: Vec<f32> = (0..n).map(|j| (j % 4) as f32 * 0.5).collect();
        let mask: Vec<bool> = (0..n).map(|j| j % 5 != 0).collect();
        for metric in [Metric::Cosine, Metric::Dot] {
            for (k, masked) in [(1, false), (10, true), (2000, false)] {
                let p = Params {
                    metric,
                    w_sim: 0.7,
                    w_extra: 0.1,
                    extra: Some(&extra),
                    mask: masked.then_some(&mask[..]),
                    ..Params::new(k)
                };
                let batch = hybrid_topk(Rows::new(&qs, nq, d), Rows::new(&m, n, d), &p).unwrap();
                assert_eq!(
                    (batch.nq, batch.width, batch.indices.len()),
                    (nq, k.min(n), nq * k.min(n))
                );
                for i in 0..nq {
                    let one = hybrid_topk(
                        Rows::new(&qs[i * d..(i + 1) * d], 1, d),
                        Rows::new(&m, n, d),
                        &p,
                    )
                    .unwrap();
                    assert_eq!(batch.hits(i), one.hits(0), "query {i} {metric:?} k={k}");
                    let w = batch.width;
                    let pad = &batch.indices[i * w + batch.lens[i]..(i + 1) * w];
                    assert!(pad.iter().all(|&x| x == -1));
                }
            }
        }
    }

    #[test]
    fn given_norms_equal_computed_ones_bit_for_bit() {
        let mut seed = 31;
        let (n, d) = (3000, 40);
        let unit = |seed: &mut u64| (lcg(seed) % 100_000) as f32 / 50_000.0 - 1.0;
        let mut m: Vec<f32> = (0..n * d).map(|_| unit(&mut seed)).collect();
        m[17 * d..18 * d].fill(0.0); // a zero row: inverse norm 0, similarity 0
        let qs: Vec<f32> = (0..3 * d).map(|_| unit(&mut seed)).collect();
        let s = simd::simd();
        let inv: Vec<f32> = m.chunks(d).map(|r| inv_norm((s.dot)(r, r))).collect();
        let extra: Vec<f32> = (0..n).map(|j| (j % 5) as f32 * 0.1).collect();
        let mask: Vec<bool> = (0..n).map(|j| j % 11 != 0).collect();
        for masked in [false, true] {
            let p = Params {
                w_sim: 0.8,
                w_extra: 0.2,
                extra: Some(&extra),
                mask: masked.then_some(&mask[..]),
                ..Params::new(25)
            };
            let given = Params {
                norms: Norms::Inverse(&inv),
                ..p.clone()
            };
            for nq in [1, 3] {
                let (q, m) = (Rows::new(&qs[..nq * d], nq, d), Rows::new(&m, n, d));
                let want = hybrid_topk(q, m, &p).unwrap();
                assert_eq!(
                    hybrid_topk(q, m, &given).unwrap(),
                    want,
                    "nq={nq} masked={masked}"
                );
            }
        }
        // Unit rows: `normalized` gives the cosine.
        let unit_rows: Vec<f32> = m
            .chunks(d)
            .zip(&inv)
            .flat_map(|(r, &i)| r.iter().map(move |x| x * i))
            .collect();
        let p = Params::new(10);
        for nq in [1, 3] {
            let (q, m) = (Rows::new(&qs[..nq * d], nq, d), Rows::new(&unit_rows, n, d));
            let want = hybrid_topk(q, m, &p).unwrap();
            let got = hybrid_topk(
                q,
                m,
                &Params {
                    norms: Norms::Unit,
                    ..p.clone()
                },
            )
            .unwrap();
            assert_eq!(got.indices, want.indices);
            for (a, b) in got.scores.iter().zip(&want.scores) {
                assert!((a - b).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn bad_given_norms_are_a_clear_error() {
        let m = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let q = [1.0, 0.0];
        let bad = [1.0, f32::NAN, 1.0];
        let neg = [1.0, -1.0, 1.0];
        let short = [1.0];
        let run = |p: Params<'_>| err(&q, 1, &m, 3, &p);
        assert_eq!(
            run(Params {
                norms: Norms::Inverse(&short),
                ..Params::new(1)
            }),
            "inv_norms: has 1 entries but matrix has 3 rows"
        );
        assert!(run(Params {
            norms: Norms::Inverse(&bad),
            ..Params::new(1)
        })
        .starts_with("inv_norms: entry 1 is NaN"));
        assert!(run(Params {
            norms: Norms::Inverse(&neg),
            ..Params::new(1)
        })
        .starts_with("inv_norms: entry 1 is -1"));
        let dot = Params {
            metric: Metric::Dot,
            norms: Norms::Unit,
            ..Params::new(1)
        };
        assert!(run(dot).starts_with("inv_norms: row norms are only used"));
    }

    #[test]
    fn batch_split_over_query_groups() {
        // Few rows, many queries: the task grid splits the queries into groups.
        let mut seed = 21;
        let (n, d, nq) = (50, 7, 203);
        let m = int_matrix(n, d, &mut seed);
        let qs = int_matrix(nq, d, &mut seed);
        for k in [1, 3, 60] {
            let p = Params {
                metric: Metric::Dot,
                ..Params::new(k)
            };
            let batch = hybrid_topk(Rows::new(&qs, nq, d), Rows::new(&m, n, d), &p).unwrap();
            for i in 0..nq {
                let one = hybrid_topk(
                    Rows::new(&qs[i * d..(i + 1) * d], 1, d),
                    Rows::new(&m, n, d),
                    &p,
                )
                .unwrap();
                assert_eq!(batch.hits(i), one.hits(0), "query {i} k={k}");
            }
        }
    }

    #[test]
    fn batch_on_float_data_matches_reference() {
        let mut seed = 9;
        let (n, d, nq) = (5000, 40, 3);
        let unit = |seed: &mut u64| (lcg(seed) % 100_000) as f32 / 50_000.0 - 1.0;
        let m: Vec<f32> = (0..n * d).map(|_| unit(&mut seed)).collect();
        let qs: Vec<f32> = (0..nq * d).map(|_| unit(&mut seed)).collect();
        let p = Params::new(20);
        let got = hybrid_topk(Rows::new(&qs, nq, d), Rows::new(&m, n, d), &p).unwrap();
        for i in 0..nq {
            let want = reference(&qs[i * d..(i + 1) * d], &m, n, &p);
            for (o, (_, s)) in want.iter().enumerate() {
                assert!((got.hits(i).1[o] as f64 - s).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn empty_inputs() {
        let p = Params::new(3);
        let one = hybrid_topk(Rows::new(&[1.0, 2.0], 1, 2), Rows::new(&[], 0, 2), &p).unwrap();
        assert_eq!(one.lens, vec![0]);
        let many = hybrid_topk(
            Rows::new(&[1.0, 2.0, 3.0, 4.0], 2, 2),
            Rows::new(&[], 0, 2),
            &p,
        )
        .unwrap();
        assert_eq!((many.nq, many.width, many.lens.clone()), (2, 0, vec![0, 0]));
        // k far beyond n: the rows are only n wide, nothing of size k is allocated.
        let huge = hybrid_topk(
            Rows::new(&[1.0, 0.0], 1, 2),
            Rows::new(&[1.0, 0.0, 0.0, 1.0], 2, 2),
            &Params::new(usize::MAX),
        )
        .unwrap();
        assert_eq!(huge.hits(0).0, &[0, 1]);
        let padded = hybrid_topk(
            Rows::new(&[1.0, 0.0, 0.0, 1.0], 2, 2),
            Rows::new(&[1.0, 0.0, 0.0, 1.0], 2, 2),
            &Params {
                min_score: Some(0.5),
                ..Params::new(5)
            },
        )
        .unwrap();
        assert_eq!(
            (padded.width, padded.indices.clone(), padded.lens.clone()),
            (2, vec![0, -1, 1, -1], vec![1, 1])
        );
        assert!(padded.scores[1] == f32::NEG_INFINITY && padded.similarities[1].is_nan());
        let none = hybrid_topk(Rows::new(&[], 0, 2), Rows::new(&[1.0, 2.0], 1, 2), &p).unwrap();
        assert!(none.indices.is_empty());
        // d = 0: every similarity is 0.
        let zero = hybrid_topk(Rows::new(&[], 1, 0), Rows::new(&[], 3, 0), &p).unwrap();
        assert_eq!(zero.hits(0).0, &[0, 1, 2]);
        let zero = hybrid_topk(Rows::new(&[], 2, 0), Rows::new(&[], 3, 0), &p).unwrap();
        assert_eq!(zero.hits(1).0, &[0, 1, 2]);
    }

    fn err(q: &[f32], nq: usize, m: &[f32], n: usize, p: &Params<'_>) -> String {
        let d = q.len().checked_div(nq).unwrap_or(0);
        hybrid_topk(Rows::new(q, nq, d), Rows::new(m, n, m.len() / n.max(1)), p)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let m = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let q = [1.0, 0.0];
        let ts = [0i64; 3];
        let ex = [0f32; 3];
        assert!(err(&q, 1, &m, 3, &Params::new(0)).starts_with("k: must be >= 1"));
        let e = hybrid_topk(
            Rows::new(&[1.0, 0.0, 0.0], 1, 3),
            Rows::new(&m, 3, 2),
            &Params::new(1),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("dimension 3") && e.contains("dimension 2"),
            "{e}"
        );
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_sim: f64::NAN,
                ..Params::new(1)
            }
        )
        .starts_with("w_sim:"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_rec: 1e300,
                ..Params::new(1)
            }
        )
        .starts_with("w_rec:"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_rec: 1.0,
                ..Params::new(1)
            }
        )
        .starts_with("timestamps: required"));
        let e = err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_rec: 1.0,
                timestamps: Some(&ts),
                ..Params::new(1)
            },
        );
        assert!(
            e.starts_with("half_life_ms: w_rec != 0 needs a decay"),
            "{e}"
        );
        let both = Params {
            half_life_ms: Some(1.0),
            tau_ms: Some(1.0),
            ..Params::new(1)
        };
        assert!(err(&q, 1, &m, 3, &both).contains("not both"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                tau_ms: Some(0.0),
                ..Params::new(1)
            }
        )
        .starts_with("tau_ms: must be"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                timestamps: Some(&ts[..2]),
                ..Params::new(1)
            }
        )
        .starts_with("timestamps: has 2 entries but matrix has 3 rows"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                extra: Some(&ex[..1]),
                ..Params::new(1)
            }
        )
        .starts_with("extra: has 1"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_extra: 1.0,
                ..Params::new(1)
            }
        )
        .starts_with("extra: required"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                mask: Some(&[true]),
                ..Params::new(1)
            }
        )
        .starts_with("mask: has 1"));
        let nan_extra = [0.0, f32::NAN, 0.0];
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                extra: Some(&nan_extra),
                ..Params::new(1)
            }
        )
        .starts_with("extra: entry 1"));
        assert!(err(
            &q,
            1,
            &m,
            3,
            &Params {
                min_score: Some(f64::NAN),
                ..Params::new(1)
            }
        )
        .starts_with("min_score"));
        let big = [0.0, -2.0, 0.0];
        let e = err(
            &q,
            1,
            &m,
            3,
            &Params {
                w_extra: 3e38,
                extra: Some(&big),
                ..Params::new(1)
            },
        );
        assert_eq!(e, "w_extra: the score of row 1 overflows float32");
        assert!(err(&[f32::INFINITY, 0.0], 1, &m, 3, &Params::new(1)).starts_with("query: entry 0"));
        assert!(err(&[0.0, 0.0, 0.0, f32::NAN], 2, &m, 3, &Params::new(1))
            .starts_with("query: row 1, column 1"));
    }

    #[test]
    fn non_finite_rows_are_named_unless_masked() {
        let (n, d) = (5000, 16);
        let mut seed = 2;
        for (nq, metric) in [
            (1, Metric::Cosine),
            (1, Metric::Dot),
            (4, Metric::Cosine),
            (4, Metric::Dot),
        ] {
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                let mut m = int_matrix(n, d, &mut seed);
                m[4321 * d + 5] = bad;
                let q = int_matrix(nq, d, &mut seed);
                let p = Params {
                    metric,
                    ..Params::new(3)
                };
                let e = hybrid_topk(Rows::new(&q, nq, d), Rows::new(&m, n, d), &p)
                    .unwrap_err()
                    .to_string();
                assert_eq!(
                    e, "matrix: row 4321 contains NaN or inf",
                    "{nq} {metric:?} {bad}"
                );
                let mask: Vec<bool> = (0..n).map(|j| j != 4321).collect();
                let p = Params {
                    mask: Some(&mask),
                    ..p
                };
                assert!(hybrid_topk(Rows::new(&q, nq, d), Rows::new(&m, n, d), &p).is_ok());
            }
        }
    }

    #[test]
    fn huge_finite_rows_are_reported_as_overflow() {
        let m = [1e30f32, 0.0, 1.0, 0.0, 1.0, 1.0];
        for nq in [1, 2] {
            let q = vec![1.0f32; 2 * nq];
            let e = hybrid_topk(Rows::new(&q, nq, 2), Rows::new(&m, 3, 2), &Params::new(1))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "matrix: row 0: squared norm overflows float32"
            );
        }
    }

    #[test]
    fn simd_paths_agree() {
        let mut seed = 4;
        let s = simd::simd();
        for d in [0, 1, 7, 8, 31, 32, 33, 100, 384] {
            let a: Vec<f32> = (0..d)
                .map(|_| (lcg(&mut seed) % 1000) as f32 / 997.0 - 0.5)
                .collect();
            let b: Vec<f32> = (0..d)
                .map(|_| (lcg(&mut seed) % 1000) as f32 / 991.0 - 0.5)
                .collect();
            let (dot, nn) = (s.dot_norm)(&a, &b);
            assert_eq!(dot.to_bits(), (s.dot)(&a, &b).to_bits());
            assert_eq!(dot.to_bits(), (s.dot)(&b, &a).to_bits());
            assert_eq!(nn.to_bits(), (s.dot)(&b, &b).to_bits());
            let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot as f64 - exact).abs() < 1e-4, "d={d}");
        }
    }
}

#[cfg(test)]
mod decay_tests {
    use super::{age_ms, exp2_nonpositive};

    #[test]
    fn exp2_matches_std() {
        for i in 0..=200_000 {
            let x = -(i as f64) * 0.001_37;
            let (got, want) = (exp2_nonpositive(x), x.exp2());
            assert!((got - want).abs() <= 1e-13 * want, "x={x}: {got} vs {want}");
        }
        for n in 0..=1000 {
            assert_eq!(exp2_nonpositive(-(n as f64)), (-(n as f64)).exp2());
        }
        assert_eq!(exp2_nonpositive(-0.0), 1.0);
        assert_eq!(
            exp2_nonpositive(-1e300),
            0.0f64.max(exp2_nonpositive(-1000.0))
        );
        assert_eq!(exp2_nonpositive(-1e300) as f32, 0.0);
    }

    #[test]
    fn ages() {
        assert_eq!(age_ms(10, 3), 7.0);
        assert_eq!(age_ms(10, 30), 0.0);
        assert_eq!(age_ms(i64::MAX, i64::MIN), i64::MAX as f64);
        assert_eq!(age_ms(i64::MIN, i64::MAX), 0.0);
    }
}
