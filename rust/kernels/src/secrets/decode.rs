//! The decoded forms of a text a secret may hide in, as `mindcore.policy.decoded_views` makes
//! them in Python: JSON string escapes over the whole text, then percent-encoded runs and base64
//! runs (of the text and of its JSON-unescaped form), each run decoded on its own. Used to judge
//! many texts in one parallel call; Python keeps its own copy for the findings and spans of
//! `detect` and redaction, and the tests hold the two to the same answers.
//!
//! Every rule below follows the Python it mirrors, corner for corner: the regular expressions
//! `_JSON_ESCAPE`, `_PERCENT_RUN` and `_BASE64_RUN` as `re.finditer` walks them, UTF-16 surrogate
//! pairing as `str.encode("utf-16", "surrogatepass").decode("utf-16", "replace")` does it,
//! `urllib.parse.unquote` (ASCII stretches decoded as UTF-8 with U+FFFD for each maximal invalid
//! subpart, which `String::from_utf8_lossy` does too) and `base64.b64decode(validate=True)`.
//! One difference is deliberate: an unassigned code point counts as printable (Python's Unicode
//! tables and this crate's are of different versions), so a run is decoded here where Python may
//! skip it, never the other way round.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

/// How much of a text is decoded beyond the raw scan: its first `max_chars` characters, and at
/// most `max_runs` percent or base64 runs of them (in the order Python visits them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    pub max_chars: usize,
    pub max_runs: usize,
}

/// A base64 run shorter than this is not decoded (`_BASE64_MIN`).
const BASE64_MIN: usize = 16;

/// Whether any decoded form of `text` makes `hit` answer `true` (stops at the first). The raw
/// text itself is not offered: the caller scans it whole, without the character cap.
pub fn any_view(text: &str, limits: DecodeLimits, mut hit: impl FnMut(&str) -> bool) -> bool {
    let head = &text[..byte_index_of_char(text, limits.max_chars)];
    let unescaped = if head.contains('\\') {
        let out = unescape_json(head);
        if out != head {
            if hit(&out) {
                return true;
            }
            Some(out)
        } else {
            None
        }
    } else {
        None
    };
    let mut runs = 0usize;
    for base in std::iter::once(head).chain(unescaped.as_deref()) {
        if base.contains('%') {
            for run in percent_runs(base) {
                if runs >= limits.max_runs {
                    return false;
                }
                runs += 1;
                let decoded = unquote(run);
                if decoded != run && hit(&decoded) {
                    return true;
                }
            }
        }
        for run in base64_runs(base) {
            if runs >= limits.max_runs {
                return false;
            }
            runs += 1;
            if let Some(decoded) = base64_text(run) {
                if hit(&decoded) {
                    return true;
                }
            }
        }
    }
    false
}

/// The byte offset of the `n`-th character of `text` (its length when it has fewer).
fn byte_index_of_char(text: &str, n: usize) -> usize {
    if text.len() <= n {
        return text.len();
    }
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

fn hex_value(b: u8) -> Option<u16> {
    (b as char).to_digit(16).map(|d| d as u16)
}

/// UTF-16 code units pushed one by one, paired as Python's UTF-16 decoder with `"replace"` pairs
/// them: a high surrogate followed by a low one is one character; any other surrogate is U+FFFD.
struct Utf16Joiner {
    out: String,
    high: Option<u16>,
}

impl Utf16Joiner {
    fn flush(&mut self) {
        if self.high.take().is_some() {
            self.out.push(char::REPLACEMENT_CHARACTER);
        }
    }

    fn push_str(&mut self, s: &str) {
        if !s.is_empty() {
            self.flush();
            self.out.push_str(s);
        }
    }

    fn push_unit(&mut self, unit: u16) {
        match unit {
            0xDC00..=0xDFFF => match self.high.take() {
                Some(high) => {
                    let cp = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    self.out.push(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
                None => self.out.push(char::REPLACEMENT_CHARACTER),
            },
            0xD800..=0xDBFF => {
                self.flush();
                self.high = Some(unit);
            }
            _ => {
                self.flush();
                self.out.push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
    }
}

/// `text` with JSON string escapes decoded (`_unescape_json`): `\uXXXX` (any case of hex) and
/// `\" \\ \/ \b \f \n \r \t`, left to right; any other backslash stays as it is.
pub(super) fn unescape_json(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Utf16Joiner {
        out: String::with_capacity(text.len()),
        high: None,
    };
    let (mut copied, mut at) = (0usize, 0usize);
    while let Some(off) = text[at..].find('\\') {
        let slash = at + off;
        let next = bytes.get(slash + 1).copied();
        let simple = match next {
            Some(b'"') => Some('"'),
            Some(b'\\') => Some('\\'),
            Some(b'/') => Some('/'),
            Some(b'b') => Some('\u{8}'),
            Some(b'f') => Some('\u{c}'),
            Some(b'n') => Some('\n'),
            Some(b'r') => Some('\r'),
            Some(b't') => Some('\t'),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push_str(&text[copied..slash]);
            out.push_unit(ch as u16);
            copied = slash + 2;
            at = copied;
            continue;
        }
        let unit = (next == Some(b'u'))
            .then(|| bytes.get(slash + 2..slash + 6))
            .flatten()
            .and_then(|hex| hex.iter().try_fold(0u16, |acc, &b| Some(acc << 4 | hex_value(b)?)));
        match unit {
            Some(unit) => {
                out.push_str(&text[copied..slash]);
                out.push_unit(unit);
                copied = slash + 6;
                at = copied;
            }
            None => at = slash + 1,
        }
    }
    out.push_str(&text[copied..]);
    out.flush();
    out.out
}

/// Python's `\s` (`str.isspace`): whitespace and the four ASCII information separators.
fn is_py_space(ch: char) -> bool {
    matches!(ch,
        '\t'..='\r' | '\u{1C}'..=' ' | '\u{85}' | '\u{A0}' | '\u{1680}' | '\u{2000}'..='\u{200A}'
        | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

/// Whether `%XX` (two hex digits of any case) starts at byte `at`.
fn is_percent_escape(bytes: &[u8], at: usize) -> bool {
    bytes.get(at) == Some(&b'%')
        && bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
        && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
}

/// The matches of one run pattern in a text, in order: `find(text, from)` is the byte range of
/// the first match at or after `from` (`_PERCENT_RUN` or `_BASE64_RUN` as `re.finditer` walks it).
struct Runs<'a> {
    text: &'a str,
    at: usize,
    find: fn(&str, usize) -> Option<(usize, usize)>,
}

impl<'a> Iterator for Runs<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let (start, end) = (self.find)(self.text, self.at)?;
        self.at = end;
        Some(&self.text[start..end])
    }
}

/// The matches of `_PERCENT_RUN` (`[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*)+`).
fn percent_runs(text: &str) -> Runs<'_> {
    Runs { text, at: 0, find: next_percent_run }
}

/// The end of the run of characters other than whitespace and `%` starting at `from`.
fn plain_end(text: &str, from: usize) -> usize {
    text[from..]
        .char_indices()
        .find(|&(_, ch)| ch == '%' || is_py_space(ch))
        .map_or(text.len(), |(i, _)| from + i)
}

fn next_percent_run(text: &str, mut at: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    while at < bytes.len() {
        let start = at;
        let stop = plain_end(text, start);
        if !is_percent_escape(bytes, stop) {
            // No match starts anywhere in start..=stop: each would need `%XX` at `stop`.
            at = match text[stop..].chars().next() {
                Some(ch) => stop + ch.len_utf8(),
                None => bytes.len(),
            };
            continue;
        }
        let mut end = stop;
        while is_percent_escape(bytes, end) {
            end = plain_end(text, end + 3);
        }
        return Some((start, end));
    }
    None
}

/// `urllib.parse.unquote(run)`: `%XX` escapes become bytes, each stretch of ASCII is decoded as
/// UTF-8 (U+FFFD for each maximal invalid subpart), other characters pass through as they are.
fn unquote(run: &str) -> Cow<'_, str> {
    if !run.contains('%') {
        return Cow::Borrowed(run);
    }
    let bytes = run.as_bytes();
    let mut out = String::with_capacity(run.len());
    let mut ascii: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !b.is_ascii() {
            out.push_str(&String::from_utf8_lossy(&ascii));
            ascii.clear();
            let ch = run[i..].chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
            out.push(ch);
            i += ch.len_utf8().max(1);
        } else if is_percent_escape(bytes, i) {
            let hi = hex_value(bytes[i + 1]).unwrap_or(0);
            let lo = hex_value(bytes[i + 2]).unwrap_or(0);
            ascii.push((hi << 4 | lo) as u8);
            i += 3;
        } else {
            ascii.push(b);
            i += 1;
        }
    }
    out.push_str(&String::from_utf8_lossy(&ascii));
    Cow::Owned(out)
}

/// The characters of a base64 or base64url run, by byte: `[A-Za-z0-9+/_-]`.
const BASE64_CHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-');
        b += 1;
    }
    table
};

/// The matches of `_BASE64_RUN` (`[A-Za-z0-9+/_-]{16,}={0,2}`).
fn base64_runs(text: &str) -> Runs<'_> {
    Runs { text, at: 0, find: next_base64_run }
}

fn next_base64_run(text: &str, mut i: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    while i < bytes.len() {
        if !BASE64_CHARS[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && BASE64_CHARS[usize::from(bytes[i])] {
            i += 1;
        }
        if i - start >= BASE64_MIN {
            let mut end = i;
            while end < bytes.len() && end - i < 2 && bytes[end] == b'=' {
                end += 1;
            }
            return Some((start, end));
        }
    }
    None
}

fn base64_value(b: u8) -> u32 {
    match b {
        b'A'..=b'Z' => u32::from(b - b'A'),
        b'a'..=b'z' => u32::from(b - b'a') + 26,
        b'0'..=b'9' => u32::from(b - b'0') + 52,
        b'+' | b'-' => 62,
        _ => 63, // '/' or '_': the only other characters a run holds
    }
}

/// The text a base64 or base64url run decodes to, when it is printable UTF-8 (`_b64_text`).
/// Python maps `-_` to `+/` when the run holds either, which leaves `+/` as they are: both
/// alphabets at once decode. Unused trailing bits are ignored, as `binascii` does.
fn base64_text(run: &str) -> Option<String> {
    let body = run.trim_end_matches('=').as_bytes();
    if body.len() % 4 == 1 {
        return None; // three padding characters: `validate=True` refuses it
    }
    let mut raw = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for chunk in body.chunks(4) {
        let bits = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | base64_value(b) << (18 - 6 * i));
        let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
        raw.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    let text = String::from_utf8(raw).ok()?;
    (!text.is_empty() && is_printable(&text)).then_some(text)
}

/// Python's `ch.isprintable() or ch in "\t\r\n"` for every character. Unassigned code points
/// count as printable here (Python says not): where this crate's Unicode tables and Python's
/// differ by version, the view is scanned rather than skipped.
fn is_printable(text: &str) -> bool {
    if text.is_ascii() {
        return text.bytes().all(|b| (b' '..=b'~').contains(&b) || matches!(b, b'\t' | b'\n' | b'\r'));
    }
    static NOT_PRINTABLE: OnceLock<Regex> = OnceLock::new();
    let re = NOT_PRINTABLE.get_or_init(|| {
        Regex::new(r"[[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}\p{Zs}]--[ \t\r\n]]").expect("class compiles")
    });
    !re.is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_chars: 1 << 20,
        max_runs: 256,
    };

    fn views(text: &str, limits: DecodeLimits) -> Vec<String> {
        let mut out = Vec::new();
        any_view(text, limits, |v| {
            out.push(v.to_owned());
            false
        });
        out
    }

    #[test]
    fn json_escapes_decode_and_pair_surrogates() {
        assert_eq!(unescape_json(r#"\u0067hp \n \\u0041 \x \"q\""#), "ghp \n \\u0041 \\x \"q\"");
        assert_eq!(unescape_json(r"\ud83d\ude00"), "\u{1F600}");
        assert_eq!(unescape_json(r"\ud83d\ud83d\ude00"), "\u{FFFD}\u{1F600}");
        assert_eq!(unescape_json(r"\ude00\ud83d"), "\u{FFFD}\u{FFFD}");
        assert_eq!(unescape_json(r"\ud83dx\u00e9\u"), "\u{FFFD}x\u{e9}\\u");
        assert_eq!(unescape_json("\\ud83d\u{1F600}"), "\u{FFFD}\u{1F600}");
    }

    #[test]
    fn percent_runs_follow_the_regex() {
        let runs: Vec<&str> = percent_runs("a b%41c %zz d%4 e%%41 x\u{1C}y%41\u{A0}%42é").collect();
        assert_eq!(runs, ["b%41c", "%41", "y%41", "%42é"]);
    }

    #[test]
    fn unquote_replaces_invalid_utf8_per_maximal_subpart() {
        assert_eq!(unquote("%67hp%5F"), "ghp_");
        assert_eq!(unquote("%E2%82%AC"), "\u{20AC}");
        assert_eq!(unquote("%E2%82é%AC"), "\u{FFFD}é\u{FFFD}");
        assert_eq!(unquote("%ED%A0%80"), "\u{FFFD}\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn base64_runs_and_their_text() {
        let runs: Vec<&str> = base64_runs("short x Z2hwX2FiY2RlZmdoaWprbA== y aaaaaaaaaaaaaaaa===b").collect();
        assert_eq!(runs, ["Z2hwX2FiY2RlZmdoaWprbA==", "aaaaaaaaaaaaaaaa=="]);
        assert_eq!(base64_text("Z2hwX2FiY2RlZmdoaWprbA==").as_deref(), Some("ghp_abcdefghijkl"));
        assert_eq!(base64_text("Z2hwX2FiY2RlZmdoaWprbA").as_deref(), Some("ghp_abcdefghijkl"));
        assert_eq!(base64_text("aGVsbG8gd29ybGQgaGVsbG8h"), Some("hello world hello!".into()));
        assert_eq!(base64_text("aGVsbG8gd29ybGQgaGVsbG8hX"), None); // 1 more than a multiple of 4
        assert_eq!(base64_text("AAAAAAAAAAAAAAAA"), None); // NUL bytes are not printable
    }

    #[test]
    fn printable_is_pythons() {
        assert!(is_printable("tab\there\r\n é 日本 \u{1F600}"));
        assert!(!is_printable("nbsp\u{A0}"));
        assert!(!is_printable("zwsp\u{200B}"));
        assert!(!is_printable("bell\u{7}"));
        assert!(!is_printable("private\u{E000}"));
        assert!(!is_printable("\u{2028}"));
    }

    #[test]
    fn views_are_capped() {
        let text = "%41 ".repeat(10);
        assert_eq!(views(&text, DecodeLimits { max_runs: 3, ..LIMITS }), ["A", "A", "A"]);
        assert_eq!(views(&text, DecodeLimits { max_chars: 7, ..LIMITS }), ["A", "A"]);
        // The JSON-unescaped text is a view, and its runs are decoded too.
        assert_eq!(views(r"\u0025\u0034\u0031", LIMITS), ["%41", "A"]);
    }
}
