"""The policy's bulk screen judges decoded forms in Rust (``SecretScanner.contains_batch_decoded``);
``mindcore.policy.decoded_views`` makes the same forms in Python for ``detect`` and redaction. The
two must refuse the same texts: JSON string escapes (surrogate pairs joined as Python joins them),
percent-encoded runs (invalid UTF-8 replaced), base64 and base64url runs (padding, validation,
printable text only), the runs of the JSON-unescaped text, and the caps on characters and runs.

Where exact agreement depends on Unicode tables (Python's and the Rust crate's differ in version)
or on lone surrogates (no UTF-8 holds them), the Rust side must be the stricter one: it refuses
everything Python refuses, and these tests check exactly that."""

from __future__ import annotations

import base64
import json
import unicodedata
import urllib.parse
from collections.abc import Sequence

import pytest
from conftest import shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

from mindcore.kernels import SecretRule, SecretScanner
from mindcore.policy import DECODE_MAX_CHARS, DECODE_MAX_RUNS, SecretPolicy, decoded_views

GITHUB = "ghp_R8fKq2Lm9Xv4Tz7Wn3Yb6Pc1Hd5Js0Ga2Ue4"
AWS = "AKIAHDU6GDPMRCG4BE4U"
ACME = "acme_0badc0de"  # a user rule's shape: short, so random views often hold one
SECRETS = [GITHUB, AWS, ACME, f"token é {GITHUB}", f"日本 {ACME}"]

SCANNER = SecretScanner([SecretRule("acme", r"acme_[0-9a-f]{8}")])
POLICY = SecretPolicy(scanner=SCANNER)


def python_refuses(text: str, scanner: SecretScanner = SCANNER) -> bool:
    """The reference: the raw text, then each of Python's decoded views, scanned one by one."""
    return scanner.contains(text) or any(scanner.contains(view) for _how, view, _span in decoded_views(text))


def rust_refuses(texts: Sequence[str], scanner: SecretScanner = SCANNER) -> list[bool]:
    return scanner.contains_batch_decoded(texts, max_chars=DECODE_MAX_CHARS, max_runs=DECODE_MAX_RUNS)


def assert_parity(texts: Sequence[str]) -> None:
    expected = [python_refuses(t) for t in texts]
    assert rust_refuses(texts) == expected, [t for t, e in zip(texts, expected, strict=True) if e]
    policy = SecretPolicy(scanner=SCANNER)
    assert [policy.contains(t) for t in texts] == expected
    assert policy.screen_batch(texts) == [None if e else t for t, e in zip(texts, expected, strict=True)]


def percent(text: str, lower: bool = False) -> str:
    quoted = "".join(f"%{b:02X}" for b in text.encode())
    return quoted.lower() if lower else quoted


def u_escaped(text: str, upper: bool = False) -> str:
    """Every character as ``\\uXXXX`` (astral ones as a surrogate pair)."""
    units = text.encode("utf-16-be")
    codes = (int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2))
    return "".join(f"\\u{c:04X}" if upper else f"\\u{c:04x}" for c in codes)


def b64(text: str, urlsafe: bool = False, pad: bool = True) -> str:
    raw = text.encode()
    out = (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()
    return out if pad else out.rstrip("=")


HARD_CASES = [
    # each encoding on its own
    f"callback?t={percent(GITHUB)}",
    f"callback?t={percent(GITHUB, lower=True)}",
    "id=" + urllib.parse.quote(GITHUB, safe="").replace("_", "%5F"),
    f"key {u_escaped(GITHUB)}",
    f"key {u_escaped(ACME, upper=True)}",
    f"blob {b64('token ' + GITHUB)} end",
    f"blob {b64('token ' + GITHUB, pad=False)} end",
    f"blob {b64('tok?>' + GITHUB + '~~>', urlsafe=True)} end",
    f"blob {b64('tok?>' + GITHUB + '~~>', urlsafe=True, pad=False)} end",
    # nested: JSON-escaped text whose unescaped form holds a base64 or percent run
    f"args {u_escaped(b64('token ' + GITHUB))}",
    f"args {u_escaped(percent(GITHUB))}",
    json.dumps({"k": "a " + b64(ACME + " x")}).replace("a", "\\u0061"),
    # surrogate pairs escaped, and lone or reversed escaped surrogates
    f"\\ud83d\\ude00 {u_escaped(GITHUB)}",
    f"\\ud83d {u_escaped(ACME)} \\ude00",
    f"\\ude00\\ud83d{u_escaped(ACME)}",
    "\\ud835\\udc1a\\ud835\\udc1c\\ud835\\udc26\\ud835\\udc1e_0badc0de",  # math bold "acme" (NFKC)
    f"{u_escaped(ACME)}\\ud83d",
    # invalid percent bytes: replacement characters, and the runs either side of them
    f"%FF{percent(ACME)}",
    f"{percent(ACME)}%E2%82",
    "acme%5F0bad%E2%82%ACc0de",
    "acme%5F%ED%A0%800badc0de",
    f"x%zz{percent(ACME)}",
    f"é{percent(ACME)}日",
    f"{percent('acme_0bad')}\u00a0{percent('c0de')}",
    f"{percent('acme_0bad')}\x1c{percent('c0de')}",
    # base64 corners: printable only, padding, one more than a multiple of 4, mixed alphabets
    f"x {b64(ACME + chr(0))} y",
    f"x {b64(ACME + chr(0xA0))} y",
    f"x {b64(ACME + chr(0xE000))} y",
    "x " + b64(ACME + " tab\there\r\n") + " y",
    f"x {b64(ACME + 'ab')}A y",
    f"x {b64(ACME + 'ab')}=== y",
    "x " + b64("??>>??>> " + ACME).replace("+", "-", 1) + " y",
    "x " + b64("??>>??>> " + ACME).replace("/", "_", 1) + " y",
    "x " + b64(ACME + " ") + b64(ACME + " "),
    # non-ASCII all around
    f"日本語 {b64('é ' + ACME)} ünïcödé {percent('ü ' + ACME)}",
    f"\u3000{u_escaped('日本 ' + GITHUB)}\u3000",
    # clean texts that look encoded
    "get_current_weather_forecast_for_city",
    "%41%42%43 \\u0041 QUFBQUFBQUFBQUFBQUFB",
    "a plain description: returns the weather in a city, in degrees",
    "",
]


@pytest.mark.parametrize("text", HARD_CASES)
def test_hard_cases_agree(text: str) -> None:
    assert_parity([text])


def test_the_hard_cases_refuse_what_they_hide() -> None:
    refused = rust_refuses(HARD_CASES)
    assert sum(refused) >= 25
    assert not any(refused[-4:])


@pytest.mark.parametrize(("unit", "hidden"), [("%41 ", percent(ACME)), ("QUFBQUFBQUFBQUFBQUFB ", b64(ACME + " x"))])
def test_runs_at_the_cap(unit: str, hidden: str) -> None:
    texts = [unit * n + hidden for n in (DECODE_MAX_RUNS - 2, DECODE_MAX_RUNS - 1, DECODE_MAX_RUNS)]
    assert_parity(texts)
    assert rust_refuses(texts) == [True, True, False]
    # The JSON-unescaped text's runs count after the raw text's: the hidden run is the 255th, 257th.
    escaped = [unit * n + u_escaped(hidden) for n in (DECODE_MAX_RUNS // 2 - 1, DECODE_MAX_RUNS // 2)]
    assert_parity(escaped)
    assert rust_refuses(escaped) == [True, False]


@pytest.mark.parametrize("filler", ["x", "é", "日", "\U0001f600"])
def test_characters_at_the_cap(filler: str) -> None:
    hidden = u_escaped(ACME)
    texts = [filler * (DECODE_MAX_CHARS - len(hidden) - shift) + hidden for shift in (1, 0, -1)]
    assert_parity(texts)
    assert rust_refuses(texts) == [True, True, False]


def test_every_printable_character_keeps_its_base64_view() -> None:
    """Exhaustive over Unicode: where Python would decode a base64 run (printable text), Rust does
    too; where Python finds a character not printable (and it is assigned), Rust skips the run."""
    printable = [chr(c) for c in range(0x80, 0x110000) if chr(c).isprintable()]
    chunks = ["".join(printable[i : i + 200]) for i in range(0, len(printable), 200)]
    texts = [f"x {b64(chunk + ' ' + ACME)} y" for chunk in chunks]
    assert all(rust_refuses(texts)), "a printable character dropped a base64 view"
    skipped = [
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Zs") and chr(c) not in " \t\r\n"
    ] + ["\ue000", "\uf8ff", "\U000f0000", "\U0010fffd"]
    texts = [f"x {b64(ACME + ' ' + ch)} y" for ch in skipped]
    assert not any(python_refuses(t) for t in texts)
    assert rust_refuses(texts) == [False] * len(texts)


def test_unassigned_characters_are_decoded_the_stricter_way() -> None:
    # Python calls an unassigned code point unprintable and skips the run; the Rust side, whose
    # Unicode tables are of another version, decodes it: it refuses at least what Python refuses.
    text = f"x {b64(ACME + ' ' + chr(0x0378))} y"
    assert unicodedata.category(chr(0x0378)) == "Cn"
    assert not python_refuses(text)
    assert rust_refuses([text]) == [True]


LONE_SURROGATES = [
    "\ud800",
    f"\ud83d {u_escaped(ACME)}",
    f"{percent(ACME)}\udc00",
    # raw surrogates that the JSON-unescaped form pairs up: math bold "acme", with escapes about
    "\\n\ud835\udc1a\ud835\udc1c\ud835\udc26\ud835\udc1e_0badc0de",
    "\\n\ud835\\udc1a\ud835\\udc1c\ud835\\udc26\ud835\\udc1e_0badc0de",
]


@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_lone_surrogates_refuse_at_least_what_python_refuses(text: str) -> None:
    assert POLICY.contains(text) >= python_refuses(text)
    if python_refuses(text):
        assert POLICY.screen_batch(["fine", text]) == ["fine", None]


def test_surrogates_paired_only_by_the_json_codec_are_refused() -> None:
    text = LONE_SURROGATES[3]
    assert python_refuses(text) and POLICY.contains(text)
    assert POLICY.screen_batch(["fine", text, "also fine"]) == ["fine", None, "also fine"]


# -- hypothesis ----------------------------------------------------------------------------------

_TRICKY = [*'%\\u0123456789abcdefABCDEF+/=_-"ntrbf ', "\t", "\n", "\x1c", "\xa0", "\u3000", "é", "日", "\U0001f600"]
_chars = st.one_of(st.sampled_from(_TRICKY), st.characters(exclude_categories=("Cs", "Cn")))
plain = st.text(alphabet=_chars, max_size=24)
secret = st.one_of(st.sampled_from(SECRETS), plain.map(lambda s: s + ACME), plain.map(lambda s: ACME + s))


@st.composite
def percent_encoded(draw: st.DrawFn) -> str:
    text = draw(secret)
    flags = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    out = "".join(percent(ch, lower=draw(st.booleans())) if flag else ch for ch, flag in zip(text, flags, strict=True))
    junk = draw(st.sampled_from(["", "%FF", "%E2%82", "%C0%AF", "%ED%A0%80", "%", "%4"]))
    return draw(st.sampled_from([out + junk, junk + out, out]))


@st.composite
def json_escaped(draw: st.DrawFn) -> str:
    text = draw(st.one_of(secret, base64_run(), percent_encoded()))
    out = []
    for ch in text:
        how = draw(st.integers(0, 3))
        if how == 0:
            out.append(ch)
        elif how == 1 and ch in '"\\/\b\f\n\r\t':
            out.append(json.dumps(ch)[1:-1])
        else:
            out.append(u_escaped(ch, upper=how == 3))
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(["\\ud83d", "\\ude00", "\\x", "\\u12"])))
    return "".join(out)


@st.composite
def base64_run(draw: st.DrawFn) -> str:
    text = draw(st.one_of(secret, plain.filter(bool)))
    out = b64(text, urlsafe=draw(st.booleans()), pad=draw(st.booleans()))
    return out + draw(st.sampled_from(["", "", "=", "===", "A"]))


fragment = st.one_of(plain, secret, percent_encoded(), json_escaped(), base64_run())
texts_strategy = st.lists(fragment, max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(texts_strategy, min_size=1, max_size=8))
def test_rust_and_python_agree(texts: list[str]) -> None:
    assert_parity(texts)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(fragment, st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=2)), max_size=6).map("".join))
def test_with_lone_surrogates_rust_refuses_at_least_what_python_refuses(text: str) -> None:
    if POLICY.contains(text) < python_refuses(text):
        pytest.fail(f"Python refuses {text!r} and the policy's batch path does not")


@settings(max_examples=100, deadline=None)
@given(st.lists(texts_strategy, max_size=6))
def test_builtin_rules_agree(texts: list[str]) -> None:
    scanner = SecretScanner()
    expected = [python_refuses(t, scanner) for t in texts]
    assert rust_refuses(texts, scanner) == expected
    assert SecretPolicy().screen_batch(texts) == [None if e else t for t, e in zip(texts, expected, strict=True)]


def test_the_secret_detection_datasets_agree() -> None:
    rows = []
    for name in ("gitleaks/gitleaks_rule_cases.jsonl", "secretlint/secretlint_snapshots.jsonl"):
        with shared_data("secrets", *name.split("/")).open(encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    texts = [r["text"] for r in rows]
    texts += [u_escaped(t) for t in texts[:2000]] + [b64(t) for t in texts[:2000] if t]
    scanner = SecretScanner()
    assert rust_refuses(texts, scanner) == [python_refuses(t, scanner) for t in texts]


# -- JSON texts: `first_refused_json` reads the strings of a stored text as `first_refused` reads the value --

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                      texts_strategy)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(texts_strategy, inner, max_size=4)), max_leaves=12)


def assert_json_parity(values: list[object]) -> None:
    texts = [json.dumps(v, ensure_ascii=False) for v in values]
    assert POLICY.first_refused_json(texts) == POLICY.first_refused(values), values
    # The same answer from texts that escape every character past ASCII.
    assert POLICY.first_refused_json([json.dumps(v) for v in values]) == POLICY.first_refused(values), values


@settings(max_examples=300, deadline=None)
@given(st.lists(json_value, max_size=6))
def test_json_texts_are_judged_as_their_values(values: list[object]) -> None:
    assert_json_parity(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(json_value, st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=3)
                          .map(lambda s: {"k": "x" + s + ACME})), max_size=4))
def test_json_texts_with_lone_surrogates_are_judged_as_their_values(values: list[object]) -> None:
    assert_json_parity(values)


def test_json_texts_find_secrets_in_keys_nested_values_and_escapes() -> None:
    clean = {"type": "object", "properties": {"city": {"type": "string", "description": "A city"}}}
    hidden = [
        {"properties": {GITHUB: {"type": "string"}}},
        [1, {"a": ["x", {"b": f"id={''.join(percent(ch) for ch in GITHUB)}"}]}],
        {"default": b64(f"token {GITHUB}")},
        {"enum": ["".join(u_escaped(ch) for ch in GITHUB)]},
    ]
    for value in hidden:
        assert POLICY.first_refused_json([json.dumps(clean), json.dumps(value)]) == 1, value
    assert POLICY.first_refused_json([json.dumps(clean)] * 3) is None
    assert POLICY.first_refused_json([]) is None
    # A shared string counts for the first text holding it.
    assert POLICY.first_refused_json([json.dumps(clean), json.dumps(hidden[0]), json.dumps(hidden[0])]) == 1


def test_a_text_that_is_not_json_is_an_error() -> None:
    from mindcore.errors import KernelError

    with pytest.raises(KernelError, match=r"texts\[1\]: not a JSON text"):
        POLICY.first_refused_json(["[]", "[1,"])
