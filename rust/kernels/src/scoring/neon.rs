//! The aarch64 NEON path: the AVX2 path's layout and order on 128-bit registers.
//!
//! An AVX2 accumulator of 8 lanes is a pair of NEON registers (lanes 0-3 and 4-7), so there are
//! 4 accumulators of 8 lanes as on the AVX2 and portable paths, each lane updated by a fused
//! multiply-add in the same order, and folded the same way: the 4 accumulators pairwise, then
//! lanes (l, l+4), (l, l+2), (0, 1), then the same scalar tail. A dot product on this path is
//! therefore bit for bit the AVX2 path's on x86_64. NEON is part of the aarch64 baseline; the
//! functions still carry `target_feature(enable = "neon")` and are installed only after
//! [`available`] said yes, like the x86 paths.

use super::{first_bad, portable, take, ScanRow, TopSel};
use std::arch::aarch64::*;

pub fn available() -> bool {
    std::arch::is_aarch64_feature_detected!("neon")
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

/// Eight lanes as two registers: lanes 0-3 and 4-7 of the AVX2 register it stands for.
#[derive(Clone, Copy)]
struct X8(float32x4_t, float32x4_t);

impl X8 {
    #[inline]
    #[target_feature(enable = "neon")]
    fn zero() -> X8 {
        X8(vdupq_n_f32(0.0), vdupq_n_f32(0.0))
    }

    /// Eight values from `p` (unaligned).
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn load(p: *const f32) -> X8 {
        X8(vld1q_f32(p), vld1q_f32(p.add(4)))
    }

    /// `self + x·y` lane-wise, fused (one rounding), as `_mm256_fmadd_ps`.
    #[inline]
    #[target_feature(enable = "neon")]
    fn fma(self, x: X8, y: X8) -> X8 {
        X8(vfmaq_f32(self.0, x.0, y.0), vfmaq_f32(self.1, x.1, y.1))
    }

    #[inline]
    #[target_feature(enable = "neon")]
    fn add(self, o: X8) -> X8 {
        X8(vaddq_f32(self.0, o.0), vaddq_f32(self.1, o.1))
    }
}

/// The AVX2 fold of 4 accumulators: `(a0 + a1) + (a2 + a3)`, then lanes (l, l+4), (l, l+2),
/// and (0, 1).
#[inline]
#[target_feature(enable = "neon")]
fn fold(a: [X8; 4]) -> f32 {
    let v = a[0].add(a[1]).add(a[2].add(a[3]));
    let s = vaddq_f32(v.0, v.1);
    let h = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    vget_lane_f32::<0>(h) + vget_lane_f32::<1>(h)
}

#[target_feature(enable = "neon")]
unsafe fn dots(qs: &[&[f32]], r: &[f32], out: &mut [f32]) {
    // Three queries at a time, as on AVX2: 24 independent FMA chains (12 accumulators of 8
    // lanes) and one load of the row for three FMAs; they fit the 32 vector registers.
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
        out[i] = dot_n::<1>([qs[i]], r)[0];
    }
}

// Indexing by `u` and `k` mirrors `dot_norm` line for line (the point of this function).
#[allow(clippy::needless_range_loop)]
/// The dot product of each of `N` queries with `r`, each query's accumulators updated by the
/// same FMAs in the same order as `dot_norm`'s (only interleaved with the others'), the same
/// fold and the same scalar tail: equal bit for bit.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn dot_n<const N: usize>(qs: [&[f32]; N], r: &[f32]) -> [f32; N] {
    let n = qs.iter().fold(r.len(), |n, q| n.min(q.len()));
    let pr = r.as_ptr();
    let pq = qs.map(|q| q.as_ptr());
    let mut d = [[X8::zero(); 4]; N];
    let mut i = 0;
    while i + 32 <= n {
        for u in 0..4 {
            let y = X8::load(pr.add(i + 8 * u));
            for k in 0..N {
                d[k][u] = d[k][u].fma(X8::load(pq[k].add(i + 8 * u)), y);
            }
        }
        i += 32;
    }
    while i + 8 <= n {
        let y = X8::load(pr.add(i));
        for k in 0..N {
            d[k][0] = d[k][0].fma(X8::load(pq[k].add(i)), y);
        }
        i += 8;
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
#[target_feature(enable = "neon")]
unsafe fn dot_norm(q: &[f32], r: &[f32]) -> (f32, f32) {
    let n = q.len().min(r.len());
    let (pq, pr) = (q.as_ptr(), r.as_ptr());
    let mut d = [X8::zero(); 4];
    let mut s = [X8::zero(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for u in 0..4 {
            let x = X8::load(pq.add(i + 8 * u));
            let y = X8::load(pr.add(i + 8 * u));
            d[u] = d[u].fma(x, y);
            s[u] = s[u].fma(y, y);
        }
        i += 32;
    }
    while i + 8 <= n {
        let x = X8::load(pq.add(i));
        let y = X8::load(pr.add(i));
        d[0] = d[0].fma(x, y);
        s[0] = s[0].fma(y, y);
        i += 8;
    }
    let (mut dt, mut nn) = (fold(d), fold(s));
    while i < n {
        dt += q[i] * r[i];
        nn += r[i] * r[i];
        i += 1;
    }
    (dt, nn)
}

/// Bit `l` set for each lane `l` of `m` that is all ones (the movemask of x86).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn lane_bits(m: uint32x4_t) -> u32 {
    const BIT: [u32; 4] = [1, 2, 4, 8];
    vaddvq_u32(vandq_u32(m, vld1q_u32(BIT.as_ptr())))
}

/// Eight lanes at a time, the same operations as `score_at` lane-wise (see the AVX2 scan):
/// `vmaxnmq`/`vminnmq` clamp a NaN to −1 as `_mm256_max_ps`/`_mm256_min_ps` do, so a lane is
/// taken or passed over exactly as on AVX2.
#[target_feature(enable = "neon")]
unsafe fn scan(row: &ScanRow<'_>, r0: usize, top: &mut TopSel) -> crate::Result<()> {
    let n = row.s.len();
    let (ps, pb) = (row.s.as_ptr(), row.bias.as_ptr());
    let inv_q = vdupq_n_f32(row.inv_q);
    let w = vdupq_n_f32(row.w_sim);
    let (lo, hi) = (vdupq_n_f32(-1.0), vdupq_n_f32(1.0));
    let inf = vdupq_n_f32(f32::INFINITY);
    let mut t = vdupq_n_f32(top.threshold());
    // All ones in a lane while every dot product seen there is finite (|s| < inf is false for
    // NaN and ±inf); a non-finite lane is reported after the row, as on AVX2.
    let mut finite = vdupq_n_u32(u32::MAX);
    let mut j = 0;
    while j + 8 <= n {
        let mut ge = [vdupq_n_u32(0); 2];
        for (h, g) in ge.iter_mut().enumerate() {
            let jj = j + 4 * h;
            let s = vld1q_f32(ps.add(jj));
            let b = vld1q_f32(pb.add(jj));
            let sim = match row.inv_r {
                Some(inv_r) => {
                    let x = vmulq_f32(vmulq_f32(s, inv_q), vld1q_f32(inv_r.as_ptr().add(jj)));
                    vminnmq_f32(vmaxnmq_f32(x, lo), hi)
                }
                None => s,
            };
            // Multiply then add, two roundings: `score_at` is not fused.
            let score = vaddq_f32(vmulq_f32(w, sim), b);
            finite = vandq_u32(finite, vcltq_f32(vabsq_f32(s), inf));
            *g = vcgeq_f32(score, t);
        }
        if vmaxvq_u32(vorrq_u32(ge[0], ge[1])) != 0 {
            let mut bits = lane_bits(ge[0]) | (lane_bits(ge[1]) << 4);
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                take(row, j + l, r0, top)?;
                bits &= bits - 1;
            }
            t = vdupq_n_f32(top.threshold());
        }
        j += 8;
    }
    if vminvq_u32(finite) == 0 {
        first_bad(row, r0)?;
    }
    portable::scan(row, j, r0, top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring::select::merge;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 33) % 100_003) as f32 / 50_000.0 - 1.0
    }

    /// The AVX2 path's order written out in scalar Rust (`mul_add` is the fused multiply-add):
    /// what `_mm256_fmadd_ps` and the AVX2 fold compute, lane by lane.
    fn avx2_order(q: &[f32], r: &[f32]) -> (f32, f32) {
        let n = q.len().min(r.len());
        let mut d = [[0f32; 8]; 4];
        let mut s = [[0f32; 8]; 4];
        let mut i = 0;
        while i + 32 <= n {
            for u in 0..4 {
                for l in 0..8 {
                    let (x, y) = (q[i + 8 * u + l], r[i + 8 * u + l]);
                    d[u][l] = x.mul_add(y, d[u][l]);
                    s[u][l] = y.mul_add(y, s[u][l]);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            for l in 0..8 {
                let (x, y) = (q[i + l], r[i + l]);
                d[0][l] = x.mul_add(y, d[0][l]);
                s[0][l] = y.mul_add(y, s[0][l]);
            }
            i += 8;
        }
        let fold = |a: &[[f32; 8]; 4]| {
            let v: Vec<f32> = (0..8)
                .map(|l| (a[0][l] + a[1][l]) + (a[2][l] + a[3][l]))
                .collect();
            let h = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
            (h[0] + h[2]) + (h[1] + h[3])
        };
        let (mut dt, mut nn) = (fold(&d), fold(&s));
        for j in i..n {
            dt += q[j] * r[j];
            nn += r[j] * r[j];
        }
        (dt, nn)
    }

    #[test]
    fn dot_products_follow_the_avx2_order_bit_for_bit() {
        assert!(available());
        let mut seed = 31u64;
        for d in [0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 384, 1000] {
            let qs: Vec<Vec<f32>> = (0..5)
                .map(|_| (0..d).map(|_| lcg(&mut seed)).collect())
                .collect();
            let r: Vec<f32> = (0..d).map(|_| lcg(&mut seed)).collect();
            let refs: Vec<&[f32]> = qs.iter().map(|q| &q[..]).collect();
            let mut out = vec![f32::NAN; qs.len()];
            dots_safe(&refs, &r, &mut out);
            for (q, o) in refs.iter().zip(&out) {
                let (want, want_nn) = avx2_order(q, &r);
                let (got, got_nn) = dot_norm_safe(q, &r);
                assert_eq!(got.to_bits(), want.to_bits(), "d={d}");
                assert_eq!(got_nn.to_bits(), want_nn.to_bits(), "d={d}");
                assert_eq!(dot_safe(q, &r).to_bits(), want.to_bits(), "d={d}");
                assert_eq!(o.to_bits(), want.to_bits(), "d={d}");
            }
        }
    }

    /// Every lane position of the 8-wide body and the scalar tail, candidates taken in
    /// order while the threshold rises, masked rows skipped: the same hits as the portable scan.
    #[test]
    fn scan_takes_the_same_hits_as_the_portable_scan() {
        let mut seed = 37u64;
        for n in [0, 1, 7, 8, 9, 16, 23, 64, 101] {
            let raw: Vec<f32> = (0..n).map(|_| lcg(&mut seed) * 3.0).collect();
            let inv_r: Vec<f32> = (0..n).map(|_| lcg(&mut seed).abs() + 0.1).collect();
            let bias: Vec<f32> = (0..n)
                .map(|j| {
                    if j % 5 == 2 {
                        f32::NEG_INFINITY
                    } else {
                        lcg(&mut seed) * 0.1
                    }
                })
                .collect();
            for inv in [Some(&inv_r[..]), None] {
                for (k, min) in [(1, f32::NEG_INFINITY), (3, -0.5), (n + 1, -10.0), (4, 0.9)] {
                    let row = ScanRow {
                        s: &raw,
                        inv_r: inv,
                        bias: &bias,
                        inv_q: 0.7,
                        w_sim: 1.5,
                    };
                    let mut a = TopSel::new(k, min, n);
                    let mut b = TopSel::new(k, min, n);
                    scan_safe(&row, 1000, &mut a).unwrap();
                    portable::scan(&row, 0, 1000, &mut b).unwrap();
                    let (a, b) = (merge([a.into_vec()], k), merge([b.into_vec()], k));
                    assert_eq!(a, b, "n={n} k={k} min={min}");
                }
            }
        }
    }

    #[test]
    fn scan_names_the_first_non_finite_row() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for at in [0, 5, 8, 13, 19] {
                let mut raw = vec![0.25f32; 20];
                raw[at] = bad;
                let bias = vec![0f32; 20];
                let row = ScanRow {
                    s: &raw,
                    inv_r: None,
                    bias: &bias,
                    inv_q: 1.0,
                    w_sim: 1.0,
                };
                let mut top = TopSel::new(3, f32::NEG_INFINITY, 20);
                let err = scan_safe(&row, 40, &mut top).unwrap_err().to_string();
                assert!(err.contains(&format!("row {} contains", 40 + at)), "{err}");
                // A masked row is never read, whatever it holds.
                let mut masked = bias.clone();
                masked[at] = f32::NEG_INFINITY;
                let row = ScanRow {
                    bias: &masked,
                    ..row
                };
                let mut top = TopSel::new(3, f32::NEG_INFINITY, 20);
                scan_safe(&row, 40, &mut top).unwrap();
            }
        }
    }
}
