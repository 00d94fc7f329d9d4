//! Byte-pair encoding of one pre-tokenized piece, exactly as tiktoken does it: a piece that is
//! itself a token is one token; otherwise adjacent parts are merged, lowest rank first (leftmost
//! on ties), where the rank of a pair is the rank of its concatenated bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces up to this many bytes merge in place with tiktoken's quadratic scan (fastest for
/// short pieces); longer ones use a heap so a 100 KB run of one character stays near-linear.
const SMALL: usize = 128;

/// A rank table: token bytes by rank plus an open-addressing hash index over them.
pub struct Vocab {
    bytes: &'static [u8],
    offsets: Vec<u32>,
    slots: Vec<Slot>,
    mask: usize,
    byte_rank: [u32; 256],
    max_len: usize,
}

/// One hash slot. Holding a token's first 8 bytes and its length lets most lookups (pieces and
/// pairs are short) compare without touching the token bytes.
#[derive(Clone, Copy, Default)]
struct Slot {
    head: u64,
    len: u32,
    /// rank + 1; 0 = empty
    rank1: u32,
}

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline(always)]
fn read_u32(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// The first (up to) 8 bytes, little endian, zero padded.
#[inline(always)]
fn head(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    } else if n >= 4 {
        // Two overlapping reads; the shared bytes are equal, so OR joins them exactly.
        read_u32(b, 0) | (read_u32(b, n - 4) << (8 * (n - 4)))
    } else {
        b.iter().enumerate().fold(0, |v, (i, &x)| v | (u64::from(x) << (8 * i)))
    }
}

/// Hash of a byte string given its head (the length is mixed in).
#[inline(always)]
fn hash(head_: u64, b: &[u8]) -> u64 {
    const K0: u64 = 0x9e37_79b9_7f4a_7c15;
    const K1: u64 = 0xbf58_476d_1ce4_e5b9;
    let mut h = fold(head_ ^ (b.len() as u64).wrapping_mul(K0), K1);
    if b.len() > 8 {
        for chunk in b[8..].chunks(8) {
            h = fold(h ^ head(chunk), K0);
        }
    }
    h
}

impl Vocab {
    /// Parses a table written by `build/tokens.rs`: `n: u32`, `n` token lengths (`u8`), the bytes.
    pub(crate) fn from_blob(blob: &'static [u8]) -> Self {
        let n = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let mut end = 0u32;
        for &len in &blob[4..4 + n] {
            end += u32::from(len);
            offsets.push(end);
        }
        let bytes = &blob[4 + n..];
        let cap = (2 * n).next_power_of_two();
        let mut vocab =
            Vocab { bytes, offsets, slots: vec![Slot::default(); cap], mask: cap - 1, byte_rank: [u32::MAX; 256], max_len: 0 };
        for rank in 0..n as u32 {
            let token = vocab.token(rank);
            vocab.max_len = vocab.max_len.max(token.len());
            if let [b] = token {
                vocab.byte_rank[*b as usize] = rank;
            }
            let h = head(token);
            let mut i = hash(h, token) as usize & vocab.mask;
            while vocab.slots[i].rank1 != 0 {
                i = (i + 1) & vocab.mask;
            }
            vocab.slots[i] = Slot { head: h, len: token.len() as u32, rank1: rank + 1 };
        }
        assert!(vocab.byte_rank.iter().all(|&r| r != u32::MAX), "every byte is a token");
        vocab
    }

    /// Number of mergeable tokens (ranks `0..n_tokens`).
    pub fn n_tokens(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The bytes of the token with this rank (`rank < len`).
    #[inline(always)]
    pub fn token(&self, rank: u32) -> &'static [u8] {
        let r = rank as usize;
        &self.bytes[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// The rank of these bytes, if they are a token.
    #[inline(always)]
    pub fn rank(&self, b: &[u8]) -> Option<u32> {
        if b.len() > self.max_len {
            return None;
        }
        let h = head(b);
        let mut i = hash(h, b) as usize & self.mask;
        loop {
            let slot = self.slots[i];
            if slot.rank1 == 0 {
                return None;
            }
            if slot.head == h && slot.len as usize == b.len() {
                let rank = slot.rank1 - 1;
                if b.len() <= 8 || self.token(rank)[8..] == b[8..] {
                    return Some(rank);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline(always)]
    fn pair_rank(&self, b: &[u8]) -> u32 {
        self.rank(b).unwrap_or(u32::MAX)
    }

    /// Number of tokens of one piece.
    #[inline]
    pub fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() == 1 || self.rank(piece).is_some() {
            return 1;
        }
        if piece.len() <= SMALL {
            let mut starts = [0u32; SMALL + 1];
            self.merge_small(piece, &mut starts) - 1
        } else {
            self.merge_large(piece).len() - 1
        }
    }

    /// Appends the tokens of one piece to `out`.
    #[inline]
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() == 1 {
            out.push(self.byte_rank[piece[0] as usize]);
            return;
        }
        if let Some(rank) = self.rank(piece) {
            out.push(rank);
            return;
        }
        let mut small = [0u32; SMALL + 1];
        let large;
        let bounds: &[u32] = if piece.len() <= SMALL {
            let n = self.merge_small(piece, &mut small);
            &small[..n]
        } else {
            large = self.merge_large(piece);
            &large
        };
        for w in bounds.windows(2) {
            let part = &piece[w[0] as usize..w[1] as usize];
            out.push(self.rank(part).unwrap_or_else(|| unreachable!("merged parts are tokens")));
        }
    }

    /// tiktoken's `_byte_pair_merge`: writes the part boundaries (starting with 0, ending with
    /// `piece.len()`) into `starts` and returns how many there are.
    fn merge_small(&self, piece: &[u8], starts: &mut [u32; SMALL + 1]) -> usize {
        let n = piece.len();
        // ranks[k]: rank of parts k and k+1 merged (u32::MAX if not a token or no part k+1).
        let mut ranks = [u32::MAX; SMALL + 1];
        for (k, s) in starts[..=n].iter_mut().enumerate() {
            *s = k as u32;
        }
        for k in 0..n - 1 {
            ranks[k] = self.pair_rank(&piece[k..k + 2]);
        }
        let mut parts = n + 1; // boundaries in use
        loop {
            let mut best = (u32::MAX, 0);
            for (k, &r) in ranks[..parts - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, k);
                }
            }
            if best.0 == u32::MAX {
                return parts;
            }
            let k = best.1;
            // Remove boundary k+1, then re-rank the pairs that now end or start at part k.
            starts.copy_within(k + 2..parts, k + 1);
            ranks.copy_within(k + 2..parts, k + 1);
            parts -= 1;
            let span = |a: usize| {
                if a + 2 < parts {
                    self.pair_rank(&piece[starts[a] as usize..starts[a + 2] as usize])
                } else {
                    u32::MAX
                }
            };
            ranks[k] = span(k);
            if k > 0 {
                ranks[k - 1] = span(k - 1);
            }
        }
    }

    /// The same merge order with a heap of candidate pairs keyed by (rank, start) and lazy
    /// invalidation: O(n log n) instead of O(n^2).
    fn merge_large(&self, piece: &[u8]) -> Vec<u32> {
        let n = piece.len();
        // Parts as a linked list over their start offsets; `end[s]` is the end of the part
        // starting at s, `prev[s]` the start of the part before it; a removed start has end 0.
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|s| s.wrapping_sub(1)).collect();
        // pair_rank[s]: rank of the part at s merged with the next part (u32::MAX = none).
        let mut pair: Vec<u32> = vec![u32::MAX; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for s in 0..n - 1 {
            let r = self.pair_rank(&piece[s..s + 2]);
            pair[s] = r;
            if r != u32::MAX {
                heap.push(Reverse((r, s)));
            }
        }
        while let Some(Reverse((r, s))) = heap.pop() {
            if end[s] == 0 || pair[s] != r {
                continue; // stale
            }
            let right = end[s];
            let right_end = end[right];
            end[s] = right_end;
            end[right] = 0;
            if right_end < n {
                prev[right_end] = s;
            }
            let rerank = |a: usize, pair: &mut Vec<u32>, heap: &mut BinaryHeap<Reverse<(u32, usize)>>| {
                let b = end[a];
                pair[a] = if b < n { self.pair_rank(&piece[a..end[b]]) } else { u32::MAX };
                if pair[a] != u32::MAX {
                    heap.push(Reverse((pair[a], a)));
                }
            };
            rerank(s, &mut pair, &mut heap);
            if s > 0 {
                rerank(prev[s], &mut pair, &mut heap);
            }
        }
        let mut bounds = vec![0u32];
        let mut s = 0;
        while s < n {
            s = end[s];
            bounds.push(s as u32);
        }
        bounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny rank table: all 256 bytes, then the given merges in rank order.
    fn vocab(merges: &[&str]) -> Vocab {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.extend(merges.iter().map(|m| m.as_bytes().to_vec()));
        let mut blob = Vec::new();
        blob.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        blob.extend(tokens.iter().map(|t| t.len() as u8));
        for t in &tokens {
            blob.extend_from_slice(t);
        }
        Vocab::from_blob(Box::leak(blob.into_boxed_slice()))
    }

    /// tiktoken's algorithm, written as plainly as possible.
    fn reference(v: &Vocab, piece: &[u8]) -> Vec<u32> {
        if let Some(r) = v.rank(piece) {
            return vec![r];
        }
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|k| v.rank(&[parts[k].clone(), parts[k + 1].clone()].concat()).map(|r| (r, k)))
                .min();
            let Some((_, k)) = best else { break };
            let right = parts.remove(k + 1);
            parts[k].extend(right);
        }
        parts.iter().map(|p| v.rank(p).unwrap()).collect()
    }

    #[test]
    fn small_and_large_merges_match_the_reference() {
        let v = vocab(&["ab", "bc", "aa", "abc", "aaa", "ca", "aaaa", "bca", "cab", "abca"]);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in [2usize, 3, 5, 9, 40, 127, 128, 129, 300, 1000] {
            for _ in 0..20 {
                let piece: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        b"abcx"[(seed % 4) as usize]
                    })
                    .collect();
                let mut got = Vec::new();
                v.encode_piece(&piece, &mut got);
                let want = reference(&v, &piece);
                assert_eq!(got, want, "{}", String::from_utf8_lossy(&piece));
                assert_eq!(v.count_piece(&piece), want.len());
                if len > SMALL {
                    let bounds = v.merge_large(&piece);
                    assert_eq!(bounds.len() - 1, want.len());
                }
            }
        }
    }

    #[test]
    fn lookup() {
        let v = vocab(&["ab", "abcdefghij", "abcdefgh"]);
        assert_eq!(v.rank(b"ab"), Some(256));
        assert_eq!(v.rank(b"abcdefghij"), Some(257));
        assert_eq!(v.rank(b"abcdefgh"), Some(258));
        assert_eq!(v.rank(b"abcdefghi"), None);
        assert_eq!(v.rank(b"x"), Some(u32::from(b'x')));
        assert_eq!(v.n_tokens(), 259);
    }
}
