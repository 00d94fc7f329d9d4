//! An int8 shadow of a matrix: a first pass over a quarter of the bytes finds the rows that can
//! make the top k, then those rows alone are scored exactly.
//!
//! Row `r` is stored as `codes[r] · scale[r]` (int8 codes, `scale = max|x|/127`) with two bounds
//! kept beside it: `err[r] ≥ ‖x − x̂‖` and `norm[r] ≥ ‖x‖`. For a query `q`, `|q·x − q·x̂| ≤ ‖q‖·err`,
//! so the first pass gets, per row, an interval that surely holds the score the exact scan would
//! compute (the interval also absorbs both passes' float32 rounding). A row whose upper bound is
//! below the k-th best lower bound cannot be in the top k; the others (a few dozen, typically) are
//! rescored with the exact scan's own arithmetic and selection, so the result is the exact scan's
//! bit for bit. When the bounds cannot separate the rows (a huge `k`, similarity weight dominated
//! by near-equal rows) or an input is too extreme for them, the exact scan runs instead.

use super::select::{merge, Hit, TopSel};
use super::simd::{self, inv_norm, ScanRow};
use super::{chunk_rows, non_finite_row, norm_overflow, par_map, Metric, Norms, Prepared};
use crate::{KernelError, Result};
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Per-row values beside the codes: `scale`, `err ≥ ‖x − scale·codes‖`, `norm ≥ ‖x‖`.
pub const META: usize = 3;

/// Below this many rows the plain scan is as fast (measured, see `benches/NOTES.md`): the
/// shadow's fixed costs (two passes, the candidates' random reads) eat its saving.
pub const MIN_ROWS: usize = 8192;

/// The shadow of an `(n, d)` matrix, owned: `codes` is `(n, d)` int8, `meta` is `(n, META)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShadowBuf {
    pub codes: Vec<i8>,
    pub meta: Vec<f32>,
}

/// A shadow, borrowed (as [`ShadowBuf`]; see [`quantize`]).
#[derive(Debug, Clone, Copy)]
pub struct Shadow<'a> {
    pub codes: &'a [i8],
    pub meta: &'a [f32],
}

/// Rounds an f64 bound up to a float32 that is still `>=` it.
fn up(x: f64) -> f32 {
    (x * (1.0 + f64::powi(2.0, -20))) as f32
}

/// Quantizes one row; `false` if it holds NaN or inf. Loops over 8 independent lanes, so the
/// compiler vectorises them (a single f64 sum would be one long dependency chain).
fn quantize_row(x: &[f32], codes: &mut [i8], meta: &mut [f32]) -> bool {
    const L: usize = 8;
    let mut mx = [0f32; L];
    let mut finite = true;
    for (i, &v) in x.iter().enumerate() {
        let a = v.abs();
        finite &= a <= f32::MAX; // false for NaN and inf
        mx[i % L] = if a > mx[i % L] { a } else { mx[i % L] };
    }
    if !finite {
        return false;
    }
    let m = mx.iter().fold(0f32, |m, &v| if v > m { v } else { m });
    let scale = m / 127.0;
    let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
    // Round to nearest by the 1.5·2^23 trick (`f32::round` is a libm call on baseline x86_64);
    // any rounding is valid, the error is measured below.
    const MAGIC: f32 = 12_582_912.0;
    for (c, &v) in codes.iter_mut().zip(x) {
        let t = ((v * inv).clamp(-127.0, 127.0) + MAGIC) - MAGIC;
        *c = t as i32 as i8;
    }
    let (mut err, mut norm) = ([0f64; L], [0f64; L]);
    for (i, (&c, &v)) in codes.iter().zip(x).enumerate() {
        let e = v as f64 - scale as f64 * c as f64;
        err[i % L] += e * e;
        norm[i % L] += v as f64 * v as f64;
    }
    let (err, norm) = (err.iter().sum::<f64>(), norm.iter().sum::<f64>());
    meta.copy_from_slice(&[scale, up(err.sqrt()), up(norm.sqrt())]);
    true
}

/// The int8 shadow of a row-major `(n, d)` matrix. A row holding NaN or inf is an error naming it.
pub fn quantize(data: &[f32], n: usize, d: usize) -> Result<ShadowBuf> {
    super::check_shape("matrix", data, n, d)?;
    let mut codes = vec![0i8; n * d];
    let mut meta = vec![0f32; n * META];
    if d == 0 {
        return Ok(ShadowBuf { codes, meta });
    }
    const ROWS: usize = 256;
    let bad = codes
        .par_chunks_mut(ROWS * d)
        .zip(meta.par_chunks_mut(ROWS * META))
        .enumerate()
        .filter_map(|(c, (codes, meta))| {
            for (j, (cr, mr)) in codes.chunks_mut(d).zip(meta.chunks_mut(META)).enumerate() {
                let r = c * ROWS + j;
                if !quantize_row(&data[r * d..(r + 1) * d], cr, mr) {
                    return Some(r);
                }
            }
            None
        })
        .min();
    match bad {
        Some(r) => Err(non_finite_row(r)),
        None => Ok(ShadowBuf { codes, meta }),
    }
}

/// The query as `u8` codes offset by 128 (`q̂ = sq·(qu − 128)`), `sq`, and `eq ≥ ‖q − q̂‖`.
fn quantize_query(q: &[f32]) -> (Vec<u8>, f64, f64) {
    let m = q.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
    let sq = m / 127.0;
    let mut e = 0f64;
    let qu = q
        .iter()
        .map(|&v| {
            let c = if sq > 0.0 {
                (v as f64 / sq).round().clamp(-127.0, 127.0)
            } else {
                0.0
            };
            let r = v as f64 - sq * c;
            e += r * r;
            (c as i32 + 128) as u8
        })
        .collect();
    (qu, sq, e.sqrt() * (1.0 + f64::powi(2.0, -20)))
}

/// Checks that `shadow` has the shape of an `(n, d)` matrix's.
pub(crate) fn check(shadow: &Shadow<'_>, n: usize, d: usize) -> Result<()> {
    if n.checked_mul(d) != Some(shadow.codes.len())
        || n.checked_mul(META) != Some(shadow.meta.len())
    {
        return Err(KernelError::invalid(
            "shadow",
            format!(
                "{} codes and {} row values do not shadow a {n} x {d} matrix",
                shadow.codes.len(),
                shadow.meta.len()
            ),
        ));
    }
    Ok(())
}

/// A row that may be in the top k, with what the exact pass needs of the first.
#[derive(Clone, Copy)]
struct Cand {
    row: usize,
    upper: f64,
    bias: f32,
}

/// The k best lower bounds seen so far.
struct Lows {
    k: usize,
    heap: BinaryHeap<Reverse<Ord64>>,
}

/// An f64 bound ordered by `total_cmp` (bounds are never NaN).
struct Ord64(f64);
impl PartialEq for Ord64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ord64 {}
impl PartialOrd for Ord64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ord64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Lows {
    fn new(k: usize, hint: usize) -> Self {
        Lows {
            k,
            heap: BinaryHeap::with_capacity(k.min(hint)),
        }
    }

    /// The k-th best lower bound, `-inf` until there are k.
    fn kth(&self) -> f64 {
        match self.heap.peek() {
            Some(Reverse(w)) if self.heap.len() >= self.k => w.0,
            _ => f64::NEG_INFINITY,
        }
    }

    fn offer(&mut self, v: f64) {
        if self.heap.len() < self.k {
            self.heap.push(Reverse(Ord64(v)));
        } else if v > self.kth() {
            if let Some(mut w) = self.heap.peek_mut() {
                *w = Reverse(Ord64(v));
            }
        }
    }
}

/// The exact single-query scan's hits, computed from the shadow and the few rows it cannot rule
/// out; `None` when the bounds do not separate the rows well enough (the caller then runs the
/// exact scan, which is also what reports any error the shadow cannot predict).
pub(crate) fn single(
    q: &[f32],
    inv_q: f32,
    matrix: &[f32],
    n: usize,
    d: usize,
    sh: Shadow<'_>,
    prep: &Prepared<'_>,
) -> Result<Option<Vec<Hit>>> {
    const STEP: usize = 256;
    let s = simd::simd();
    let qn =
        q.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt() * (1.0 + f64::powi(2.0, -20));
    let cosine = prep.metric == Metric::Cosine;
    let a = if cosine { inv_q as f64 } else { 1.0 };
    // Both passes' dot products (any summation order, FMA or not), the norms' and products'
    // rounding: a relative error of at most (d + 32)·2⁻²³ of Σ|qᵢ·xᵢ| ≤ ‖q‖·‖x‖.
    let gamma = (d as f64 + 32.0) * f64::powi(2.0, -23);
    // With an integer dot product the query is quantized too: `eq ≥ ‖q − q̂‖` bounds what that
    // adds, `|(q − q̂)·x̂| ≤ eq·‖x̂‖`; the integer sum itself is exact.
    let int_dots = simd::int8_dots().filter(|_| d <= 1 << 16);
    let (qu, sq, eq) = match int_dots {
        Some(_) => quantize_query(q),
        None => (Vec::new(), 0.0, 0.0),
    };
    let w = prep.w_sim as f64;
    let min_score = prep.min_score as f64;
    let stop = AtomicBool::new(false);
    let rows = chunk_rows(n, d);
    let parts = par_map(n.div_ceil(rows), n * d.max(1), |c| {
        let (r0, r1) = (c * rows, ((c + 1) * rows).min(n));
        // Past this many candidates the exact scan is as cheap as rescoring them.
        let cap = (r1 - r0) / 8 + prep.k.min(r1 - r0);
        let mut lows = Lows::new(prep.k, r1 - r0);
        let mut cands: Vec<Cand> = Vec::new();
        let (mut bias, mut dots, mut idots) = ([0f32; STEP], [0f32; STEP], [0i32; STEP]);
        for b0 in (r0..r1).step_by(STEP) {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let len = STEP.min(r1 - b0);
            let bias = &mut bias[..len];
            prep.fill_bias(b0, bias)?;
            let (dots, idots) = (&mut dots[..len], &mut idots[..len]);
            let codes = &sh.codes[b0 * d..(b0 + len) * d];
            match int_dots {
                Some(f) => f(&qu, codes, idots),
                None => (s.dots_i8)(q, codes, dots),
            }
            for (o, &bv) in bias.iter().enumerate() {
                if bv == f32::NEG_INFINITY {
                    continue; // masked out
                }
                let r = b0 + o;
                let m = &sh.meta[r * super::shadow::META..(r + 1) * super::shadow::META];
                let (scale, err, norm) = (m[0] as f64, m[1] as f64, m[2] as f64);
                let b = match (prep.metric, prep.norms) {
                    (Metric::Dot, _) | (Metric::Cosine, Norms::Unit) => 1.0,
                    (Metric::Cosine, Norms::Inverse(inv)) => inv[r] as f64,
                    (Metric::Cosine, Norms::Compute) => {
                        // The exact scan's float32 squared norm would underflow or overflow.
                        if norm != 0.0 && !(1e-18..=1e18).contains(&norm) {
                            stop.store(true, Ordering::Relaxed);
                            return Ok(None);
                        }
                        if norm > 0.0 {
                            1.0 / norm
                        } else {
                            0.0
                        }
                    }
                };
                let dt = match int_dots {
                    Some(_) => scale * sq * idots[o] as f64,
                    None => scale * dots[o] as f64,
                };
                let x = dt * a * b;
                let sim = if cosine { x.clamp(-1.0, 1.0) } else { x };
                let dsim = a * b * (qn * (err + gamma * (3.0 * norm + err)) + eq * (norm + err));
                let score = w * sim + bv as f64;
                let delta = (w.abs() * dsim
                    + f64::powi(2.0, -20) * (w.abs() * (sim.abs() + dsim) + (bv as f64).abs()))
                    * (1.0 + f64::powi(2.0, -10))
                    + 1e-30;
                // Beyond these the exact scan may overflow (and report it): leave it to it.
                if !(delta < 1e30 && score.abs() < 1e30 && qn * (norm + err) < 1e30) {
                    stop.store(true, Ordering::Relaxed);
                    return Ok(None);
                }
                let (lower, upper) = (score - delta, score + delta);
                lows.offer(lower);
                if upper >= lows.kth().max(min_score) {
                    cands.push(Cand {
                        row: r,
                        upper,
                        bias: bv,
                    });
                    if cands.len() > cap {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some((lows, cands)))
    })?;
    let Some(parts) = parts.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    // The k-th best lower bound over all rows: any row whose upper bound is below it (or below
    // min_score) is beaten by k rows, strictly, whatever the tie-break.
    let mut all = Lows::new(prep.k, n);
    let mut cands = Vec::new();
    for (lows, c) in parts {
        for Reverse(v) in lows.heap {
            all.offer(v.0);
        }
        cands.push(c);
    }
    let t = all.kth().max(min_score);
    let cands: Vec<Cand> = cands
        .into_iter()
        .flatten()
        .filter(|c| c.upper >= t)
        .collect();
    if cands.len() > n / 8 + prep.k.min(n) {
        return Ok(None);
    }
    rescore(q, inv_q, matrix, d, &cands, prep).map(Some)
}

/// The candidates scored by the exact scan's arithmetic (same dot product, norms, bias and
/// scan) into the same selection.
fn rescore(
    q: &[f32],
    inv_q: f32,
    matrix: &[f32],
    d: usize,
    cands: &[Cand],
    prep: &Prepared<'_>,
) -> Result<Vec<Hit>> {
    let s = simd::simd();
    let fused_norms = prep.metric == Metric::Cosine && prep.norms == Norms::Compute;
    let mut top = TopSel::new(prep.k, prep.min_score, cands.len());
    for c in cands {
        let row = &matrix[c.row * d..(c.row + 1) * d];
        let (dot, inv_r) = if fused_norms {
            let (dot, rr) = (s.dot_norm)(q, row);
            if rr.is_infinite() && dot.is_finite() {
                return Err(norm_overflow(prep.base + c.row));
            }
            (dot, inv_norm(rr))
        } else {
            ((s.dot)(q, row), 1.0)
        };
        let inv_r = match (prep.metric, prep.norms) {
            (Metric::Dot, _) => None,
            (Metric::Cosine, Norms::Compute) => Some(inv_r),
            (Metric::Cosine, Norms::Inverse(inv)) => Some(inv[c.row]),
            (Metric::Cosine, Norms::Unit) => Some(1.0),
        };
        let (dots, bias) = ([dot], [c.bias]);
        let inv_r = inv_r.map(|v| [v]);
        let one = ScanRow {
            s: &dots,
            inv_r: inv_r.as_ref().map(|v| &v[..]),
            bias: &bias,
            inv_q,
            w_sim: prep.w_sim,
        };
        (s.scan)(&one, prep.base + c.row, &mut top)?;
    }
    Ok(merge([top.into_vec()], prep.k))
}

#[cfg(test)]
mod tests {
    use super::super::{hybrid_topk, hybrid_topk_shadowed, Norms, Params, Rows};
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 33) % 100_003) as f32 / 50_000.0 - 1.0
    }

    /// The shadowed scan equals the plain one bit for bit (hits, scores, similarities), with
    /// duplicate and zero rows, a mask, a minimum score and each norm mode.
    #[test]
    fn shadowed_equals_plain() {
        let (n, d) = (MIN_ROWS + 333, 48);
        let mut seed = 5;
        let mut m: Vec<f32> = (0..n * d).map(|_| lcg(&mut seed)).collect();
        m.copy_within(7 * d..8 * d, 8000 * d); // a duplicate row
        m[100 * d..101 * d].fill(0.0); // a zero row
        let q: Vec<f32> = m[42 * d..43 * d].iter().map(|x| x + 0.01).collect();
        let sh = quantize(&m, n, d).unwrap();
        let shadow = Shadow {
            codes: &sh.codes,
            meta: &sh.meta,
        };
        let inv: Vec<f32> = (0..n)
            .map(|r| {
                let s: f32 = m[r * d..(r + 1) * d].iter().map(|x| x * x).sum();
                inv_norm(s)
            })
            .collect();
        let extra: Vec<f32> = (0..n).map(|j| (j % 3) as f32).collect();
        let mask: Vec<bool> = (0..n).map(|j| j % 5 != 1).collect();
        for norms in [Norms::Compute, Norms::Inverse(&inv)] {
            for (k, w_sim, min_score) in [(1, 1.0, None), (5, 0.6, Some(0.1)), (12, -0.4, None)] {
                let p = Params {
                    w_sim,
                    w_extra: 0.2,
                    extra: Some(&extra),
                    mask: Some(&mask),
                    min_score,
                    norms,
                    ..Params::new(k)
                };
                let (qs, rows) = (Rows::new(&q, 1, d), Rows::new(&m, n, d));
                let plain = hybrid_topk(qs, rows, &p).unwrap();
                let got = hybrid_topk_shadowed(qs, rows, shadow, &p).unwrap();
                assert_eq!(plain.indices, got.indices);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&plain.scores), bits(&got.scores));
                assert_eq!(bits(&plain.similarities), bits(&got.similarities));
            }
        }
    }

    #[test]
    fn bad_shapes_and_rows_are_errors() {
        let m = vec![1f32, f32::NAN, 0.0, 0.0];
        assert!(quantize(&m, 2, 2).is_err());
        assert!(quantize(&m, 3, 2).is_err());
        let sh = quantize(&[1.0, 2.0], 1, 2).unwrap();
        let shadow = Shadow {
            codes: &sh.codes,
            meta: &sh.meta,
        };
        let p = Params::new(1);
        let r = hybrid_topk_shadowed(
            Rows::new(&[1.0, 0.0], 1, 2),
            Rows::new(&[1.0, 0.0, 0.0, 1.0], 2, 2),
            shadow,
            &p,
        );
        assert!(r.is_err());
    }
}
