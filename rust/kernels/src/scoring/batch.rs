//! Many queries: S = Q·Mᵀ by a real GEMM, blocked over matrix rows so each score block is
//! scanned for the per-query top-k while it is still in cache. The matrix is split into
//! contiguous segments, one rayon task each; every task keeps its own heaps, merged at the end.

use super::select::{merge, Hit, TopSel};
use super::simd::{self, inv_norm, ScanRow};
use super::{non_finite_row, Metric, Prepared};
use crate::Result;
use rayon::prelude::*;

/// Matrix rows per GEMM call: the score block (`QUERY_BLOCK x ROW_BLOCK` floats) stays in L2.
const ROW_BLOCK: usize = 256;
/// Queries per GEMM call.
const QUERY_BLOCK: usize = 1024;

#[allow(clippy::too_many_arguments)]
pub(super) fn topk(
    queries: &[f32],
    inv_q: &[f32],
    nq: usize,
    matrix: &[f32],
    n: usize,
    d: usize,
    prep: &Prepared<'_>,
) -> Result<Vec<Vec<Hit>>> {
    let s = simd::simd();
    let rows = super::chunk_rows(n);
    let chunks = n.div_ceil(rows);

    // Per-row terms shared by every query: the bias (recency + extra, −inf when masked)
    // and, for cosine, 1/‖row‖ (a non-finite norm means the row holds NaN/inf).
    let mut bias = vec![0f32; n];
    let mut inv_r = if prep.metric == Metric::Cosine { vec![0f32; n] } else { Vec::new() };
    bias.par_chunks_mut(rows).enumerate().try_for_each(|(c, out)| prep.fill_bias(c * rows, out))?;
    if prep.metric == Metric::Cosine {
        inv_r.par_chunks_mut(rows).enumerate().try_for_each(|(c, out)| {
            for (o, inv) in out.iter_mut().enumerate() {
                let j = c * rows + o;
                if bias[j] == f32::NEG_INFINITY {
                    continue; // masked rows are never read
                }
                let r = &matrix[j * d..(j + 1) * d];
                let rr = (s.dot)(r, r);
                if !rr.is_finite() {
                    return Err(non_finite_row(j));
                }
                *inv = inv_norm(rr);
            }
            Ok(())
        })?;
    }

    let parts: Vec<Vec<TopSel>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let (r0, r1) = (c * rows, ((c + 1) * rows).min(n));
            let mut tops: Vec<TopSel> = (0..nq).map(|_| TopSel::new(prep.k, prep.min_score, r1 - r0)).collect();
            let qb = QUERY_BLOCK.min(nq);
            let mut block = vec![0f32; qb * ROW_BLOCK];
            for b0 in (r0..r1).step_by(ROW_BLOCK) {
                let nb = ROW_BLOCK.min(r1 - b0);
                if prep.mask.is_some() && bias[b0..b0 + nb].iter().all(|&b| b == f32::NEG_INFINITY) {
                    continue; // the whole block is masked out
                }
                for q0 in (0..nq).step_by(qb) {
                    let m = qb.min(nq - q0);
                    scores_block(&queries[q0 * d..(q0 + m) * d], m, &matrix[b0 * d..(b0 + nb) * d], nb, d, &mut block);
                    for i in 0..m {
                        let row = ScanRow {
                            s: &block[i * ROW_BLOCK..i * ROW_BLOCK + nb],
                            inv_r: (prep.metric == Metric::Cosine).then(|| &inv_r[b0..b0 + nb]),
                            bias: &bias[b0..b0 + nb],
                            inv_q: inv_q[q0 + i],
                            w_sim: prep.w_sim,
                        };
                        simd::scan(&row, b0, &mut tops[q0 + i])?;
                    }
                }
            }
            Ok(tops)
        })
        .collect::<Result<_>>()?;

    let mut parts: Vec<Vec<Vec<Hit>>> =
        parts.into_iter().map(|tops| tops.into_iter().map(TopSel::into_vec).collect()).collect();
    Ok((0..nq).map(|i| merge(parts.iter_mut().map(|p| std::mem::take(&mut p[i])), prep.k)).collect())
}

/// `out[i * ROW_BLOCK + j] = q_i · r_j` for `m` queries and `nb` rows (single-threaded GEMM;
/// the parallelism is over row segments).
fn scores_block(q: &[f32], m: usize, rows: &[f32], nb: usize, d: usize, out: &mut [f32]) {
    debug_assert!(q.len() == m * d && rows.len() == nb * d && out.len() >= m * ROW_BLOCK);
    if d == 0 {
        out.fill(0.0);
        return;
    }
    // SAFETY: dst is `m x nb` with row stride ROW_BLOCK inside `out` (len >= m * ROW_BLOCK,
    // nb <= ROW_BLOCK); lhs is `m x d` row-major in `q`; rhs is `d x nb` read as the transpose
    // of the row-major `nb x d` block `rows`. All pointers stay within their slices.
    unsafe {
        gemm::gemm(
            m,
            nb,
            d,
            out.as_mut_ptr(),
            1,
            ROW_BLOCK as isize,
            false,
            q.as_ptr(),
            1,
            d as isize,
            rows.as_ptr(),
            d as isize,
            1,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}
