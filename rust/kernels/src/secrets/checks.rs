//! What runs on a regex match before it counts as a finding: an allow-list for look-alike
//! placeholders (`AKIAIOSFODNN7EXAMPLE`, `xxxx`, `<your-key>`, `${VAR}`, `changeme`), structural
//! tests (enough character classes, enough distinct characters, no one character dominating),
//! the shape of machine-made values (entropy, no words, no runs or sequences), and the checksums
//! of personal data (Luhn, mod-97). Every test is O(length of the match) plus a bounded look at
//! its surroundings.
//!
//! The Python reference in `tests/test_secrets.py` mirrors this file line by line; keep them
//! in step.

use super::pii;
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
/// (`pass` is not one: `https://user:pass@host` is a real, if weak, credential.)
pub const PLACEHOLDER_VALUES: &[&str] = &[
    "password",
    "passwd",
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

/// Credentials their owners published as examples in documentation or SDK sources: the text
/// reveals nothing, so it is never reported (compared with the whole reported span).
pub const PUBLISHED_EXAMPLES: &[&str] = &[
    // AWS IAM user guide, "Manage access keys for IAM users"
    // (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html).
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    // Kubernetes docs, "Managing Secrets using Configuration File"
    // (https://kubernetes.io/docs/tasks/configmap-secret/managing-secret-using-config-file/).
    "MWYyZDFlMmU2N2Rm",
    // Google API keys published in https://github.com/firebase/firebase-android-sdk (tests and
    // samples), as allow-listed by gitleaks (cmd/generate/config/rules/gcp.go).
    "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
    "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
    "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
    "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
    "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
    "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
    "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
    "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
    "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
    "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
    "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
    "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
    "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
    "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
    "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
];

/// Prefixes the vendor rules own: a token that starts with one is judged by its vendor's format
/// alone, so the shape-only `Bare` check does not report a look-alike the vendor rule rejected
/// (`sgp_local_` with a non-hex body, an `ops_` token cut short, `AIza` of the wrong length).
pub const VENDOR_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "whsec_",
    "AIza",
    "GOCSPX-",
    "npm_",
    "pypi-",
    "ops_",
    "AGE-SECRET-KEY-",
    "ATATT3",
    "cfat_",
    "cfut_",
    "cfk_",
    "dapi",
    "dop_v1_",
    "doo_v1_",
    "dor_v1_",
    "dckr_pat_",
    "figd_",
    "fo1_",
    "glc_",
    "glsa_",
    "gsk_",
    "hf_",
    "api_org_",
    "lin_api_",
    "lin_oauth_",
    "NRAK-",
    "ntn_",
    "pplx-",
    "PMAK-",
    "pul-",
    "r8_",
    "sntrys_",
    "sntryu_",
    "shpss_",
    "shpat_",
    "shpca_",
    "shppa_",
    "sgp_",
    "tskey-",
    "vcp_",
    "vci_",
    "vca_",
    "vcr_",
    "vck_",
    "xai-",
    "CLOJARS_",
    "AKCp",
    "ABSK",
    "bedrock-api-key-",
    "xox",
    "xapp-",
    "EAA",
];

/// The exact format of a vendor rule (its `exact` group) is reported as it is unless the value
/// is a template slot: `${NPM_TOKEN}`, `{{token}}`, `<token>`, `$TOKEN`.
fn is_template_slot(value: &str) -> bool {
    is_variable(value)
        || ["${", "{{", "$(", "<", ">"]
            .iter()
            .any(|p| value.contains(p))
}

/// `(first, last)` characters that wrap a template slot: `{name}`, `[PASSWORD]`, `%TOKEN%`
/// (a slot name has no digits; `{ZqL5kVrX1n8tA2}` is a value in braces).
const WRAPPERS: &[(char, char)] = &[('{', '}'), ('[', ']'), ('<', '>'), ('(', ')'), ('%', '%')];

/// A private-key body needs this many base64 characters of key material (a short EC key or a
/// truncated paste still counts; `anything` or `...` does not).
pub const PRIVATE_KEY_MIN_BASE64: usize = 16;

/// The checked part is a placeholder when one character makes up more than 6/10 of it.
const TOP_SHARE_NUM: usize = 6;
const TOP_SHARE_DEN: usize = 10;
const TOP_SHARE_MIN_CHARS: usize = 10;

/// Characters that continue a token: a `Guarded` match touching one on either side is part of
/// something longer. `=` only counts after the span (base64 padding), not before (`key=`).
fn continues_token(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || "_~.+/-".contains(ch)
}

/// No token continues at byte `i`: the text ends, or a character that cannot continue a token
/// follows (a `.` only when it ends a sentence, not when it joins two parts).
fn token_ends_at(text: &str, i: usize) -> bool {
    let mut rest = text[i..].chars();
    match rest.next() {
        None => true,
        Some('.') => !rest.next().is_some_and(|ch| ch.is_ascii_alphanumeric()),
        Some(ch) => !continues_token(ch) && ch != '=',
    }
}

/// Hex digits only, in any case: a hash or an id, not a key. (`0x…` keeps its `x`, so a
/// secp256k1 private key written `0x` + 64 hex is still checked.)
fn is_hex(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every letter and digit is `x` (`hf_xxxx…`, `ghp_xxxx…`): the universal redaction mark.
fn x_filled(part: &str) -> bool {
    part.chars()
        .filter(char::is_ascii_alphanumeric)
        .all(|ch| ch.eq_ignore_ascii_case(&'x'))
}

/// A value bound to a credential keyword (`api_key=`, `--token`, `Bearer`) is a credential,
/// whatever it looks like, when it has at least this many characters of a token's alphabet:
/// 16 is the shortest length vendors issue for API keys and tokens (Stripe's publishable suffix,
/// AWS key ids after `AKIA`), well above the words people put after `key:` in prose (English
/// words of 16+ letters are rare, and a single word is not bound by `=`/`:` in a sentence).
pub const CREDENTIAL_VALUE_MIN_CHARS: usize = 16;

/// Marks that say a value was masked or left as a slot to fill: `****`, `xxxx`, `…`, `<token>`,
/// `${VAR}`, `{{var}}`, `$(cmd)`, `[REDACTED]`. The only exemption of a credential-shaped value
/// besides the published examples.
pub const MASK_MARKS: &[&str] = &[
    "***", "###", "...", "\u{2026}", "\u{2022}", "<", ">", "${", "{{", "$(", "redacted", "masked",
];

/// The characters of a token (base64, base64url, hex, separators used inside keys).
fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'/' | b'=' | b'~' | b'.' | b'-')
}

/// Long enough, and made of a token's characters only, to be a credential when a credential
/// keyword names it.
fn credential_length(value: &str) -> bool {
    value.len() >= CREDENTIAL_VALUE_MIN_CHARS && value.bytes().all(token_char)
}

/// Masked or a slot, not a value: a mask mark, `xxxx` (in a value of up to
/// [`PLACEHOLDER_MAX_CHARS`]), letters and digits all or three quarters `x`, a `$VAR`, or a slot
/// name in brackets (`{PASSWORD}`, `%TOKEN%`).
fn masked(value: &str) -> bool {
    let lower = value.to_lowercase();
    if MASK_MARKS.iter().any(|m| lower.contains(m))
        || (value.chars().count() <= PLACEHOLDER_MAX_CHARS && lower.contains("xxxx"))
        || is_variable(value)
        || wrapped_slot(value)
        || x_filled(value)
    {
        return true;
    }
    let alnum = value.bytes().filter(u8::is_ascii_alphanumeric).count();
    let xs = value.bytes().filter(|b| matches!(b, b'x' | b'X')).count();
    alnum > 0 && xs * 4 >= alnum * 3
}

/// `{name}`, `[PASSWORD]`, `%TOKEN%`: a slot name in brackets (no digits).
fn wrapped_slot(part: &str) -> bool {
    let (Some(first), Some(last)) = (part.chars().next(), part.chars().next_back()) else {
        return false;
    };
    part.chars().count() >= 2 && WRAPPERS.contains(&(first, last)) && !part.chars().any(|ch| ch.is_ascii_digit())
}

/// A near miss of a vendor format made by hand: a run of one character, an ascending sequence
/// of [`NEAR_MISS_SEQUENCE`] (`abcdefgh`) or a placeholder ending. Shorter sequences (`12345`)
/// occur in real tokens' ids, so they do not count here.
fn near_miss_placeholder(part: &str) -> bool {
    let (longest, _, _) = sequence_stats(part);
    longest_identical_run(part) >= RUN_MAX
        || longest >= NEAR_MISS_SEQUENCE
        || PLACEHOLDER_SUFFIXES
            .iter()
            .any(|w| part.to_lowercase().ends_with(w))
}

/// The spans of one regex match the checks need, as byte ranges of the text.
pub struct MatchParts {
    pub whole: (usize, usize),
    pub secret: Option<(usize, usize)>,
    pub body: Option<(usize, usize)>,
    pub user: Option<(usize, usize)>,
    pub key: Option<(usize, usize)>,
    /// The vendor's exact format (the rule's `exact` group), when it took part in the match.
    pub exact: Option<(usize, usize)>,
    /// The rule has an `exact` group: a match outside it is a near miss of a known format.
    pub has_exact: bool,
}

fn slice(text: &str, span: (usize, usize)) -> &str {
    &text[span.0..span.1]
}

/// The span to report (byte range), or `None` when the match is a placeholder, a look-alike or
/// a published example.
pub fn accept(check: Check, text: &str, m: &MatchParts) -> Option<(usize, usize)> {
    let span = accept_match(check, text, m)?;
    if check.kind != Kind::User && PUBLISHED_EXAMPLES.contains(&slice(text, span)) {
        return None;
    }
    Some(span)
}

fn accept_match(check: Check, text: &str, m: &MatchParts) -> Option<(usize, usize)> {
    if let Some(exact) = m.exact {
        // The vendor's own format (prefix, length, alphabet) is evidence enough, whatever the
        // body's entropy, when the token ends there; a longer token is judged as a look-alike.
        let span = m.secret.unwrap_or(m.whole);
        if check.kind == Kind::NotAnthropic && slice(text, exact).starts_with("ant-") {
            return None;
        }
        if token_ends_at(text, exact.1) {
            let ok = !is_template_slot(slice(text, span)) && !masked(slice(text, exact));
            return ok.then_some(span);
        }
    }
    let mut span = m.secret.unwrap_or(m.whole);
    let mut part_span = m.body.unwrap_or(span);
    match check.kind {
        Kind::User | Kind::Literal => return Some(span),
        Kind::CardNumber => return pii::card_ok(text, span).then_some(span),
        Kind::Ssn => return pii::ssn_ok(text, span).then_some(span),
        Kind::Iban => return pii::iban_span(text, span),
        Kind::Phone => return pii::phone_ok(text, span).then_some(span),
        Kind::Email => return pii::email_ok(slice(text, span)).then_some(span),
        Kind::Disclosure => return disclosure_span(text, m.key?, span),
        Kind::PrivateKey => {
            let cleaned = pem_body(slice(text, part_span));
            let base64 = cleaned
                .chars()
                .filter(|&ch| ch.is_ascii_alphanumeric() || ch == '+' || ch == '/')
                .count();
            if base64 < PRIVATE_KEY_MIN_BASE64 || !structure_ok(&cleaned, check) || decodes_to_text(&cleaned) {
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
        Kind::Credentials | Kind::UrlCredentials => {
            if check.kind == Kind::UrlCredentials && database_scheme(slice(text, m.whole)) {
                return None;
            }
            let secret = slice(text, span);
            let user = m.user.map_or("", |u| slice(text, u));
            if secret.eq_ignore_ascii_case("x-oauth-basic") || (secret.is_empty() && m.user.is_some()) {
                // `token:x-oauth-basic@host`, `curl -u token:`: the user name is the credential.
                let u = m.user?;
                if u.0 == u.1 || (secret.is_empty() && user.chars().count() < LONE_USER_MIN_CHARS) {
                    return None;
                }
                span = u;
                part_span = u;
            } else if secret == user {
                return None;
            }
            let part = slice(text, part_span);
            if part.chars().count() < CREDENTIAL_MIN_CHARS
                || is_placeholder_value(part)
                || is_variable(part)
            {
                return None;
            }
        }
        Kind::Assignment => {
            // `token: abc123...` or `abc..[Redacted]` is elided; a single `.` may end the sentence.
            let value = slice(text, span);
            if value.ends_with("..") {
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
            if let Some(key) = m.key {
                if key_says_public(text, key)
                    || token_glued(text, key)
                    || wrong_length_for_name(key_name(text, key), value)
                {
                    return None;
                }
                // Bound to a credential keyword and of credential length: a secret unless masked.
                if credential_length(value) && names_a_secret(key_name(text, key)) {
                    return (!masked(value)).then_some(span);
                }
                if !human_key(slice(text, key)) && token_placeholder(value) {
                    return None;
                }
            }
        }
        Kind::Entropy | Kind::Bare => {
            let value = slice(text, span);
            if value.ends_with("..") {
                return None;
            }
            let value = value.trim_end_matches('.');
            span = (span.0, span.0 + value.len());
            let (lo, hi) = if check.kind == Kind::Bare {
                (BARE_MIN_CHARS, BARE_MAX_CHARS)
            } else {
                (ENTROPY_MIN_CHARS, ENTROPY_MAX_CHARS)
            };
            // The value is ASCII (the patterns say so): bytes are characters.
            if !(lo..=hi).contains(&value.len()) {
                return None;
            }
            if let Some(key) = m.key {
                let name = key_name(text, key);
                if key_says_public(text, key)
                    || !names_a_secret(name)
                    || wrong_length_for_name(name, value)
                {
                    return None;
                }
                // Named as a credential: a secret whatever it looks like, unless masked, a path
                // in code (`settings.api.token`) or an identifier made of words (`sort-key-desc`,
                // `createdAtTimestamp` under `sortKey`: the name only hints at a credential).
                if check.kind == Kind::Entropy && !is_dotted_path(value) && !is_slug(value) && !wordy(value) {
                    return (!masked(value)).then_some(span);
                }
            }
            if is_slug(value) || decodes_to_text(value.trim_end_matches('=')) {
                return None;
            }
            if check.kind == Kind::Bare {
                let b = value.as_bytes();
                let has = |f: fn(&u8) -> bool| b.iter().any(f);
                if !(has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase) && has(u8::is_ascii_digit))
                    || is_hex(value)
                    || VENDOR_PREFIXES.iter().any(|p| value.starts_with(p))
                    || !bare_context_ok(text, span)
                    || wrong_length_for_name(assigned_name(text, span.0), value)
                {
                    return None;
                }
            }
            return machine_made(value, check).then_some(span);
        }
        Kind::Bound => {
            let value = slice(text, span);
            if credential_length(value) {
                return (!masked(value)).then_some(span);
            }
        }
        Kind::Token => {}
    }
    if matches!(check.kind, Kind::Token | Kind::NotAnthropic | Kind::Guarded | Kind::Bound) {
        // Masked (`xoxp-…-####`) or spelled in words (`…AccessTokenHere`): not a real token.
        let part = slice(text, part_span);
        let masked = |i: usize| matches!(text.as_bytes().get(i), Some(b'#' | b'*'));
        if (masked(span.1) && masked(span.1 + 1))
            || (part.chars().count() <= PLACEHOLDER_MAX_CHARS && wordy(part))
        {
            return None;
        }
        // A near miss of the vendor's exact format must at least look generated (no run, long
        // sequence or placeholder ending: `sk-ant-api03-abc123xyz-…klMnopqrstuvwx…BB`).
        if m.has_exact && near_miss_placeholder(part) {
            return None;
        }
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

/// `password`, `null`, `mypassword`: a value that only names what belongs there.
fn is_placeholder_value(value: &str) -> bool {
    let lower = value.to_lowercase();
    let named = |v: &str| PLACEHOLDER_VALUES.contains(&v);
    named(&lower)
        || ["my", "your", "the"]
            .iter()
            .any(|p| lower.strip_prefix(p).is_some_and(named))
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
    if part.is_empty() {
        return true;
    }
    n >= 2 && wrapped_slot(part)
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

/// URL schemes the `connection-string` rule judges (with its own, stricter, checks).
pub const DATABASE_SCHEMES: &[&str] = &[
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "mongodb",
    "mongodb+srv",
    "redis",
    "rediss",
    "amqp",
    "amqps",
    "mssql",
    "sqlserver",
    "oracle",
    "cockroachdb",
    "clickhouse",
    "couchdb",
    "neo4j",
    "neo4j+s",
    "bolt",
    "nats",
    "kafka",
    "memcached",
    "cassandra",
    "influxdb",
    "elasticsearch",
];

fn database_scheme(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        DATABASE_SCHEMES
            .iter()
            .any(|s| scheme.eq_ignore_ascii_case(s))
    })
}

/// `curl -u token:` reports the user as the credential only when it is this long.
const LONE_USER_MIN_CHARS: usize = 8;

/// Names that say the value is meant to be seen: a public or publishable key, a CSRF token.
pub const PUBLIC_NAME_WORDS: &[&str] = &["public", "publishable", "csrf", "xsrf", "authenticity"];

/// Words glued in front of `token` that keep it a credential (`accesstoken`, `authtoken`); any
/// other (`jsonwebtoken`, `nexttoken`) makes it another word.
pub const TOKEN_QUALIFIERS: &[&str] = &[
    "access", "api", "app", "auth", "bearer", "bot", "client", "deploy", "id", "my", "oauth", "personal",
    "refresh", "secret", "service", "session", "user",
];

/// The last word of a name that promises a credential (`STRIPE_KEY`, `authSig`, `db_password`).
pub const SECRET_NAME_WORDS: &[&str] = &[
    "key", "keys", "token", "tokens", "secret", "secrets", "auth", "credential", "credentials", "password",
    "passwd", "pwd", "pass", "passphrase", "sig", "signature", "apikey",
];

/// A made-up key ends with one of these (`…EXAMPLE`, `…TokenHere`, `…test`).
pub const PLACEHOLDER_SUFFIXES: &[&str] = &["example", "test", "here", "xxxx", "dummy", "sample", "fake"];

/// Value lengths for the shape-only rules (a value after a hinting name; a token on its own).
pub const ENTROPY_MIN_CHARS: usize = 16;
pub const ENTROPY_MAX_CHARS: usize = 256;
pub const BARE_MIN_CHARS: usize = 32;
pub const BARE_MAX_CHARS: usize = 120;
/// Shannon entropy (bits per character) a machine-made value reaches.
pub const ENTROPY_FLOOR: f64 = 3.2;
/// A value (or a token's body) is made of words when word-like runs cover over 4/10 of it.
const WORDY_TENTHS: usize = 4;
const WORD_MIN_CHARS: usize = 5;
/// Upper-case runs need more letters: base32 bodies (`AKIA…`) have short ones by chance.
const UPPER_WORD_MIN_CHARS: usize = 8;
/// A run of identical characters, or an ascending one (`abcde`, `12345`), this long.
const RUN_MAX: usize = 5;
const NEAR_MISS_SEQUENCE: usize = 6;
/// A password in a URL or on a command line has at least this many characters.
const CREDENTIAL_MIN_CHARS: usize = 4;
/// Adjacent lines of at least this many base64 characters make a block (a certificate).
const BLOCK_LINE_MIN: usize = 20;
const NAME_LOOK_CHARS: usize = 40;
const ASSIGNED_LOOK_CHARS: usize = 48;
const GLUED_LOOK_CHARS: usize = 20;
/// How far back on its line a `value="…"` attribute looks for the attribute that names it.
const ATTRIBUTE_LOOK_CHARS: usize = 96;

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

/// The body is base64 of printable text (`YWJjZGVm…` is "abcdef…"): a made-up key, since key
/// material is binary. Bodies that are not plain base64 are kept.
fn decodes_to_text(body: &str) -> bool {
    let (mut bits, mut nbits, mut seen) = (0u32, 0u32, 0usize);
    for b in body.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return false,
        };
        bits = ((bits << 6) | u32::from(v)) & 0xFFFF;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            let byte = (bits >> nbits) & 0xFF;
            if !((32..127).contains(&byte) || matches!(byte, 9 | 10 | 13)) {
                return false;
            }
            seen += 1;
        }
    }
    seen > 0
}

fn longest_identical_run(part: &str) -> usize {
    let (mut best, mut run, mut prev) = (0, 0, None);
    for ch in part.chars() {
        run = if Some(ch) == prev { run + 1 } else { 1 };
        prev = Some(ch);
        best = best.max(run);
    }
    best
}

/// `b` follows `a` in the digits or the alphabet; the same letter in the other case continues
/// a run too (`aAbBcC`).
fn step(a: char, b: char) -> bool {
    if a.is_ascii_digit() && b.is_ascii_digit() {
        return b as u32 == a as u32 + 1;
    }
    let (la, lb) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    la.is_ascii_lowercase() && lb.is_ascii_lowercase() && (lb as u32 == la as u32 + 1 || (la == lb && a != b))
}

/// (longest ascending run, characters in ascending runs of 3 or more, characters).
fn sequence_stats(part: &str) -> (usize, usize, usize) {
    let (mut best, mut covered, mut run, mut n) = (0, 0, 0, 0);
    let mut prev: Option<char> = None;
    for ch in part.chars() {
        n += 1;
        if prev.is_some_and(|p| step(p, ch)) {
            run += 1;
        } else {
            best = best.max(run);
            if run >= 3 {
                covered += run;
            }
            run = 1;
        }
        prev = Some(ch);
    }
    best = best.max(run);
    if run >= 3 {
        covered += run;
    }
    (best, covered, n)
}

/// Machine-made keys are random: a run (`AAAAA`), a sequence (`abcde`, `12345`, `aAbBcC`) or a
/// placeholder word at the end (`…EXAMPLE`, `…Here`) marks a made-up one.
fn token_placeholder(part: &str) -> bool {
    if longest_identical_run(part) >= RUN_MAX {
        return true;
    }
    let (longest, covered, n) = sequence_stats(part);
    if longest >= RUN_MAX || (n >= 6 && covered * 2 >= n) {
        return true;
    }
    let lower = part.to_lowercase();
    PLACEHOLDER_SUFFIXES.iter().any(|w| lower.ends_with(w))
}

/// Characters in runs that read as words: 5+ letters (`Config`, `STRINGHERE`; camelCase splits)
/// with vowels in at least 3 of 10, as English has and random letters do not.
fn wordiness(part: &str) -> usize {
    let b: Vec<char> = part.chars().collect();
    let n = b.len();
    let (mut covered, mut i) = (0, 0);
    while i < n {
        let ch = b[i];
        if !ch.is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if ch.is_ascii_uppercase() && j < n && b[j].is_ascii_uppercase() {
            while j < n && b[j].is_ascii_uppercase() {
                j += 1;
            }
        } else {
            while j < n && b[j].is_ascii_lowercase() {
                j += 1;
            }
        }
        let run = &b[i..j];
        let need = if run[run.len() - 1].is_ascii_uppercase() {
            UPPER_WORD_MIN_CHARS
        } else {
            WORD_MIN_CHARS
        };
        let vowels = run.iter().filter(|c| "aeiouyAEIOUY".contains(**c)).count();
        if run.len() >= need && vowels * 10 >= run.len() * 3 {
            covered += run.len();
        }
        i = j;
    }
    covered
}

fn wordy(part: &str) -> bool {
    wordiness(part) * 10 > part.chars().count() * WORDY_TENTHS
}

/// Shannon entropy in bits per character (of an ASCII value).
fn shannon(part: &str) -> f64 {
    let mut counts = [0usize; 128];
    for b in part.bytes() {
        counts[usize::from(b & 0x7F)] += 1;
    }
    let n = part.len() as f64;
    -counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = k as f64 / n;
            p * p.log2()
        })
        .sum::<f64>()
}

/// Random enough to be a generated key: no placeholder, run, sequence or words, varied
/// characters, high entropy.
fn machine_made(value: &str, check: Check) -> bool {
    !(is_variable(value)
        || is_dotted_path(value)
        || value.contains("://")
        || is_placeholder_value(value)
        || looks_like_placeholder(value)
        || token_placeholder(value)
        || !structure_ok(value, check)
        || wordy(value))
        && shannon(value) >= ENTROPY_FLOOR
}

/// The whole identifier around a matched key word (`SUMO_ACCESS_KEY`, `publicToken`).
fn key_name(text: &str, key: (usize, usize)) -> &str {
    let b = text.as_bytes();
    let mut lo = key.0;
    while lo > key.0.saturating_sub(NAME_LOOK_CHARS) && is_ident(b[lo - 1]) {
        lo -= 1;
    }
    let mut hi = key.1;
    while hi < b.len().min(key.1 + NAME_LOOK_CHARS) && is_ident(b[hi]) {
        hi += 1;
    }
    &text[lo..hi]
}

fn says_public(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    PUBLIC_NAME_WORDS.iter().any(|w| lower.contains(w))
}

fn key_says_public(text: &str, key: (usize, usize)) -> bool {
    says_public(key_name(text, key))
}

/// `jsonwebtoken`: `token` glued to a lower-case word that is not a credential qualifier.
fn token_glued(text: &str, key: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let word = &text[key.0..key.1];
    if !word.eq_ignore_ascii_case("token") || !b[key.0].is_ascii_lowercase() || key.0 == 0 || !b[key.0 - 1].is_ascii_lowercase() {
        return false;
    }
    let mut lo = key.0;
    while lo > key.0.saturating_sub(GLUED_LOOK_CHARS) && b[lo - 1].is_ascii_lowercase() {
        lo -= 1;
    }
    !TOKEN_QUALIFIERS.contains(&&text[lo..key.0])
}

/// A name for something people choose (a password, a PIN), not a generated key.
fn human_key(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    ["pass", "pwd", "pin", "code"].iter().any(|k| w.contains(k))
}

/// `STRIPE_API_KEY`, `authSig`, `api-token.2` -> lower-case words (digits dropped).
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    for ch in name.chars() {
        if matches!(ch, '_' | '.' | '-') || ch.is_ascii_digit() {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
        } else if ch.is_ascii_uppercase() && cur.chars().next_back().is_some_and(|c| c.is_ascii_lowercase()) {
            parts.push(std::mem::take(&mut cur));
            cur.push(ch);
        } else {
            cur.push(ch);
        }
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts.iter().map(|p| p.to_ascii_lowercase()).collect()
}

/// The last word of the name is a credential word (`db_password`, `STRIPE_KEY`), not
/// `credentials_id` or `key_vault_name`.
fn names_a_secret(name: &str) -> bool {
    let mut parts = name_parts(name);
    if parts.last().is_some_and(|p| p == "v") {
        parts.pop();
    }
    parts.last().is_some_and(|last| {
        SECRET_NAME_WORDS.contains(&last.as_str())
            || ["key", "token", "secret", "password"].iter().any(|w| last.ends_with(w))
    })
}

/// Names of credentials whose value has one fixed length (AWS secret access keys are 40
/// characters): under such a name a value of another length is something else (an encrypted
/// blob, a reference), and the vendor rule reports the real ones.
pub const FIXED_LENGTH_NAMES: &[(&str, usize)] = &[("secretaccesskey", 40)];

fn wrong_length_for_name(name: &str, value: &str) -> bool {
    let squashed: String = name
        .chars()
        .filter(|ch| ch.is_ascii_alphanumeric())
        .map(|ch| ch.to_ascii_lowercase())
        .collect();
    FIXED_LENGTH_NAMES
        .iter()
        .any(|&(n, len)| squashed.ends_with(n) && value.len() != len)
}

/// A piece of a name: one case throughout (with digits), or letters then digits.
fn word_piece(p: &str) -> bool {
    let b = p.as_bytes();
    let one_case = b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        || b.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let letters = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    one_case || (letters > 0 && b[letters..].iter().all(u8::is_ascii_digit))
}

/// `cmp2-qat-1208358310`, `NEXUS-GPT4-API-KEY`, `dev-lb1.api.f4ke.com`, a UUID: names and
/// identifiers joined by separators, not a random key.
fn is_slug(value: &str) -> bool {
    let mut pieces = value.split(['-', '_', '.']);
    value.contains(['-', '_', '.']) && pieces.all(word_piece)
}

/// The token is a line of a base64 block (a certificate, a public key): the line before or
/// after it is base64 too, or PEM armour.
fn in_base64_block(text: &str, span: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let (s, e) = span;
    let mut nl = e;
    if b.get(nl) == Some(&b'\r') {
        nl += 1;
    }
    if b.get(nl) == Some(&b'\n') {
        let next = &b[nl + 1..b.len().min(nl + 1 + BLOCK_LINE_MIN)];
        if next.iter().take_while(|&&c| is_base64(c)).count() >= BLOCK_LINE_MIN || next.starts_with(b"-----") {
            return true;
        }
    }
    if s >= 1 && b[s - 1] == b'\n' {
        let mut p = s - 1;
        if p >= 1 && b[p - 1] == b'\r' {
            p -= 1;
        }
        let prev = &b[p.saturating_sub(BLOCK_LINE_MIN)..p];
        if prev.iter().rev().take_while(|&&c| is_base64(c)).count() >= BLOCK_LINE_MIN || prev.ends_with(b"-----") {
            return true;
        }
    }
    false
}

/// The name a token is assigned to on its line (`name = token`, `"name": "token"`), if any.
fn assigned_name(text: &str, s: usize) -> &str {
    let b = text.as_bytes();
    let lo = s.saturating_sub(ASSIGNED_LOOK_CHARS);
    let mut p = s;
    while p > lo && matches!(b[p - 1], b'"' | b'\'' | b'`' | b' ' | b'\t') {
        p -= 1;
    }
    if p == lo || !matches!(b[p - 1], b'=' | b':') {
        return "";
    }
    p -= 1;
    while p > lo && matches!(b[p - 1], b'"' | b'\'' | b' ' | b'\t') {
        p -= 1;
    }
    let end = p;
    while p > lo && is_ident(b[p - 1]) {
        p -= 1;
    }
    &text[p..end]
}

/// A token on its own counts only outside paths, file names, e-mail addresses, data URIs,
/// base64 blocks and public assignments.
fn bare_context_ok(text: &str, span: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let (s, e) = span;
    if s > 0 && b"/.\\@#$%&?~".contains(&b[s - 1]) {
        return false;
    }
    if s >= 7 && b[s - 7..s].eq_ignore_ascii_case(b"base64,") {
        return false;
    }
    if let Some(&after) = b.get(e) {
        if b"/@\\~".contains(&after) || (after == b'.' && b.get(e + 1).is_some_and(u8::is_ascii_alphanumeric)) {
            return false;
        }
    }
    if in_base64_block(text, span) {
        return false;
    }
    let name = assigned_name(text, s);
    if name.eq_ignore_ascii_case("value") {
        // `<input name="authenticity_token" value="…">`: the attributes before name the value.
        let mut lo = s.saturating_sub(ATTRIBUTE_LOOK_CHARS);
        while !text.is_char_boundary(lo) {
            lo += 1;
        }
        let before = &text[lo..s];
        let line = before.rfind('\n').map_or(before, |i| &before[i + 1..]);
        return !says_public(line);
    }
    !says_public(name)
}

/// "my wifi password is …": the value as reported (quotes dropped), when it reads as a password
/// (letters with digits or symbols, camelCase, six or more digits; a PIN or code: 4 to 12
/// digits) and not as an ordinary word.
fn disclosure_span(text: &str, key: (usize, usize), span: (usize, usize)) -> Option<(usize, usize)> {
    let (s, e) = span;
    let v = &text[s..e];
    if v.starts_with(['"', '\'']) {
        let inner = &v[1..v.len() - 1];
        let mut distinct: Vec<char> = inner.chars().collect();
        let n = distinct.len();
        distinct.sort_unstable();
        distinct.dedup();
        if n < 4 || distinct.len() < 3 || is_placeholder_value(inner) || looks_like_placeholder(inner) || is_variable(inner) {
            return None;
        }
        return Some((s + 1, e - 1));
    }
    let v = v.trim_end_matches(['.', ',', ';', ':', '?', ')']);
    let e = s + v.len();
    if is_placeholder_value(v) || looks_like_placeholder(v) || is_variable(v) || v.contains("://") {
        return None;
    }
    let kw = text[key.0..key.1].to_ascii_lowercase();
    let code_word = kw.contains("pin") || kw.contains("code");
    let n = v.chars().count();
    if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) {
        if code_word && (4..=12).contains(&n) {
            return Some((s, e));
        }
        let mut distinct: Vec<u8> = v.bytes().collect();
        distinct.sort_unstable();
        distinct.dedup();
        return (n >= 6 && distinct.len() >= 3).then_some((s, e));
    }
    if n < 6 || code_word {
        return None;
    }
    let letter = v.chars().any(|c| c.is_ascii_alphabetic());
    let digit = v.chars().any(|c| c.is_ascii_digit());
    let symbol = v.chars().any(|c| "!@#$%^&*+=?~".contains(c));
    let chars: Vec<char> = v.chars().collect();
    let camel = chars.windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    (letter && (digit || symbol || camel)).then_some((s, e))
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
    fn vendor_format_helpers() {
        assert!(x_filled("xxxxXXXX-xxxx"));
        assert!(!x_filled("xxxxAAAA"));
        assert!(near_miss_placeholder("Zq8Lw2abcdefghPn5"));
        assert!(near_miss_placeholder("Zq8Lw2Pn5Rt7test"));
        assert!(!near_miss_placeholder("12345_eyJhbGciOiJSUzI1NiIsInR5cCI6"));
        assert!(token_ends_at("ab", 2) && token_ends_at("ab. c", 2) && token_ends_at("ab'", 2));
        assert!(!token_ends_at("ab.c", 2) && !token_ends_at("ab_", 2) && !token_ends_at("ab=", 2));
        assert!(is_template_slot("${NPM_TOKEN}") && is_template_slot("$TOKEN") && !is_template_slot("aB3$x"));
        assert!(is_hex("5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed") && !is_hex("0x5aAeb6053F") && !is_hex("5aAeb6053G"));
        assert!(database_scheme("mysql://a:b@h") && !database_scheme("https://a:b@h"));
        assert!(wrong_length_for_name("AWS_SECRET_ACCESS_KEY", "short") && !wrong_length_for_name("API_KEY", "short"));
    }

    #[test]
    fn pem_body_strips_escapes() {
        assert_eq!(pem_body("\\nAB CD\n\\rEF"), "ABCDEF");
    }
}
