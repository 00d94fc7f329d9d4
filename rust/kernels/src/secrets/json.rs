//! The strings of a JSON text (object keys and values, unescaped), so a stored JSON document is
//! screened as exactly the strings it holds: what `mindcore.policy.SecretPolicy.first_refused`
//! reads from the same value in Python. The text is validated as it is read (what Python's
//! `json.loads` accepts, `NaN` and `Infinity` included), with no recursion: nesting costs heap,
//! never stack.

use std::borrow::Cow;

use super::decode::unescape_json;

/// Why a text's strings could not be read here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonTextError {
    /// Not a JSON text: the byte offset where reading stopped.
    Invalid(usize),
    /// A `\u` escape stands for a lone surrogate, which a Rust string cannot hold (Python's
    /// `json.loads` keeps it, so only Python can judge that string as it is).
    LoneSurrogate,
}

/// Where the reader is within the text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Value,
    ValueOrClose,
    Key,
    KeyOrClose,
    Colon,
    CommaOrClose,
}

/// Every string of the JSON text `doc`, keys included, in document order.
pub fn strings(doc: &str) -> Result<Vec<Cow<'_, str>>, JsonTextError> {
    let bytes = doc.as_bytes();
    let mut out = Vec::new();
    let mut open: Vec<u8> = Vec::new(); // b'{' or b'[' for each container being read
    let mut expect = Expect::Value;
    let mut at = 0usize;
    loop {
        at = skip_space(bytes, at);
        let Some(&b) = bytes.get(at) else {
            return Err(JsonTextError::Invalid(at));
        };
        let closes = matches!((expect, b), (Expect::ValueOrClose | Expect::CommaOrClose, b']')
            | (Expect::KeyOrClose | Expect::CommaOrClose, b'}'));
        if closes {
            if open.pop() != Some(if b == b']' { b'[' } else { b'{' }) {
                return Err(JsonTextError::Invalid(at));
            }
            at += 1;
        } else {
            match expect {
                Expect::Value | Expect::ValueOrClose => {
                    match b {
                        b'{' | b'[' => {
                            open.push(b);
                            expect = if b == b'{' { Expect::KeyOrClose } else { Expect::ValueOrClose };
                            at += 1;
                            continue;
                        }
                        b'"' => {
                            let (s, end) = string(doc, at)?;
                            out.push(s);
                            at = end;
                        }
                        _ => at = scalar(bytes, at).ok_or(JsonTextError::Invalid(at))?,
                    }
                }
                Expect::Key | Expect::KeyOrClose => {
                    if b != b'"' {
                        return Err(JsonTextError::Invalid(at));
                    }
                    let (s, end) = string(doc, at)?;
                    out.push(s);
                    at = end;
                    expect = Expect::Colon;
                    continue;
                }
                Expect::Colon => {
                    if b != b':' {
                        return Err(JsonTextError::Invalid(at));
                    }
                    at += 1;
                    expect = Expect::Value;
                    continue;
                }
                Expect::CommaOrClose => {
                    expect = match (b, open.last()) {
                        (b',', Some(b'{')) => Expect::Key,
                        (b',', Some(b'[')) => Expect::Value,
                        _ => return Err(JsonTextError::Invalid(at)),
                    };
                    at += 1;
                    continue;
                }
            }
        }
        // A value (or a container) is complete.
        if open.is_empty() {
            at = skip_space(bytes, at);
            return if at == bytes.len() { Ok(out) } else { Err(JsonTextError::Invalid(at)) };
        }
        expect = Expect::CommaOrClose;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The end of the number or literal starting at `at` (`None` when there is none).
fn scalar(bytes: &[u8], at: usize) -> Option<usize> {
    for word in [&b"true"[..], b"false", b"null", b"NaN", b"Infinity", b"-Infinity"] {
        if bytes[at..].starts_with(word) {
            return Some(at + word.len());
        }
    }
    let digits = |from: usize| from + bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut end = at + usize::from(bytes[at] == b'-');
    match bytes.get(end) {
        Some(b'0') => end += 1,
        Some(b'1'..=b'9') => end = digits(end),
        _ => return None,
    }
    if bytes.get(end) == Some(&b'.') {
        let after = digits(end + 1);
        if after == end + 1 {
            return None;
        }
        end = after;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = end + 1 + usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let after = digits(sign);
        if after == sign {
            return None;
        }
        end = after;
    }
    Some(end)
}

/// The string literal starting at the quote at `at`, unescaped, and the offset after it.
fn string(doc: &str, at: usize) -> Result<(Cow<'_, str>, usize), JsonTextError> {
    let bytes = doc.as_bytes();
    let mut i = at + 1;
    let mut escaped = false;
    // The high surrogate of a `\u` escape still waiting for its low half, by where it ended.
    let mut high_ends_at: Option<usize> = None;
    loop {
        let Some(&b) = bytes.get(i) else {
            return Err(JsonTextError::Invalid(i));
        };
        if high_ends_at.is_some_and(|end| end != i || b != b'\\') {
            return Err(JsonTextError::LoneSurrogate);
        }
        match b {
            b'"' => break,
            b'\\' => {
                escaped = true;
                match bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') => {
                        let unit = bytes
                            .get(i + 2..i + 6)
                            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
                            .and_then(|hex| u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok())
                            .ok_or(JsonTextError::Invalid(i))?;
                        match (unit, high_ends_at.take()) {
                            (0xD800..=0xDBFF, None) => high_ends_at = Some(i + 6),
                            (0xDC00..=0xDFFF, Some(_)) | (0..=0xD7FF | 0xE000..=0xFFFF, None) => {}
                            _ => return Err(JsonTextError::LoneSurrogate),
                        }
                        i += 6;
                    }
                    _ => return Err(JsonTextError::Invalid(i)),
                }
            }
            0..=0x1F => return Err(JsonTextError::Invalid(i)),
            _ => i += 1,
        }
    }
    let body = &doc[at + 1..i];
    let value = if escaped { Cow::Owned(unescape_json(body)) } else { Cow::Borrowed(body) };
    Ok((value, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(doc: &str) -> Result<Vec<String>, JsonTextError> {
        strings(doc).map(|v| v.into_iter().map(Cow::into_owned).collect())
    }

    #[test]
    fn keys_and_values_in_order() {
        let doc = r#"{"type": "object", "properties": {"city": {"type": "string", "enum": ["a", "b"]}},
                      "n": [1, -2.5e3, 0, true, false, null, NaN, -Infinity, {}, []], "required": ["city"]}"#;
        assert_eq!(
            read(doc).unwrap(),
            ["type", "object", "properties", "city", "type", "string", "enum", "a", "b", "n", "required", "city"]
        );
        assert_eq!(read(r#""top""#).unwrap(), ["top"]);
        assert_eq!(read(" 12 ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(read(r#"["\u0067hp_\"x\"\\ \n\t\/ \ud83d\ude00 é"]"#).unwrap(), ["ghp_\"x\"\\ \n\t/ \u{1F600} é"]);
    }

    #[test]
    fn lone_surrogates_are_reported() {
        assert_eq!(read(r#"["\ud83d"]"#), Err(JsonTextError::LoneSurrogate));
        assert_eq!(read(r#"["\ude00"]"#), Err(JsonTextError::LoneSurrogate));
        assert_eq!(read(r#"["\ud83dx"]"#), Err(JsonTextError::LoneSurrogate));
        assert_eq!(read(r#"["\ud83d\u0041"]"#), Err(JsonTextError::LoneSurrogate));
    }

    #[test]
    fn invalid_texts_are_refused() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "{\"a\": 1,}", "[1 2]", "{1: 2}", "\"open", "[\"\\x\"]",
                    "[\"tab\there\"]", "01", "1.", "-", "1e", "[}", "{]", "[] []", "tru", "\"\\u12\""] {
            assert!(matches!(read(bad), Err(JsonTextError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn deep_nesting_needs_no_stack() {
        let deep = format!("{}\"x\"{}", "[".repeat(200_000), "]".repeat(200_000));
        assert_eq!(read(&deep).unwrap(), ["x"]);
    }
}
