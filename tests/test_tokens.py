# ruff: noqa: RUF001  (the corpus is multilingual on purpose: look-alike characters are the point)
"""Token counting.

Estimators are checked against their Python one-liners. Exact counts and ids are checked against
tiktoken itself: its reference encoders are built offline from the rank tables compiled into
mindcore, after checking those tables byte for byte against OpenAI's files (the sha256 that
``tiktoken_ext.openai_public`` pins), with tiktoken's own patterns and special tokens.
"""

from __future__ import annotations

import base64
import doctest
import functools
import hashlib
import json
import math
import random
import threading
import time
from typing import Any
from unittest import mock

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public
from conftest import shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

import mindcore.kernels.tokens
from mindcore import _core
from mindcore.kernels import (
    ENCODINGS,
    count_tokens,
    decode,
    encode,
    estimate_message_tokens,
    estimate_tokens,
)

# --- the reference: tiktoken, offline ------------------------------------------------------------


@functools.cache
def _openai_spec(name: str) -> dict[str, Any]:
    """tiktoken_ext.openai_public's constructor for `name`, with its file download replaced by our
    table; records the sha256 of the canonical file text and the hash tiktoken expects."""
    seen: dict[str, str] = {}

    def load_tiktoken_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        ranks = _core.token_ranks(name)
        text = "".join(f"{base64.b64encode(tok).decode()} {rank}\n" for rank, tok in enumerate(ranks))
        seen.update(url=url, expected=str(expected_hash), actual=hashlib.sha256(text.encode()).hexdigest())
        return {tok: rank for rank, tok in enumerate(ranks)}

    with mock.patch.object(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe):
        spec: dict[str, Any] = getattr(openai_public, name)()
    return {**spec, "_hash": seen}


@functools.cache
def reference(name: str) -> tiktoken.Encoding:
    spec = _openai_spec(name)
    assert spec["_hash"]["actual"] == spec["_hash"]["expected"], "rank table is not OpenAI's"
    return tiktoken.Encoding(
        name=f"reference_{name}",
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def visible_split(name: str, chunks: list[str]) -> list[str]:
    """tiktoken's own pre-tokenization of "".join(chunks): with a vocabulary holding every
    substring of every chunk, BPE merges each regex piece into exactly one token (any two
    adjacent parts of a piece join into a substring, which is a token), so decoding token by
    token shows the pieces. Valid when no piece crosses a chunk boundary (chunks end in "\\n"
    and start with an ASCII letter, where a piece always ends)."""
    vocab = {bytes([b]) for b in range(256)}
    for chunk in chunks:
        b = chunk.encode()
        vocab.update(b[i:j] for i in range(len(b)) for j in range(i + 2, len(b) + 1))
    ranks = {tok: r for r, tok in enumerate(sorted(vocab, key=lambda t: (len(t), t)))}
    enc = tiktoken.Encoding(
        name=f"visible_{name}",
        pat_str=_openai_spec(name)["pat_str"],
        mergeable_ranks=ranks,
        special_tokens={},
    )
    return [enc.decode_single_token_bytes(t).decode() for t in enc.encode_ordinary("".join(chunks))]


@functools.cache
def shared_texts() -> tuple[str, ...]:
    """LoCoMo turns, tool descriptions (BFCL, MetaTool) and BFCL tool specs as JSON."""
    locomo, bfcl, metatool = (
        shared_data("locomo", "locomo10.json"),
        shared_data("tools", "bfcl", "tool_pool.jsonl"),
        shared_data("tools", "metatool", "plugin_des.json"),
    )
    texts: list[str] = []
    for conv in json.loads(locomo.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                texts += [t["text"] for t in session] + [
                    t["blip_caption"] for t in session if t.get("blip_caption")
                ]
    for line in bfcl.read_text().splitlines():
        tool = json.loads(line)
        texts += [tool["description"], line]
    texts += list(json.loads(metatool.read_text()).values())
    return tuple(texts)


# --- a varied corpus ---------------------------------------------------------------------------

CORPUS = [
    "",
    "a",
    " ",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. 1234567890",
    # contractions in every case, and apostrophes that are not contractions
    "I'm sure it's fine, we'll see; they've gone, you're late, he'd know, don't",
    "I'M SURE IT'S FINE, WE'LL SEE; THEY'VE GONE, YOU'RE LATE, HE'D KNOW, DON'T",
    "it'S We'Ll 'll 's 'x ''s rock'n'roll Mc'Donald 'tis O'Neill's",
    "Long s: \u017f, '\u017f, A'\u017f; Kelvin: \u212a '\u212a",
    # scripts: CJK, Japanese, Korean, Arabic, Hebrew, Devanagari, Thai, Cyrillic, Greek
    "中文分词测试，包括标点符号。日本語のテキスト、カタカナ。한국어 텍스트입니다.",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥ و 123.",
    "שלום עולם! עברית עם ניקוד: בְּרֵאשִׁית",
    "नमस्ते दुनिया। हिन्दी में संख्या १२३ और मात्राएँ",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
    "Привет, МИР! Ёжик в тумане. ΑΒΓ αβγ Ωμέγα ǅemal ǈ ǋ",
    # combining marks, decomposed accents, zero-width characters
    "e\u0301te\u0301 cafe\u0301 A\u030a n\u0303 \u0301\u0301\u0301 x\u20dd \u200b\u200c\u200d\ufeff",
    "Z\u0351\u0352\u0353a\u0300\u0301\u0302\u0303\u0304l\u0305g\u0306o\u0307",
    # emoji, ZWJ sequences, skin tones, flags, keycaps, variation selectors
    "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇩🇪 1️⃣ #️⃣ ❤️ ☺︎ 🧑🏿‍🚀",
    "emoji\U0001f600word word\U0001f600 \U0001f600 \U0001f600\U0001f600",
    # code
    'def f(x: int) -> int:\n    """Doc."""\n    return x ** 2  # square\n\n\nclass A(B):\n\tpass\n',
    'fn main() { let v: Vec<u32> = (0..10).map(|x| x * 2).collect(); println!("{v:?}"); }',
    '{"a": [1, 2.5e-3, null, true], "b": {"c": "d\\n"}} // http://example.com/a/b?c=d&e=f',
    "SELECT * FROM t WHERE a >= 10 AND b <> 'x'; -- comment\r\n",
    '<html><body><p class="x">Hi</p></body></html>',
    "path/to/file.py:12:5: E501 line too long (120 > 110 characters)",
    "a//b///c/\n/\n//\r\n/x !/\n/\n",
    # whitespace runs
    "a  b   c    d\t\te\t \tf \t g",
    "line1\nline2\r\nline3\rline4\n\n\nline5\r\n\r\n",
    "trailing spaces   ",
    "trailing newline\n",
    "trailing mix \t \n \t ",
    "   leading",
    "\n\n\n",
    " \n \n ",
    "\t\t\t",
    "x \u00a0 \u2003 \u3000 y \u2028 z \u2029 \x85 \x0b \x0c \x1c \x1d \x1e \x1f",
    "    def indented():\n        return 1\n    \n",
    # digits
    "1 12 123 1234 12345 123456 1234567 3.14159 1,000,000 -42 1e10 0x1F",
    "٠١٢٣٤٥٦٧٨٩ ०१२३ ½ ⅓ Ⅻ ①②③ 𝟏𝟐𝟑",
    # special tokens are ordinary text
    "<|endoftext|> <|fim_prefix|><|fim_middle|><|fim_suffix|> <|endofprompt|>",
    # controls, private use, noncharacters, the last code point
    "\x00\x01\x02 \x7f \ue000\uf8ff \ufffe\uffff \U0010ffff \U000e0001\U000e0041",
    # long strings
    "a" * 100_000,
    " " * 50_000 + "x",
    "ab1 " * 25_000,
    "\U0001f600" * 20_000,
    "\u0301" * 30_000,
    "Σ" * 10_000 + "σ" * 10_000,
    "".join(chr(c) for c in range(32, 0x3000) if not 0xD800 <= c < 0xE000),
]


@pytest.mark.parametrize("name", ENCODINGS)
def test_rank_tables_are_openais(name: str) -> None:
    spec = _openai_spec(name)
    seen = spec["_hash"]
    assert seen["url"].endswith(f"/{name}.tiktoken")
    assert seen["expected"] and seen["actual"] == seen["expected"]
    assert len(spec["mergeable_ranks"]) == {"o200k_base": 199_998, "cl100k_base": 100_256}[name]


@pytest.mark.parametrize("name", ENCODINGS)
def test_ids_and_counts_equal_tiktoken_on_the_corpus(name: str) -> None:
    ref = reference(name)
    for text in CORPUS:
        want = ref.encode_ordinary(text)
        assert encode(text, name) == want, text[:80]
        assert count_tokens(text, name) == len(want)
        assert decode(want, name) == text
    assert count_tokens(CORPUS, name) == [len(ids) for ids in ref.encode_ordinary_batch(CORPUS)]


@pytest.mark.parametrize("name", ENCODINGS)
def test_shared_data_counts_equal_tiktoken(name: str) -> None:
    ref = reference(name)
    texts = list(shared_texts())
    assert count_tokens(texts, name) == [len(ids) for ids in ref.encode_ordinary_batch(texts)]
    for text in texts[::97]:
        assert encode(text, name) == ref.encode_ordinary(text)
    # One 2+ MB document: counted and encoded in parallel chunks, still exact.
    doc = "\n".join(texts[:20_000])
    assert len(doc) > 1 << 21
    want = ref.encode_ordinary(doc)
    assert count_tokens(doc, name) == len(want)
    assert encode(doc, name) == want


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_equals_tiktoken(text: str) -> None:
    for name in ENCODINGS:
        assert encode(text, name) == reference(name).encode_ordinary(text)


# Characters of every class the two patterns tell apart, the contraction letters and apostrophe.
TRICKY = (
    "aAsStTrReEvVmMlLdDxX'\u017f\u212aéÉǅʰ中א\u0301\u0903\u20dd17٥Ⅷ½   \t\n\r\u00a0\u2028\u3000\x85\x0b\x1c"
    "!/.,$€«\u00ad\x00\U0001f600\u200d\ufe0f\U0001f3fb\ue000"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=60))
def test_tricky_text_equals_tiktoken(text: str) -> None:
    for name in ENCODINGS:
        assert encode(text, name) == reference(name).encode_ordinary(text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=14))
def test_pre_tokenizer_pieces_equal_tiktokens(text: str) -> None:
    chunk = f"Z{text}\n"
    for name in ENCODINGS:
        assert _core.split_tokens(chunk, name) == visible_split(name, [chunk])


def _code_point_chunks(cps: list[int]) -> list[str]:
    contexts = [("", "a"), ("a", ""), ("A", ""), ("", "A"), ("", "Aa"), ("ʰ", "A"), ("1", "1"), (" ", " "),
                ("!", "!"), ("!!", ""), ("\u0301", ""), ("", "'s"), ("\t", "\n"), ("", "\u0301")]  # fmt: skip
    return [f"Z{chr(c)}{chr(c)}\n" for c in cps] + [f"Z{x}{chr(c)}{y}\n" for c in cps for x, y in contexts]


def _sample_code_points() -> list[int]:
    """Blocks new in Unicode 15.0, 15.1 and 16.0 (the versions a regex engine's tables may lag
    behind: letters, marks and digits there are unassigned in older data), a few famous special
    cases and a random sample of everything else."""
    new_blocks = [(0x10EC0, 0x10EFF), (0x11B00, 0x11B5F), (0x11F00, 0x11F5F), (0x1D2C0, 0x1D2DF),
                  (0x1E030, 0x1E08F), (0x1E4D0, 0x1E4FF), (0x2FFC, 0x2FFF), (0x31EF, 0x31EF),
                  (0x105C0, 0x105FF), (0x10D40, 0x10D8F), (0x11380, 0x113FF), (0x116D0, 0x116FF),
                  (0x11BC0, 0x11BFF), (0x16100, 0x1613F), (0x16D40, 0x16D7F), (0x1E5D0, 0x1E5FF),
                  (0x1C89, 0x1C8A), (0xA7CB, 0xA7CD), (0xA7DA, 0xA7DC)]  # fmt: skip
    cps = [c for lo, hi in new_blocks for c in range(lo, hi + 1)]
    cps += [0x17F, 0x212A, 0x130, 0x131, 0x1E9E, 0x2126, 0x85, 0xA0, 0x180E, 0x200B, 0x2028, 0xFEFF, 0x10FFFF]
    rng = random.Random(20240601)
    cps += [c for c in rng.sample(range(0x110000), 800) if not 0xD800 <= c < 0xE000]
    # Egyptian hieroglyphs Ext-A and CJK Ext H/I (16.0 / 15.0 / 15.1): big, uniform blocks.
    cps += (
        list(range(0x13460, 0x143FF, 97))
        + list(range(0x31350, 0x323AF, 97))
        + list(range(0x2EBF0, 0x2EE5D, 37))
    )
    return cps


@pytest.mark.parametrize("name", ENCODINGS)
def test_pre_tokenizer_pieces_equal_tiktokens_around_sampled_code_points(name: str) -> None:
    cps = _sample_code_points()
    for start in range(0, len(cps), 400):
        chunks = _code_point_chunks(cps[start : start + 400])
        assert _core.split_tokens("".join(chunks), name) == visible_split(name, chunks)


def test_code_point_contexts_tell_every_class_apart() -> None:
    """The contexts above split differently around a representative of each class the patterns
    distinguish, so a misclassified code point cannot pass unnoticed."""
    reps = {"Lu": "A", "Lt": "ǅ", "Ll": "a", "Lm": "ʰ", "Lo": "中", "Mn": "\u0301", "Nd": "7", "No": "½",
            "Zs": "\u3000", "space": " ", "newline": "\n", "Po": "!", "So": "\U0001f600", "Cc": "\x00"}  # fmt: skip
    # What each pattern cannot tell apart (cl100k_base has no letter cases; marks are punctuation).
    same_o200k = {"Lt": "Lu", "Lo": "Lm", "No": "Nd", "So": "Po", "Cc": "Po"}
    same_cl100k = {
        "Lt": "Lu",
        "Ll": "Lu",
        "Lm": "Lu",
        "Lo": "Lu",
        "No": "Nd",
        "So": "Po",
        "Cc": "Po",
        "Mn": "Po",
    }
    for name, same in [("o200k_base", same_o200k), ("cl100k_base", same_cl100k)]:
        seen: dict[tuple[tuple[int, ...], ...], str] = {}
        for label, ch in reps.items():
            chunks = _code_point_chunks([ord(ch)])
            structure = tuple(tuple(len(p) for p in _core.split_tokens(c, name)) for c in chunks)
            cls = same.get(label, label)
            assert seen.setdefault(structure, cls) == cls, f"{name}: {label} splits like {seen[structure]}"
        assert len(set(seen.values())) == len(set(reps)) - len(same)


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_code_point_in_context_equals_tiktoken(name: str) -> None:
    """Ids for every code point of planes 0-3 and 14 (and every 61st of the unassigned and
    private-use planes) next to letters, digits, spaces and punctuation."""
    ref = reference(name)
    cps = [
        c
        for c in range(0x110000)
        if (c >> 16 in (0, 1, 2, 3, 14) or c % 61 == 0) and not 0xD800 <= c < 0xE000
    ]
    for start in range(0, len(cps), 50_000):
        text = "".join(
            f"a{chr(c)}A{chr(c)}{chr(c)}1{chr(c)} {chr(c)}!\n" for c in cps[start : start + 50_000]
        )
        assert encode(text, name) == ref.encode_ordinary(text), hex(cps[start])


@pytest.mark.parametrize("name", ENCODINGS)
def test_lone_surrogates_are_replaced_like_tiktoken(name: str) -> None:
    ref = reference(name)
    texts = ["a\ud800b", "\udfff", "x\ud83d\ude00y", "ok"]
    for text in texts:
        want = ref.encode_ordinary(text)
        assert encode(text, name) == want
        assert count_tokens(text, name) == len(want)
    assert count_tokens(texts, name) == [len(ref.encode_ordinary(t)) for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=100_255), max_size=12))
def test_decode_equals_tiktoken(ids: list[int]) -> None:
    for name in ENCODINGS:
        assert decode(ids, name) == reference(name).decode(ids)


def test_decode_special_tokens_and_empty() -> None:
    for name in ENCODINGS:
        for text, token in _openai_spec(name)["special_tokens"].items():
            assert decode([token], name) == text
        assert decode([], name) == ""
    assert decode((13225, 11, 2375, 0)) == "Hello, world!"


def test_empty_inputs() -> None:
    assert count_tokens("") == 0
    assert count_tokens([]) == []
    assert encode("") == []
    assert estimate_tokens("") == 0
    assert estimate_tokens([]) == []
    assert estimate_message_tokens([]) == 0


def test_sequences_of_any_kind() -> None:
    texts = ["a b", "c", "dé f"]
    want = count_tokens(texts)
    assert count_tokens(tuple(texts)) == want
    assert count_tokens(t for t in texts) == want
    assert count_tokens(iter(texts), "cl100k_base") == count_tokens(texts, "cl100k_base")
    assert estimate_tokens(t for t in texts) == estimate_tokens(texts)
    assert estimate_message_tokens(t for t in texts) == estimate_message_tokens(texts)


def test_errors() -> None:
    with pytest.raises(
        ValueError, match=r'encoding: unknown encoding "gpt2"; supported: "o200k_base", "cl100k_base"'
    ):
        count_tokens("x", "gpt2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown encoding"):
        count_tokens(["x"], "r50k_base")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown encoding"):
        encode("x", "O200K_BASE")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown encoding"):
        decode([1], "")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"text_or_texts: expected str or a sequence of str, got int"):
        count_tokens(3)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"text_or_texts: expected str or a sequence of str, got bytes"):
        count_tokens(b"abc")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"text_or_texts\[1\]: expected str, got NoneType"):
        count_tokens(["a", None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"text: expected str, got list"):
        encode(["a"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ids: ids\[1\] = 199998 is not a token of o200k_base"):
        decode([1, 199_998])
    with pytest.raises(ValueError, match=r"ids\[0\] = -1 is not a token of cl100k_base"):
        decode([-1], "cl100k_base")
    with pytest.raises(ValueError, match=r"ids\[0\] = 100256 is not a token"):
        decode([100_256], "cl100k_base")
    with pytest.raises(TypeError):
        decode(["1"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="ids: expected a sequence of int, got str"):
        decode("12")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"rule: must be \"chars\" or \"bytes\", got \"words\""):
        estimate_tokens("x", rule="words")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="rule"):
        estimate_tokens(["x"], rule="Chars")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"text_or_texts\[0\]: expected str, got int"):
        estimate_tokens([1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="texts: expected str or a sequence of str, got str"):
        estimate_message_tokens("hello")
    with pytest.raises(TypeError, match=r"texts\[0\]: expected str, got bytes"):
        estimate_message_tokens([b"x"])  # type: ignore[list-item]


# --- estimators against the one-liners -----------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=8))
def test_estimators_equal_the_one_liners(texts: list[str]) -> None:
    assert estimate_tokens(texts) == [math.ceil(len(t) / 4) for t in texts]
    assert estimate_tokens(texts, rule="bytes") == [len(t.encode("utf-8")) // 4 for t in texts]
    for t in texts:
        assert estimate_tokens(t) == math.ceil(len(t) / 4)
        assert estimate_tokens(t, rule="bytes") == len(t.encode("utf-8")) // 4
    assert estimate_message_tokens(texts) == math.ceil((sum(len(t) for t in texts) + 20 * len(texts)) / 4)


def test_estimators_on_every_string_storage() -> None:
    # CPython stores str as 1, 2 or 4 bytes per code point; the UTF-8 length is read from each.
    for text in [
        "",
        "ascii only",
        "latin-1: café ÿ",
        "ucs-2: ߿ࠀ中文 \uffff",
        "ucs-4: 😀 \U00010000 \U0010ffff",
        "é" * 1001,
    ]:
        assert estimate_tokens(text, rule="bytes") == len(text.encode()) // 4
        assert estimate_tokens(text) == -(-len(text) // 4)
    # Lone surrogates count as `surrogatepass` encodes them (3 bytes each).
    for text in ["\ud800", "ab\udfff\ud800c", "\U0001f600\ud800"]:
        assert estimate_tokens(text, rule="bytes") == len(text.encode("utf-8", "surrogatepass")) // 4


def test_count_releases_the_gil() -> None:
    """A thread that wakes every millisecond needs the GIL to count a wake-up. If the native call
    held the GIL the thread would wake at most once per call (between calls); released, it keeps
    ticking (checked: a GIL-holding C call such as ``sum(range(n))`` fails this)."""
    text = "Words and more words, 123.\n" * 80_000  # ~2 MB
    ticks = 0
    stop = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            time.sleep(0.001)
            ticks += 1

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        elapsed, during = 0.0, 0
        while elapsed < 0.05:
            before, t0 = ticks, time.perf_counter()
            count_tokens(text, "cl100k_base")
            elapsed += time.perf_counter() - t0
            during += ticks - before
    finally:
        stop.set()
        thread.join()
    assert during >= 0.3 * elapsed / 0.001, (during, elapsed)


def test_docstring_examples() -> None:
    assert doctest.testmod(mindcore.kernels.tokens).failed == 0


# --- the piece cache and parallel chunks ---------------------------------------------------------

WORDS = ["the", " the", "The", " tokenizer", "tokenizers", " naïve", " café", "’s", "'ll", "don't", " 12345",
         " 3.14", "  ", "\n\n", " \t ", "😀", "👍🏽", "中文分词", " Привет", "__init__", "->", "{\"a\": 1}", "\u0301"]  # fmt: skip
TEXT_PARTS = st.one_of(st.sampled_from(WORDS), st.text(alphabet=TRICKY, max_size=8))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(TEXT_PARTS, max_size=30).map("".join), max_size=40))
def test_batches_that_repeat_pieces_equal_tiktoken(texts: list[str]) -> None:
    """Pieces that recur across a batch's texts are merged once per thread and reused."""
    for name in ENCODINGS:
        ref = reference(name)
        want = ref.encode_ordinary_batch(texts)
        assert count_tokens(texts, name) == [len(ids) for ids in want]
        assert [encode(t, name) for t in texts] == want


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("azAZ"), st.lists(TEXT_PARTS, max_size=12)), min_size=1, max_size=30)
)
def test_long_texts_in_parallel_chunks_equal_tiktoken(lines: list[tuple[str, list[str]]]) -> None:
    """A text over 128 KB is cut where a line starts with an ASCII letter and its chunks are
    encoded on several threads; the ids must not change at the cuts."""
    block = "".join(f"{first}{''.join(parts)}\n" for first, parts in lines)
    text = block * (200_000 // len(block) + 1)
    for name in ENCODINGS:
        want = reference(name).encode_ordinary(text)
        assert encode(text, name) == want
        assert count_tokens(text, name) == len(want)
        assert count_tokens([text, block], name) == [len(want), len(reference(name).encode_ordinary(block))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "Z", "é", " ", "\n", "\t", "1", "!", "😀", "\u0301", "ab", "'s"]),
                          st.integers(1, 3000)), min_size=1, max_size=4))  # fmt: skip
def test_very_long_pieces_equal_tiktoken(runs: list[tuple[str, int]]) -> None:
    """Runs long enough to be one piece of thousands of bytes: merged without the cache, by the
    heap above 128 bytes."""
    text = "".join(ch * n for ch, n in runs)
    for name in ENCODINGS:
        want = reference(name).encode_ordinary(text)
        assert encode(text, name) == want
        assert count_tokens(text, name) == len(want)
        assert count_tokens([text, text], name) == [len(want)] * 2


def test_lone_surrogates_in_a_batch_that_repeats_pieces() -> None:
    texts = ["a\ud800b tokenizer", " tokenizer \udfff", "tokenizer tokenizer\ud83d\ude00"] * 3
    for name in ENCODINGS:
        assert count_tokens(texts, name) == [len(ids) for ids in reference(name).encode_ordinary_batch(texts)]


@pytest.mark.parametrize("name", ENCODINGS)
def test_long_id_lists_are_plain_fresh_lists(name: str) -> None:
    """A list of 50k+ ids is built from ints made once per encoding: each call still returns a
    new list of plain ints."""
    text = "Tokens of a long text, 12345 and naïve café 😀.\n" * 8_000
    want = reference(name).encode_ordinary(text)
    assert len(want) >= 50_000
    first = encode(text, name)
    assert first == want and type(first) is list and all(type(i) is int for i in first[:100])
    first[0] = -1
    assert encode(text, name) == want
