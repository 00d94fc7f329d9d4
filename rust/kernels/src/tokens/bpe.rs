//! Byte-pair encoding of one pre-tokenized piece, exactly as tiktoken does it: a piece that is
//! itself a token is one token; otherwise adjacent parts are merged, lowest rank first (leftmost
//! on ties), where the rank of a pair is the rank of its concatenated bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces up to this many bytes merge in place with tiktoken's quadratic scan (fastest for
/// short pieces); longer ones use a heap so a 100 KB run of one character stays near-linear.
const SMALL: usize = 128;

/// Pieces longer than this are merged every time rather than cached (they are rare, and would
/// fill the cache's byte arena).
const CACHE_PIECE_MAX: usize = 64;
/// The cache starts empty and doubles up to this many slots (kept at most half full); when that
/// is full it starts over.
const CACHE_SLOTS_MAX: usize = 1 << 16;

/// A rank table: token bytes by rank plus an open-addressing hash index over them.
pub struct Vocab {
    bytes: &'static [u8],
    offsets: Vec<u32>,
    slots: Vec<Slot>,
    mask: usize,
    byte_rank: [u32; 256],
    /// Rank of every two-byte string (`u32::MAX` if not a token), indexed by `b0 << 8 | b1`: the
    /// first round of every merge reads 256 KB instead of the hash index.
    pair_rank2: Vec<u32>,
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

/// The tokens of pieces that are not one token, merged once per cache: text repeats its words,
/// so most such pieces of a long text or a batch have been merged before. A cache serves one
/// thread; [`PieceCache::clear`] empties it in O(1) (the slots of earlier generations read as
/// empty), so it can be kept for the next call without being reused by it.
#[derive(Default)]
pub struct PieceCache {
    slots: Vec<CacheSlot>,
    used: usize,
    generation: u32,
    bytes: Vec<u8>,
    ids: Vec<u32>,
    /// The tokens of a piece too long to cache.
    scratch: Vec<u32>,
}

#[derive(Clone, Copy, Default)]
struct CacheSlot {
    hash: u64,
    bytes_at: u32,
    ids_at: u32,
    len: u16,
    /// number of tokens; 0 = empty (a cached piece has at least 2)
    n: u16,
    generation: u32,
}

impl PieceCache {
    /// Forgets every piece.
    pub fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 generations, old slots could look current again: wipe them.
            self.slots.fill(CacheSlot::default());
        }
        self.used = 0;
        self.bytes.clear();
        self.ids.clear();
    }

    #[inline(always)]
    fn is_empty_slot(&self, slot: &CacheSlot) -> bool {
        slot.n == 0 || slot.generation != self.generation
    }

    /// The slot holding `piece` (`Ok`) or the empty slot where it goes (`Err`).
    #[inline(always)]
    fn find(&mut self, piece: &[u8], hashed: u64) -> Result<usize, usize> {
        if 2 * self.used >= self.slots.len() {
            self.make_room();
        }
        let mask = self.slots.len() - 1;
        let mut i = hashed as usize & mask;
        loop {
            let slot = self.slots[i];
            if self.is_empty_slot(&slot) {
                return Err(i);
            }
            if slot.hash == hashed
                && usize::from(slot.len) == piece.len()
                && self.bytes[slot.bytes_at as usize..slot.bytes_at as usize + piece.len()] == *piece
            {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the slots, or empties the cache once it has the most slots allowed.
    #[cold]
    fn make_room(&mut self) {
        let cap = (2 * self.slots.len()).max(256);
        if cap > CACHE_SLOTS_MAX {
            self.clear();
            return;
        }
        let old = std::mem::replace(&mut self.slots, vec![CacheSlot::default(); cap]);
        let generation = self.generation;
        for slot in old.into_iter().filter(|s| s.n != 0 && s.generation == generation) {
            let mut i = slot.hash as usize & (cap - 1);
            while self.slots[i].n != 0 {
                i = (i + 1) & (cap - 1);
            }
            self.slots[i] = slot;
        }
    }

    #[inline(always)]
    fn ids_at(&self, at: usize) -> &[u32] {
        let slot = self.slots[at];
        &self.ids[slot.ids_at as usize..slot.ids_at as usize + usize::from(slot.n)]
    }

    /// Records `piece` in the empty slot `at`; its tokens are `self.ids[ids_at..]`.
    fn insert(&mut self, at: usize, piece: &[u8], hashed: u64, ids_at: usize) -> &[u32] {
        self.slots[at] = CacheSlot {
            hash: hashed,
            bytes_at: self.bytes.len() as u32,
            ids_at: ids_at as u32,
            len: piece.len() as u16,
            n: (self.ids.len() - ids_at) as u16,
            generation: self.generation,
        };
        self.used += 1;
        self.bytes.extend_from_slice(piece);
        &self.ids[ids_at..]
    }
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
            Vocab {
            bytes,
            offsets,
            slots: vec![Slot::default(); cap],
            mask: cap - 1,
            byte_rank: [u32::MAX; 256],
            pair_rank2: vec![u32::MAX; 1 << 16],
            max_len: 0,
        };
        for rank in 0..n as u32 {
            let token = vocab.token(rank);
            vocab.max_len = vocab.max_len.max(token.len());
            match *token {
                [b] => vocab.byte_rank[b as usize] = rank,
                [a, b] => vocab.pair_rank2[usize::from(a) << 8 | usize::from(b)] = rank,
                _ => {}
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
        let h = head(b);
        self.rank_hashed(b, h, hash(h, b))
    }

    /// [`Vocab::rank`] given the bytes' head and hash.
    #[inline(always)]
    fn rank_hashed(&self, b: &[u8], h: u64, hashed: u64) -> Option<u32> {
        if b.len() > self.max_len {
            return None;
        }
        let mut i = hashed as usize & self.mask;
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

    /// Rank of the two bytes `piece[k..k + 2]`.
    #[inline(always)]
    fn pair_rank_at(&self, piece: &[u8], k: usize) -> u32 {
        self.pair_rank2[usize::from(piece[k]) << 8 | usize::from(piece[k + 1])]
    }

    /// The piece's rank if it is one token, else its hash for the [`PieceCache`].
    #[inline(always)]
    fn whole(&self, piece: &[u8]) -> Result<u32, u64> {
        match piece.len() {
            1 => Ok(self.byte_rank[piece[0] as usize]),
            2 => match self.pair_rank_at(piece, 0) {
                u32::MAX => Err(hash(head(piece), piece)),
                r => Ok(r),
            },
            _ => {
                let h = head(piece);
                let hashed = hash(h, piece);
                self.rank_hashed(piece, h, hashed).ok_or(hashed)
            }
        }
    }

    /// Number of tokens of one piece.
    #[inline]
    pub fn count_piece(&self, piece: &[u8], cache: &mut PieceCache) -> usize {
        match self.whole(piece) {
            Ok(_) => 1,
            Err(hashed) => self.cached(piece, hashed, cache).len(),
        }
    }

    /// Appends the tokens of one piece to `out`.
    #[inline]
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>, cache: &mut PieceCache) {
        match self.whole(piece) {
            Ok(rank) => out.push(rank),
            Err(hashed) => out.extend_from_slice(self.cached(piece, hashed, cache)),
        }
    }

    /// The tokens of a piece that is not one token, from the cache or merged (and cached).
    #[inline]
    fn cached<'c>(&self, piece: &[u8], hashed: u64, cache: &'c mut PieceCache) -> &'c [u32] {
        if piece.len() > CACHE_PIECE_MAX {
            cache.scratch.clear();
            self.merge_into(piece, &mut cache.scratch);
            return &cache.scratch;
        }
        match cache.find(piece, hashed) {
            Ok(at) => cache.ids_at(at),
            Err(at) => {
                let start = cache.ids.len();
                let mut ids = std::mem::take(&mut cache.ids);
                self.merge_into(piece, &mut ids);
                cache.ids = ids;
                cache.insert(at, piece, hashed, start)
            }
        }
    }

    /// Appends the merged tokens of a piece that is not one token.
    fn merge_into(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() <= SMALL {
            self.merge_small(piece, out);
        } else {
            self.merge_large(piece, out);
        }
    }

    /// tiktoken's `_byte_pair_merge`, appending the tokens to `out`. The rank of a merged pair
    /// is the merged part's token, so the parts' tokens are known without a final lookup.
    fn merge_small(&self, piece: &[u8], out: &mut Vec<u32>) {
        let n = piece.len();
        // starts[k]: start of part k (starts[parts] = n); tokens[k]: its token; ranks[k]: rank of
        // parts k and k+1 merged (u32::MAX if not a token or no part k+1).
        let mut starts = [0u32; SMALL + 1];
        let mut tokens = [0u32; SMALL];
        let mut ranks = [u32::MAX; SMALL];
        for (k, s) in starts[..=n].iter_mut().enumerate() {
            *s = k as u32;
        }
        for (t, &b) in tokens[..n].iter_mut().zip(piece) {
            *t = self.byte_rank[b as usize];
        }
        for (k, r) in ranks[..n - 1].iter_mut().enumerate() {
            *r = self.pair_rank_at(piece, k);
        }
        let mut parts = n;
        loop {
            let mut best = (u32::MAX, 0);
            for (k, &r) in ranks[..parts - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, k);
                }
            }
            if best.0 == u32::MAX {
                out.extend_from_slice(&tokens[..parts]);
                return;
            }
            let (rank, k) = best;
            // Part k+1 joins part k; then re-rank the pairs that now end or start at part k.
            tokens[k] = rank;
            starts.copy_within(k + 2..=parts, k + 1);
            tokens.copy_within(k + 2..parts, k + 1);
            ranks.copy_within(k + 2..parts, k + 1);
            parts -= 1;
            let span = |a: usize| {
                if a + 1 < parts {
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
    fn merge_large(&self, piece: &[u8], out: &mut Vec<u32>) {
        let n = piece.len();
        // Parts as a linked list over their start offsets; `end[s]` is the end of the part
        // starting at s, `prev[s]` the start of the part before it; a removed start has end 0.
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|s| s.wrapping_sub(1)).collect();
        // token[s]: the token of the part at s.
        let mut token: Vec<u32> = piece.iter().map(|&b| self.byte_rank[b as usize]).collect();
        // pair[s]: rank of the part at s merged with the next part (u32::MAX = none).
        let mut pair: Vec<u32> = vec![u32::MAX; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for (s, p) in pair[..n - 1].iter_mut().enumerate() {
            let r = self.pair_rank_at(piece, s);
            *p = r;
            if r != u32::MAX {
                heap.push(Reverse((r, s)));
            }
        }
        while let Some(Reverse((r, s))) = heap.pop() {
            if end[s] == 0 || pair[s] != r {
                continue; // stale
            }
            token[s] = r;
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
        let mut s = 0;
        while s < n {
            out.push(token[s]);
            s = end[s];
        }
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
        // One cache across all pieces (hits, growth and restarts); a fresh one for each (misses).
        let mut warm = PieceCache::default();
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
                let want = reference(&v, &piece);
                for cache in [&mut PieceCache::default(), &mut warm] {
                    let mut got = Vec::new();
                    v.encode_piece(&piece, &mut got, cache);
                    assert_eq!(got, want, "{}", String::from_utf8_lossy(&piece));
                    assert_eq!(v.count_piece(&piece, cache), want.len());
                }
                if v.rank(&piece).is_none() {
                    let (mut small, mut large) = (Vec::new(), Vec::new());
                    if len <= SMALL {
                        v.merge_small(&piece, &mut small);
                        assert_eq!(small, want);
                    }
                    v.merge_large(&piece, &mut large);
                    assert_eq!(large, want);
                }
            }
        }
    }

    #[test]
    fn the_cache_grows_restarts_and_clears_without_changing_tokens() {
        let v = vocab(&["ab", "bc", "aa", "abc", "aaa", "ca", "bca"]);
        let mut cache = PieceCache::default();
        // 3^10 distinct pieces: more than the cache holds, so it grows to its limit and restarts.
        let pieces: Vec<Vec<u8>> = (0..59_049u32)
            .map(|mut i| {
                (0..10)
                    .map(|_| {
                        let b = b"abc"[(i % 3) as usize];
                        i /= 3;
                        b
                    })
                    .collect()
            })
            .collect();
        for round in 0..3 {
            for (k, piece) in pieces.iter().enumerate().step_by(round + 1) {
                let want = reference(&v, piece);
                let mut got = Vec::new();
                v.encode_piece(piece, &mut got, &mut cache);
                assert_eq!(got, want);
                assert_eq!(v.count_piece(piece, &mut cache), want.len());
                if k % 10_007 == 0 {
                    cache.clear();
                }
            }
        }
        assert!(cache.slots.len() <= CACHE_SLOTS_MAX && 2 * cache.used <= cache.slots.len());
        // Wrapping the generation counter wipes the slots instead of reviving them.
        cache.generation = u32::MAX;
        cache.clear();
        assert_eq!(cache.generation, 0);
        assert!(cache.slots.iter().all(|s| s.n == 0));
        assert_eq!(v.count_piece(b"abcabcabca", &mut cache), reference(&v, b"abcabcabca").len());
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
