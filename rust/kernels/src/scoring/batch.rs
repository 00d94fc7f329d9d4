//! Many queries: S = Q·Mᵀ by a real GEMM, blocked over matrix rows so each score block is
//! scanned for the per-query top-k while it is still in cache. The work is a grid of tasks
//! (a segment of matrix rows x a group of queries), each with its own heaps, merged at the end.

use super::select::{merge, Hit, TopSel};
use super::simd::{self, inv_norm, ScanRow};
use super::{chunk_rows, non_finite_row, norm_overflow, par_map, Metric, Norms, Prepared};
use crate::Result;

/// Matrix rows per GEMM call: with up to QUERY_BLOCK queries the score block (1 MB at most)
/// stays in L2 until it is scanned.
const ROW_BLOCK: usize = 256;
/// Queries per GEMM call.
const QUERY_BLOCK: usize = 1024;

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
    let cosine = prep.metric == Metric::Cosine;
    let compute_norms = cosine && prep.norms == Norms::Compute;

    // Per-row terms shared by every query: the bias (recency + extra, −inf when masked) and,
    // for cosine, 1/‖row‖ (a non-finite squared norm means the row holds NaN/inf).
    let rows = chunk_rows(n, d);
    let per_row = par_map(n.div_ceil(rows), n * d.max(1), |c| {
        let (r0, r1) = (c * rows, ((c + 1) * rows).min(n));
        let mut bias = vec![0f32; r1 - r0];
        prep.fill_bias(r0, &mut bias)?;
        let mut inv = Vec::new();
        if compute_norms {
            inv = vec![0f32; r1 - r0];
            for (o, (inv, &b)) in inv.iter_mut().zip(&bias).enumerate() {
                if b == f32::NEG_INFINITY {
                    continue; // masked rows are never read
                }
                let r = &matrix[(r0 + o) * d..(r0 + o + 1) * d];
                let rr = (s.dot)(r, r);
                if !rr.is_finite() {
                    return Err(if r.iter().all(|x| x.is_finite()) {
                        norm_overflow(r0 + o)
                    } else {
                        non_finite_row(r0 + o)
                    });
                }
                *inv = inv_norm(rr);
            }
        }
        Ok((bias, inv))
    })?;
    let (mut bias, mut computed) = (
        Vec::with_capacity(n),
        Vec::with_capacity(if compute_norms { n } else { 0 }),
    );
    for (b, i) in per_row {
        bias.extend(b);
        computed.extend(i);
    }
    let ones;
    let inv_r: &[f32] = match prep.norms {
        Norms::Inverse(inv) => inv,
        Norms::Unit if cosine => {
            ones = vec![1f32; n];
            &ones
        }
        _ => &computed,
    };

    // The task grid: about 4 tasks per thread, rows split first (each task then streams its
    // own part of the matrix), queries only when there are too few row blocks.
    let target = rayon::current_num_threads().max(1) * 4;
    let segments = n.div_ceil(ROW_BLOCK).clamp(1, target);
    let seg_rows = n.div_ceil(segments);
    let groups = (target / segments).clamp(1, nq.div_ceil(32).max(1));
    let group_size = nq.div_ceil(groups);
    let tasks = par_map(segments * groups, nq * n * d.max(1), |t| {
        let (seg, group) = (t / groups, t % groups);
        let (r0, r1) = (seg * seg_rows, ((seg + 1) * seg_rows).min(n));
        let (g0, g1) = (group * group_size, ((group + 1) * group_size).min(nq));
        let mut tops: Vec<TopSel> = (g0..g1)
            .map(|_| TopSel::new(prep.k, prep.min_score, r1.saturating_sub(r0)))
            .collect();
        let qb = QUERY_BLOCK.min(g1.saturating_sub(g0)).max(1);
        let mut block = vec![0f32; qb * ROW_BLOCK];
        for b0 in (r0..r1).step_by(ROW_BLOCK) {
            let nb = ROW_BLOCK.min(r1 - b0);
            if prep.mask.is_some() && bias[b0..b0 + nb].iter().all(|&b| b == f32::NEG_INFINITY) {
                continue; // the whole block is masked out
            }
            for q0 in (g0..g1).step_by(qb) {
                let m = qb.min(g1 - q0);
                scores_block(
                    &queries[q0 * d..(q0 + m) * d],
                    m,
                    &matrix[b0 * d..(b0 + nb) * d],
                    nb,
                    d,
                    &mut block,
                );
                for i in 0..m {
                    let row = ScanRow {
                        s: &block[i * ROW_BLOCK..i * ROW_BLOCK + nb],
                        inv_r: cosine.then(|| &inv_r[b0..b0 + nb]),
                        bias: &bias[b0..b0 + nb],
                        inv_q: inv_q[q0 + i],
                        w_sim: prep.w_sim,
                    };
                    (s.scan)(&row, b0, &mut tops[q0 - g0 + i])?;
                }
            }
        }
        Ok(tops.into_iter().map(TopSel::into_vec).collect::<Vec<_>>())
    })?;

    // Merge: query i's partial results are in task (seg, i / group_size) for every segment.
    let mut tasks = tasks;
    let mut out = Vec::with_capacity(nq);
    for i in 0..nq {
        let (group, o) = (i / group_size, i % group_size);
        let parts = (0..segments).map(|seg| std::mem::take(&mut tasks[seg * groups + group][o]));
        out.push(merge(parts, prep.k));
    }
    Ok(out)
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
