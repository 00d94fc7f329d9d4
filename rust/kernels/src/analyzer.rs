//! Text analysis for BM25: the tokenizer, then optional stop-word removal and an optional light
//! English suffix stemmer, so documents and queries are analysed the same way in one pass.
//!
//! The tokenizer lower-cases (full Unicode mapping) and keeps maximal runs of alphanumeric
//! characters. Stop words are matched against those lower-cased tokens, before stemming. The
//! stemmer strips one suffix of `ingly, edly, ing, ies, ied, ed, es, ly, s` (the first that
//! fits, in that order) when at least three characters remain; `ies`/`ied` become `y` when at
//! least two remain (`stories` -> `story`, `tried` -> `try`). It is deliberately light: it does
//! not conflate as much as Porter, and it never maps a word to something much shorter.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

/// A short list of English function words (articles, conjunctions, prepositions, auxiliaries,
/// wh-words, pronouns): words that say little about what a text is about.
pub const ENGLISH_STOP_WORDS: [&str; 55] = [
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is",
    "are", "was", "were", "be", "been", "being", "do", "does", "did", "what", "when", "where", "who", "whom",
    "which", "why", "how", "that", "this", "these", "those", "it", "its", "i", "you", "he", "she", "they", "we",
    "me", "him", "her", "them", "my", "your", "his", "their", "our",
];

static ENGLISH: LazyLock<HashSet<String>> = LazyLock::new(|| ENGLISH_STOP_WORDS.iter().map(|w| (*w).to_owned()).collect());

/// Lower-cases `text` (full Unicode mapping) and calls `f` on every maximal run of
/// alphanumeric characters (Unicode `Alphabetic` or `Numeric`, i.e. `char::is_alphanumeric`).
/// Everything else (spaces, punctuation, `_`, symbols) separates tokens.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let lower = text.to_lowercase();
    token_spans(&lower, |a, b| f(&lower[a..b]));
}

/// Byte spans of the tokens of an already lower-cased string.
pub(crate) fn token_spans(lower: &str, mut f: impl FnMut(usize, usize)) {
    let mut start = None;
    for (i, c) in lower.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                f(a, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        f(a, lower.len());
    }
}

/// The tokens of `text` as owned strings (see [`for_each_token`]).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

/// Longest first, so `ingly` is tried before `ly` and `ies` before `es`.
const SUFFIXES: [&str; 9] = ["ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"];
/// Characters a stem keeps at least (`ies`/`ied` keep one fewer, then gain the `y`).
const MIN_STEM: usize = 3;

/// The light suffix stemmer of the module docs, on one lower-cased token. Lengths count
/// characters, not bytes, so `ées` keeps its suffix like `abs` does.
pub fn stem(word: &str) -> Cow<'_, str> {
    let mut chars = None;
    for suffix in SUFFIXES {
        if !word.ends_with(suffix) {
            continue;
        }
        // Every suffix is ASCII: its byte length is its length in characters.
        let rest = *chars.get_or_insert_with(|| word.chars().count()) - suffix.len();
        let head = &word[..word.len() - suffix.len()];
        if suffix == "ies" || suffix == "ied" {
            if rest + 1 >= MIN_STEM {
                return Cow::Owned(format!("{head}y"));
            }
        } else if rest >= MIN_STEM {
            return Cow::Borrowed(head);
        }
    }
    Cow::Borrowed(word)
}

/// Which tokens an [`Analyzer`] drops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StopWords {
    /// Keep every token.
    #[default]
    None,
    /// [`ENGLISH_STOP_WORDS`].
    English,
    /// These words (lower-cased when the analyzer is built).
    Custom(HashSet<String>),
}

impl StopWords {
    /// `words`, lower-cased like the tokens they are compared with.
    pub fn custom<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Self {
        StopWords::Custom(words.into_iter().map(|w| w.as_ref().to_lowercase()).collect())
    }

    fn set(&self) -> Option<&HashSet<String>> {
        match self {
            StopWords::None => None,
            StopWords::English => Some(&ENGLISH),
            StopWords::Custom(words) => Some(words),
        }
    }

    /// The words, sorted (empty for [`StopWords::None`]).
    pub fn words(&self) -> Vec<String> {
        let mut out: Vec<String> = self.set().map(|s| s.iter().cloned().collect()).unwrap_or_default();
        out.sort_unstable();
        out
    }
}

/// Tokenizer + stop words + stemmer: what BM25 indexes and queries with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analyzer {
    pub stop_words: StopWords,
    pub stem: bool,
}

impl Analyzer {
    /// The tokenizer alone (no stop words, no stemming).
    pub fn plain() -> Self {
        Self::default()
    }

    /// English stop words removed, then the light stemmer.
    pub fn english() -> Self {
        Self { stop_words: StopWords::English, stem: true }
    }

    pub fn is_plain(&self) -> bool {
        !self.stem && self.stop_words == StopWords::None
    }

    /// Calls `f` on every term of `text`, in order.
    pub fn for_each_term(&self, text: &str, mut f: impl FnMut(&str)) {
        let stop = self.stop_words.set();
        for_each_token(text, |t| {
            if stop.is_some_and(|s| s.contains(t)) {
                return;
            }
            if self.stem {
                f(&stem(t));
            } else {
                f(t);
            }
        });
    }

    /// The terms of `text` as owned strings.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |t| out.push(t.to_owned()));
        out
    }

    /// The terms of `text` written into one buffer, with each term's byte span in it: a single
    /// allocation for a whole document (the plain analyzer's buffer is the lower-cased text).
    pub(crate) fn spans(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        let mut spans = Vec::new();
        if self.is_plain() {
            let lower = text.to_lowercase();
            token_spans(&lower, |a, b| spans.push((a, b)));
            return (lower, spans);
        }
        let mut buf = String::with_capacity(text.len());
        self.for_each_term(text, |t| {
            let a = buf.len();
            buf.push_str(t);
            spans.push((a, buf.len()));
        });
        (buf, spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_lowercases_and_splits_unicode() {
        assert_eq!(tokenize("Hello, WORLD! foo_bar x2"), ["hello", "world", "foo", "bar", "x2"]);
        assert_eq!(tokenize("Ünïcödé straße ΣΑΣ 東京タワー"), ["ünïcödé", "straße", "σας", "東京タワー"]);
        assert!(tokenize("  ... !!! ").is_empty());
    }

    #[test]
    fn stemmer_strips_the_first_suffix_that_leaves_enough() {
        for (word, want) in [
            ("drinks", "drink"),
            ("teas", "tea"),
            ("stories", "story"),
            ("tried", "try"),
            ("cries", "cry"),
            ("lies", "lie"), // "ies" would leave one character: fall through to "s"
            ("loving", "lov"),
            ("king", "king"),
            ("things", "thing"),
            ("amazingly", "amaz"),
            ("reportedly", "report"),
            ("bus", "bus"),
            ("gas", "gas"),
            ("ées", "ées"), // three characters, five bytes: too short to stem
            ("naïves", "naïv"),
            ("s", "s"),
            ("", ""),
        ] {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    #[test]
    fn english_analyzer_drops_stop_words_before_stemming() {
        let a = Analyzer::english();
        assert_eq!(a.terms("What does the user like to drink? Green teas!"), ["user", "like", "drink", "green", "tea"]);
        assert_eq!(a.terms("Stories she tried, loving it"), ["story", "try", "lov"]);
        assert_eq!(a.terms("hers"), ["her"]); // stemmed into a stop word: kept, the check runs first
        assert!(a.terms("the of what").is_empty());
        assert_eq!(Analyzer::plain().terms("The teas"), ["the", "teas"]);
    }

    #[test]
    fn custom_stop_words_are_lowercased_and_spans_match_terms() {
        let a = Analyzer { stop_words: StopWords::custom(["The", "PIE"]), stem: false };
        assert_eq!(a.terms("the Apple pie"), ["apple"]);
        assert_eq!(a.stop_words.words(), ["pie", "the"]);
        for analyzer in [Analyzer::plain(), Analyzer::english(), a] {
            for text in ["Stories she tried, ÉTÉS loving it", "", "ΣΑΣ straße"] {
                let (buf, spans) = analyzer.spans(text);
                let got: Vec<&str> = spans.iter().map(|&(a, b)| &buf[a..b]).collect();
                assert_eq!(got, analyzer.terms(text));
            }
        }
    }
}
