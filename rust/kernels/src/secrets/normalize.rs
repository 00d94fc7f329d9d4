//! What the scanner reads instead of the raw text, so a secret cannot hide behind Unicode or
//! spacing: zero-width and control characters removed, each other character in NFKC form
//! (fullwidth `ｇｈｐ＿` reads `ghp_`), and a key spelled out one character at a time
//! (`s k - p r o j - …`, 16 or more single characters between single spaces) joined up.
//!
//! Findings come back in the original text's offsets: every normalised byte maps to the original
//! characters it came from, so a redaction removes the hidden characters inside a secret too.
//! Ordinary ASCII text is left alone (one pass over its bytes decides that).

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// A run of single characters between single spaces at least this long is a spaced-out token.
pub const SPACED_MIN_CHARS: usize = 16;

/// Invisible format characters that can split a token without showing: soft hyphen, zero-width
/// spaces and joiners, direction marks and isolates, word joiner, BOM.
pub fn is_invisible(ch: char) -> bool {
    matches!(ch,
        '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Characters a spaced-out token is made of.
pub fn is_spaced_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_+/=.:-".contains(&b)
}

fn is_plain(b: u8) -> bool {
    (b' '..=b'~').contains(&b) || matches!(b, b'\t' | b'\n' | b'\r')
}

/// A stretch of the first-stage output and where it came from: `exact` stretches are copied
/// byte for byte; the others replace `orig_len` original bytes as a whole.
#[derive(Clone, Copy, Debug)]
struct Seg {
    out: usize,
    orig: usize,
    out_len: usize,
    orig_len: usize,
    exact: bool,
}

/// The normalised text and the way back to the original's byte offsets.
pub struct Normalized {
    pub text: String,
    segs: Vec<Seg>,
    /// Bytes of the first-stage text removed by joining spaced-out tokens, each minus the number
    /// of removals before it (non-decreasing), for a binary search.
    removed: Vec<usize>,
}

impl Normalized {
    /// `text` normalised, or `None` when reading it as it is gives the same result.
    pub fn new(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let plain = bytes.iter().all(|&b| is_plain(b));
        if plain && spaced_chains(bytes).is_empty() {
            return None;
        }
        let (stage1, segs) = if plain {
            let segs = vec![Seg {
                out: 0,
                orig: 0,
                out_len: text.len(),
                orig_len: text.len(),
                exact: true,
            }];
            (text.to_owned(), segs)
        } else {
            map_chars(text)
        };
        let chains = spaced_chains(stage1.as_bytes());
        let mut drop: Vec<usize> = Vec::new();
        for (start, end) in chains {
            drop.extend((start + 1..end).step_by(2));
        }
        let text = if drop.is_empty() {
            stage1
        } else {
            let mut out = String::with_capacity(stage1.len());
            let mut pos = 0;
            for &d in &drop {
                out.push_str(&stage1[pos..d]);
                pos = d + 1;
            }
            out.push_str(&stage1[pos..]);
            out
        };
        let removed = drop.iter().enumerate().map(|(i, &d)| d - i).collect();
        Some(Self { text, segs, removed })
    }

    fn stage1_pos(&self, p: usize) -> usize {
        p + self.removed.partition_point(|&r| r <= p)
    }

    fn seg_of(&self, q: usize) -> &Seg {
        let i = self.segs.partition_point(|s| s.out <= q);
        &self.segs[i - 1]
    }

    /// The original byte offset where a span starting at normalised byte `start` starts.
    pub fn orig_start(&self, start: usize) -> usize {
        let q = self.stage1_pos(start);
        let s = self.seg_of(q);
        if s.exact {
            s.orig + (q - s.out)
        } else {
            s.orig
        }
    }

    /// The original byte offset where a span ending at normalised byte `end` (> 0) ends.
    pub fn orig_end(&self, end: usize) -> usize {
        let q = self.stage1_pos(end - 1);
        let s = self.seg_of(q);
        if s.exact {
            s.orig + (q - s.out) + 1
        } else {
            s.orig + s.orig_len
        }
    }
}

/// Stage one: invisible and control characters dropped, the rest in NFKC form, one character at
/// a time (so each output byte knows its source character).
fn map_chars(text: &str) -> (String, Vec<Seg>) {
    let mut out = String::with_capacity(text.len());
    let mut segs: Vec<Seg> = Vec::new();
    let keep = |out: &mut String, segs: &mut Vec<Seg>, orig: usize, ch: char| {
        let len = ch.len_utf8();
        match segs.last_mut() {
            Some(s) if s.exact && s.out + s.out_len == out.len() && s.orig + s.orig_len == orig => {
                s.out_len += len;
                s.orig_len += len;
            }
            _ => segs.push(Seg {
                out: out.len(),
                orig,
                out_len: len,
                orig_len: len,
                exact: true,
            }),
        }
        out.push(ch);
    };
    for (i, ch) in text.char_indices() {
        if ch.is_ascii() && is_plain(ch as u8) {
            keep(&mut out, &mut segs, i, ch);
        } else if is_invisible(ch) || ch.is_control() {
            continue;
        } else if is_nfkc_quick(std::iter::once(ch)) == IsNormalized::Yes {
            keep(&mut out, &mut segs, i, ch);
        } else {
            let nf: String = std::iter::once(ch).nfkc().collect();
            let mut chars = nf.chars();
            if chars.next() == Some(ch) && chars.next().is_none() {
                keep(&mut out, &mut segs, i, ch);
            } else if !nf.is_empty() {
                segs.push(Seg {
                    out: out.len(),
                    orig: i,
                    out_len: nf.len(),
                    orig_len: ch.len_utf8(),
                    exact: false,
                });
                out.push_str(&nf);
            }
        }
    }
    if segs.is_empty() {
        // Everything was invisible: one empty stretch keeps the lookups total.
        segs.push(Seg {
            out: 0,
            orig: 0,
            out_len: 0,
            orig_len: text.len(),
            exact: false,
        });
    }
    (out, segs)
}

/// `(first, last)` byte positions of each chain of at least [`SPACED_MIN_CHARS`] single
/// characters separated by single spaces.
fn spaced_chains(b: &[u8]) -> Vec<(usize, usize)> {
    let n = b.len();
    let single = |p: usize| {
        is_spaced_char(b[p]) && (p == 0 || !is_spaced_char(b[p - 1])) && (p + 1 == n || !is_spaced_char(b[p + 1]))
    };
    let mut chains = Vec::new();
    let mut i = 0;
    while i < n {
        if !single(i) {
            i += 1;
            continue;
        }
        let (mut j, mut count) = (i, 1);
        while j + 2 < n && b[j + 1] == b' ' && single(j + 2) {
            j += 2;
            count += 1;
        }
        if count >= SPACED_MIN_CHARS {
            chains.push((i, j));
        }
        i = j + 1;
    }
    chains
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str, needle: &str) -> (String, String) {
        let n = Normalized::new(text).expect("changed");
        let s = n.text.find(needle).expect("needle in normalised text");
        let (a, b) = (n.orig_start(s), n.orig_end(s + needle.len()));
        (n.text.clone(), text[a..b].to_owned())
    }

    #[test]
    fn plain_ascii_is_left_alone() {
        assert!(Normalized::new("just words, key=value\n\tand more").is_none());
        assert!(Normalized::new("a b c d e f g h i j k l m n o").is_none()); // 15 singles
    }

    #[test]
    fn invisible_and_control_characters_are_dropped_and_mapped_back() {
        let text = "key ghp_2FDE\u{200B}EtfjgVvVq\0E1Sk end";
        let (norm, orig) = roundtrip(text, "ghp_2FDEEtfjgVvVqE1Sk");
        assert_eq!(norm, "key ghp_2FDEEtfjgVvVqE1Sk end");
        assert_eq!(orig, "ghp_2FDE\u{200B}EtfjgVvVq\0E1Sk");
    }

    #[test]
    fn fullwidth_letters_read_as_ascii() {
        let text = "é ｇｈｐ＿２ＦＤＥ done";
        let (norm, orig) = roundtrip(text, "ghp_2FDE");
        assert_eq!(norm, "é ghp_2FDE done");
        assert_eq!(orig, "ｇｈｐ＿２ＦＤＥ");
    }

    #[test]
    fn spaced_out_tokens_are_joined() {
        let text = "key: A K I A H D U 6 G D P M R C G 4 B E 4 U ok";
        let (norm, orig) = roundtrip(text, "AKIAHDU6GDPMRCG4BE4U");
        assert_eq!(norm, "key: AKIAHDU6GDPMRCG4BE4U ok");
        assert_eq!(orig, "A K I A H D U 6 G D P M R C G 4 B E 4 U");
    }

    #[test]
    fn all_invisible_text() {
        let n = Normalized::new("\u{200B}\u{200B}").unwrap();
        assert_eq!(n.text, "");
    }
}
