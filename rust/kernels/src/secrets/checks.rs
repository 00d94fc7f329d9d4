//! What runs on a regex match before it counts as a finding: an allow-list for look-alike
//! placeholders (`AKIAIOSFODNN7EXAMPLE`, `xxxx`, `<your-key>`, `${VAR}`, `changeme`) and a few
//! structural tests (enough character classes, enough distinct characters, no one character
//! dominating). Every test is O(length of the match).
//!
//! The Python reference in `tests/test_secrets.py` mirrors this file line by line; keep them
//! in step.

use super::rules::{Check, Kind};

/// Substrings (of the lower-cased checked part) that mark a placeholder, not a credential.
pub const PLACEHOLDER_SUBSTRINGS: &[&str] = &[
    "example",
    "xxxx",
    "placeholder",
    "changeme",
    "change_me",
    "redacted",
    "your",
    "dummy",
    "replace",
    "insert",
    "<",
    ">",
    "${",
    "{{",
    "$(",
    "***",
    "...",
    "\u{2026}",
];

/// Substring checks only run on parts up to this many characters: a long random body (a key,
/// a JWT) contains `your` or `xxxx` by chance often enough to matter, and long placeholders
/// are caught by the diversity checks anyway.
pub const PLACEHOLDER_MAX_CHARS: usize = 100;

/// Whole values (lower-cased) that are never a real password or key in an assignment or URL.
pub const PLACEHOLDER_VALUES: &[&str] = &[
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "token",
    "test",
    "testing",
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "string",
    "value",
    "changeit",
    "required",
    "optional",
];

/// `(first, last)` characters that wrap a template slot: `{name}`, `[PASSWORD]`, `%TOKEN%`
/// (a slot name has no digits; `{ZqL5kVrX1n8tA2}` is a value in braces).
const WRAPPERS: &[(char, char)] = &[('{', '}'), ('[', ']'), ('<', '>'), ('(', ')'), ('%', '%')];

/// A private-key body needs at least one PEM line (64 base64 characters) of key material.
pub const PRIVATE_KEY_MIN_BASE64: usize = 64;

/// The checked part is a placeholder when one character makes up more than 6/10 of it.
const TOP_SHARE_NUM: usize = 6;
const TOP_SHARE_DEN: usize = 10;
const TOP_SHARE_MIN_CHARS: usize = 10;

/// Characters that continue a token: a `Guarded` match touching one on either side is part of
/// something longer. `=` only counts after the span (base64 padding), not before (`key=`).
fn continues_token(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || "_~.+/-".contains(ch)
}

/// The spans of one regex match the checks need, as byte ranges of the text.
pub struct MatchParts {
    pub whole: (usize, usize),
    pub secret: Option<(usize, usize)>,
    pub body: Option<(usize, usize)>,
    pub user: Option<(usize, usize)>,
}

fn slice(text: &str, span: (usize, usize)) -> &str {
    &text[span.0..span.1]
}

/// The span to report (byte range), or `None` when the match is a placeholder or look-alike.
pub fn accept(check: Check, text: &str, m: &MatchParts) -> Option<(usize, usize)> {
    let mut span = m.secret.unwrap_or(m.whole);
    let mut part_span = m.body.unwrap_or(span);
    match check.kind {
        Kind::User => return Some(span),
        Kind::PrivateKey => {
            let cleaned = pem_body(slice(text, part_span));
            let base64 = cleaned
                .chars()
                .filter(|&ch| ch.is_ascii_alphanumeric() || ch == '+' || ch == '/')
                .count();
            if base64 < PRIVATE_KEY_MIN_BASE64 || !structure_ok(&cleaned, check) {
                return None;
            }
            return Some(span);
        }
        Kind::NotAnthropic => {
            if slice(text, part_span).starts_with("ant-") {
                return None;
            }
        }
        Kind::Guarded => {
            let before = text[..span.0].chars().next_back();
            let after = text[span.1..].chars().next();
            if before.is_some_and(continues_token) || after.is_some_and(|ch| ch == '=' || continues_token(ch)) {
                return None;
            }
        }
        Kind::Credentials => {
            let secret = slice(text, span);
            let user = m.user.map_or("", |u| slice(text, u));
            if secret.eq_ignore_ascii_case("x-oauth-basic") {
                // `token:x-oauth-basic@host`: the user name is the credential.
                let u = m.user?;
                if u.0 == u.1 {
                    return None;
                }
                span = u;
                part_span = u;
            } else if secret == user {
                return None;
            }
            if is_placeholder_value(slice(text, part_span)) || is_variable(slice(text, part_span)) {
                return None;
            }
        }
        Kind::Assignment => {
            // `token: abc123...` is elided; a single `.` may end the sentence.
            let value = slice(text, span);
            if value.ends_with("...") {
                return None;
            }
            let value = value.trim_end_matches('.');
            span = (span.0, span.0 + value.len());
            part_span = span;
            if value.chars().count() < 6
                || value.contains("://")
                || is_variable(value)
                || is_dotted_path(value)
                || is_placeholder_value(value)
            {
                return None;
            }
        }
        Kind::Token => {}
    }
    if span.0 == span.1 {
        return None;
    }
    let part = slice(text, part_span);
    if looks_like_placeholder(part) || !structure_ok(part, check) {
        return None;
    }
    Some(span)
}

/// The key material of a PEM body: whitespace and literal `\n` / `\r` escapes removed.
fn pem_body(body: &str) -> String {
    body.replace("\\n", "")
        .replace("\\r", "")
        .chars()
        .filter(|ch| !matches!(ch, ' ' | '\t' | '\r' | '\n'))
        .collect()
}

fn is_placeholder_value(value: &str) -> bool {
    let lower = value.to_lowercase();
    PLACEHOLDER_VALUES.contains(&lower.as_str())
}

/// Placeholder words and template slots (`${X}`, `{{x}}`, `<your-key>`, `[PASSWORD]`).
pub fn looks_like_placeholder(part: &str) -> bool {
    let n = part.chars().count();
    if n <= PLACEHOLDER_MAX_CHARS {
        let lower = part.to_lowercase();
        if PLACEHOLDER_SUBSTRINGS.iter().any(|p| lower.contains(p)) {
            return true;
        }
    }
    let (Some(first), Some(last)) = (part.chars().next(), part.chars().next_back()) else {
        return true;
    };
    n >= 2 && WRAPPERS.contains(&(first, last)) && !part.chars().any(|ch| ch.is_ascii_digit())
}

/// Enough kinds of characters, enough distinct characters, and no character over 60%.
pub fn structure_ok(part: &str, check: Check) -> bool {
    let (mut upper, mut lower, mut digit, mut symbol) = (false, false, false, false);
    let mut counts: Vec<(char, usize)> = Vec::new();
    let mut n = 0usize;
    for ch in part.chars() {
        n += 1;
        upper |= ch.is_ascii_uppercase();
        lower |= ch.is_ascii_lowercase();
        digit |= ch.is_ascii_digit();
        symbol |= ch.is_ascii_punctuation() && !matches!(ch, '-' | '_' | '.');
        match counts.iter_mut().find(|(c, _)| *c == ch) {
            Some((_, k)) => *k += 1,
            None => counts.push((ch, 1)),
        }
    }
    let classes = [upper, lower, digit, symbol].iter().filter(|&&b| b).count();
    if classes < usize::from(check.min_classes) || counts.len() < usize::from(check.min_distinct) {
        return false;
    }
    let top = counts.iter().map(|&(_, k)| k).max().unwrap_or(0);
    !(n >= TOP_SHARE_MIN_CHARS && top * TOP_SHARE_DEN > n * TOP_SHARE_NUM)
}

/// `$NAME` / `$name`: a shell or template variable, not its value.
fn is_variable(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('$') else {
        return false;
    };
    let mut chars = rest.chars();
    matches!(chars.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// `settings.api.token`, `os.environ`: code that reads a secret, not the secret.
fn is_dotted_path(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            let mut chars = p.chars();
            matches!(chars.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == '$')
                && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: Check = Check {
        kind: Kind::Token,
        min_classes: 2,
        min_distinct: 5,
    };

    #[test]
    fn placeholders() {
        for p in [
            "AKIAIOSFODNN7EXAMPLE",
            "xxxxxxxxxxxx",
            "<your-key>",
            "${API_KEY}",
            "changeme123",
            "{PASS}",
            "%TOKEN%",
            "abc\u{2026}",
        ] {
            assert!(looks_like_placeholder(p), "{p}");
        }
        for p in [
            "wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEY",
            "hunter22",
            "8f3kD9s0",
            "{ZqL5kVrX1n8tA2}",
        ] {
            assert!(!looks_like_placeholder(p), "{p}");
        }
        // Long random bodies are not tested for words: `your` occurs in them by chance.
        let long = format!("{}your{}", "aB3".repeat(40), "Zq9".repeat(10));
        assert!(!looks_like_placeholder(&long));
    }

    #[test]
    fn structure() {
        assert!(structure_ok("aB3dE5gH", TOKEN));
        assert!(!structure_ok("abcdefgh", TOKEN)); // one class
        assert!(!structure_ok("a1a1a1a1", TOKEN)); // two distinct
        assert!(!structure_ok("1111111111111111111111111111111111111111abc=", TOKEN)); // one char dominates
        assert!(structure_ok(
            "strongp@ss",
            Check {
                kind: Kind::Assignment,
                min_classes: 2,
                min_distinct: 5
            }
        ));
    }

    #[test]
    fn code_shaped_values() {
        assert!(is_variable("$API_KEY"));
        assert!(!is_variable("$ecr3t!"));
        assert!(is_dotted_path("os.environ"));
        assert!(is_dotted_path("self.config.token"));
        assert!(!is_dotted_path("Summer.2024"));
        assert!(!is_dotted_path("abc"));
    }

    #[test]
    fn pem_body_strips_escapes() {
        assert_eq!(pem_body("\\nAB CD\n\\rEF"), "ABCDEF");
    }
}
