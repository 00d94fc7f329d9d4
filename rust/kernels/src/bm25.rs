//! Okapi BM25 over an inverted index, for tool discovery and lexical recall.
//!
//! score(q, d) = Σ_{t ∈ q} idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d| / avgdl))
//!
//! with Lucene's idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5)), which is always > 0: a term
//! in every document still counts a little instead of going negative as the classic
//! Robertson–Spärck Jones idf does. A query term repeated in the query counts once per
//! occurrence. Scoring walks only the postings of the query's terms, so a query costs
//! O(Σ postings of its terms), not O(N).
//!
//! Documents and queries go through the index's [`Analyzer`] (tokenizer, optional stop words,
//! optional stemmer). Documents can be removed: the statistics then are exactly those of an
//! index built from the remaining documents, so its scores are too.

use std::borrow::Cow;
use std::collections::{BinaryHeap, HashMap};

use rayon::prelude::*;

use crate::analyzer::token_spans;
use crate::error::{KernelError, Result};

pub use crate::analyzer::{for_each_token, tokenize, Analyzer, StopWords};

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: u32,
}

/// One document, analysed and counted (built in parallel, merged into the index in order):
/// its terms written into one buffer, and each distinct term's byte span in it with its count.
struct DocTerms {
    buf: String,
    terms: Vec<(usize, usize, u32)>,
    len: u32,
}

/// FNV-1a, only to group equal terms of one document by sorting on a u64 instead of strings.
fn quick_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// `text` through `analyzer`, or, for an already analysed document, through the tokenizer alone.
fn count_terms(analyzer: Option<&Analyzer>, text: &str) -> DocTerms {
    let (buf, spans) = match analyzer {
        Some(a) => a.spans(text),
        None => {
            let lower = lowered(text).into_owned();
            let mut spans = Vec::new();
            token_spans(&lower, |a, b| spans.push((a, b)));
            (lower, spans)
        }
    };
    let mut toks: Vec<(u64, usize, usize)> =
        spans.into_iter().map(|(a, b)| (quick_hash(&buf.as_bytes()[a..b]), a, b)).collect();
    let len = u32::try_from(toks.len()).unwrap_or(u32::MAX);
    // Equal hashes sort together; the string breaks ties so colliding distinct terms never interleave.
    toks.sort_unstable_by(|x, y| x.0.cmp(&y.0).then_with(|| buf[x.1..x.2].cmp(&buf[y.1..y.2])));
    let mut terms: Vec<(usize, usize, u32)> = Vec::with_capacity(toks.len());
    let mut prev: Option<(u64, usize, usize)> = None;
    for (h, a, b) in toks {
        match (prev, terms.last_mut()) {
            (Some((ph, pa, pb)), Some(last)) if ph == h && buf[pa..pb] == buf[a..b] => last.2 += 1,
            _ => terms.push((a, b, 1)),
        }
        prev = Some((h, a, b));
    }
    DocTerms { buf, terms, len }
}

fn count_all<S: AsRef<str> + Sync>(documents: &[S], analyzer: Option<&Analyzer>) -> Vec<DocTerms> {
    documents.par_iter().with_min_len(64).map(|d| count_terms(analyzer, d.as_ref())).collect()
}

/// Lucene's BM25 idf: ln(1 + (N − n + 0.5) / (n + 0.5)); never negative.
pub fn idf(n_docs: usize, doc_freq: usize) -> f64 {
    let (n, df) = (n_docs as f64, doc_freq as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// An already analysed document lower-cased as [`Bm25Index::add_analyzed`] indexes it (stored
/// terms usually are lower-case ASCII already: then it is borrowed, not copied).
pub(crate) fn lowered(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|c| c.is_ascii_uppercase() || !c.is_ascii()) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// The tokens of an already analysed document, in order, as [`Bm25Index::add_analyzed`] counts them.
pub(crate) fn for_each_analyzed_token(text: &str, mut f: impl FnMut(&str)) {
    let lower = lowered(text);
    token_spans(&lower, |a, b| f(&lower[a..b]));
}

/// A document's length normalisation `k1·(1 − b + b·|d|/avgdl)`, rounded to f32 as the index keeps it.
#[inline]
pub(crate) fn length_norm(k1: f64, b: f64, doc_len: u32, avgdl: f64) -> f32 {
    // avgdl == 0 only when every document is empty; then no postings exist and the norm is never read.
    let rel = if avgdl > 0.0 { f64::from(doc_len) / avgdl } else { 0.0 };
    (k1 * (1.0 - b + b * rel)) as f32
}

/// `total_len / n_docs` (0 for no documents), the mean document length the norms use.
#[inline]
pub(crate) fn avg_doc_len(total_len: u64, n_docs: usize) -> f64 {
    if n_docs == 0 {
        0.0
    } else {
        total_len as f64 / n_docs as f64
    }
}

/// The weight of a query term found in `doc_freq` of `n_docs` documents, `qf` times in the
/// query: `idf·qf·(k1 + 1)` in f32.
#[inline]
pub(crate) fn term_weight(k1: f64, n_docs: usize, doc_freq: usize, qf: u32) -> f32 {
    (idf(n_docs, doc_freq) * f64::from(qf)) as f32 * (k1 + 1.0) as f32
}

/// One posting's share of a document's score: `w·tf / (tf + norm)` in f32.
#[inline(always)]
pub(crate) fn term_score(w: f32, tf: u32, norm: f32) -> f32 {
    let tf = tf as f32;
    w * tf / (tf + norm)
}

/// A BM25 index. Document ids are positions in insertion order; removing documents moves the
/// later ones down.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    k1: f64,
    b: f64,
    analyzer: Analyzer,
    vocab: HashMap<String, u32>,
    /// Per term id, the documents holding it in ascending id order; emptied by removals, never
    /// dropped (a term id stays valid), so `live_terms` counts the non-empty ones.
    postings: Vec<Vec<Posting>>,
    live_terms: usize,
    doc_len: Vec<u32>,
    total_len: u64,
    /// Per document: k1·(1 − b + b·|d|/avgdl), refreshed after every change (avgdl moves).
    norm: Vec<f32>,
}

impl Bm25Index {
    /// An empty index with the plain tokenizer. `k1` must be finite and >= 0, `b` in [0, 1].
    pub fn new(k1: f64, b: f64) -> Result<Self> {
        Self::with_analyzer(k1, b, Analyzer::plain())
    }

    /// An empty index whose documents and queries go through `analyzer`.
    pub fn with_analyzer(k1: f64, b: f64, analyzer: Analyzer) -> Result<Self> {
        if !k1.is_finite() || k1 < 0.0 {
            return Err(KernelError::invalid("k1", format!("must be a finite number >= 0, got {k1}")));
        }
        if !(0.0..=1.0).contains(&b) {
            return Err(KernelError::invalid("b", format!("must be in [0, 1], got {b}")));
        }
        Ok(Self {
            k1,
            b,
            analyzer,
            vocab: HashMap::new(),
            postings: Vec::new(),
            live_terms: 0,
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

    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Number of distinct terms in the documents.
    pub fn vocabulary_size(&self) -> usize {
        self.live_terms
    }

    /// Appends documents, analysed; their ids continue from `len()`. Analyses in parallel.
    pub fn add<S: AsRef<str> + Sync>(&mut self, documents: &[S]) -> Result<()> {
        self.check_room(documents.len())?;
        let counted = count_all(documents, Some(&self.analyzer));
        self.merge(counted);
        Ok(())
    }

    /// Appends documents that already are this index's terms (the output of its analyzer,
    /// joined by spaces, e.g. stored at write time): only the tokenizer runs on them. Analysing
    /// them again would not be a no-op, as a stem can be a stop word or stem further.
    pub fn add_analyzed<S: AsRef<str> + Sync>(&mut self, documents: &[S]) -> Result<()> {
        self.check_room(documents.len())?;
        self.merge(count_all(documents, None));
        Ok(())
    }

    fn check_room(&self, more: usize) -> Result<()> {
        match self.len().checked_add(more) {
            Some(n) if n <= u32::MAX as usize => Ok(()),
            _ => Err(KernelError::invalid("documents", "an index holds at most 2^32 - 1 documents")),
        }
    }

    fn merge(&mut self, counted: Vec<DocTerms>) {
        let start = self.doc_len.len();
        for (i, doc) in counted.into_iter().enumerate() {
            let id = (start + i) as u32;
            for (a, b, tf) in doc.terms {
                let term = &doc.buf[a..b];
                let tid = match self.vocab.get(term) {
                    Some(&t) => t,
                    None => {
                        let t = self.postings.len() as u32;
                        self.vocab.insert(term.to_owned(), t);
                        self.postings.push(Vec::new());
                        t
                    }
                };
                let plist = &mut self.postings[tid as usize];
                if plist.is_empty() {
                    self.live_terms += 1;
                }
                plist.push(Posting { doc: id, tf });
            }
            self.doc_len.push(doc.len);
            self.total_len += u64::from(doc.len);
        }
        self.refresh_norms();
    }

    /// Removes the documents `ids` (repeats are fine); every later document's id drops by the
    /// number of removed ids below it, so ids stay positions. Costs O(postings of the documents
    /// from the first removed id on), not a rebuild.
    pub fn remove(&mut self, ids: &[u32]) -> Result<()> {
        let n = self.len();
        let mut gone = vec![false; n];
        for &d in ids {
            match gone.get_mut(d as usize) {
                Some(g) => *g = true,
                None => {
                    return Err(KernelError::invalid("ids", format!("{d} is not a document id (the index holds {n})")))
                }
            }
        }
        let Some(first) = gone.iter().position(|&g| g) else {
            return Ok(());
        };
        // The new id of every document from `first` on (u32::MAX: removed).
        let mut new_id = Vec::with_capacity(n - first);
        let mut next = first as u32;
        for &g in &gone[first..] {
            new_id.push(if g { u32::MAX } else { next });
            next += u32::from(!g);
        }
        for plist in &mut self.postings {
            // Postings are sorted by document: only the tail from `first` changes.
            let tail = plist.partition_point(|p| (p.doc as usize) < first);
            if tail == plist.len() {
                continue;
            }
            let mut kept = tail;
            for j in tail..plist.len() {
                let p = plist[j];
                let id = new_id[p.doc as usize - first];
                if id != u32::MAX {
                    plist[kept] = Posting { doc: id, tf: p.tf };
                    kept += 1;
                }
            }
            plist.truncate(kept);
            if kept == 0 {
                self.live_terms -= 1;
            }
        }
        let mut i = 0;
        self.doc_len.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
        self.total_len = self.doc_len.iter().map(|&l| u64::from(l)).sum();
        self.refresh_norms();
        Ok(())
    }

    fn refresh_norms(&mut self) {
        let avgdl = avg_doc_len(self.total_len, self.doc_len.len());
        let (k1, b) = (self.k1, self.b);
        self.norm = self.doc_len.iter().map(|&dl| length_norm(k1, b, dl, avgdl)).collect();
    }

    /// The query's known terms with their query frequency, in first-occurrence order.
    fn query_terms(&self, query: &str) -> Vec<(u32, u32)> {
        let mut terms: Vec<(u32, u32)> = Vec::new();
        self.analyzer.for_each_term(query, |t| {
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
        for &(tid, qf) in terms {
            let plist = &self.postings[tid as usize];
            let w = term_weight(self.k1, n_docs, plist.len(), qf);
            for p in plist {
                let slot = &mut acc[p.doc as usize];
                if TRACK && *slot == 0.0 {
                    touched.push(p.doc);
                }
                *slot += term_score(w, p.tf, self.norm[p.doc as usize]);
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

    /// An index with the English analyzer scores like a plain index over the analysed texts,
    /// whether it analyses the documents itself or is given them analysed.
    #[test]
    fn analyzer_applies_to_documents_and_queries() {
        let english = Analyzer::english();
        let analysed: Vec<String> = DOCS.iter().map(|d| english.terms(d).join(" ")).collect();
        let mut plain = Bm25Index::new(0.9, 0.4).unwrap();
        plain.add(&analysed).unwrap();
        let mut raw = Bm25Index::with_analyzer(0.9, 0.4, Analyzer::english()).unwrap();
        raw.add(&DOCS).unwrap();
        let mut pre = Bm25Index::with_analyzer(0.9, 0.4, Analyzer::english()).unwrap();
        pre.add_analyzed(&analysed).unwrap();
        for q in ["What is the weather in the cities?", "flights", "emails to a contact", "the of"] {
            let want = plain.scores(&english.terms(q).join(" "));
            assert_eq!(raw.scores(q), want, "{q}");
            assert_eq!(pre.scores(q), want, "{q}");
        }
        assert_eq!(raw.vocabulary_size(), plain.vocabulary_size());
        assert!(raw.scores("the").iter().all(|&s| s == 0.0)); // a stop word matches nothing
    }

    /// Removing documents leaves exactly the index built from the others: same scores, bit for
    /// bit, and the same vocabulary size, whatever is removed and then appended.
    #[test]
    fn remove_matches_a_rebuild() {
        let words = ["alpha", "beta", "gamma", "delta", "rare", "common", "solo"];
        let docs: Vec<String> = (0..60usize)
            .map(|i| (0..1 + i % 5).map(|j| words[(i * 3 + j * 5) % 6]).collect::<Vec<_>>().join(" "))
            .chain(["solo solo".to_owned(), String::new()])
            .collect();
        let cases: [&[u32]; 6] = [&[], &[0], &[60], &[61, 3, 3, 59], &[5, 6, 7, 8, 40], &[60, 0, 1, 2]];
        for removed in cases {
            let mut idx = Bm25Index::new(1.2, 0.75).unwrap();
            idx.add(&docs).unwrap();
            idx.remove(removed).unwrap();
            let rest: Vec<&String> =
                docs.iter().enumerate().filter(|(i, _)| !removed.contains(&(*i as u32))).map(|(_, d)| d).collect();
            let mut fresh = Bm25Index::new(1.2, 0.75).unwrap();
            fresh.add(&rest).unwrap();
            idx.add(&["solo gamma", "new words"]).unwrap();
            fresh.add(&["solo gamma", "new words"]).unwrap();
            assert_eq!(idx.len(), fresh.len());
            assert_eq!(idx.vocabulary_size(), fresh.vocabulary_size(), "{removed:?}");
            for q in ["alpha", "solo rare", "common beta beta", "new", "nothing"] {
                assert_eq!(idx.scores(q), fresh.scores(q), "{removed:?} {q}");
                assert_eq!(idx.top_k(q, 7, true).unwrap(), fresh.top_k(q, 7, true).unwrap());
            }
        }
        let mut idx = Bm25Index::new(1.2, 0.75).unwrap();
        idx.add(&["solo"]).unwrap();
        idx.remove(&[0]).unwrap();
        assert!(idx.is_empty() && idx.vocabulary_size() == 0 && idx.scores("solo").is_empty());
        assert!(idx.remove(&[0]).is_err());
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
