//! Checks against tiktoken's own Rust core (`tiktoken-rs` vendors it) and its regex engine
//! (`fancy-regex`) with the exact patterns of `tiktoken_ext/openai_public.py`.

use super::*;

const O200K_PAT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);
const CL100K_PAT: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

fn pattern(enc: Encoding) -> fancy_regex::Regex {
    fancy_regex::Regex::new(match enc {
        Encoding::O200kBase => O200K_PAT,
        Encoding::Cl100kBase => CL100K_PAT,
    })
    .unwrap()
}

fn regex_split<'a>(re: &fancy_regex::Regex, text: &'a str) -> Vec<&'a str> {
    re.find_iter(text).map(|m| m.unwrap().as_str()).collect()
}

fn tiktoken(enc: Encoding) -> &'static tiktoken_rs::CoreBPE {
    match enc {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

/// Characters from every class the patterns distinguish, and the contraction letters.
const ALPHABET: &[&str] = &[
    "a", "b", "s", "t", "l", "e", "r", "v", "m", "d", "S", "T", "L", "E", "R", "V", "M", "D", "X", "'", "'", "\u{17f}",
    "\u{212a}", "é", "É", "\u{1c5}", "\u{2b0}", "\u{4e2d}", "\u{5d0}", "\u{301}", "\u{903}", "\u{20dd}", "1", "7",
    "\u{665}", "\u{2167}", "\u{bd}", " ", " ", " ", "\t", "\n", "\r", "\u{a0}", "\u{2028}", "\u{3000}", "\u{85}",
    "\u{b}", "\u{c}", "\u{1c}", "!", "/", "/", ".", "\u{0}", "\u{1f600}", "\u{200d}", "\u{fe0f}", "\u{1f3fb}", "$",
    "€", "«", "\u{ad}", "\u{e000}", "\u{10ffff}", "\u{e0001}",
];

fn random_text(rng: &mut Rng, max_len: u64) -> String {
    let len = rng.next() % max_len;
    (0..len).map(|_| *rng.pick(ALPHABET)).collect()
}

#[test]
fn split_matches_the_regex_on_random_text() {
    for enc in Encoding::ALL {
        let re = pattern(enc);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..4000 {
            let text = random_text(&mut rng, 24);
            assert_eq!(enc.split(&text), regex_split(&re, &text), "{} {text:?}", enc.name());
        }
    }
}

/// Long ASCII letter runs (the pre-tokenizer skips them eight bytes at a time) broken by every
/// byte value that can end or continue them, and by non-ASCII letters of each case.
#[test]
fn split_matches_the_regex_on_letter_runs() {
    let breaks: Vec<String> = (0u8..0x80)
        .map(|b| (b as char).to_string())
        .chain(["é", "É", "\u{2b0}", "中", "\u{301}", "\u{17f}", "\u{1c5}", "😀", "\u{a0}"].map(String::from))
        .collect();
    for enc in Encoding::ALL {
        let re = pattern(enc);
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..rng.next() % 6 + 1 {
                let len = rng.next() % 20;
                let case = rng.next() % 4;
                for k in 0..len {
                    let letter = (b'a' + (rng.next() % 26) as u8) as char;
                    let upper = match case {
                        0 => false,
                        1 => true,
                        2 => k == 0,
                        _ => rng.next() % 2 == 0,
                    };
                    text.push(if upper { letter.to_ascii_uppercase() } else { letter });
                }
                let brk: &String = rng.pick(&breaks);
                text.push_str(brk);
            }
            assert_eq!(enc.split(&text), regex_split(&re, &text), "{} {text:?}", enc.name());
        }
    }
}

/// Every code point (every 7th above U+0800 in debug builds; `cargo test --release` checks all)
/// after and before letters of each kind, digits, spaces, marks and punctuation. The contexts
/// are joined by "\nZ", where a piece always ends (see `chunk_bounds`).
#[test]
fn split_matches_the_regex_for_every_code_point() {
    let step = if cfg!(debug_assertions) { 7 } else { 1 };
    let mut text = String::new();
    for c in (0..0x11_0000u32).filter(|&c| c < 0x800 || c % step == 0).filter_map(char::from_u32) {
        for ctx in ["a", "A", "\u{2b0}", "1", " ", "\u{301}", "!"] {
            text.push_str(ctx);
            text.push(c);
        }
        text.push(c);
        text.push(' ');
        text.push(c);
        text.push_str("\nZ");
    }
    for enc in Encoding::ALL {
        let re = pattern(enc);
        let ours = enc.split(&text);
        let theirs = regex_split(&re, &text);
        if ours != theirs {
            let k = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
            let show = |v: &[&str]| v.iter().skip(k).take(3).map(|p| format!("{p:?}")).collect::<Vec<_>>().join(" ");
            panic!("{}: first difference at piece {k}: {} vs {}", enc.name(), show(&ours), show(&theirs));
        }
    }
}

#[test]
fn contraction_letters_fold_like_the_regex_engine() {
    let all: String = (0..0x11_0000u32).filter_map(char::from_u32).collect();
    for (letter, extra) in [("s", "\u{17f}"), ("t", ""), ("r", ""), ("e", ""), ("v", ""), ("m", ""), ("l", ""), ("d", "")] {
        let re = regex::Regex::new(&format!("(?i:{letter})")).unwrap();
        let mut got: Vec<char> = re.find_iter(&all).map(|m| m.as_str().chars().next().unwrap()).collect();
        got.sort();
        let mut want: Vec<char> = format!("{letter}{}{extra}", letter.to_uppercase()).chars().collect();
        want.sort();
        assert_eq!(got, want, "(?i:{letter})");
    }
}

#[test]
fn ids_match_tiktoken() {
    let mut texts: Vec<String> = vec![
        String::new(),
        "Hello, world! It's a test: 12345678 + ñandú × 中文 😀👍🏽 👨‍👩‍👧".into(),
        "def f(x):\n\treturn x ** 2  # comment\n\n\n    \r\n".into(),
        "I'LL SEE IT'S DON'T we've they'd YOU'RE".into(),
        "<|endoftext|> is plain text here".into(),
        "a".repeat(3000),
        " ".repeat(1000) + "x",
        "\u{301}".repeat(500),
        "abc123".repeat(5000),
    ];
    let mut rng = Rng(42);
    for _ in 0..2000 {
        texts.push(random_text(&mut rng, 60));
    }
    for enc in Encoding::ALL {
        let tk = tiktoken(enc);
        for text in &texts {
            let want = tk.encode_ordinary(text);
            assert_eq!(enc.encode(text), want, "{} {text:?}", enc.name());
            assert_eq!(enc.count(text), want.len());
            assert_eq!(enc.decode(&want).unwrap(), *text);
        }
        let counts = enc.count_batch(&texts);
        let ids = enc.encode_batch(&texts);
        for ((c, i), t) in counts.iter().zip(&ids).zip(&texts) {
            assert_eq!(*c, i.len());
            assert_eq!(*i, enc.encode(t));
        }
    }
}

#[test]
fn rank_tables_are_tiktokens() {
    for enc in Encoding::ALL {
        let tk = tiktoken(enc);
        let v = enc.vocab();
        assert_eq!(v.n_tokens(), if enc == Encoding::O200kBase { 199_998 } else { 100_256 });
        for rank in (0..v.n_tokens() as u32).step_by(97) {
            assert_eq!(v.token(rank), tk.decode_bytes(&[rank]).unwrap().as_slice());
            assert_eq!(v.rank(v.token(rank)), Some(rank));
        }
    }
}

#[test]
fn long_texts_count_in_parallel_chunks_exactly() {
    let para = "Some words, then code: fn main() { println!(\"hi\"); }\n  indented\nNext line 123.\n\n";
    let text: String = para.repeat(30_000);
    assert!(text.len() > PAR_TEXT_MIN);
    let bounds = chunk_bounds(text.as_bytes());
    assert!(bounds.len() > 3);
    for enc in Encoding::ALL {
        let mut sequential = Vec::new();
        let mut cache = PieceCache::default();
        for_each_piece(text.as_bytes(), 0, text.len(), |s, i| match enc {
            Encoding::O200kBase => pretok::next_o200k(s, i),
            Encoding::Cl100kBase => pretok::next_cl100k(s, i),
        }, |p| enc.vocab().encode_piece(p, &mut sequential, &mut cache));
        assert_eq!(enc.encode(&text), sequential);
        assert_eq!(enc.count(&text), sequential.len());
    }
    // No usable boundary: one chunk.
    assert_eq!(chunk_bounds("x".repeat(PAR_TEXT_MIN + 10).as_bytes()), vec![0, PAR_TEXT_MIN + 10]);
}

#[test]
fn decode_checks_ids_and_knows_special_tokens() {
    let enc = Encoding::O200kBase;
    assert_eq!(enc.decode(&[199_999]).unwrap(), "<|endoftext|>");
    let err = enc.decode(&[15339, 199_998]).unwrap_err();
    assert_eq!(err.to_string(), "ids: ids[1] = 199998 is not a token of o200k_base");
    // A token holding half of a UTF-8 sequence decodes to U+FFFD.
    let half = (0..enc.vocab().n_tokens() as u32).find(|&r| enc.vocab().token(r) == [0xe4]).unwrap();
    assert_eq!(enc.decode(&[half]).unwrap(), "\u{fffd}");
    assert_eq!(Encoding::from_name("cl100k_base").unwrap(), Encoding::Cl100kBase);
    assert_eq!(
        Encoding::from_name("gpt2").unwrap_err().to_string(),
        "encoding: unknown encoding \"gpt2\"; supported: \"o200k_base\", \"cl100k_base\""
    );
}

#[test]
fn estimators() {
    assert_eq!(estimate(Rule::Chars, 0, 0), 0);
    assert_eq!(estimate(Rule::Chars, 5, 0), 2);
    assert_eq!(estimate(Rule::Chars, 8, 0), 2);
    assert_eq!(estimate(Rule::Bytes, 0, 7), 1);
    assert_eq!(estimate(Rule::Bytes, 0, 8), 2);
    assert_eq!(estimate_messages(10, 2), 13);
    assert_eq!(estimate_messages(0, 0), 0);
    for s in ["", "abc", "héllo", "中文", "😀x", "\u{7ff}\u{800}\u{ffff}\u{10000}"] {
        let n = s.len();
        let ucs4: Vec<u32> = s.chars().map(|c| c as u32).collect();
        assert_eq!(utf8_len_ucs4(&ucs4), n);
        if ucs4.iter().all(|&c| c < 0x1_0000) {
            let ucs2: Vec<u16> = ucs4.iter().map(|&c| c as u16).collect();
            assert_eq!(utf8_len_ucs2(&ucs2), n);
        }
        if ucs4.iter().all(|&c| c < 0x100) {
            let ucs1: Vec<u8> = ucs4.iter().map(|&c| c as u8).collect();
            assert_eq!(utf8_len_ucs1(&ucs1), n);
        }
    }
    assert_eq!(utf8_len_ucs2(&[0xd800]), 3);
    let mut rng = Rng(7);
    for len in 0..70 {
        let s: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert_eq!(utf8_len_ucs1(&s), s.iter().map(|&b| if b < 0x80 { 1 } else { 2 }).sum::<usize>());
    }
    // Past the chunk sizes of the narrow lane sums.
    assert_eq!(utf8_len_ucs1(&[0xe9; 1000]), 2000);
    assert_eq!(utf8_len_ucs2(&[0x4e2d; 40_000]), 120_000);
    assert_eq!(utf8_len_ucs4(&[0x1f600; 3_000_000]), 12_000_000);
    assert_eq!(Rule::from_name("words").unwrap_err().to_string(), "rule: must be \"chars\" or \"bytes\", got \"words\"");
}
