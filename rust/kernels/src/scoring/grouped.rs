//! Grouped recall: many queries, each ranked against its own group of rows (one user's memories),
//! in one call, scored exactly as long-term memory recall scores a single query.
//!
//! For a query of group `g` (rows `offsets[g]..offsets[g + 1]`):
//!
//! - with `w_lexical > 0`: the BM25 score of every row of the group for the query text (an index
//!   over the group's analysed `terms`, English stop words and stemming on the query), then, over
//!   the rows that have a vector, `scale = max(max bm25, lexical_floor)` and the per-row extra
//!   `w_importance·importance + (w_lexical/scale)·bm25` in float32; the score is
//!   `w_sim·cosine + w_rec·2^(−age/half_life) + extra`;
//! - with `w_lexical == 0`: `w_sim·cosine + w_rec·2^(−age/half_life) + w_importance·importance`.
//!
//! Rows without a vector never match. The arithmetic is the single-query scan of [`super`] and
//! the BM25 formula of [`crate::bm25`], step for step, so every index, score and similarity equals
//! what a `Bm25Index` plus `hybrid_topk` per query give, bit for bit. BM25 here walks only the
//! postings of the group's query terms, gathered in one pass over the group's stored terms
//! (each row is tokenized once per call, not once per query); the groups run in parallel.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;

use super::select::Hit;
use super::{check_shape, finite_weight, first_non_finite, multi, positive, query_inv_norms};
use super::{Metric, Params, Prepared, Rows, TopK};
use crate::analyzer::Analyzer;
use crate::bm25::{avg_doc_len, for_each_analyzed_token, length_norm, term_score, term_weight};
use crate::{KernelError, Result};

/// A column of UTF-8 strings in Arrow's layout: entry `i` is `bytes[offsets[i]..offsets[i + 1]]`
/// (an Arrow `large_string` array's offsets and data buffers, read without copying).
#[derive(Debug, Clone, Copy)]
pub struct Texts<'a> {
    pub offsets: &'a [i64],
    pub bytes: &'a [u8],
}

impl<'a> Texts<'a> {
    pub fn new(offsets: &'a [i64], bytes: &'a [u8]) -> Self {
        Texts { offsets, bytes }
    }

    /// The `n` entries as `&str`, checked: `n + 1` offsets, non-decreasing, within `bytes`, each
    /// entry valid UTF-8. Errors name the entry.
    fn strs(&self, arg: &'static str, n: usize, of: &str) -> Result<Vec<&'a str>> {
        if self.offsets.len() != n + 1 {
            return Err(KernelError::invalid(
                arg,
                format!("has {} offsets, expected {} (one more than the {n} {of})", self.offsets.len(), n + 1),
            ));
        }
        let size = self.bytes.len();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (a, b) = (self.offsets[i], self.offsets[i + 1]);
            let range = usize::try_from(a).ok().zip(usize::try_from(b).ok()).filter(|&(a, b)| a <= b && b <= size);
            let Some((a, b)) = range else {
                return Err(KernelError::invalid(
                    arg,
                    format!("entry {i} spans bytes {a}..{b}, outside 0..{size} or reversed"),
                ));
            };
            let s = std::str::from_utf8(&self.bytes[a..b])
                .map_err(|e| KernelError::invalid(arg, format!("entry {i} is not valid UTF-8 ({e})")))?;
            out.push(s);
        }
        Ok(out)
    }
}

/// The ranking: long-term memory's weights, its lexical floor and its BM25 parameters.
#[derive(Debug, Clone)]
pub struct RecallParams {
    /// Hits per query, `>= 1`.
    pub k: usize,
    pub w_sim: f64,
    pub w_rec: f64,
    pub w_importance: f64,
    /// `> 0`: fuse BM25 into the extra term; `0`: importance alone.
    pub w_lexical: f64,
    /// Half-life of the recency decay (ms, > 0).
    pub half_life_ms: f64,
    pub now_ms: i64,
    /// Raw BM25 below which a query's best lexical match is not scaled up to the full weight.
    pub lexical_floor: f64,
    pub k1: f64,
    pub b: f64,
}

impl RecallParams {
    /// Long-term memory's defaults: 0.7 / 0.2 / 0.1, lexical 1, a 30-day half-life, floor 2,
    /// BM25 with k1 = 0.9 and b = 0.4.
    pub fn new(k: usize) -> Self {
        RecallParams {
            k,
            w_sim: 0.7,
            w_rec: 0.2,
            w_importance: 0.1,
            w_lexical: 1.0,
            half_life_ms: 30.0 * 86_400_000.0,
            now_ms: 0,
            lexical_floor: 2.0,
            k1: 0.9,
            b: 0.4,
        }
    }

    fn check(&self) -> Result<()> {
        if self.k == 0 {
            return Err(KernelError::invalid("k", "must be >= 1, got 0"));
        }
        finite_weight("w_sim", self.w_sim)?;
        finite_weight("w_rec", self.w_rec)?;
        finite_weight("w_importance", self.w_importance)?;
        finite_weight("w_lexical", self.w_lexical)?;
        if self.w_lexical < 0.0 {
            return Err(KernelError::invalid(
                "w_lexical",
                format!("must be >= 0 (0 turns lexical fusion off), got {}", self.w_lexical),
            ));
        }
        positive("half_life_ms", self.half_life_ms)?;
        positive("lexical_floor", self.lexical_floor)?;
        if !self.k1.is_finite() || self.k1 < 0.0 {
            return Err(KernelError::invalid("k1", format!("must be a finite number >= 0, got {}", self.k1)));
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(KernelError::invalid("b", format!("must be in [0, 1], got {}", self.b)));
        }
        Ok(())
    }
}

/// The rows, their groups and the queries. Row arrays have one entry per matrix row.
#[derive(Debug, Clone, Copy)]
pub struct GroupedInput<'a> {
    /// `(Q, d)` query vectors.
    pub queries: Rows<'a>,
    /// The group of each query, in `0..G`.
    pub query_group: &'a [i64],
    /// Each query's text (BM25 analyses it); required when `w_lexical > 0`.
    pub query_texts: Option<Texts<'a>>,
    /// `(N, d)` rows of every group.
    pub matrix: Rows<'a>,
    /// `G + 1` non-decreasing row offsets: group `g` is rows `offsets[g]..offsets[g + 1]`.
    pub group_offsets: &'a [i64],
    /// Unix ms the recency decay runs from.
    pub timestamps: &'a [i64],
    pub importance: &'a [f32],
    /// Each row's analysed terms, space-joined; required when `w_lexical > 0`.
    pub terms: Option<Texts<'a>>,
    /// `false`: the row has no vector and never matches (it still counts in BM25's statistics).
    pub has_vector: Option<&'a [bool]>,
    /// `false`: the row is not returned, but it scores as it would be and counts in the lexical
    /// scale (a second pass over part of the rows, with the same scores as the first).
    pub eligible: Option<&'a [bool]>,
}

/// FNV-1a: the group's query terms are few and short, looked up once per stored token.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

type TermSlots = HashMap<String, u32, BuildHasherDefault<Fnv>>;

/// Queries of one group scored together: they share each pass over the group's rows; the batch
/// bounds the per-query buffers (an extra term per row) a group with many queries holds at once.
const QUERY_BATCH: usize = 32;

fn renamed(e: KernelError, arg: &'static str) -> KernelError {
    match e {
        KernelError::Invalid { reason, .. } => KernelError::Invalid { arg, reason },
    }
}

fn check_rows_len(arg: &'static str, len: usize, n: usize) -> Result<()> {
    if len != n {
        return Err(KernelError::invalid(arg, format!("has {len} entries but matrix has {n} rows")));
    }
    Ok(())
}

/// Validated group bounds as `usize`: non-decreasing, within `0..=n`.
fn group_bounds(offsets: &[i64], n: usize) -> Result<Vec<usize>> {
    if offsets.is_empty() {
        return Err(KernelError::invalid("group_offsets", "must hold at least one entry (G + 1 for G groups)"));
    }
    let mut out = Vec::with_capacity(offsets.len());
    for (g, &o) in offsets.iter().enumerate() {
        let at = usize::try_from(o).ok().filter(|&o| o <= n).ok_or_else(|| {
            KernelError::invalid("group_offsets", format!("entry {g} is {o}, outside 0..={n} (the matrix rows)"))
        })?;
        if let Some(&prev) = out.last() {
            if at < prev {
                return Err(KernelError::invalid(
                    "group_offsets",
                    format!("entry {g} is {o}, below entry {} ({prev}): offsets must not decrease", g - 1),
                ));
            }
            if at - prev > u32::MAX as usize {
                return Err(KernelError::invalid("group_offsets", format!("group {} has more than 2^32 - 1 rows", g - 1)));
            }
        }
        out.push(at);
    }
    Ok(out)
}

/// Per group, the queries that belong to it (in query order), as `(starts, order)`: group `g`'s
/// queries are `order[starts[g]..starts[g + 1]]`.
fn queries_by_group(query_group: &[i64], groups: usize) -> Result<(Vec<usize>, Vec<usize>)> {
    let mut starts = vec![0usize; groups + 1];
    for (i, &g) in query_group.iter().enumerate() {
        match usize::try_from(g).ok().filter(|&g| g < groups) {
            Some(g) => starts[g + 1] += 1,
            None => {
                return Err(KernelError::invalid(
                    "query_group",
                    format!("entry {i} is {g}, outside 0..{groups} (the groups group_offsets defines)"),
                ))
            }
        }
    }
    for g in 0..groups {
        starts[g + 1] += starts[g];
    }
    let mut next = starts.clone();
    let mut order = vec![0usize; query_group.len()];
    for (i, &g) in query_group.iter().enumerate() {
        order[next[g as usize]] = i;
        next[g as usize] += 1;
    }
    Ok((starts, order))
}

/// The distinct terms of each query (as slots into the group's term table) with their count in
/// the query, in first-occurrence order: what `Bm25Index` sums over, in the order it sums.
fn analyse_queries(texts: &[&str], analyzer: &Analyzer) -> (TermSlots, Vec<Vec<(u32, u32)>>) {
    let mut slots = TermSlots::default();
    let per_query = texts
        .iter()
        .map(|text| {
            let mut terms: Vec<(u32, u32)> = Vec::new();
            analyzer.for_each_term(text, |t| {
                let next = slots.len() as u32;
                let slot = *slots.entry(t.to_owned()).or_insert(next);
                match terms.iter_mut().find(|(s, _)| *s == slot) {
                    Some((_, qf)) => *qf += 1,
                    None => terms.push((slot, 1)),
                }
            });
            terms
        })
        .collect();
    (slots, per_query)
}

/// The postings (row, tf) of every query term over a group's stored terms, each row's length
/// normalisation, in one tokenizing pass: `Bm25Index::add_analyzed`'s counts for just these terms.
struct GroupPostings {
    postings: Vec<Vec<(u32, u32)>>,
    norm: Vec<f32>,
}

impl GroupPostings {
    fn build(docs: &[&str], slots: &TermSlots, k1: f64, b: f64) -> GroupPostings {
        let mut postings: Vec<Vec<(u32, u32)>> = vec![Vec::new(); slots.len()];
        let mut tf = vec![0u32; slots.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut doc_len = Vec::with_capacity(docs.len());
        let mut total_len = 0u64;
        for (row, doc) in docs.iter().enumerate() {
            let mut len = 0u32;
            for_each_analyzed_token(doc, |t| {
                len = len.saturating_add(1);
                if let Some(&s) = slots.get(t) {
                    if tf[s as usize] == 0 {
                        touched.push(s);
                    }
                    tf[s as usize] += 1;
                }
            });
            for &s in &touched {
                postings[s as usize].push((row as u32, tf[s as usize]));
                tf[s as usize] = 0;
            }
            touched.clear();
            doc_len.push(len);
            total_len += u64::from(len);
        }
        let avgdl = avg_doc_len(total_len, docs.len());
        let norm = doc_len.iter().map(|&dl| length_norm(k1, b, dl, avgdl)).collect();
        GroupPostings { postings, norm }
    }

    /// The BM25 score of every row for a query's terms, into `acc` (zeroed first).
    fn scores(&self, terms: &[(u32, u32)], k1: f64, acc: &mut [f32]) {
        acc.fill(0.0);
        let n_docs = acc.len();
        for &(slot, qf) in terms {
            let plist = &self.postings[slot as usize];
            if plist.is_empty() {
                continue; // not in the group's vocabulary: the index never looks it up
            }
            let w = term_weight(k1, n_docs, plist.len(), qf);
            for &(row, tf) in plist {
                acc[row as usize] += term_score(w, tf, self.norm[row as usize]);
            }
        }
    }
}

/// Everything the groups share, validated.
struct Shared<'a> {
    p: &'a RecallParams,
    queries: &'a [f32],
    inv_q: Vec<f32>,
    d: usize,
    matrix: &'a [f32],
    bounds: Vec<usize>,
    timestamps: &'a [i64],
    importance: &'a [f32],
    has_vector: Option<&'a [bool]>,
    eligible: Option<&'a [bool]>,
    /// `(query texts, row terms)`, present when `w_lexical > 0`.
    texts: Option<(Vec<&'a str>, Vec<&'a str>)>,
}

impl Shared<'_> {
    /// The hits of each of `queries` (all of group `g`), in that order.
    fn group(&self, g: usize, queries: &[usize]) -> Result<Vec<Vec<Hit>>> {
        let (lo, hi) = (self.bounds[g], self.bounds[g + 1]);
        let n = hi - lo;
        let mask = self.has_vector.map(|h| &h[lo..hi]);
        // The rows that may be returned: those with a vector, among the eligible ones.
        let returnable: Option<Vec<bool>> = self.eligible.map(|e| {
            let e = &e[lo..hi];
            match mask {
                Some(m) => m.iter().zip(e).map(|(&a, &b)| a && b).collect(),
                None => e.to_vec(),
            }
        });
        let top_mask = returnable.as_deref().or(mask);
        if n == 0 || top_mask.is_some_and(|m| !m.contains(&true)) {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        let (p, d) = (self.p, self.d);
        let matrix = &self.matrix[lo * d..hi * d];
        let importance = &self.importance[lo..hi];
        let base = Params {
            k: p.k,
            metric: Metric::Cosine,
            w_sim: p.w_sim,
            w_rec: p.w_rec,
            w_extra: p.w_importance,
            timestamps: Some(&self.timestamps[lo..hi]),
            now_ms: p.now_ms,
            half_life_ms: Some(p.half_life_ms),
            tau_ms: None,
            extra: Some(importance),
            mask: top_mask,
            ..Params::new(p.k)
        };
        let vectors: Vec<&[f32]> = queries.iter().map(|&i| &self.queries[i * d..(i + 1) * d]).collect();
        let inv_q: Vec<f32> = queries.iter().map(|&i| self.inv_q[i]).collect();
        let Some((texts, terms)) = &self.texts else {
            let mut prep = Prepared::new(&base, n)?;
            prep.base = lo;
            let preps = vec![prep; QUERY_BATCH.min(queries.len())];
            let mut out = Vec::with_capacity(queries.len());
            for (vectors, inv_q) in vectors.chunks(QUERY_BATCH).zip(inv_q.chunks(QUERY_BATCH)) {
                out.extend(multi(vectors, inv_q, matrix, n, d, &preps[..vectors.len()])?);
            }
            return Ok(out);
        };
        let query_texts: Vec<&str> = queries.iter().map(|&i| texts[i]).collect();
        let (slots, query_terms) = analyse_queries(&query_texts, &Analyzer::english());
        let postings = (!slots.is_empty()).then(|| GroupPostings::build(&terms[lo..hi], &slots, p.k1, p.b));
        let mut out = Vec::with_capacity(queries.len());
        let batches = vectors.chunks(QUERY_BATCH).zip(inv_q.chunks(QUERY_BATCH)).zip(query_terms.chunks(QUERY_BATCH));
        for ((vectors, inv_q), query_terms) in batches {
            let extras = self.lexical_extras((lo, hi), query_terms, postings.as_ref(), mask)?;
            let preps = extras
                .iter()
                .map(|extra| {
                    let params = Params {
                        w_extra: 1.0,
                        extra: Some(extra),
                        ..base.clone()
                    };
                    let mut prep = Prepared::new(&params, n)?;
                    prep.base = lo;
                    Ok(prep)
                })
                .collect::<Result<Vec<_>>>()?;
            out.extend(multi(vectors, inv_q, matrix, n, d, &preps)?);
        }
        Ok(out)
    }

    /// Per query, `w_importance·importance + (w_lexical/scale)·bm25` over the group's rows
    /// `lo..hi` (0 for rows without a vector), as long-term memory computes it.
    fn lexical_extras(
        &self,
        (lo, hi): (usize, usize),
        query_terms: &[Vec<(u32, u32)>],
        postings: Option<&GroupPostings>,
        mask: Option<&[bool]>,
    ) -> Result<Vec<Vec<f32>>> {
        let p = self.p;
        let importance = &self.importance[lo..hi];
        let n = hi - lo;
        let (w_importance, floor) = (p.w_importance as f32, p.lexical_floor);
        let mut lexical = vec![0f32; n];
        let mut extras: Vec<Vec<f32>> = Vec::with_capacity(query_terms.len());
        for terms in query_terms {
            let mut extra = vec![0f32; n];
            match postings {
                Some(postings) => postings.scores(terms, p.k1, &mut lexical),
                None => lexical.fill(0.0),
            }
            // The best lexical score among the rows that can match, as a float64.
            let best = lexical
                .iter()
                .enumerate()
                .filter(|&(j, _)| mask.is_none_or(|m| m[j]))
                .map(|(_, &s)| s)
                .fold(f32::NEG_INFINITY, f32::max);
            let scale = if floor > f64::from(best) { floor } else { f64::from(best) };
            // float32 arithmetic with each weight rounded to float32 first (numpy's rules for a
            // Python float times a float32 array), one rounding per operation.
            let w_lexical = (p.w_lexical / scale) as f32;
            for j in 0..n {
                let keep = mask.is_none_or(|m| m[j]);
                let e = if keep { w_importance * importance[j] + w_lexical * lexical[j] } else { 0.0 };
                if !e.is_finite() {
                    return Err(KernelError::invalid(
                        "w_importance",
                        format!("the extra term of row {} overflows float32", lo + j),
                    ));
                }
                extra[j] = e;
            }
            extras.push(extra);
        }
        Ok(extras)
    }
}

/// The best `p.k` rows of its group for every query, as long-term memory recall ranks them (see
/// the module docs). Row numbers in the result index the whole matrix; each query's row of the
/// `(Q, k)` result is padded with index −1, score −inf and similarity NaN past its hits (a group
/// with fewer than `k` matching rows). Ties go to the lower row.
pub fn grouped_recall(input: &GroupedInput<'_>, p: &RecallParams) -> Result<TopK> {
    p.check()?;
    let GroupedInput {
        queries: Rows { data: queries, n: nq, d },
        matrix: Rows { data: matrix, n, d: dm },
        ..
    } = *input;
    check_shape("queries", queries, nq, d)?;
    check_shape("matrix", matrix, n, dm)?;
    if d != dm {
        return Err(KernelError::invalid(
            "queries",
            format!("queries have dimension {d} but matrix rows have dimension {dm}"),
        ));
    }
    if input.query_group.len() != nq {
        return Err(KernelError::invalid(
            "query_group",
            format!("has {} entries but there are {nq} queries", input.query_group.len()),
        ));
    }
    let bounds = group_bounds(input.group_offsets, n)?;
    let groups = bounds.len() - 1;
    let (starts, order) = queries_by_group(input.query_group, groups)?;
    check_rows_len("timestamps", input.timestamps.len(), n)?;
    check_rows_len("importance", input.importance.len(), n)?;
    if let Some(h) = input.has_vector {
        check_rows_len("has_vector", h.len(), n)?;
    }
    if let Some(e) = input.eligible {
        check_rows_len("eligible", e.len(), n)?;
    }
    if let Some(i) = input.importance.iter().position(|x| !x.is_finite()) {
        return Err(KernelError::invalid(
            "importance",
            format!("entry {i} is {} (must be finite)", input.importance[i]),
        ));
    }
    if let Some((r, c)) = first_non_finite(queries, d) {
        return Err(KernelError::invalid(
            "queries",
            format!("row {r}, column {c} is {} (must be finite)", queries[r * d.max(1) + c]),
        ));
    }
    let texts = if p.w_lexical > 0.0 {
        let required = |arg: &'static str| KernelError::invalid(arg, "required when w_lexical > 0");
        let qt = input.query_texts.ok_or_else(|| required("query_texts"))?;
        let terms = input.terms.ok_or_else(|| required("terms"))?;
        Some((qt.strs("query_texts", nq, "queries")?, terms.strs("terms", n, "matrix rows")?))
    } else {
        None
    };
    let inv_q = query_inv_norms(queries, nq, d, Metric::Cosine).map_err(|e| renamed(e, "queries"))?;
    let mut out = TopK::padded(nq, p.k)?;
    let shared = Shared {
        p,
        queries,
        inv_q,
        d,
        matrix,
        bounds,
        timestamps: input.timestamps,
        importance: input.importance,
        has_vector: input.has_vector,
        eligible: input.eligible,
        texts,
    };
    let tasks: Vec<usize> = (0..groups).filter(|&g| starts[g + 1] > starts[g]).collect();
    let results: Vec<Result<Vec<Vec<Hit>>>> = tasks
        .par_iter()
        .map(|&g| shared.group(g, &order[starts[g]..starts[g + 1]]))
        .collect();
    for (&g, hits) in tasks.iter().zip(results) {
        for (&i, hits) in order[starts[g]..starts[g + 1]].iter().zip(hits?) {
            out.fill(i, &hits);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bm25::Bm25Index;
    use crate::scoring::hybrid_topk;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    const WORDS: [&str; 12] =
        ["tea", "green", "coffee", "dog", "walk", "park", "bike", "ride", "story", "user", "like", "drink"];
    const QUERIES: [&str; 6] = [
        "What does the user like to drink? Green teas!",
        "dogs walking in the park park",
        "zebra quantum",
        "",
        "Stories about bikes",
        "the of what",
    ];

    struct Case {
        matrix: Vec<f32>,
        queries: Vec<f32>,
        group: Vec<i64>,
        texts: Vec<String>,
        offsets: Vec<i64>,
        ts: Vec<i64>,
        importance: Vec<f32>,
        terms: Vec<String>,
        has_vector: Vec<bool>,
        d: usize,
    }

    /// Random groups (some empty, some with rows lacking vectors, duplicate rows for ties).
    fn case(seed: &mut u64) -> Case {
        let d = 1 + (lcg(seed) % 9) as usize;
        let sizes: Vec<usize> = (0..6).map(|g| if g == 2 { 0 } else { (lcg(seed) % 14) as usize }).collect();
        let n: usize = sizes.iter().sum();
        let mut matrix: Vec<f32> = (0..n * d).map(|_| (lcg(seed) % 7) as f32 - 3.0).collect();
        if n > 3 {
            let row = matrix[..d].to_vec();
            matrix[2 * d..3 * d].copy_from_slice(&row);
        }
        let mut offsets = vec![0i64];
        for s in &sizes {
            offsets.push(offsets.last().unwrap() + *s as i64);
        }
        let nq = 20;
        let queries: Vec<f32> = (0..nq * d).map(|_| (lcg(seed) % 7) as f32 - 3.0).collect();
        let group = (0..nq).map(|_| (lcg(seed) % sizes.len() as u64) as i64).collect();
        let texts = (0..nq).map(|_| QUERIES[(lcg(seed) % QUERIES.len() as u64) as usize].to_owned()).collect();
        let terms = (0..n)
            .map(|_| {
                let len = lcg(seed) % 6;
                (0..len).map(|_| WORDS[(lcg(seed) % WORDS.len() as u64) as usize]).collect::<Vec<_>>().join(" ")
            })
            .collect();
        let now = 1_700_000_000_000i64;
        Case {
            ts: (0..n).map(|_| now - (lcg(seed) % 90) as i64 * 86_400_000).collect(),
            importance: (0..n).map(|_| (lcg(seed) % 5) as f32 * 0.25).collect(),
            has_vector: (0..n).map(|_| lcg(seed) % 5 != 0).collect(),
            matrix,
            queries,
            group,
            texts,
            offsets,
            terms,
            d,
        }
    }

    fn texts(v: &[String]) -> (Vec<i64>, Vec<u8>) {
        let mut offsets = vec![0i64];
        let mut bytes = Vec::new();
        for s in v {
            bytes.extend_from_slice(s.as_bytes());
            offsets.push(bytes.len() as i64);
        }
        (offsets, bytes)
    }

    /// What long-term memory does for one query: a BM25 index over the group's stored terms, the
    /// rows without a vector dropped, the extra term in f32, `hybrid_topk` on what is left.
    fn oracle(c: &Case, i: usize, p: &RecallParams) -> Vec<(i64, f32, f32)> {
        let d = c.d;
        let g = c.group[i] as usize;
        let (lo, hi) = (c.offsets[g] as usize, c.offsets[g + 1] as usize);
        let q = &c.queries[i * d..(i + 1) * d];
        let keep: Vec<usize> = (lo..hi).filter(|&j| c.has_vector[j]).collect();
        if keep.is_empty() {
            return Vec::new();
        }
        let matrix: Vec<f32> = keep.iter().flat_map(|&j| c.matrix[j * d..(j + 1) * d].to_vec()).collect();
        let ts: Vec<i64> = keep.iter().map(|&j| c.ts[j]).collect();
        let top = if p.w_lexical > 0.0 {
            let mut idx = Bm25Index::with_analyzer(p.k1, p.b, Analyzer::english()).unwrap();
            idx.add_analyzed(&c.terms[lo..hi]).unwrap();
            let all = idx.scores(&c.texts[i]);
            let lexical: Vec<f32> = keep.iter().map(|&j| all[j - lo]).collect();
            let best = lexical.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let scale = best.max(p.lexical_floor);
            let extra: Vec<f32> = keep
                .iter()
                .zip(&lexical)
                .map(|(&j, &l)| p.w_importance as f32 * c.importance[j] + (p.w_lexical / scale) as f32 * l)
                .collect();
            let params = Params {
                w_sim: p.w_sim,
                w_rec: p.w_rec,
                w_extra: 1.0,
                timestamps: Some(&ts),
                now_ms: p.now_ms,
                half_life_ms: Some(p.half_life_ms),
                extra: Some(&extra),
                ..Params::new(p.k)
            };
            hybrid_topk(Rows::new(q, 1, d), Rows::new(&matrix, keep.len(), d), &params).unwrap()
        } else {
            let imp: Vec<f32> = keep.iter().map(|&j| c.importance[j]).collect();
            let params = Params {
                w_sim: p.w_sim,
                w_rec: p.w_rec,
                w_extra: p.w_importance,
                timestamps: Some(&ts),
                now_ms: p.now_ms,
                half_life_ms: Some(p.half_life_ms),
                extra: Some(&imp),
                ..Params::new(p.k)
            };
            hybrid_topk(Rows::new(q, 1, d), Rows::new(&matrix, keep.len(), d), &params).unwrap()
        };
        let (ix, sc, si) = top.hits(0);
        (0..ix.len()).map(|o| (keep[ix[o] as usize] as i64, sc[o], si[o])).collect()
    }

    fn run(c: &Case, p: &RecallParams) -> Result<TopK> {
        run_eligible(c, p, None)
    }

    fn run_eligible(c: &Case, p: &RecallParams, eligible: Option<&[bool]>) -> Result<TopK> {
        let n = c.ts.len();
        let (qo, qb) = texts(&c.texts);
        let (to, tb) = texts(&c.terms);
        grouped_recall(
            &GroupedInput {
                queries: Rows::new(&c.queries, c.group.len(), c.d),
                query_group: &c.group,
                query_texts: Some(Texts::new(&qo, &qb)),
                matrix: Rows::new(&c.matrix, n, c.d),
                group_offsets: &c.offsets,
                timestamps: &c.ts,
                importance: &c.importance,
                terms: Some(Texts::new(&to, &tb)),
                has_vector: Some(&c.has_vector),
                eligible,
            },
            p,
        )
    }

    /// A pass over the eligible rows alone gives each of them the score the full pass gives it:
    /// the full pass's hits among them, in order, bit for bit.
    #[test]
    fn eligible_rows_score_as_in_the_full_pass() {
        let mut seed = 23;
        for round in 0..40 {
            let c = case(&mut seed);
            let n = c.ts.len();
            let eligible: Vec<bool> = (0..n).map(|j| (j + round) % 3 != 0).collect();
            for w_lexical in [1.0, 0.0] {
                let p = RecallParams {
                    w_lexical,
                    now_ms: 1_700_000_000_000,
                    ..RecallParams::new(n.max(1))
                };
                let full = run(&c, &p).unwrap();
                let part = run_eligible(&c, &p, Some(&eligible)).unwrap();
                for i in 0..c.group.len() {
                    let (ix, sc, _) = full.hits(i);
                    let want: Vec<(i64, u32)> = (0..ix.len())
                        .filter(|&o| eligible[ix[o] as usize])
                        .map(|o| (ix[o], sc[o].to_bits()))
                        .collect();
                    let (ix, sc, _) = part.hits(i);
                    let have: Vec<(i64, u32)> = (0..ix.len()).map(|o| (ix[o], sc[o].to_bits())).collect();
                    assert_eq!(have, want, "round {round} query {i} w_lexical={w_lexical}");
                }
            }
        }
    }

    #[test]
    fn equals_one_query_at_a_time_bit_for_bit() {
        let mut seed = 7;
        for round in 0..60 {
            let c = case(&mut seed);
            for (k, w_lexical) in [(1, 1.0), (3, 0.5), (40, 1.0), (5, 0.0), (40, 0.0)] {
                let p = RecallParams {
                    k,
                    w_lexical,
                    now_ms: 1_700_000_000_000,
                    lexical_floor: if round % 2 == 0 { 2.0 } else { 0.1 },
                    ..RecallParams::new(k)
                };
                let got = run(&c, &p).unwrap();
                assert_eq!((got.nq, got.width), (c.group.len(), k));
                for i in 0..c.group.len() {
                    let want = oracle(&c, i, &p);
                    let (ix, sc, si) = got.hits(i);
                    let have: Vec<(i64, u32, u32)> =
                        (0..ix.len()).map(|o| (ix[o], sc[o].to_bits(), si[o].to_bits())).collect();
                    let want: Vec<(i64, u32, u32)> =
                        want.iter().map(|&(j, s, m)| (j, s.to_bits(), m.to_bits())).collect();
                    assert_eq!(have, want, "round {round} query {i} k={k} w_lexical={w_lexical}");
                    assert!(got.indices[i * k + ix.len()..(i + 1) * k].iter().all(|&x| x == -1));
                }
            }
        }
    }

    /// Groups large enough for several row blocks and parallel chunks, float data: still equal.
    #[test]
    fn large_groups_equal_one_query_at_a_time() {
        // 80 queries, 40 of them on group 1: more than one batch of queries per group.
        let mut seed = 19;
        let mut c = case(&mut seed);
        for (n, d) in [(3000usize, 48usize), (700, 384)] {
            let unit = |seed: &mut u64| (lcg(seed) % 100_000) as f32 / 50_000.0 - 1.0;
            c.d = d;
            c.matrix = (0..n * d).map(|_| unit(&mut seed)).collect();
            for t in 0..d {
                c.matrix[(n - 5) * d + t] = c.matrix[10 * d + t]; // a tie across blocks
            }
            c.offsets = vec![0, 1, n as i64 - 2, n as i64];
            c.group = (0..80).map(|i| [1, 1, 2, 0][i % 4]).collect();
            c.queries = (0..80 * d).map(|_| unit(&mut seed)).collect();
            c.queries[..d].copy_from_slice(&c.matrix[10 * d..11 * d].to_vec());
            c.texts = (0..80).map(|i| QUERIES[i % QUERIES.len()].to_owned()).collect();
            c.terms = (0..n).map(|j| [WORDS[j % 12], WORDS[(j * 7) % 12], "tea"].join(" ")).collect();
            c.ts = (0..n).map(|j| 1_700_000_000_000 - (j as i64 % 97) * 3_600_000).collect();
            c.importance = (0..n).map(|j| (j % 10) as f32 / 10.0).collect();
            c.has_vector = (0..n).map(|j| j % 11 != 3).collect();
            for w_lexical in [1.0, 0.0] {
                let p = RecallParams { w_lexical, now_ms: 1_700_000_000_000, ..RecallParams::new(25) };
                let got = run(&c, &p).unwrap();
                for i in 0..80 {
                    let want: Vec<(i64, u32, u32)> =
                        oracle(&c, i, &p).iter().map(|&(j, s, m)| (j, s.to_bits(), m.to_bits())).collect();
                    let (ix, sc, si) = got.hits(i);
                    let have: Vec<(i64, u32, u32)> =
                        (0..ix.len()).map(|o| (ix[o], sc[o].to_bits(), si[o].to_bits())).collect();
                    assert_eq!(have, want, "n={n} d={d} query {i} w_lexical={w_lexical}");
                }
            }
        }
    }

    #[test]
    fn rows_are_numbered_in_the_whole_matrix_and_errors_name_them() {
        let mut seed = 3;
        let mut c = case(&mut seed);
        let p = RecallParams { now_ms: 1_700_000_000_000, ..RecallParams::new(3) };
        let g = (0..6).find(|&g| c.offsets[g + 1] - c.offsets[g] >= 2).unwrap();
        let bad = c.offsets[g] as usize + 1;
        c.has_vector[bad] = true;
        c.matrix[bad * c.d] = f32::NAN;
        c.group[0] = g as i64;
        assert_eq!(run(&c, &p).unwrap_err().to_string(), format!("matrix: row {bad} contains NaN or inf"));
        c.has_vector[bad] = false; // a row without a vector is never read
        assert!(run(&c, &p).is_ok());
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let mut seed = 11;
        let c = case(&mut seed);
        let p = RecallParams::new(3);
        let err = |c: &Case, p: &RecallParams| run(c, p).unwrap_err().to_string();
        assert_eq!(err(&c, &RecallParams::new(0)), "k: must be >= 1, got 0");
        assert!(err(&c, &RecallParams { w_sim: f64::NAN, ..p.clone() }).starts_with("w_sim: must be a finite"));
        assert!(err(&c, &RecallParams { w_lexical: -1.0, ..p.clone() }).starts_with("w_lexical: must be >= 0"));
        assert!(err(&c, &RecallParams { half_life_ms: 0.0, ..p.clone() }).starts_with("half_life_ms: must be"));
        assert!(err(&c, &RecallParams { lexical_floor: 0.0, ..p.clone() }).starts_with("lexical_floor:"));
        assert!(err(&c, &RecallParams { b: 2.0, ..p.clone() }).starts_with("b: must be in [0, 1]"));
        let mut bad = case(&mut 11);
        bad.group[4] = 6;
        assert_eq!(err(&bad, &p), "query_group: entry 4 is 6, outside 0..6 (the groups group_offsets defines)");
        let mut bad = case(&mut 11);
        bad.offsets[3] = bad.offsets[2] - 1;
        assert!(err(&bad, &p).starts_with("group_offsets: entry 3 is"), "{}", err(&bad, &p));
        let mut bad = case(&mut 11);
        *bad.offsets.last_mut().unwrap() += 1;
        assert!(err(&bad, &p).starts_with("group_offsets: entry 6 is"));
        let mut bad = case(&mut 11);
        bad.queries[bad.d + 1] = f32::INFINITY;
        assert_eq!(err(&bad, &p), "queries: row 1, column 1 is inf (must be finite)");
        let mut bad = case(&mut 11);
        bad.importance.push(0.0);
        assert!(err(&bad, &p).starts_with("importance: has"));
        let mut bad = case(&mut 11);
        bad.importance[0] = f32::NAN;
        assert_eq!(err(&bad, &p), "importance: entry 0 is NaN (must be finite)");
        // Texts: layout and UTF-8 checked, entries named.
        let t = Texts::new(&[0, 2, 1], b"abc");
        assert!(t.strs("terms", 2, "rows").unwrap_err().to_string().starts_with("terms: entry 1 spans bytes 2..1"));
        let t = Texts::new(&[0, 1, 3], b"a\xff\xfe");
        assert!(t.strs("terms", 2, "rows").unwrap_err().to_string().starts_with("terms: entry 1 is not valid UTF-8"));
        assert!(Texts::new(&[0, 1], b"a").strs("terms", 2, "rows").unwrap_err().to_string().starts_with("terms: has 2 offsets"));
        // Texts are needed only with lexical fusion.
        let n = c.ts.len();
        let input = GroupedInput {
            queries: Rows::new(&c.queries, c.group.len(), c.d),
            query_group: &c.group,
            query_texts: None,
            matrix: Rows::new(&c.matrix, n, c.d),
            group_offsets: &c.offsets,
            timestamps: &c.ts,
            importance: &c.importance,
            terms: None,
            has_vector: None,
            eligible: None,
        };
        assert_eq!(grouped_recall(&input, &p).unwrap_err().to_string(), "query_texts: required when w_lexical > 0");
        assert!(grouped_recall(&input, &RecallParams { w_lexical: 0.0, ..p.clone() }).is_ok());
    }

    #[test]
    fn no_groups_and_no_queries() {
        let p = RecallParams::new(2);
        let input = GroupedInput {
            queries: Rows::new(&[], 0, 3),
            query_group: &[],
            query_texts: Some(Texts::new(&[0], b"")),
            matrix: Rows::new(&[], 0, 3),
            group_offsets: &[0],
            timestamps: &[],
            importance: &[],
            terms: Some(Texts::new(&[0], b"")),
            has_vector: None,
            eligible: None,
        };
        let out = grouped_recall(&input, &p).unwrap();
        assert_eq!((out.nq, out.width, out.indices.len()), (0, 2, 0));
        assert!(grouped_recall(&GroupedInput { group_offsets: &[], ..input }, &p).is_err());
    }
}
