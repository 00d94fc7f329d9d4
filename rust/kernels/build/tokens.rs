//! Generates the token kernel's data into `OUT_DIR`:
//!
//! * `tokens_<encoding>.bin.zst`: OpenAI's BPE rank table, as embedded by the `tiktoken-rs` crate,
//!   flattened to `n: u32` (little endian), `lengths: [u8; n]`, then the token bytes in rank
//!   order, and compressed with zstd (level 19): 3.2 MB of tables become 1.2 MB of the extension,
//!   unpacked once on first use in a few milliseconds.
//! * `tokens_class_blocks.bin` + `tokens_classes.rs`: a two-level table giving, for every code
//!   point, which of the pre-tokenizer regexes' character classes it belongs to. The classes
//!   come from `regex-syntax`, the parser behind the `regex`/`fancy-regex` engines tiktoken's
//!   patterns run on, so their Unicode data is the same.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regex_syntax::hir::{Class, HirKind};

/// Class bits; keep in sync with `src/tokens/classes.rs`.
const CLASSES: [(u8, &str); 5] = [
    (1, r"\p{L}"),
    (2, r"\p{N}"),
    (4, r"\s"),
    (8, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
    (16, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
];
const NEWLINE: u8 = 32;
const BLOCK: usize = 256;
const N_CODE_POINTS: usize = 0x11_0000;

pub fn generate() {
    println!("cargo:rerun-if-changed=build/tokens.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    write_ranks(&out, "o200k_base", tiktoken_rs::o200k_base().expect("tiktoken-rs builds o200k_base"));
    write_ranks(&out, "cl100k_base", tiktoken_rs::cl100k_base().expect("tiktoken-rs builds cl100k_base"));
    write_classes(&out);
}

fn write_ranks(out: &Path, name: &str, bpe: tiktoken_rs::CoreBPE) {
    // Mergeable ranks are 0..n without gaps; the special tokens sit above a gap, so the first
    // rank that does not decode ends the table.
    let mut lengths = Vec::new();
    let mut bytes = Vec::new();
    for rank in 0u32.. {
        match bpe.decode_bytes(&[rank]) {
            Ok(token) => {
                lengths.push(u8::try_from(token.len()).expect("tokens are at most 255 bytes"));
                bytes.extend_from_slice(&token);
            }
            Err(_) => break,
        }
    }
    let n = lengths.len();
    assert!(n > 50_000, "{name}: only {n} ranks decoded");
    let mut blob = Vec::with_capacity(4 + n + bytes.len());
    blob.extend_from_slice(&u32::try_from(n).expect("rank count fits u32").to_le_bytes());
    blob.extend_from_slice(&lengths);
    blob.extend_from_slice(&bytes);
    let packed = zstd::bulk::compress(&blob, 19).expect("zstd compresses the rank table");
    std::fs::write(out.join(format!("tokens_{name}.bin.zst")), packed).expect("write rank table");
}

fn class_ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::Parser::new().parse(pattern).expect("valid class pattern");
    match hir.kind() {
        HirKind::Class(Class::Unicode(cls)) => cls.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(),
        other => panic!("{pattern} did not parse to a Unicode class: {other:?}"),
    }
}

fn write_classes(out: &Path) {
    let mut table = vec![0u8; N_CODE_POINTS];
    for (bit, pattern) in CLASSES {
        for (lo, hi) in class_ranges(pattern) {
            for cp in lo..=hi {
                table[cp as usize] |= bit;
            }
        }
    }
    table[usize::from(b'\r')] |= NEWLINE;
    table[usize::from(b'\n')] |= NEWLINE;

    // Two levels: code point >> 8 picks a 256-entry block; identical blocks are stored once.
    let mut blocks: Vec<&[u8]> = Vec::new();
    let mut index = Vec::with_capacity(N_CODE_POINTS / BLOCK);
    for block in table.chunks(BLOCK) {
        let id = blocks.iter().position(|b| *b == block).unwrap_or_else(|| {
            blocks.push(block);
            blocks.len() - 1
        });
        index.push(u16::try_from(id).expect("fewer than 65536 distinct blocks"));
    }
    std::fs::write(out.join("tokens_class_blocks.bin"), blocks.concat()).expect("write class blocks");
    let mut src = String::new();
    writeln!(src, "pub(crate) static CLASS_INDEX: [u16; {}] = [", index.len()).unwrap();
    for row in index.chunks(32) {
        let row: Vec<String> = row.iter().map(u16::to_string).collect();
        writeln!(src, "    {},", row.join(", ")).unwrap();
    }
    writeln!(src, "];").unwrap();
    std::fs::write(out.join("tokens_classes.rs"), src).expect("write class index");
}
