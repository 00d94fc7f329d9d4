//! Okapi BM25 over an inverted index, for tool discovery and lexical recall.
//!
//! score(q, d) = Σ_{t ∈ q} idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d| / avgdl))
//!
//! with Lucene's idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5)), which is always > 0: a term
//! in every document still counts a little instead of going negative as the classic
//! Robertson–Spärck Jones idf does. A query term repeated in the query counts once per
//! occurrence. Scoring walks only the postings of the query's terms, so a query costs
//! O(Σ postings of its terms), not O(N).

use std::collections::{BinaryHeap, HashMap};

use rayon::prelude::*;

use crate::error::{KernelError, Result};

/// Lower-cases `text` (full Unicode mapping) and calls `f` on every maximal run of
/// alphanumeric characters (Unicode `Alphabetic` or `Numeric`, i.e. `char::is_alphanumeric`).
/// Everything else (spaces, punctuation, `_`, symbols) separates tokens.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let lower = text.to_lowercase();
    token_spans(&lower, |a, b| f(&lower[a..b]));
}

/// Byte spans of the tokens of an already lower-cased string.
fn token_spans(lower: &str, mut f: impl FnMut(usize, usize)) {
    let mut start = None;
    for (i, c) in lower.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                f(a, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        f(a, lower.len());
    }
}

/// The tokens of `text` as owned strings (see [`for_each_token`]).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: u32,
}

/// One document, tokenized and counted (built in parallel, merged into the index in order):
/// its lower-cased text and each distinct token's byte span in it with its count.
struct DocTerms {
    lower: String,
    terms: Vec<(usize, usize, u32)>,
    len: u32,
}

/// FNV-1a, only to group equal tokens of one document by sorting on a u64 instead of strings.
fn quick_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn count_terms(text: &str) -> DocTerms {
    let lower = text.to_lowercase();
    let mut toks: Vec<(u64, usize, usize)> = Vec::new();
    token_spans(&lower, |a, b| toks.push((quick_hash(&lower.as_bytes()[a..b]), a, b)));
    let len = u32::try_from(toks.len()).unwrap_or(u32::MAX);
    // Equal hashes sort together; the string breaks ties so colliding distinct tokens never interleave.
    toks.sort_unstable_by(|x, y| x.0.cmp(&y.0).then_with(|| lower[x.1..x.2].cmp(&lower[y.1..y.2])));
    let mut terms: Vec<(usize, usize, u32)> = Vec::with_capacity(toks.len());
    let mut prev: Option<(u64, usize, usize)> = None;
    for (h, a, b) in toks {
        match (prev, terms.last_mut()) {
            (Some((ph, pa, pb)), Some(last)) if ph == h && lower[pa..pb] == lower[a..b] => last.2 += 1,
            _ => terms.push((a, b, 1)),
        }
        prev = Some((h, a, b));
    }
    DocTerms { lower, terms, len }
}

/// Lucene's BM25 idf: ln(1 + (N − n + 0.5) / (n + 0.5)); never negative.
pub fn idf(n_docs: usize, doc_freq: usize) -> f64 {
    let (n, df) = (n_docs as f64, doc_freq as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// An append-only BM25 index. Document ids are positions in insertion order.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    k1: f64,
    b: f64,
    vocab: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    doc_len: Vec<u32>,
    total_len: u64,
    /// Per document: k1·(1 − b + b·|d|/avgdl), refreshed after every `add` (avgdl moves).
    norm: Vec<f32>,
}

impl Bm25Index {
    /// An empty index. `k1` must be finite and >= 0, `b` in [0, 1].
    pub fn new(k1: f64, b: f64) -> Result<Self> {
        if !k1.is_finite() || k1 < 0.0 {
            return Err(KernelError::invalid("k1", format!("must be a finite number >= 0, got {k1}")));
        }
        if !(0.0..=1.0).contains(&b) {
            return Err(KernelError::invalid("b", format!("must be in [0, 1], got {b}")));
        }
        Ok(Self {
            k1,
            b,
            vocab: HashMap::new(),
            postings: Vec::new(),
            doc_len: Vec::new(),
            total_len: 0,
            norm: Vec::new(),
        })
    }

    pub fn k1(&self) -> f64 {
        self.k1
    }

    pub fn b(&self) -> f64 {
        self.b
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Number of distinct terms.
    pub fn vocabulary_size(&self) -> usize {
        self.vocab.len()
    }

    /// Appends documents; their ids continue from `len()`. Tokenizes in parallel.
    pub fn add<S: AsRef<str> + Sync>(&mut self, documents: &[S]) -> Result<()> {
        let start = self.doc_len.len();
        if start.checked_add(documents.len()).filter(|&n| n <= u32::MAX as usize).is_none() {
            return Err(KernelError::invalid("documents", "an index holds at most 2^32 - 1 documents"));
        }
        let counted: Vec<DocTerms> =
            documents.par_iter().with_min_len(64).map(|d| count_terms(d.as_ref())).collect();
        for (i, doc) in counted.into_iter().enumerate() {
            let id = (start + i) as u32;
            for (a, b, tf) in doc.terms {
                let term = &doc.lower[a..b];
                let tid = match self.vocab.get(term) {
                    Some(&t) => t,
                    None => {
                        let t = self.postings.len() as u32;
                        self.vocab.insert(term.to_owned(), t);
                        self.postings.push(Vec::new());
                        t
                    }
                };
                self.postings[tid as usize].push(Posting { doc: id, tf });
            }
            self.doc_len.push(doc.len);
            self.total_len += u64::from(doc.len);
        }
        self.refresh_norms();
        Ok(())
    }

    fn refresh_norms(&mut self) {
        let n = self.doc_len.len();
        let avgdl = if n == 0 { 0.0 } else { self.total_len as f64 / n as f64 };
        let (k1, b) = (self.k1, self.b);
        self.norm = self
            .doc_len
            .iter()
            .map(|&dl| {
                // avgdl == 0 only when every document is empty; then no postings exist and
                // the norm is never read.
                let rel = if avgdl > 0.0 { f64::from(dl) / avgdl } else { 0.0 };
                (k1 * (1.0 - b + b * rel)) as f32
            })
            .collect();
    }

    /// The query's known terms with their query frequency, in first-occurrence order.
    fn query_terms(&self, query: &str) -> Vec<(u32, u32)> {
        let mut terms: Vec<(u32, u32)> = Vec::new();
        for_each_token(query, |t| {
            if let Some(&tid) = self.vocab.get(t) {
                match terms.iter_mut().find(|(id, _)| *id == tid) {
                    Some((_, qf)) => *qf += 1,
                    None => terms.push((tid, 1)),
                }
            }
        });
        terms
    }

    /// Adds the contribution of `terms` into `acc` (len N). With `TRACK`, `touched` receives
    /// each document the first time it gets a contribution (they are always > 0).
    fn accumulate<const TRACK: bool>(&self, terms: &[(u32, u32)], acc: &mut [f32], touched: &mut Vec<u32>) {
        let n_docs = self.len();
        let k1p1 = (self.k1 + 1.0) as f32;
        for &(tid, qf) in terms {
            let plist = &self.postings[tid as usize];
            let w = (idf(n_docs, plist.len()) * f64::from(qf)) as f32 * k1p1;
            for p in plist {
                let tf = p.tf as f32;
                let slot = &mut acc[p.doc as usize];
                if TRACK && *slot == 0.0 {
                    touched.push(p.doc);
                }
                *slot += w * tf / (tf + self.norm[p.doc as usize]);
            }
        }
    }

    /// The BM25 score of every document for `query` (0 where no query term occurs).
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut acc = vec![0.0f32; self.len()];
        self.accumulate::<false>(&self.query_terms(query), &mut acc, &mut Vec::new());
        acc
    }

    /// The `k` best documents with a score > 0, best first, ties by lower id. With `normalize`
    /// the scores are min-max scaled over all documents with a score > 0 (all 1.0 if they tie).
    pub fn top_k(&self, query: &str, k: usize, normalize: bool) -> Result<(Vec<u32>, Vec<f32>)> {
        if k == 0 {
            return Err(KernelError::invalid("k", "must be >= 1"));
        }
        let terms = self.query_terms(query);
        let walked: usize = terms.iter().map(|&(t, _)| self.postings[t as usize].len()).sum();
        let mut acc = vec![0.0f32; self.len()];
        let mut best = TopK::new(k);
        // Few postings: visit only the documents they touched; many: a scan of `acc` is cheaper.
        if walked.saturating_mul(4) < acc.len() {
            let mut touched = Vec::with_capacity(walked);
            self.accumulate::<true>(&terms, &mut acc, &mut touched);
            for d in touched {
                best.offer(acc[d as usize], d);
            }
        } else {
            self.accumulate::<false>(&terms, &mut acc, &mut Vec::new());
            for (d, &s) in acc.iter().enumerate() {
                if s > 0.0 {
                    best.offer(s, d as u32);
                }
            }
        }
        let (lo, hi) = (best.lo, best.hi);
        let (ids, mut scores): (Vec<u32>, Vec<f32>) = best.into_sorted().into_iter().map(|e| (e.doc, e.score)).unzip();
        if normalize {
            for s in &mut scores {
                *s = if hi > lo { (*s - lo) / (hi - lo) } else { 1.0 };
            }
        }
        Ok((ids, scores))
    }
}

/// A ranked candidate; `Ord` puts better first (higher score, then lower id), so a max-heap's
/// top is the worst of the kept ones.
#[derive(Debug, Clone, Copy)]
struct Entry {
    score: f32,
    doc: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.score.total_cmp(&self.score).then(self.doc.cmp(&other.doc))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Entry {}

/// Keeps the `k` best of the offered candidates and the min/max score of all of them.
struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
    lo: f32,
    hi: f32,
}

impl TopK {
    fn new(k: usize) -> Self {
        Self { k, heap: BinaryHeap::new(), lo: f32::INFINITY, hi: f32::NEG_INFINITY }
    }

    #[inline]
    fn offer(&mut self, score: f32, doc: u32) {
        self.lo = self.lo.min(score);
        self.hi = self.hi.max(score);
        let e = Entry { score, doc };
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if e < *worst {
                *worst = e;
            }
        }
    }

    fn into_sorted(self) -> Vec<Entry> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(docs: &[&str], query: &str, k1: f64, b: f64) -> Vec<f64> {
        let toks: Vec<Vec<String>> = docs.iter().map(|d| tokenize(d)).collect();
        let n = docs.len();
        let avgdl = toks.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
        toks.iter()
            .map(|d| {
                tokenize(query)
                    .iter()
                    .map(|q| {
                        let df = toks.iter().filter(|t| t.contains(q)).count();
                        if df == 0 {
                            return 0.0;
                        }
                        let tf = d.iter().filter(|t| *t == q).count() as f64;
                        idf(n, df) * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * d.len() as f64 / avgdl))
                    })
                    .sum()
            })
            .collect()
    }

    const DOCS: [&str; 5] = [
        "Get the weather forecast for a city",
        "Send an email to a contact",
        "weather weather radar maps",
        "Book a flight; search flights by city and date",
        "",
    ];

    #[test]
    fn tokenizer_lowercases_and_splits_unicode() {
        assert_eq!(tokenize("Hello, WORLD! foo_bar x2"), ["hello", "world", "foo", "bar", "x2"]);
        assert_eq!(tokenize("Ünïcödé straße ΣΑΣ 東京タワー"), ["ünïcödé", "straße", "σας", "東京タワー"]);
        assert!(tokenize("  ... !!! ").is_empty());
    }

    #[test]
    fn idf_is_lucene_and_positive() {
        assert!((idf(10, 1) - (1.0f64 + 9.5 / 1.5).ln()).abs() < 1e-12);
        assert!(idf(10, 10) > 0.0);
    }

    #[test]
    fn scores_match_formula() {
        let mut idx = Bm25Index::new(0.9, 0.4).unwrap();
        idx.add(&DOCS).unwrap();
        for q in ["weather city", "email", "weather weather flights", "nothing here"] {
            let got = idx.scores(q);
            let want = reference(&DOCS, q, 0.9, 0.4);
            for (g, w) in got.iter().zip(&want) {
                assert!((f64::from(*g) - w).abs() <= 1e-5 * w.max(1.0), "{q}: {got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn add_continues_ids_and_updates_stats() {
        let mut all = Bm25Index::new(1.2, 0.75).unwrap();
        all.add(&DOCS).unwrap();
        let mut inc = Bm25Index::new(1.2, 0.75).unwrap();
        inc.add(&DOCS[..2]).unwrap();
        inc.add(&DOCS[2..]).unwrap();
        assert_eq!(inc.len(), 5);
        assert_eq!(all.scores("weather city flight"), inc.scores("weather city flight"));
    }

    #[test]
    fn top_k_orders_ties_and_normalizes() {
        let mut idx = Bm25Index::new(0.9, 0.4).unwrap();
        idx.add(&["a b", "c", "a b", "a"]).unwrap();
        let (ids, s) = idx.top_k("a", 10, false).unwrap();
        assert_eq!(ids, [3, 0, 2]);
        assert_eq!(s[1], s[2]);
        let (ids, s) = idx.top_k("a", 2, true).unwrap();
        assert_eq!(ids, [3, 0]);
        assert_eq!(s, [1.0, 0.0]);
        let (ids, s) = idx.top_k("b", 5, true).unwrap();
        assert_eq!((ids, s), (vec![0, 2], vec![1.0, 1.0]));
        let (ids, _) = idx.top_k("zzz", 5, true).unwrap();
        assert!(ids.is_empty());
        assert!(idx.top_k("a", 0, true).is_err());
    }

    /// Both candidate paths (touched list for rare terms, dense scan for common ones) against a
    /// brute-force ranking of `scores`.
    #[test]
    fn top_k_paths_match_brute_force() {
        let words = ["alpha", "beta", "gamma", "delta", "rare", "common"];
        let docs: Vec<String> = (0..400usize)
            .map(|i| {
                let mut d: Vec<&str> = (0..1 + i % 7).map(|j| words[(i * 7 + j * 3) % 4]).collect();
                d.push("common");
                if i % 97 == 0 {
                    d.push("rare");
                }
                d.join(" ")
            })
            .collect();
        let mut idx = Bm25Index::new(0.9, 0.4).unwrap();
        idx.add(&docs).unwrap();
        for q in ["rare", "rare alpha", "common", "alpha beta", "gamma rare delta", "nothing"] {
            let s = idx.scores(q);
            let mut want: Vec<u32> = (0..s.len() as u32).filter(|&d| s[d as usize] > 0.0).collect();
            want.sort_by(|&a, &b| s[b as usize].total_cmp(&s[a as usize]).then(a.cmp(&b)));
            for k in [1, 3, 10, 1000] {
                let (ids, vals) = idx.top_k(q, k, false).unwrap();
                assert_eq!(ids, want[..k.min(want.len())], "{q} k={k}");
                assert!(ids.iter().zip(&vals).all(|(&d, &v)| v == s[d as usize]));
            }
        }
    }

    #[test]
    fn empty_index_and_bad_params() {
        let idx = Bm25Index::new(0.9, 0.4).unwrap();
        assert!(idx.scores("x").is_empty());
        assert!(idx.top_k("x", 3, true).unwrap().0.is_empty());
        assert!(Bm25Index::new(-1.0, 0.5).is_err());
        assert!(Bm25Index::new(1.0, 1.5).is_err());
        assert!(Bm25Index::new(f64::NAN, 0.5).is_err());
    }
}
