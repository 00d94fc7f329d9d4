//! A deterministic feature-hashing embedder: no model files, the same vector on every run and
//! platform. It is the zero-model fallback and the embedder unit tests use.
//!
//! Features of a text, with [`crate::bm25::for_each_token`]'s words (lower-cased runs of
//! alphanumerics):
//! * every word, once per occurrence;
//! * every character n-gram (n in `ngram_min..=ngram_max`, counted in Unicode scalar values)
//!   of each word wrapped in boundary markers, `<word>`; a padded word shorter than n gives
//!   no n-gram of that length.
//!
//! Each feature is hashed with 64-bit FNV-1a over `seed` (8 bytes, little-endian), a kind byte
//! (`b'w'` word, `b'c'` n-gram) and its UTF-8 bytes, then mixed with murmur3's fmix64. The
//! high bits pick the dimension, `(h · dim) >> 64`, and the lowest bit the sign (0 → +1,
//! 1 → −1), so collisions cancel on average instead of piling up. The counts are
//! L2-normalised; a text without words gives the zero vector.

use rayon::prelude::*;

use crate::bm25::for_each_token;
use crate::error::{KernelError, Result};

pub const MIN_DIM: usize = 8;
pub const MAX_DIM: usize = 8192;
/// Longest n-gram accepted; longer ones add nothing over the word feature.
pub const MAX_NGRAM: usize = 32;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashEmbedConfig {
    pub dim: usize,
    pub ngram_min: usize,
    pub ngram_max: usize,
    pub seed: u64,
}

impl Default for HashEmbedConfig {
    fn default() -> Self {
        Self { dim: 384, ngram_min: 3, ngram_max: 5, seed: 0 }
    }
}

impl HashEmbedConfig {
    pub fn validate(&self) -> Result<()> {
        if !(MIN_DIM..=MAX_DIM).contains(&self.dim) {
            return Err(KernelError::invalid("dim", format!("must be in [{MIN_DIM}, {MAX_DIM}], got {}", self.dim)));
        }
        if !(1..=MAX_NGRAM).contains(&self.ngram_min) {
            return Err(KernelError::invalid(
                "ngram_min",
                format!("must be in [1, {MAX_NGRAM}], got {}", self.ngram_min),
            ));
        }
        if !(self.ngram_min..=MAX_NGRAM).contains(&self.ngram_max) {
            return Err(KernelError::invalid(
                "ngram_max",
                format!("must be in [ngram_min={}, {MAX_NGRAM}], got {}", self.ngram_min, self.ngram_max),
            ));
        }
        Ok(())
    }
}

#[inline]
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// murmur3's 64-bit finalizer: FNV's low and high bits are weak on short keys; this spreads them.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

#[inline]
fn add_feature(out: &mut [f32], h: u64) {
    let h = fmix64(h);
    let slot = ((u128::from(h) * out.len() as u128) >> 64) as usize;
    out[slot] += if h & 1 == 0 { 1.0 } else { -1.0 };
}

/// Writes the embedding of `text` into `out` (length `cfg.dim`, overwritten).
pub fn embed_into(text: &str, cfg: &HashEmbedConfig, out: &mut [f32]) {
    out.fill(0.0);
    let base = fnv1a(FNV_OFFSET, &cfg.seed.to_le_bytes());
    let word_base = fnv1a(base, b"w");
    let gram_base = fnv1a(base, b"c");
    let mut padded = String::new();
    let mut bounds: Vec<usize> = Vec::new();
    for_each_token(text, |word| {
        add_feature(out, fnv1a(word_base, word.as_bytes()));
        padded.clear();
        padded.push('<');
        padded.push_str(word);
        padded.push('>');
        bounds.clear();
        bounds.extend(padded.char_indices().map(|(i, _)| i));
        bounds.push(padded.len());
        let bytes = padded.as_bytes();
        // FNV-1a streams: the n-grams starting at one position are successive states of one pass.
        for start in 0..bounds.len() - 1 {
            let mut h = gram_base;
            for (n, ch) in bounds[start..].windows(2).take(cfg.ngram_max).enumerate() {
                h = fnv1a(h, &bytes[ch[0]..ch[1]]);
                if n + 1 >= cfg.ngram_min {
                    add_feature(out, h);
                }
            }
        }
    });
    let norm = out.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for v in out.iter_mut() {
            *v = (f64::from(*v) / norm) as f32;
        }
    }
}

/// Embeds a batch in parallel: a row-major `texts.len() × cfg.dim` matrix.
pub fn hash_embed<S: AsRef<str> + Sync>(texts: &[S], cfg: &HashEmbedConfig) -> Result<Vec<f32>> {
    cfg.validate()?;
    let mut out = vec![0.0f32; texts.len() * cfg.dim];
    out.par_chunks_mut(cfg.dim)
        .zip(texts.par_iter())
        .with_min_len(16)
        .for_each(|(row, text)| embed_into(text.as_ref(), cfg, row));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embed(texts: &[&str], cfg: &HashEmbedConfig) -> Vec<Vec<f32>> {
        hash_embed(texts, cfg).unwrap().chunks(cfg.dim).map(<[f32]>::to_vec).collect()
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn fnv_known_vectors() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn unit_norm_zero_vector_and_batch_equals_single() {
        let cfg = HashEmbedConfig::default();
        let texts = ["The cat sat on the mat.", "", "   \t", "!!!", "Ünïcödé 東京"];
        let rows = embed(&texts, &cfg);
        for (t, r) in texts.iter().zip(&rows) {
            let n: f32 = r.iter().map(|v| v * v).sum::<f32>().sqrt();
            let want = if ["", "   \t", "!!!"].contains(t) { 0.0 } else { 1.0 };
            assert!((n - want).abs() < 1e-5, "{t:?}: norm {n}");
            assert_eq!(embed(&[t], &cfg)[0], *r);
        }
    }

    #[test]
    fn single_short_word_features() {
        // "ab" -> word "ab" and n-grams of "<ab>" with n = 3..5: "<ab", "ab>", "<ab>".
        let cfg = HashEmbedConfig { dim: 8192, ..Default::default() };
        let v = &embed(&["AB"], &cfg)[0];
        let nonzero = v.iter().filter(|x| **x != 0.0).count();
        assert_eq!(nonzero, 4);
        assert!(v.iter().all(|x| *x == 0.0 || (x.abs() - 0.5).abs() < 1e-6));
    }

    #[test]
    fn seed_changes_the_vector_deterministically() {
        let a = HashEmbedConfig::default();
        let b = HashEmbedConfig { seed: 7, ..a };
        assert_ne!(embed(&["hello world"], &a), embed(&["hello world"], &b));
        assert_eq!(embed(&["hello world"], &b), embed(&["hello world"], &b));
    }

    #[test]
    fn paraphrases_beat_unrelated_text() {
        let cfg = HashEmbedConfig::default();
        let r = embed(
            &["How do I reset my password?", "I need to reset my account password", "The weather is sunny in Paris today"],
            &cfg,
        );
        assert!(cos(&r[0], &r[1]) > cos(&r[0], &r[2]) + 0.2);
    }

    #[test]
    fn validates_config() {
        let bad = [
            HashEmbedConfig { dim: 7, ..Default::default() },
            HashEmbedConfig { dim: 8193, ..Default::default() },
            HashEmbedConfig { ngram_min: 0, ..Default::default() },
            HashEmbedConfig { ngram_min: 4, ngram_max: 3, ..Default::default() },
            HashEmbedConfig { ngram_max: 33, ..Default::default() },
        ];
        for cfg in bad {
            assert!(hash_embed(&["x"], &cfg).is_err(), "{cfg:?}");
        }
        assert!(hash_embed::<&str>(&[], &HashEmbedConfig::default()).unwrap().is_empty());
    }
}
