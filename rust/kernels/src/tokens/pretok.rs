//! Hand-written pre-tokenizers equal to tiktoken's regexes (run by `fancy-regex` with
//! backtracking, leftmost-first semantics), without a regex engine.
//!
//! Every function takes the text as UTF-8 bytes and a char boundary `i < s.len()` and returns the
//! end of the piece the regex matches at `i`. The alternatives are tried in the pattern's order,
//! and each one's backtracking is resolved in closed form (see the comments); the unit tests and
//! the Python tests check the result against the regexes themselves.

use super::classes::{class_at, LETTER, LOWER, NEWLINE, NUMBER, SPACE, UPPER};

/// `[^\r\n\p{L}\p{N}]`: the optional leading character of a word.
#[inline(always)]
fn is_prefix(class: u8, len: usize) -> bool {
    len != 0 && class & (LETTER | NUMBER | NEWLINE) == 0
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, controls.
#[inline(always)]
fn is_other(class: u8, len: usize) -> bool {
    len != 0 && class & (SPACE | LETTER | NUMBER) == 0
}

/// End of the run of ASCII letters from `i` that belong to `mask` (`LOWER`: a-z, `UPPER`: A-Z,
/// `LETTER`: both; any other mask skips nothing), eight bytes at a time with plain 64-bit
/// arithmetic (no CPU-specific instructions). The caller goes on character by character.
#[inline(always)]
fn ascii_letters(s: &[u8], mut i: usize, mask: u8) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let (fold, lo, hi) = match mask {
        LOWER => (0, b'a', b'z'),
        UPPER => (0, b'A', b'Z'),
        LETTER => (0x20, b'a', b'z'), // OR 0x20 maps A-Z onto a-z and nothing else below 0x80 into it
        _ => return i,
    };
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) | (fold * ONES);
        // Per byte below 0x80 the sums cannot carry into the next byte; a byte of 0x80 or more
        // is out of the set, and any carry it makes only reaches bytes after it.
        let ge_lo = w.wrapping_add(u64::from(0x80 - lo) * ONES);
        let gt_hi = w.wrapping_add(u64::from(0x7f - hi) * ONES);
        let out = (!ge_lo | gt_hi | w) & HIGH;
        if out != 0 {
            return i + (out.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// End of the longest run of characters from `i` whose class intersects `mask`.
#[inline(always)]
fn run(s: &[u8], i: usize, mask: u8) -> usize {
    let mut i = ascii_letters(s, i, mask);
    loop {
        let (c, len) = class_at(s, i);
        if c & mask == 0 {
            return i;
        }
        i += len;
    }
}

/// End of the longest run of the given ASCII bytes from `i`.
#[inline(always)]
fn run_bytes(s: &[u8], mut i: usize, set: &[u8]) -> usize {
    while i < s.len() && set.contains(&s[i]) {
        i += 1;
    }
    i
}

/// Up to three `\p{N}` from `i` (the caller checked the first).
#[inline(always)]
fn digits3(s: &[u8], mut i: usize) -> usize {
    for _ in 0..3 {
        let (c, len) = class_at(s, i);
        if c & NUMBER == 0 {
            break;
        }
        i += len;
    }
    i
}

/// `\s` run from `i`: its end, the end of its last `[\r\n]` (if any) and the start of its last
/// character.
#[inline(always)]
fn space_run(s: &[u8], mut i: usize) -> (usize, Option<usize>, usize) {
    let mut last_newline = None;
    let mut last_start = i;
    loop {
        let (c, len) = class_at(s, i);
        if c & SPACE == 0 {
            return (i, last_newline, last_start);
        }
        last_start = i;
        i += len;
        if c & NEWLINE != 0 {
            last_newline = Some(i);
        }
    }
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i`: the end of the match, if any. Under Unicode simple
/// case folding `s` also matches U+017F (LATIN SMALL LETTER LONG S); the other letters match
/// only their ASCII cases (checked against the regex engine in the tests).
#[inline(always)]
fn contraction(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'\'') {
        return None;
    }
    let at = |k: usize| s.get(i + k).map_or(0, |b| b.to_ascii_lowercase());
    match at(1) {
        b's' | b't' | b'm' | b'd' => Some(i + 2),
        b'r' | b'v' if at(2) == b'e' => Some(i + 3),
        b'l' if at(2) == b'l' => Some(i + 3),
        0xc5 if s.get(i + 2) == Some(&0xbf) => Some(i + 3), // U+017F
        _ => None,
    }
}

// --- o200k_base ---------------------------------------------------------------------------------
//
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |\p{N}{1,3}
//  | ?[^\s\p{L}\p{N}]+[\r\n/]*
//  |\s*[\r\n]+
//  |\s+(?!\S)
//  |\s+

/// `[UPPER]*[LOWER]+` at `j`. The greedy `[UPPER]*` gives back characters one at a time until
/// `[LOWER]+` can start: if the character after the whole UPPER run is LOWER (an `Ll`), the
/// LOWER run from there; otherwise the match ends after the last LOWER character inside the
/// UPPER run (the one after it is `Lu`/`Lt`, or is the non-LOWER character after the run).
#[inline(always)]
fn upper_star_lower_plus(s: &[u8], j: usize) -> Option<usize> {
    let mut last_lower_end = None;
    // A-Z are UPPER and not LOWER: skipping them changes nothing below.
    let mut j = ascii_letters(s, j, UPPER);
    loop {
        let (c, len) = class_at(s, j);
        if c & UPPER == 0 {
            if c & LOWER != 0 {
                return Some(run(s, j + len, LOWER));
            }
            return last_lower_end;
        }
        j += len;
        if c & LOWER != 0 {
            last_lower_end = Some(j);
        }
    }
}

/// The o200k_base piece starting at `i`.
#[inline]
pub fn next_o200k(s: &[u8], i: usize) -> usize {
    let (c0, l0) = class_at(s, i);
    let b0 = s[i];
    let prefix = is_prefix(c0, l0);
    // 1st alternative: the optional prefix is tried taken first, then skipped.
    if prefix {
        if let Some(e) = upper_star_lower_plus(s, i + l0) {
            return contraction(s, e).unwrap_or(e);
        }
    }
    if let Some(e) = upper_star_lower_plus(s, i) {
        return contraction(s, e).unwrap_or(e);
    }
    // 2nd: `[UPPER]+[LOWER]*` never backtracks into a failure once its first char is UPPER.
    if prefix {
        let (c1, _) = class_at(s, i + l0);
        if c1 & UPPER != 0 {
            let e = run(s, run(s, i + l0, UPPER), LOWER);
            return contraction(s, e).unwrap_or(e);
        }
    }
    if c0 & UPPER != 0 {
        let e = run(s, run(s, i, UPPER), LOWER);
        return contraction(s, e).unwrap_or(e);
    }
    if c0 & NUMBER != 0 {
        return digits3(s, i);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: '/' is itself "other", so the tail only adds it after \r\n.
    if b0 == b' ' {
        let (c1, l1) = class_at(s, i + 1);
        if is_other(c1, l1) {
            return run_bytes(s, run_other(s, i + 1), b"\r\n/");
        }
    }
    if is_other(c0, l0) {
        return run_bytes(s, run_other(s, i), b"\r\n/");
    }
    // Only `\s` is left. `\s*[\r\n]+` backtracks to the run's last newline.
    let (end, last_newline, last_start) = space_run(s, i);
    if let Some(e) = last_newline {
        return e;
    }
    // `\s+(?!\S)`: all of it at the end of the text, else all but the last character.
    if end == s.len() {
        return end;
    }
    if last_start > i {
        return last_start;
    }
    end // `\s+`
}

/// Run of `[^\s\p{L}\p{N}]` from `i`.
#[inline(always)]
fn run_other(s: &[u8], mut i: usize) -> usize {
    loop {
        let (c, len) = class_at(s, i);
        if !is_other(c, len) {
            return i;
        }
        i += len;
    }
}

// --- cl100k_base --------------------------------------------------------------------------------
//
//   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//  |\s++$|\s*[\r\n]|\s+(?!\S)|\s

/// The cl100k_base piece starting at `i`.
#[inline]
pub fn next_cl100k(s: &[u8], i: usize) -> usize {
    let (c0, l0) = class_at(s, i);
    let b0 = s[i];
    if let Some(e) = contraction(s, i) {
        return e;
    }
    // `[^\r\n\p{L}\p{N}]?+\p{L}++`: the possessive prefix is never given back (giving it back
    // could not help: it is not a letter).
    if is_prefix(c0, l0) {
        let (c1, _) = class_at(s, i + l0);
        if c1 & LETTER != 0 {
            return run(s, i + l0, LETTER);
        }
    } else if c0 & LETTER != 0 {
        return run(s, i, LETTER);
    }
    if c0 & NUMBER != 0 {
        return digits3(s, i);
    }
    if b0 == b' ' {
        let (c1, l1) = class_at(s, i + 1);
        if is_other(c1, l1) {
            return run_bytes(s, run_other(s, i + 1), b"\r\n");
        }
    }
    if is_other(c0, l0) {
        return run_bytes(s, run_other(s, i), b"\r\n");
    }
    let (end, last_newline, last_start) = space_run(s, i);
    if end == s.len() {
        return end; // `\s++$`
    }
    if let Some(e) = last_newline {
        return e; // `\s*[\r\n]`
    }
    if last_start > i {
        return last_start; // `\s+(?!\S)`
    }
    i + l0 // `\s`
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(next: fn(&[u8], usize) -> usize, text: &str) -> Vec<&str> {
        let s = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let e = next(s, i);
            assert!(e > i && text.is_char_boundary(e));
            out.push(&text[i..e]);
            i = e;
        }
        out
    }

    #[test]
    fn o200k_examples() {
        let t = "Hello WORLDs's  don't\n\n  x  \t123456 !!/\n/ aΣΣa 'll";
        assert_eq!(
            split(next_o200k, t),
            ["Hello", " WORLDs's", " ", " don't", "\n\n", " ", " x", "  ", "\t", "123", "456", " !!/\n/", " a", "ΣΣa", " '", "ll"]
        );
        // Lm/Lo/M backtracking: the upper run gives back its last lower-capable char.
        assert_eq!(split(next_o200k, "A\u{2b0}B1"), ["A\u{2b0}", "B", "1"]);
        assert_eq!(split(next_o200k, "\u{301}\u{301}1"), ["\u{301}\u{301}", "1"]);
        assert_eq!(split(next_o200k, "  "), ["  "]);
        assert_eq!(split(next_o200k, "a\u{17f}'\u{17f}"), ["a\u{17f}'\u{17f}"]);
    }

    #[test]
    fn cl100k_examples() {
        let t = "Hello WORLD's  don't\n\n  x  \t123456 !!/\n/ 'LL  ";
        assert_eq!(
            split(next_cl100k, t),
            ["Hello", " WORLD", "'s", " ", " don", "'t", "\n\n", " ", " x", "  ", "\t", "123", "456", " !!/\n", "/", " '", "LL", "  "]
        );
        assert_eq!(split(next_cl100k, "a \n b"), ["a", " \n", " b"]);
    }
}
