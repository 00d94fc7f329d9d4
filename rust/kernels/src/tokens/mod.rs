//! Token counting: the seeds' estimators and exact BPE counts equal to tiktoken's.
//!
//! * Estimators: `ceil(chars / 4)` (Agent Mind), `floor(utf8_bytes / 4)` (context server) and
//!   `ceil((chars + 20 * messages) / 4)` (consciousness).
//! * Exact: [`Encoding::count`] / [`Encoding::encode`] give what tiktoken's
//!   `encode_ordinary` gives for `o200k_base` and `cl100k_base` (special tokens are plain text).
//!   OpenAI's rank tables are embedded at build time; the pre-tokenizer regexes are implemented
//!   by hand ([`pretok`]), and BPE follows tiktoken's merge order ([`bpe`]). A piece that is not
//!   one token is merged once per thread and call and then read from a [`bpe::PieceCache`].

mod bpe;
mod classes;
mod pretok;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use rayon::prelude::*;

use crate::error::{KernelError, Result};
use bpe::PieceCache;
pub use bpe::Vocab;

/// A single text at least this long is counted or encoded in parallel chunks.
const PAR_TEXT_MIN: usize = 1 << 17;
/// Target chunk size for a long text.
const PAR_CHUNK: usize = 1 << 16;

/// The exact encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

static O200K: LazyLock<Vocab> =
    LazyLock::new(|| Vocab::from_blob(unpack(include_bytes!(concat!(env!("OUT_DIR"), "/tokens_o200k_base.bin.zst")))));
static CL100K: LazyLock<Vocab> =
    LazyLock::new(|| Vocab::from_blob(unpack(include_bytes!(concat!(env!("OUT_DIR"), "/tokens_cl100k_base.bin.zst")))));

/// A rank table as `build/tokens.rs` compressed it, unpacked for the life of the process (each
/// table is unpacked once, by its `LazyLock`).
fn unpack(packed: &[u8]) -> &'static [u8] {
    let size = zstd::zstd_safe::get_frame_content_size(packed)
        .ok()
        .flatten()
        .expect("the embedded rank table records its size");
    let blob = zstd::bulk::decompress(packed, size as usize).expect("the embedded rank table unpacks");
    Box::leak(blob.into_boxed_slice())
}

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// `"o200k_base"` or `"cl100k_base"`.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name).ok_or_else(|| {
            let names: Vec<String> = Self::ALL.iter().map(|e| format!("{:?}", e.name())).collect();
            KernelError::invalid("encoding", format!("unknown encoding {name:?}; supported: {}", names.join(", ")))
        })
    }

    /// The rank table (unpacked and indexed on first use, ~10 ms).
    pub fn vocab(self) -> &'static Vocab {
        match self {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        }
    }

    /// Special tokens (tiktoken's ids), which only [`Encoding::decode_bytes`] knows about.
    pub fn special_tokens(self) -> &'static [(&'static str, u32)] {
        match self {
            Encoding::O200kBase => &[("<|endoftext|>", 199_999), ("<|endofprompt|>", 200_018)],
            Encoding::Cl100kBase => &[
                ("<|endoftext|>", 100_257),
                ("<|fim_prefix|>", 100_258),
                ("<|fim_middle|>", 100_259),
                ("<|fim_suffix|>", 100_260),
                ("<|endofprompt|>", 100_276),
            ],
        }
    }

    /// Number of tokens of `text`.
    pub fn count(self, text: &str) -> usize {
        self.count_in(new_call(), text)
    }

    fn count_in(self, call: u64, text: &str) -> usize {
        match self {
            Encoding::O200kBase => count_text(&O200K, pretok::next_o200k, call, text),
            Encoding::Cl100kBase => count_text(&CL100K, pretok::next_cl100k, call, text),
        }
    }

    /// Token counts of many texts, in parallel.
    pub fn count_batch<S: AsRef<str> + Sync>(self, texts: &[S]) -> Vec<usize> {
        self.vocab(); // build once, outside the workers
        let call = new_call();
        texts.par_iter().map(|t| self.count_in(call, t.as_ref())).collect()
    }

    /// Token ids of `text`.
    pub fn encode(self, text: &str) -> Vec<u32> {
        self.encode_in(new_call(), text)
    }

    fn encode_in(self, call: u64, text: &str) -> Vec<u32> {
        match self {
            Encoding::O200kBase => encode_text(&O200K, pretok::next_o200k, call, text),
            Encoding::Cl100kBase => encode_text(&CL100K, pretok::next_cl100k, call, text),
        }
    }

    /// Token ids of many texts, in parallel.
    pub fn encode_batch<S: AsRef<str> + Sync>(self, texts: &[S]) -> Vec<Vec<u32>> {
        self.vocab();
        let call = new_call();
        texts.par_iter().map(|t| self.encode_in(call, t.as_ref())).collect()
    }

    /// The bytes of a token sequence (special token ids decode to their text).
    pub fn decode_bytes(self, ids: &[u32]) -> Result<Vec<u8>> {
        let vocab = self.vocab();
        let mut out = Vec::with_capacity(ids.len() * 4);
        for (i, &id) in ids.iter().enumerate() {
            if (id as usize) < vocab.n_tokens() {
                out.extend_from_slice(vocab.token(id));
            } else if let Some((text, _)) = self.special_tokens().iter().find(|(_, s)| *s == id) {
                out.extend_from_slice(text.as_bytes());
            } else {
                return Err(KernelError::invalid(
                    "ids",
                    format!("ids[{i}] = {id} is not a token of {}", self.name()),
                ));
            }
        }
        Ok(out)
    }

    /// The text of a token sequence; bytes that are not valid UTF-8 become U+FFFD, as in
    /// tiktoken's `decode` (`errors="replace"`).
    pub fn decode(self, ids: &[u32]) -> Result<String> {
        let bytes = self.decode_bytes(ids)?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The pre-tokenizer's pieces of `text` (what the encoding's regex splits it into).
    pub fn split(self, text: &str) -> Vec<&str> {
        let next = match self {
            Encoding::O200kBase => pretok::next_o200k,
            Encoding::Cl100kBase => pretok::next_cl100k,
        };
        let s = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let e = next(s, i);
            out.push(&text[i..e]);
            i = e;
        }
        out
    }
}

/// Pieces of `s[from..to]`; `from` and `to` must be piece boundaries of the whole text.
#[inline(always)]
fn for_each_piece(s: &[u8], from: usize, to: usize, next: impl Fn(&[u8], usize) -> usize, mut f: impl FnMut(&[u8])) {
    let mut i = from;
    while i < to {
        let e = next(s, i);
        f(&s[i..e]);
        i = e;
    }
}

/// Chunk boundaries of a long text at positions right after a `\n` that is followed by an ASCII
/// letter. No piece of either pattern spans such a position (a piece holding a newline ends at
/// it or continues only with `\r`, `\n`, `/` or white space), and a piece depends only on the
/// text from its start on, so the chunks' pieces are exactly the whole text's.
fn chunk_bounds(s: &[u8]) -> Vec<usize> {
    let mut bounds = vec![0];
    let mut target = PAR_CHUNK;
    while target < s.len() {
        let found = s[target..].windows(2).position(|w| w[0] == b'\n' && w[1].is_ascii_alphabetic());
        match found {
            Some(k) => {
                let b = target + k + 1;
                bounds.push(b);
                target = b + PAR_CHUNK;
            }
            None => break,
        }
    }
    bounds.push(s.len());
    bounds
}

/// Each call takes a new number; a thread's piece cache serves one call number at a time.
static CALLS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's piece cache and the call it holds pieces for.
    static CACHE: RefCell<(u64, PieceCache)> = RefCell::new((0, PieceCache::default()));
}

fn new_call() -> u64 {
    CALLS.fetch_add(1, Ordering::Relaxed)
}

/// Runs `f` with this thread's piece cache, emptied first if it last served another call. Every
/// rayon task of a call on this thread shares it (merging each piece once per thread, not once
/// per task), and its memory is kept for the next call. The cache is moved out while `f` runs: a
/// task that rayon runs on this thread meanwhile (work stealing inside a nested parallel loop)
/// finds an empty one and merges for itself.
fn with_cache<R>(call: u64, f: impl FnOnce(&mut PieceCache) -> R) -> R {
    let (held_for, mut cache) = CACHE.with_borrow_mut(std::mem::take);
    if held_for != call {
        cache.clear();
    }
    let out = f(&mut cache);
    CACHE.with_borrow_mut(|slot| *slot = (call, cache));
    out
}

/// `next` is a function item, so each encoding gets its own loop with the scanner inlined.
fn count_text(vocab: &Vocab, next: impl Fn(&[u8], usize) -> usize + Copy + Sync, call: u64, text: &str) -> usize {
    let s = text.as_bytes();
    let count_range = |from: usize, to: usize| {
        with_cache(call, |cache| {
            let mut n = 0;
            for_each_piece(s, from, to, next, |p| n += vocab.count_piece(p, cache));
            n
        })
    };
    if s.len() < PAR_TEXT_MIN {
        return count_range(0, s.len());
    }
    let bounds = chunk_bounds(s);
    bounds.par_windows(2).map(|w| count_range(w[0], w[1])).sum()
}

fn encode_text(vocab: &Vocab, next: impl Fn(&[u8], usize) -> usize + Copy + Sync, call: u64, text: &str) -> Vec<u32> {
    let s = text.as_bytes();
    let encode_range = |from: usize, to: usize| {
        with_cache(call, |cache| {
            let mut out = Vec::with_capacity((to - from) / 3);
            for_each_piece(s, from, to, next, |p| vocab.encode_piece(p, &mut out, cache));
            out
        })
    };
    if s.len() < PAR_TEXT_MIN {
        return encode_range(0, s.len());
    }
    let bounds = chunk_bounds(s);
    let parts: Vec<Vec<u32>> = bounds.par_windows(2).map(|w| encode_range(w[0], w[1])).collect();
    parts.concat()
}

// --- estimators -----------------------------------------------------------------------------------

/// Which estimator [`estimate`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `ceil(chars / 4)` (Agent Mind)
    Chars,
    /// `floor(utf8_bytes / 4)` (context server)
    Bytes,
}

impl Rule {
    /// `"chars"` or `"bytes"`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "chars" => Ok(Rule::Chars),
            "bytes" => Ok(Rule::Bytes),
            other => Err(KernelError::invalid("rule", format!("must be \"chars\" or \"bytes\", got {other:?}"))),
        }
    }
}

/// The estimate for a text of `chars` code points and `utf8_bytes` bytes.
#[inline]
pub fn estimate(rule: Rule, chars: usize, utf8_bytes: usize) -> usize {
    match rule {
        Rule::Chars => chars.div_ceil(4),
        Rule::Bytes => utf8_bytes / 4,
    }
}

/// Consciousness' estimate for a message list: `ceil((sum of chars + 20 * messages) / 4)`.
#[inline]
pub fn estimate_messages(total_chars: usize, messages: usize) -> usize {
    (total_chars + 20 * messages).div_ceil(4)
}

/// UTF-8 length of Latin-1 code units (Python's 1-byte string storage).
pub fn utf8_len_ucs1(s: &[u8]) -> usize {
    // Eight bytes at a time: the high bits, shifted to the bottom of each byte, summed by a multiply.
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let chunks = s.chunks_exact(8);
    let tail = chunks.remainder().iter().filter(|&&b| b >= 0x80).count();
    let high: usize = chunks
        .map(|c| (((u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) & HIGH) >> 7).wrapping_mul(ONES) >> 56) as usize)
        .sum();
    s.len() + high + tail
}

/// UTF-8 length of UCS-2 code units; a lone surrogate counts 3 bytes (as `surrogatepass`).
pub fn utf8_len_ucs2(s: &[u16]) -> usize {
    let extra = |a: u16, &c: &u16| a + u16::from(c >= 0x80) + u16::from(c >= 0x800);
    s.len() + s.chunks(16_383).map(|c| usize::from(c.iter().fold(0, extra))).sum::<usize>()
}

/// UTF-8 length of code points; a lone surrogate counts 3 bytes (as `surrogatepass`).
pub fn utf8_len_ucs4(s: &[u32]) -> usize {
    let extra = |a: u32, &c: &u32| a + u32::from(c >= 0x80) + u32::from(c >= 0x800) + u32::from(c >= 0x1_0000);
    s.len() + s.chunks(1 << 20).map(|c| c.iter().fold(0, extra) as usize).sum::<usize>()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod prof;
