//! Where the time of exact counting goes, per phase (pre-tokenizer, whole-piece lookups,
//! merges), in this thread's CPU time so other processes on the machine do not blur it:
//!
//! ```text
//! MINDCORE_TOKENS_CORPUS=corpus.bin cargo test --release -p mindcore-kernels --lib tokens::prof -- --ignored --nocapture
//! ```
//!
//! The corpus file holds texts as (u32 little-endian byte length, UTF-8 bytes) records.

use super::*;

fn corpus() -> Vec<String> {
    let path = std::env::var("MINDCORE_TOKENS_CORPUS").expect("MINDCORE_TOKENS_CORPUS names the corpus file");
    let b = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let n = u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
        i += 4;
        out.push(String::from_utf8_lossy(&b[i..i + n]).into_owned());
        i += n;
    }
    out
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}
/// This thread's CPU time in ms (CLOCK_THREAD_CPUTIME_ID): not the time other processes take.
fn cpu_ms() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    unsafe { clock_gettime(3, &mut ts) };
    ts.sec as f64 * 1e3 + ts.nsec as f64 / 1e6
}

fn best<F: FnMut() -> usize>(mut f: F) -> (f64, usize) {
    let mut t = f64::MAX;
    let mut r = 0;
    for _ in 0..7 {
        let t0 = cpu_ms();
        r = f();
        t = t.min(cpu_ms() - t0);
    }
    (t, r)
}

#[test]
#[ignore]
fn profile_phases() {
    let texts = corpus();
    for enc in Encoding::ALL {
        let vocab = enc.vocab();
        let next = match enc {
            Encoding::O200kBase => pretok::next_o200k,
            Encoding::Cl100kBase => pretok::next_cl100k,
        };
        let (t, n) = best(|| {
            let mut n = 0;
            for t in &texts {
                let s = t.as_bytes();
                for_each_piece(s, 0, s.len(), next, |_| n += 1);
            }
            n
        });
        println!("{}: pretok {t:.1} ms, {n} pieces", enc.name());
        let (t, n) = best(|| {
            let mut n = 0;
            for t in &texts {
                let s = t.as_bytes();
                for_each_piece(s, 0, s.len(), next, |p| n += usize::from(vocab.rank(p).is_some()));
            }
            n
        });
        println!("{}: pretok+lookup {t:.1} ms, {n} one-token pieces", enc.name());
        let (t, n) = best(|| {
            let call = new_call();
            texts.iter().map(|t| enc.count_in(call, t)).sum()
        });
        println!("{}: count 1 thread {t:.1} ms, {n} tokens", enc.name());
        let (t, n) = best(|| enc.count_batch(&texts).iter().sum());
        println!("{}: count_batch {t:.1} ms, {n} tokens", enc.name());
        let doc = texts.join("\n");
        let doc = &doc[..doc.floor_char_boundary(1_000_000)];
        let (t, n) = best(|| enc.encode(doc).len());
        println!("{}: encode 1 MB doc {t:.1} ms, {n} tokens", enc.name());
        // pieces not a token: lengths
        let mut hist = [0usize; 8];
        let mut bytes_multi = 0;
        for t in &texts {
            let s = t.as_bytes();
            for_each_piece(s, 0, s.len(), next, |p| {
                if p.len() > 1 && vocab.rank(p).is_none() {
                    hist[(p.len().ilog2() as usize).min(7)] += 1;
                    bytes_multi += p.len();
                }
            });
        }
        println!("{}: multi-token pieces by log2 len {hist:?}, bytes {bytes_multi}", enc.name());
        let mut distinct = std::collections::HashSet::new();
        let mut distinct_all = std::collections::HashSet::new();
        let mut per_text = 0;
        for t in &texts {
            let s = t.as_bytes();
            let mut local = std::collections::HashSet::new();
            for_each_piece(s, 0, s.len(), next, |p| {
                distinct_all.insert(p.to_vec());
                if p.len() > 1 && vocab.rank(p).is_none() {
                    distinct.insert(p.to_vec());
                    local.insert(p.to_vec());
                }
            });
            per_text += local.len();
        }
        println!("{}: distinct multi {} (per-text sum {per_text}), distinct all {}", enc.name(), distinct.len(), distinct_all.len());
    }
}

