//! Secret scanning: a compiled rule set that finds credentials (and personal data such as card
//! numbers) in text, reports their spans and redacts them. The shared filter every capability
//! runs before persisting text.
//!
//! Text is first normalised (`normalize.rs`: NFKC, invisible and control characters removed,
//! spaced-out tokens joined) so a secret cannot hide behind Unicode; findings are reported in
//! the original text's offsets.
//!
//! Matching uses the `regex` crate only (finite automata: no backtracking, no look-around),
//! so a scan is linear in the text. A `RegexSet` pass first tells which rules can match at
//! all; only those rules then search for spans (each with its own literal prefilter), so
//! clean text costs one pass. Each match then goes through the checks in `checks.rs`, which
//! drop look-alike placeholders and published documentation examples. A vendor token in the
//! vendor's exact format (a rule's `exact` group) is reported whatever its body looks like.

mod checks;
pub mod decode;
pub mod json;
pub mod normalize;
mod pii;
pub mod rules;

use std::sync::OnceLock;

use std::collections::HashMap;

use rayon::prelude::*;
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use crate::{KernelError, Result};
use checks::MatchParts;
pub use decode::DecodeLimits;
pub use json::JsonTextError;
pub use checks::{PLACEHOLDER_MAX_CHARS, PLACEHOLDER_SUBSTRINGS, PLACEHOLDER_VALUES, PRIVATE_KEY_MIN_BASE64};
use normalize::Normalized;
pub use rules::{BuiltinRule, Category, Check, Kind, BUILTIN};

/// Texts at least this long are scanned with their candidate rules in parallel.
const PARALLEL_RULES_MIN_BYTES: usize = 256 * 1024;
/// Lazy DFA cache sizes (per thread): the combined set of ~60 patterns needs more room than
/// the 2 MiB default before it starts clearing its cache.
const SET_DFA_BYTES: usize = 16 << 20;
const RULE_DFA_BYTES: usize = 4 << 20;

/// One match: `rule` indexes [`Scanner::rule_ids`]; `start..end` is a byte range of the text,
/// or a char range when asked for with [`Offsets::Chars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub rule: usize,
}

/// Where offsets count from: UTF-8 bytes (Rust slicing) or chars (Python `str` indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offsets {
    Bytes,
    Chars,
}

#[derive(Clone)]
struct CompiledRule {
    id: String,
    regex: Regex,
    check: Check,
    secret: Option<usize>,
    body: Option<usize>,
    user: Option<usize>,
    key: Option<usize>,
    exact: Option<usize>,
}

impl CompiledRule {
    fn new(id: &str, pattern: &str, check: Check) -> std::result::Result<Self, regex::Error> {
        let regex = RegexBuilder::new(pattern).dfa_size_limit(RULE_DFA_BYTES).build()?;
        let group = |name: &str| regex.capture_names().position(|n| n == Some(name));
        Ok(Self {
            id: id.to_owned(),
            secret: group("secret"),
            body: group("body"),
            user: group("user"),
            key: group("key"),
            exact: group("exact"),
            regex,
            check,
        })
    }

    fn needs_captures(&self) -> bool {
        self.secret.is_some() || self.body.is_some() || self.user.is_some() || self.key.is_some() || self.exact.is_some()
    }

    /// Calls `f` with each accepted span (bytes) until `f` returns `false`.
    fn for_each(&self, text: &str, mut f: impl FnMut(usize, usize) -> bool) {
        let mut emit = |parts: MatchParts| match checks::accept(self.check, text, &parts) {
            Some((s, e)) if s < e => f(s, e),
            _ => true,
        };
        if self.needs_captures() {
            let span = |caps: &regex::Captures<'_>, g: Option<usize>| {
                g.and_then(|i| caps.get(i)).map(|m| (m.start(), m.end()))
            };
            for caps in self.regex.captures_iter(text) {
                let whole = caps.get(0).map_or((0, 0), |m| (m.start(), m.end()));
                let parts = MatchParts {
                    whole,
                    secret: span(&caps, self.secret),
                    body: span(&caps, self.body),
                    user: span(&caps, self.user),
                    key: span(&caps, self.key),
                    exact: span(&caps, self.exact),
                    has_exact: self.exact.is_some(),
                };
                // A rule whose `secret` group did not take part reports nothing for this match.
                if self.secret.is_some() && parts.secret.is_none() {
                    continue;
                }
                if !emit(parts) {
                    return;
                }
            }
        } else {
            for m in self.regex.find_iter(text) {
                if !emit(MatchParts {
                    whole: (m.start(), m.end()),
                    secret: None,
                    body: None,
                    user: None,
                    key: None,
                    exact: None,
                    has_exact: false,
                }) {
                    return;
                }
            }
        }
    }
}

/// Every built-in rule compiled (in [`BUILTIN`] order), and the set of those on by default.
fn builtin_compiled() -> &'static (Vec<CompiledRule>, RegexSet) {
    static BUILTIN_COMPILED: OnceLock<(Vec<CompiledRule>, RegexSet)> = OnceLock::new();
    BUILTIN_COMPILED.get_or_init(|| {
        let rules = BUILTIN
            .iter()
            .map(|r| CompiledRule::new(r.id, r.pattern, r.check).expect("built-in secret patterns compile"))
            .collect();
        let set = build_set(BUILTIN.iter().filter(|r| r.on_by_default).map(|r| r.pattern))
            .expect("built-in secret patterns compile");
        (rules, set)
    })
}

/// Which built-in rules a scanner runs: those on by default (when `defaults`), plus `enable`,
/// minus `disable` (rule ids).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub defaults: bool,
    pub enable: Vec<String>,
    pub disable: Vec<String>,
}

impl Selection {
    /// The rules on by default and nothing else.
    pub fn defaults() -> Self {
        Self {
            defaults: true,
            ..Self::default()
        }
    }

    fn is_default(&self) -> bool {
        self.defaults && self.enable.is_empty() && self.disable.is_empty()
    }

    /// Indices into [`BUILTIN`] of the selected rules; an unknown id is an error naming it.
    fn indices(&self) -> Result<Vec<usize>> {
        for (arg, ids) in [("enable", &self.enable), ("disable", &self.disable)] {
            if let Some(id) = ids.iter().find(|id| !BUILTIN.iter().any(|r| r.id == id.as_str())) {
                return Err(KernelError::invalid(arg, format!("no built-in rule {id:?}")));
            }
        }
        if let Some(id) = self.enable.iter().find(|id| self.disable.contains(id)) {
            return Err(KernelError::invalid("enable", format!("rule {id:?} is both enabled and disabled")));
        }
        Ok((0..BUILTIN.len())
            .filter(|&i| {
                let id = BUILTIN[i].id;
                let on = (self.defaults && BUILTIN[i].on_by_default) || self.enable.iter().any(|e| e == id);
                on && !self.disable.iter().any(|d| d == id)
            })
            .collect())
    }
}

fn build_set<'a>(patterns: impl IntoIterator<Item = &'a str>) -> std::result::Result<RegexSet, regex::Error> {
    RegexSetBuilder::new(patterns).dfa_size_limit(SET_DFA_BYTES).build()
}

/// A compiled rule set. Build once and reuse: compiling costs milliseconds, scanning
/// clean text costs one pass over it.
#[derive(Clone)]
pub struct Scanner {
    rules: Vec<CompiledRule>,
    set: Option<RegexSet>,
}

impl Scanner {
    /// The built-in rules on by default (when `builtin`) followed by `extra` `(id, pattern)`
    /// user rules. A user pattern may name a group `secret` to report only that part of the match.
    pub fn new(extra: &[(String, String)], builtin: bool) -> Result<Self> {
        let selection = Selection {
            defaults: builtin,
            ..Selection::default()
        };
        Self::with_selection(extra, &selection)
    }

    /// The `selection` of built-in rules followed by `extra` user rules.
    pub fn with_selection(extra: &[(String, String)], selection: &Selection) -> Result<Self> {
        let all = &builtin_compiled().0;
        let mut rules: Vec<CompiledRule> = selection.indices()?.into_iter().map(|i| all[i].clone()).collect();
        let user_check = Check {
            kind: Kind::User,
            min_classes: 0,
            min_distinct: 0,
        };
        for (id, pattern) in extra {
            if id.is_empty() {
                return Err(KernelError::invalid(
                    "extra_rules",
                    "a rule id must be a non-empty string",
                ));
            }
            if rules.iter().any(|r| r.id == *id) {
                return Err(KernelError::invalid("extra_rules", format!("duplicate rule id {id:?}")));
            }
            if pattern.is_empty() {
                return Err(KernelError::invalid(
                    "extra_rules",
                    format!("rule {id:?}: pattern is empty"),
                ));
            }
            let rule = CompiledRule::new(id, pattern, user_check)
                .map_err(|e| KernelError::invalid("extra_rules", format!("rule {id:?}: invalid pattern: {e}")))?;
            rules.push(rule);
        }
        let set = if extra.is_empty() && selection.is_default() {
            Some(builtin_compiled().1.clone())
        } else if rules.len() > 1 {
            let patterns: Vec<&str> = rules.iter().map(|r| r.regex.as_str()).collect();
            Some(build_set(patterns).map_err(|e| KernelError::invalid("extra_rules", format!("rule set: {e}")))?)
        } else {
            None
        };
        Ok(Self { rules, set })
    }

    /// The scanner with only the built-in rules, compiled once per process.
    pub fn builtin() -> &'static Scanner {
        static DEFAULT: OnceLock<Scanner> = OnceLock::new();
        DEFAULT.get_or_init(|| Scanner::new(&[], true).expect("built-in secret patterns compile"))
    }

    pub fn rule_ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Indices of the rules that can match somewhere in `text` (before the checks).
    fn candidates(&self, text: &str) -> Vec<usize> {
        match &self.set {
            _ if text.is_empty() => Vec::new(),
            Some(set) => {
                if set.is_match(text) {
                    set.matches(text).into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            None => (0..self.rules.len())
                .filter(|&i| self.rules[i].regex.is_match(text))
                .collect(),
        }
    }

    /// Every finding, sorted by `(start, end, rule)`; of findings with the same span only the
    /// earliest rule is kept. Spans of different rules may overlap.
    pub fn scan(&self, text: &str, offsets: Offsets) -> Vec<Finding> {
        let mut found = match Normalized::new(text) {
            None => self.scan_read(text),
            Some(norm) => {
                let mut found = self.scan_read(&norm.text);
                for f in &mut found {
                    (f.start, f.end) = (norm.orig_start(f.start), norm.orig_end(f.end));
                }
                found
            }
        };
        found.sort_unstable();
        found.dedup_by(|b, a| a.start == b.start && a.end == b.end);
        if offsets == Offsets::Chars {
            to_char_offsets(text, &mut found);
        }
        found
    }

    /// Findings in the text the rules read (normalised), as byte ranges of it, unsorted.
    fn scan_read(&self, text: &str) -> Vec<Finding> {
        let candidates = self.candidates(text);
        let rule_findings = |&i: &usize| {
            let mut out = Vec::new();
            self.rules[i].for_each(text, |start, end| {
                out.push(Finding { start, end, rule: i });
                true
            });
            out
        };
        if text.len() >= PARALLEL_RULES_MIN_BYTES && candidates.len() > 1 {
            candidates.par_iter().flat_map_iter(rule_findings).collect()
        } else {
            candidates.iter().flat_map(rule_findings).collect()
        }
    }

    /// Whether `text` holds at least one finding (stops at the first).
    pub fn contains(&self, text: &str) -> bool {
        match Normalized::new(text) {
            None => self.contains_read(text),
            Some(norm) => self.contains_read(&norm.text),
        }
    }

    fn contains_read(&self, text: &str) -> bool {
        self.candidates(text).into_iter().any(|i| {
            let mut hit = false;
            self.rules[i].for_each(text, |_, _| {
                hit = true;
                false
            });
            hit
        })
    }

    /// `text` with every finding replaced by `placeholder`, in which each `{rule_id}` becomes
    /// the rule's id. Overlapping findings merge into one replacement, labelled with the rule
    /// of the first of them in scan order (earliest start, then shortest).
    pub fn redact(&self, text: &str, placeholder: &str) -> String {
        let found = self.scan(text, Offsets::Bytes);
        if found.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        let mut i = 0;
        while i < found.len() {
            let Finding { start, mut end, rule } = found[i];
            i += 1;
            while i < found.len() && found[i].start < end {
                end = end.max(found[i].end);
                i += 1;
            }
            out.push_str(&text[pos..start]);
            out.push_str(&placeholder.replace("{rule_id}", &self.rules[rule].id));
            pos = end;
        }
        out.push_str(&text[pos..]);
        out
    }

    pub fn scan_batch<S: AsRef<str> + Sync>(&self, texts: &[S], offsets: Offsets) -> Vec<Vec<Finding>> {
        texts.par_iter().map(|t| self.scan(t.as_ref(), offsets)).collect()
    }

    pub fn contains_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<bool> {
        texts.par_iter().map(|t| self.contains(t.as_ref())).collect()
    }

    /// Whether `text` holds a finding as written, or in one of its decoded forms (JSON string
    /// escapes, percent-encoded and base64 runs; see [`decode`]) within `limits`: what
    /// `SecretPolicy` refuses.
    pub fn contains_decoded(&self, text: &str, limits: DecodeLimits) -> bool {
        self.contains(text) || decode::any_view(text, limits, |view| self.contains(view))
    }

    pub fn contains_decoded_batch<S: AsRef<str> + Sync>(&self, texts: &[S], limits: DecodeLimits) -> Vec<bool> {
        texts.par_iter().map(|t| self.contains_decoded(t.as_ref(), limits)).collect()
    }

    /// The index of the first of `docs` (JSON texts) holding a string, an object key or a value,
    /// that [`Scanner::contains_decoded`] flags, or a `\u` escape of a lone surrogate (which only
    /// Python can judge as it is: the caller checks that text again); `None` when there is none.
    /// The texts are read in parallel and each distinct string is scanned once, in parallel.
    /// Errors: `(index, byte offset)` of the first text that is not JSON.
    pub fn first_flagged_json<S: AsRef<str> + Sync>(
        &self,
        docs: &[S],
        limits: DecodeLimits,
    ) -> std::result::Result<Option<usize>, (usize, usize)> {
        let read: Vec<_> = docs.par_iter().map(|d| json::strings(d.as_ref())).collect();
        // Each distinct string with the first text it is in (texts in order, so the lowest).
        let mut first_in: HashMap<&str, usize> = HashMap::new();
        let mut lone: Option<usize> = None;
        for (i, strings) in read.iter().enumerate() {
            match strings {
                Ok(strings) => {
                    for s in strings {
                        first_in.entry(s.as_ref()).or_insert(i);
                    }
                }
                Err(JsonTextError::Invalid(at)) => return Err((i, *at)),
                Err(JsonTextError::LoneSurrogate) => {
                    lone.get_or_insert(i);
                }
            }
        }
        let distinct: Vec<(&str, usize)> = first_in.into_iter().collect();
        let flagged = distinct
            .par_iter()
            .filter(|(s, _)| self.contains_decoded(s, limits))
            .map(|&(_, i)| i)
            .min();
        Ok(match (flagged, lone) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    pub fn redact_batch<S: AsRef<str> + Sync>(&self, texts: &[S], placeholder: &str) -> Vec<String> {
        texts.par_iter().map(|t| self.redact(t.as_ref(), placeholder)).collect()
    }
}

/// Rewrites byte offsets (each on a char boundary of `text`) as char offsets, in one pass.
fn to_char_offsets(text: &str, found: &mut [Finding]) {
    if found.is_empty() || text.is_ascii() {
        return;
    }
    let mut bounds: Vec<usize> = found.iter().flat_map(|f| [f.start, f.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut chars_at: Vec<usize> = Vec::with_capacity(bounds.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    for &b in &bounds {
        chars += text.as_bytes()[byte..b].iter().filter(|&&x| (x as i8) >= -0x40).count();
        byte = b;
        chars_at.push(chars);
    }
    let to_char = |b: usize| chars_at[bounds.partition_point(|&x| x < b)];
    for f in found.iter_mut() {
        f.start = to_char(f.start);
        f.end = to_char(f.end);
    }
}

#[cfg(test)]
mod tests;
