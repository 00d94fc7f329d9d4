//! Bounded best-k selection: higher score first, ties broken by the lower row index.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One selected row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub score: f32,
    pub index: usize,
    pub sim: f32,
}

impl Hit {
    /// `Less` when `self` ranks before `other` (higher score, then lower index). Scores are
    /// never NaN; `partial_cmp` (unlike `total_cmp`) makes −0.0 and +0.0 a tie.
    #[inline]
    pub fn rank_cmp(&self, other: &Hit) -> Ordering {
        let by_score = other.score.partial_cmp(&self.score).unwrap_or(Ordering::Equal);
        by_score.then(self.index.cmp(&other.index))
    }
}

/// Heap order: the greatest element is the worst hit, so `peek` is the one to evict.
struct Worst(Hit);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank_cmp(&other.0)
    }
}

/// Keeps the best `k` hits whose score is `>= min_score`.
pub struct TopSel {
    k: usize,
    min_score: f32,
    /// Scores below this cannot enter: `min_score` until full, then the worst kept score.
    threshold: f32,
    heap: BinaryHeap<Worst>,
}

impl TopSel {
    /// `capacity_hint` bounds the up-front allocation (a huge `k` must not allocate `k` slots).
    pub fn new(k: usize, min_score: f32, capacity_hint: usize) -> Self {
        TopSel {
            k,
            min_score,
            threshold: min_score,
            heap: BinaryHeap::with_capacity(k.min(capacity_hint)),
        }
    }

    /// Cheap pre-filter: a score strictly below this can never be kept.
    #[inline]
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    #[inline]
    pub fn offer(&mut self, score: f32, index: usize, sim: f32) {
        if score < self.threshold || self.k == 0 {
            return;
        }
        let hit = Hit { score, index, sim };
        if self.heap.len() < self.k {
            self.heap.push(Worst(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if hit.rank_cmp(&worst.0) == Ordering::Less {
                *worst = Worst(hit);
            } else {
                return;
            }
        }
        if self.heap.len() == self.k {
            if let Some(worst) = self.heap.peek() {
                self.threshold = worst.0.score.max(self.min_score);
            }
        }
    }

    pub fn into_vec(self) -> Vec<Hit> {
        self.heap.into_iter().map(|w| w.0).collect()
    }
}

/// Merges partial selections into the final best-first list of at most `k` hits.
pub fn merge(parts: impl IntoIterator<Item = Vec<Hit>>, k: usize) -> Vec<Hit> {
    let mut all: Vec<Hit> = parts.into_iter().flatten().collect();
    all.sort_unstable_by(Hit::rank_cmp);
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(scores: &[f32], k: usize, min_score: f32) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] >= min_score).collect();
        idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        idx.truncate(k);
        idx
    }

    #[test]
    fn keeps_best_k_with_ties_by_lower_index() {
        let scores = [1.0, 3.0, 3.0, 2.0, 3.0, 0.5, 2.0, 2.0];
        for k in 1..=9 {
            for &min in &[f32::NEG_INFINITY, 2.0, 3.0, 3.5] {
                let mut sel = TopSel::new(k, min, 4);
                for (i, &s) in scores.iter().enumerate() {
                    sel.offer(s, i, s);
                }
                let got: Vec<usize> = merge([sel.into_vec()], k).iter().map(|h| h.index).collect();
                assert_eq!(got, brute(&scores, k, min), "k={k} min={min}");
            }
        }
    }

    #[test]
    fn signed_zeros_tie() {
        let mut sel = TopSel::new(1, f32::NEG_INFINITY, 1);
        sel.offer(-0.0, 0, 0.0);
        sel.offer(0.0, 1, 0.0);
        assert_eq!(sel.into_vec()[0].index, 0);
        assert_eq!(
            merge(
                [vec![
                    Hit {
                        score: 0.0,
                        index: 1,
                        sim: 0.0
                    },
                    Hit {
                        score: -0.0,
                        index: 0,
                        sim: 0.0
                    }
                ]],
                1
            )[0]
            .index,
            0
        );
    }

    #[test]
    fn order_of_offers_does_not_matter() {
        let scores = [5.0, 1.0, 5.0, 5.0, 4.0, 5.0];
        let mut sel = TopSel::new(3, f32::NEG_INFINITY, 3);
        for i in (0..scores.len()).rev() {
            sel.offer(scores[i], i, 0.0);
        }
        let got: Vec<usize> = merge([sel.into_vec()], 3).iter().map(|h| h.index).collect();
        assert_eq!(got, vec![0, 2, 3]);
    }

    #[test]
    fn merge_of_parts_equals_one_pass() {
        let scores: Vec<f32> = (0..100).map(|i| ((i * 37) % 11) as f32).collect();
        let mut parts = Vec::new();
        for chunk in 0..4 {
            let mut sel = TopSel::new(7, 3.0, 7);
            for (i, &s) in scores.iter().enumerate().skip(chunk * 25).take(25) {
                sel.offer(s, i, 0.0);
            }
            parts.push(sel.into_vec());
        }
        let got: Vec<usize> = merge(parts, 7).iter().map(|h| h.index).collect();
        assert_eq!(got, brute(&scores, 7, 3.0));
    }
}
