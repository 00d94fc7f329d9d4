//! Near-duplicate search: new vectors against a store (`near_duplicates`) and within a batch
//! (`dedupe_within`, greedy: keep the first, drop a later row similar to any kept row).
//!
//! Both use the same dot product and the same formula for `sim(new, existing)`, so a row that
//! `dedupe_within` drops always finds its kept twin with `near_duplicates` at the same threshold.

use crate::scoring::simd::{self, cosine, inv_norm, Simd};
use crate::scoring::{check_shape, first_non_finite, par_map, Metric, Rows};
use crate::{KernelError, Result};

/// Existing rows per tile: the tile stays in L1/L2 while every new row is compared with it.
const TILE: usize = 64;

/// Checks a `(rows, d)` buffer and returns `1/‖row‖` per row (cosine) or an empty vector (dot).
fn prepare(
    arg: &'static str,
    data: &[f32],
    rows: usize,
    d: usize,
    metric: Metric,
    s: Simd,
) -> Result<Vec<f32>> {
    check_shape(arg, data, rows, d)?;
    if let Some((r, c)) = first_non_finite(data, d) {
        return Err(KernelError::invalid(
            arg,
            format!(
                "row {r}, column {c} is {} (must be finite)",
                data[r * d + c]
            ),
        ));
    }
    if metric == Metric::Dot {
        return Ok(Vec::new());
    }
    let chunk = 4096;
    let parts = par_map(rows.div_ceil(chunk), rows * d, |c| {
        (c * chunk..((c + 1) * chunk).min(rows))
            .map(|r| {
                let x = &data[r * d..(r + 1) * d];
                let sq = (s.dot)(x, x);
                if !sq.is_finite() {
                    return Err(KernelError::invalid(
                        arg,
                        format!("row {r}: squared norm overflows float32"),
                    ));
                }
                Ok(inv_norm(sq))
            })
            .collect::<Result<Vec<f32>>>()
    })?;
    Ok(parts.concat())
}

/// The dimension `new` and `existing` share, or the error naming both.
fn same_dim(new: &Rows<'_>, existing: &Rows<'_>) -> Result<usize> {
    if new.d != existing.d {
        return Err(KernelError::invalid(
            "new",
            format!(
                "new has dimension {} but existing has dimension {}",
                new.d, existing.d
            ),
        ));
    }
    Ok(new.d)
}

fn check_threshold(threshold: f64) -> Result<f32> {
    if !threshold.is_finite() {
        return Err(KernelError::invalid(
            "threshold",
            format!("must be finite, got {threshold}"),
        ));
    }
    Ok(threshold as f32)
}

/// Similarity of new row `a` to existing row `b` (argument order is part of the contract).
struct Sim<'a> {
    s: Simd,
    metric: Metric,
    inv_a: &'a [f32],
    inv_b: &'a [f32],
}

impl Sim<'_> {
    #[inline]
    fn get(&self, a: &[f32], ia: usize, b: &[f32], ib: usize) -> f32 {
        let dot = (self.s.dot)(a, b);
        match self.metric {
            Metric::Cosine => cosine(dot, self.inv_a[ia], self.inv_b[ib]),
            Metric::Dot => dot,
        }
    }
}

/// For each of the `m` new rows: the best existing row (highest similarity, lowest index on
/// ties) if its similarity is `>= threshold`, else −1; and that best similarity (NaN when
/// `existing` is empty).
pub fn near_duplicates(
    new: Rows<'_>,
    existing: Rows<'_>,
    threshold: f64,
    metric: Metric,
) -> Result<(Vec<i64>, Vec<f32>)> {
    let d = same_dim(&new, &existing)?;
    let (
        Rows {
            data: new, n: m, ..
        },
        Rows {
            data: existing, n, ..
        },
    ) = (new, existing);
    let thr = check_threshold(threshold)?;
    let s = simd::simd();
    let inv_new = prepare("new", new, m, d, metric, s)?;
    check_shape("existing", existing, n, d)?;
    if m == 0 {
        prepare("existing", existing, n, d, metric, s)?; // still reject a bad store
        return Ok((Vec::new(), Vec::new()));
    }
    // One pass over `existing` (it is read from memory once: the scan is bandwidth-bound): each
    // tile's norms come with the first new row's dot products, and the tile stays in cache for
    // the other new rows. A row whose squared norm is not finite holds a NaN/inf or overflows:
    // the scan stops and `prepare` names the problem exactly as a separate check would.
    let seg = n
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(TILE);
    let scanned = par_map(n.div_ceil(seg), m * n * d.max(1), |c| {
        let (r0, r1) = (c * seg, ((c + 1) * seg).min(n));
        let mut best = vec![(f32::NEG_INFINITY, usize::MAX); m];
        let (mut first, mut inv_ex) = ([0f32; TILE], [0f32; TILE]);
        for t0 in (r0..r1).step_by(TILE) {
            let t1 = (t0 + TILE).min(r1);
            for j in t0..t1 {
                let b = &existing[j * d..(j + 1) * d];
                let (dot, sq) = (s.dot_norm)(&new[..d], b);
                if !sq.is_finite() && (metric == Metric::Cosine || b.iter().any(|x| !x.is_finite()))
                {
                    return Err(KernelError::invalid("existing", "not finite"));
                }
                first[j - t0] = dot;
                inv_ex[j - t0] = inv_norm(sq);
            }
            for (i, b) in best.iter_mut().enumerate() {
                let a = &new[i * d..(i + 1) * d];
                for j in t0..t1 {
                    let dot = if i == 0 {
                        first[j - t0]
                    } else {
                        (s.dot)(a, &existing[j * d..(j + 1) * d])
                    };
                    let v = match metric {
                        Metric::Cosine => cosine(dot, inv_new[i], inv_ex[j - t0]),
                        Metric::Dot => dot,
                    };
                    // Strictly greater: on ties the earlier (lower) index stays.
                    if v > b.0 || b.1 == usize::MAX {
                        *b = (v, j);
                    }
                }
            }
        }
        Ok(best)
    });
    let parts = match scanned {
        Ok(parts) => parts,
        Err(e) => {
            prepare("existing", existing, n, d, metric, s)?;
            return Err(e); // unreachable: prepare rejects any row the scan stopped at
        }
    };
    Ok(merge_segments(parts, m)
        .into_iter()
        .map(|(v, j)| {
            if j == usize::MAX {
                (-1, f32::NAN)
            } else {
                (if v >= thr { j as i64 } else { -1 }, v)
            }
        })
        .unzip())
}

/// The best `(similarity, row)` per new row over the segments' bests (`usize::MAX`: none).
/// Segments are in row order, so the first strictly better one wins ties too.
fn merge_segments(parts: Vec<Vec<(f32, usize)>>, m: usize) -> Vec<(f32, usize)> {
    let mut best = vec![(f32::NEG_INFINITY, usize::MAX); m];
    for part in parts {
        for (b, p) in best.iter_mut().zip(part) {
            if p.1 != usize::MAX && (b.1 == usize::MAX || p.0 > b.0) {
                *b = p;
            }
        }
    }
    best
}

/// Per-row facts that let [`near_duplicates_pruned`] skip most stored rows: `1/‖row‖` (exactly
/// as [`near_duplicates`] computes it) and the norm of the part after the first `head` values
/// (rounded up). Rows are validated as `existing` is by [`near_duplicates`], with the same errors.
pub fn row_norms(rows: Rows<'_>, head: usize) -> Result<(Vec<f32>, Vec<f32>)> {
    let Rows { data, n, d } = rows;
    let s = simd::simd();
    let inv = prepare("existing", data, n, d, Metric::Cosine, s)?;
    let head = head.min(d);
    let chunk = 4096;
    let parts = par_map(n.div_ceil(chunk), n * (d - head), |c| {
        Ok((c * chunk..((c + 1) * chunk).min(n))
            .map(|r| tail_norm(s, &data[r * d + head..(r + 1) * d]))
            .collect::<Vec<f32>>())
    })?;
    let tail = parts.concat();
    Ok((inv, tail))
}

/// `‖x‖` rounded up: a float32 sum of squares errs by far less than the margin added.
fn tail_norm(s: Simd, x: &[f32]) -> f32 {
    ((s.dot)(x, x) as f64).sqrt() as f32 * (1.0 + 1e-4)
}

/// Similarity the bound may be off by (f32 dot products of a few thousand values err by far less).
const BOUND_SLACK: f64 = 1e-3;

/// [`near_duplicates`] for cosine when only matches matter: the same index for every new row
/// (the best stored row if its similarity is `>= threshold`, lowest index on ties, else −1),
/// with its similarity (NaN when there is no match). `inv` and `tail` come from [`row_norms`]
/// over `existing` with the same `head`. A stored row is read past its first `head` values only
/// when Cauchy–Schwarz on the rest says it could reach the threshold, so a scan costs a fraction
/// of the full one while the answer is the same: every row that matches is compared exactly,
/// with the same formula.
pub fn near_duplicates_pruned(
    new: Rows<'_>,
    existing: Rows<'_>,
    inv: &[f32],
    tail: &[f32],
    head: usize,
    threshold: f64,
) -> Result<(Vec<i64>, Vec<f32>)> {
    let d = same_dim(&new, &existing)?;
    let (
        Rows {
            data: new, n: m, ..
        },
        Rows { data: ex, n, .. },
    ) = (new, existing);
    check_shape("existing", ex, n, d)?;
    for (arg, v) in [("inv_norms", inv), ("tail_norms", tail)] {
        if v.len() != n {
            return Err(KernelError::invalid(
                arg,
                format!("has {} entries but existing has {n} rows", v.len()),
            ));
        }
        if let Some(i) = v.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(KernelError::invalid(
                arg,
                format!("entry {i} is {} (must be finite and >= 0)", v[i]),
            ));
        }
    }
    let thr = check_threshold(threshold)?;
    let s = simd::simd();
    let inv_new = prepare("new", new, m, d, Metric::Cosine, s)?;
    let head = head.min(d);
    let tail_new: Vec<f64> = (0..m)
        .map(|i| tail_norm(s, &new[i * d + head..(i + 1) * d]) as f64)
        .collect();
    let seg = n
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(TILE);
    let parts = par_map(n.div_ceil(seg), m * n * head.max(1), |c| {
        let (r0, r1) = (c * seg, ((c + 1) * seg).min(n));
        let mut best = vec![(f32::NEG_INFINITY, usize::MAX); m];
        for t0 in (r0..r1).step_by(TILE) {
            let t1 = (t0 + TILE).min(r1);
            for (i, b) in best.iter_mut().enumerate() {
                let a = &new[i * d..(i + 1) * d];
                let scale = inv_new[i] as f64;
                for j in t0..t1 {
                    let row = &ex[j * d..(j + 1) * d];
                    let h = (s.dot)(&a[..head], &row[..head]) as f64;
                    let bound = (h + tail_new[i] * tail[j] as f64) * scale * inv[j] as f64;
                    if bound + BOUND_SLACK < thr as f64 {
                        continue;
                    }
                    let v = cosine((s.dot)(a, row), inv_new[i], inv[j]);
                    // Strictly greater: on ties the earlier (lower) index stays.
                    if v >= thr && (v > b.0 || b.1 == usize::MAX) {
                        *b = (v, j);
                    }
                }
            }
        }
        Ok(best)
    })?;
    Ok(merge_segments(parts, m)
        .into_iter()
        .map(|(v, j)| {
            if j == usize::MAX {
                (-1, f32::NAN)
            } else {
                (j as i64, v)
            }
        })
        .unzip())
}

/// Greedy keep-mask over `rows` vectors: row 0 is kept; a later row is dropped when its
/// similarity to any kept earlier row is `>= threshold`.
pub fn dedupe_within(vectors: Rows<'_>, threshold: f64, metric: Metric) -> Result<Vec<bool>> {
    let Rows {
        data: vectors,
        n: rows,
        d,
    } = vectors;
    let thr = check_threshold(threshold)?;
    let s = simd::simd();
    let inv = prepare("vectors", vectors, rows, d, metric, s)?;
    let sim = Sim {
        s,
        metric,
        inv_a: &inv,
        inv_b: &inv,
    };
    let row = |i: usize| &vectors[i * d..(i + 1) * d];
    let mut keep = vec![false; rows];
    let mut kept: Vec<usize> = Vec::new();
    // Blocks: rows of a block are checked against the rows kept before it in parallel, then
    // against each other in order (the greedy part is only within a block).
    const BLOCK: usize = 64;
    for b0 in (0..rows).step_by(BLOCK) {
        let b1 = (b0 + BLOCK).min(rows);
        let earlier = kept.len();
        let dup = par_map(b1 - b0, (b1 - b0) * earlier * d.max(1), |o| {
            let i = b0 + o;
            Ok(kept[..earlier]
                .iter()
                .any(|&j| sim.get(row(i), i, row(j), j) >= thr))
        })?;
        for i in b0..b1 {
            if dup[i - b0]
                || kept[earlier..]
                    .iter()
                    .any(|&j| sim.get(row(i), i, row(j), j) >= thr)
            {
                continue;
            }
            keep[i] = true;
            kept.push(i);
        }
    }
    Ok(keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_sim(a: &[f32], b: &[f32], metric: Metric) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
        match metric {
            Metric::Dot => dot,
            Metric::Cosine => {
                let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
                let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
                if na == 0.0 || nb == 0.0 {
                    0.0
                } else {
                    dot / (na * nb)
                }
            }
        }
    }

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    #[test]
    fn near_duplicates_matches_naive_best() {
        let (m, n, d) = (7, 300, 13);
        let mut seed = 1;
        let new: Vec<f32> = (0..m * d).map(|_| lcg(&mut seed)).collect();
        let mut ex: Vec<f32> = (0..n * d).map(|_| lcg(&mut seed)).collect();
        // Row 123 is a scaled copy of new row 2, rows 200 and 250 both copy new row 5 (tie -> 200).
        for t in 0..d {
            ex[123 * d + t] = 3.0 * new[2 * d + t];
            ex[200 * d + t] = new[5 * d + t];
            ex[250 * d + t] = new[5 * d + t];
        }
        let (idx, sims) = near_duplicates(
            Rows::new(&new, m, d),
            Rows::new(&ex, n, d),
            0.99,
            Metric::Cosine,
        )
        .unwrap();
        for i in 0..m {
            let a = &new[i * d..(i + 1) * d];
            let sims_i: Vec<f64> = (0..n)
                .map(|j| naive_sim(a, &ex[j * d..(j + 1) * d], Metric::Cosine))
                .collect();
            let best = sims_i.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            assert!((sims[i] as f64 - best).abs() < 1e-5, "row {i}");
            let expect = match i {
                2 => 123,
                5 => 200,
                _ => -1,
            };
            assert_eq!(idx[i], expect, "row {i}");
        }
    }

    #[test]
    fn near_duplicates_empty_and_errors() {
        let (idx, sims) = near_duplicates(
            Rows::new(&[1.0, 0.0], 1, 2),
            Rows::new(&[], 0, 2),
            0.5,
            Metric::Cosine,
        )
        .unwrap();
        assert_eq!(idx, vec![-1]);
        assert!(sims[0].is_nan());
        let (idx, sims) = near_duplicates(
            Rows::new(&[], 0, 2),
            Rows::new(&[1.0, 0.0], 1, 2),
            0.5,
            Metric::Dot,
        )
        .unwrap();
        assert!(idx.is_empty() && sims.is_empty());
        let e = near_duplicates(
            Rows::new(&[1.0, 0.0], 1, 2),
            Rows::new(&[1.0, 0.0, 1.0], 1, 3),
            0.5,
            Metric::Cosine,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("dimension 2") && e.to_string().contains("dimension 3"),
            "{e}"
        );
        let e = near_duplicates(
            Rows::new(&[1.0, f32::NAN], 1, 2),
            Rows::new(&[1.0, 0.0], 1, 2),
            0.5,
            Metric::Cosine,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("new: row 0, column 1"), "{e}");
        let e = near_duplicates(
            Rows::new(&[1.0, 0.0], 1, 2),
            Rows::new(&[1.0, 0.0], 1, 2),
            f64::NAN,
            Metric::Cosine,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("threshold"), "{e}");
    }

    /// The scan as it was written before it was fused: norms of every row first, then the
    /// dot products. The fused scan must agree with it bit for bit.
    fn two_pass(
        new: &[f32],
        m: usize,
        ex: &[f32],
        n: usize,
        d: usize,
        metric: Metric,
    ) -> Vec<(f32, usize)> {
        let s = simd::simd();
        let inv_a = prepare("new", new, m, d, metric, s).unwrap();
        let inv_b = prepare("existing", ex, n, d, metric, s).unwrap();
        let sim = Sim {
            s,
            metric,
            inv_a: &inv_a,
            inv_b: &inv_b,
        };
        (0..m)
            .map(|i| {
                let mut b = (f32::NEG_INFINITY, usize::MAX);
                for j in 0..n {
                    let v = sim.get(&new[i * d..(i + 1) * d], i, &ex[j * d..(j + 1) * d], j);
                    if v > b.0 || b.1 == usize::MAX {
                        b = (v, j);
                    }
                }
                b
            })
            .collect()
    }

    #[test]
    fn fused_scan_matches_two_pass_bit_for_bit() {
        let mut seed = 3;
        // Sizes around the tile and segment edges, a dimension with a scalar tail, ties.
        for (m, n, d) in [
            (1, 1, 3),
            (1, 63, 384),
            (3, 65, 37),
            (2, 1000, 40),
            (5, 4099, 8),
        ] {
            let new: Vec<f32> = (0..m * d).map(|_| lcg(&mut seed)).collect();
            let mut ex: Vec<f32> = (0..n * d).map(|_| lcg(&mut seed) * 40.0).collect();
            ex[..d].copy_from_slice(&new[..d]);
            if n > 10 {
                ex.copy_within(..d, (n - 1) * d); // a tie with row 0
                ex[5 * d..6 * d].fill(0.0); // a zero row: similarity 0
            }
            for metric in [Metric::Cosine, Metric::Dot] {
                let (idx, sims) =
                    near_duplicates(Rows::new(&new, m, d), Rows::new(&ex, n, d), 0.5, metric)
                        .unwrap();
                let want = two_pass(&new, m, &ex, n, d, metric);
                for i in 0..m {
                    assert_eq!(
                        sims[i].to_bits(),
                        want[i].0.to_bits(),
                        "{m}x{n}x{d} {metric:?} row {i}"
                    );
                    let j = if want[i].0 >= 0.5 {
                        want[i].1 as i64
                    } else {
                        -1
                    };
                    assert_eq!(idx[i], j, "{m}x{n}x{d} {metric:?} row {i}");
                }
            }
        }
    }

    #[test]
    fn pruned_scan_finds_exactly_the_matches_of_the_full_scan() {
        let mut seed = 11;
        for (m, n, d, head) in [
            (1, 500, 384, 96),
            (4, 300, 40, 8),
            (2, 70, 8, 64),
            (1, 1, 3, 1),
        ] {
            let new: Vec<f32> = (0..m * d).map(|_| lcg(&mut seed)).collect();
            let mut ex: Vec<f32> = (0..n * d).map(|_| lcg(&mut seed)).collect();
            // Near copies of the new rows at similarities around the threshold, a tie, a zero row.
            for (k, j) in (0..n).step_by(7).enumerate() {
                let i = k % m;
                let noise = 0.05 * (k % 5) as f32;
                for t in 0..d {
                    ex[j * d + t] = new[i * d + t] * 2.0 + noise * ex[j * d + t];
                }
            }
            if n > 20 {
                ex.copy_within(0..d, 20 * d);
                ex[3 * d..4 * d].fill(0.0);
            }
            let (inv, tail) = row_norms(Rows::new(&ex, n, d), head).unwrap();
            for thr in [0.5, 0.92, 0.97, 0.999, -1.0] {
                let (want, sims) = near_duplicates(
                    Rows::new(&new, m, d),
                    Rows::new(&ex, n, d),
                    thr,
                    Metric::Cosine,
                )
                .unwrap();
                let (got, got_sims) = near_duplicates_pruned(
                    Rows::new(&new, m, d),
                    Rows::new(&ex, n, d),
                    &inv,
                    &tail,
                    head,
                    thr,
                )
                .unwrap();
                assert_eq!(got, want, "{m}x{n}x{d} head {head} thr {thr}");
                for i in 0..m {
                    if want[i] >= 0 {
                        assert_eq!(got_sims[i].to_bits(), sims[i].to_bits());
                    } else {
                        assert!(got_sims[i].is_nan());
                    }
                }
            }
        }
    }

    #[test]
    fn pruned_scan_checks_its_inputs() {
        let ex = [1.0f32, 0.0, 0.0, 1.0];
        let (inv, tail) = row_norms(Rows::new(&ex, 2, 2), 1).unwrap();
        assert_eq!(inv, vec![1.0, 1.0]);
        let q = [1.0f32, 0.0];
        let run = |inv: &[f32], tail: &[f32]| {
            near_duplicates_pruned(Rows::new(&q, 1, 2), Rows::new(&ex, 2, 2), inv, tail, 1, 0.9)
        };
        assert_eq!(run(&inv, &tail).unwrap().0, vec![0]);
        assert!(run(&inv[..1], &tail)
            .unwrap_err()
            .to_string()
            .starts_with("inv_norms: has 1 entries"));
        assert!(run(&inv, &[0.0, f32::NAN])
            .unwrap_err()
            .to_string()
            .starts_with("tail_norms: entry 1"));
        let e = row_norms(Rows::new(&[1.0, f32::NAN], 1, 2), 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "existing: row 0, column 1 is NaN (must be finite)"
        );
    }

    #[test]
    fn bad_existing_rows_are_named_as_before() {
        let d = 4;
        let new = [1.0f32, 0.0, 0.0, 0.0];
        let mut ex = vec![0.5f32; 300 * d];
        ex[200 * d + 1] = 1e30; // squared norm overflows
        let cos = |ex: &[f32], metric| {
            near_duplicates(Rows::new(&new, 1, d), Rows::new(ex, 300, d), 0.9, metric)
        };
        let e = cos(&ex, Metric::Cosine).unwrap_err();
        assert_eq!(
            e.to_string(),
            "existing: row 200: squared norm overflows float32"
        );
        assert!(cos(&ex, Metric::Dot).is_ok(), "a dot product needs no norm");
        ex[250 * d + 3] = f32::INFINITY; // the first non-finite value is named, not the first bad row
        for metric in [Metric::Cosine, Metric::Dot] {
            let e = cos(&ex, metric).unwrap_err();
            assert_eq!(
                e.to_string(),
                "existing: row 250, column 3 is inf (must be finite)"
            );
        }
        ex[250 * d + 3] = 0.5;
        ex[299 * d] = f32::NAN;
        let e = near_duplicates(
            Rows::new(&[], 0, d),
            Rows::new(&ex, 300, d),
            0.9,
            Metric::Dot,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "existing: row 299, column 0 is NaN (must be finite)"
        );
    }

    #[test]
    fn dedupe_within_is_greedy_over_kept_rows_only() {
        // a, b at cos 0.8 to each other; c at 0.8 to b but 0.28 to a. threshold 0.75:
        // keep a, drop b (dup of a), keep c (b was dropped, so it does not count).
        let a = [1.0f32, 0.0];
        let b = [0.8f32, 0.6];
        let c = [0.28f32, 0.96];
        let v: Vec<f32> = [a, b, c].concat();
        assert_eq!(
            dedupe_within(Rows::new(&v, 3, 2), 0.75, Metric::Cosine).unwrap(),
            vec![true, false, true]
        );
        assert_eq!(
            dedupe_within(Rows::new(&v, 3, 2), 0.99, Metric::Cosine).unwrap(),
            vec![true, true, true]
        );
        assert_eq!(
            dedupe_within(Rows::new(&[], 0, 2), 0.5, Metric::Cosine).unwrap(),
            Vec::<bool>::new()
        );
    }

    #[test]
    fn dedupe_within_matches_naive_across_blocks() {
        let (n, d) = (200, 5);
        let mut seed = 7;
        let mut v: Vec<f32> = (0..n * d).map(|_| lcg(&mut seed)).collect();
        for i in (100..200).step_by(3) {
            let src = (i * 7) % 100;
            for t in 0..d {
                v[i * d + t] = v[src * d + t] * 2.0;
            }
        }
        for metric in [Metric::Cosine, Metric::Dot] {
            let thr = if metric == Metric::Cosine { 0.97 } else { 0.3 };
            let got = dedupe_within(Rows::new(&v, n, d), thr, metric).unwrap();
            let mut kept: Vec<usize> = Vec::new();
            let mut want = vec![false; n];
            for i in 0..n {
                let a = &v[i * d..(i + 1) * d];
                let dup = kept
                    .iter()
                    .any(|&j| naive_sim(a, &v[j * d..(j + 1) * d], metric) >= thr);
                if !dup {
                    kept.push(i);
                    want[i] = true;
                }
            }
            // Float noise could flip a pair sitting exactly at the threshold; this data has none.
            assert_eq!(got, want, "{metric:?}");
            // Every dropped row finds a kept twin with near_duplicates at the same threshold.
            let kept_rows: Vec<f32> = kept
                .iter()
                .flat_map(|&j| v[j * d..(j + 1) * d].to_vec())
                .collect();
            let dropped: Vec<usize> = (0..n).filter(|&i| !got[i]).collect();
            let dropped_rows: Vec<f32> = dropped
                .iter()
                .flat_map(|&i| v[i * d..(i + 1) * d].to_vec())
                .collect();
            let (idx, _) = near_duplicates(
                Rows::new(&dropped_rows, dropped.len(), d),
                Rows::new(&kept_rows, kept.len(), d),
                thr,
                metric,
            )
            .unwrap();
            assert!(idx.iter().all(|&j| j >= 0));
        }
    }
}
