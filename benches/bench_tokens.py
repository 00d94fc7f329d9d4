# ruff: noqa: RUF001  (multilingual text on purpose)
"""Token counting throughput: exact counts vs tiktoken, estimators vs their Python one-liners.

Exact: ~10 MB of mixed text (LoCoMo turns, BFCL/MetaTool tool descriptions and JSON specs,
Python standard-library source in 4 KB chunks, multilingual paragraphs with emoji), counted as
one list. Baseline: tiktoken's ``encode_ordinary_batch`` (its thread pool, the GIL released in
its Rust core) on a reference encoder built offline from the same rank tables, checked against
the sha256 tiktoken pins (see tests/test_tokens.py). Counts are compared outside the timed calls.
mindcore counts the list on rayon's threads (one per core), with a piece cache that lives for one
call only, so no round starts warm; how it works and the figures are in benches/NOTES.md.

    pytest benches/bench_tokens.py --benchmark-only -q
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import os
import random
import sysconfig
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

from mindcore import _core
from mindcore.eval import data_dir
from mindcore.kernels import count_tokens, encode, estimate_message_tokens, estimate_tokens

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
TARGET_BYTES = 1_000_000 if QUICK else 10_000_000
ESTIMATE_TEXTS = 10_000 if QUICK else 100_000


@functools.cache
def _reference(name: str) -> tiktoken.Encoding:
    """tiktoken's encoder for `name`, its rank file replaced by mindcore's table after checking
    that table's canonical file text hashes to what tiktoken expects."""

    def load_tiktoken_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        ranks = _core.token_ranks(name)
        text = "".join(f"{base64.b64encode(tok).decode()} {rank}\n" for rank, tok in enumerate(ranks))
        assert hashlib.sha256(text.encode()).hexdigest() == expected_hash, f"{name}: not OpenAI's ranks"
        return {tok: rank for rank, tok in enumerate(ranks)}

    with mock.patch.object(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe):
        spec: dict[str, Any] = getattr(openai_public, name)()
    return tiktoken.Encoding(**spec)


MULTILINGUAL = [
    "中文分词测试，包括标点符号。今天天气很好，我们去公园散步吧！",
    "日本語のテキスト、カタカナとひらがな。東京は大きな都市です。",
    "한국어 텍스트입니다. 오늘은 날씨가 좋네요.",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥.",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Ελληνικά: Γειά σου Κόσμε, ωραία μέρα σήμερα.",
    "हिन्दी में एक वाक्य, नमस्ते दुनिया।",
    "Ça va très bien, merci ! Über Straße, façade, naïve café, smörgåsbord.",
    "Emoji 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇩🇪 ❤️ done.",
]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    data = data_dir()
    locomo = data / "locomo" / "locomo10.json"
    bfcl = data / "tools" / "bfcl" / "tool_pool.jsonl"
    metatool = data / "tools" / "metatool" / "plugin_des.json"
    if not (locomo.exists() and bfcl.exists() and metatool.exists()):
        pytest.skip(f"shared data not found under {data}")
    turns: list[str] = []
    for conv in json.loads(locomo.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [t["text"] for t in session]
    tools: list[str] = []
    for line in bfcl.read_text().splitlines():
        tools += [json.loads(line)["description"], line]
    tools += list(json.loads(metatool.read_text()).values())
    code: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        src = path.read_text(errors="replace")
        code += [src[i : i + 4000] for i in range(0, len(src), 4000)]
    rng = random.Random(7)
    unicode = [" ".join(rng.choices(MULTILINGUAL, k=8)) for _ in range(3000)]
    # Interleave the kinds, then take items until the target size: roughly 15% turns, 30% tools,
    # 45% code, 10% unicode by bytes at full size.
    pools = [turns, tools, code, unicode]
    out: list[str] = []
    size = 0
    i = 0
    while size < TARGET_BYTES:
        pool = pools[i % len(pools)]
        text = pool[(i // len(pools)) % len(pool)]
        out.append(text)
        size += len(text.encode())
        i += 1
    return out


def _mark(benchmark: Any, group: str, impl: str, texts: list[str]) -> None:
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["items"] = len(texts)
    benchmark.extra_info["bytes"] = sum(len(t.encode()) for t in texts)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_count_mindcore(benchmark: Any, corpus: list[str], name: str) -> None:
    _mark(benchmark, f"tokens: exact count {TARGET_BYTES // 1_000_000} MB mixed {name}", "mindcore", corpus)
    counts = benchmark(count_tokens, corpus, name)
    assert counts == [len(ids) for ids in _reference(name).encode_ordinary_batch(corpus)]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_count_tiktoken(benchmark: Any, corpus: list[str], name: str) -> None:
    _mark(benchmark, f"tokens: exact count {TARGET_BYTES // 1_000_000} MB mixed {name}", "tiktoken", corpus)
    ref = _reference(name)
    counts = benchmark(lambda: [len(ids) for ids in ref.encode_ordinary_batch(corpus)])
    assert counts == count_tokens(corpus, name)


@pytest.fixture(scope="module")
def document(corpus: list[str]) -> str:
    """One long document (~1 MB; 100 KB in quick mode) for single-text encoding."""
    doc = "\n".join(corpus)
    return doc[: 100_000 if QUICK else 1_000_000]


def test_encode_document_mindcore(benchmark: Any, document: str) -> None:
    _mark(benchmark, "tokens: encode one document o200k_base", "mindcore", [document])
    ids = benchmark(encode, document)
    assert ids == _reference("o200k_base").encode_ordinary(document)


def test_encode_document_tiktoken(benchmark: Any, document: str) -> None:
    _mark(benchmark, "tokens: encode one document o200k_base", "tiktoken", [document])
    ref = _reference("o200k_base")
    ids = benchmark(ref.encode_ordinary, document)
    assert ids == encode(document)


# --- estimators vs the obvious Python one-liners -------------------------------------------------


@pytest.fixture(scope="module")
def short_texts(corpus: list[str]) -> list[str]:
    return [corpus[i % len(corpus)][:500] for i in range(ESTIMATE_TEXTS)]


def _chars_one_liner(texts: list[str]) -> list[int]:
    return [math.ceil(len(t) / 4) for t in texts]


def _bytes_one_liner(texts: list[str]) -> list[int]:
    return [len(t.encode("utf-8")) // 4 for t in texts]


def _messages_one_liner(texts: list[str]) -> int:
    return math.ceil((sum(len(t) for t in texts) + 20 * len(texts)) / 4)


@pytest.mark.parametrize(
    ("case", "impl"),
    [
        ("chars", "mindcore"),
        ("chars", "python"),
        ("bytes", "mindcore"),
        ("bytes", "python"),
        ("messages", "mindcore"),
        ("messages", "python"),
    ],
)
def test_estimators(benchmark: Any, short_texts: list[str], case: str, impl: str) -> None:
    _mark(benchmark, f"tokens: estimate {case} {len(short_texts) // 1000}k texts", impl, short_texts)
    fns: dict[tuple[str, str], Any] = {
        ("chars", "mindcore"): lambda: estimate_tokens(short_texts),
        ("chars", "python"): lambda: _chars_one_liner(short_texts),
        ("bytes", "mindcore"): lambda: estimate_tokens(short_texts, rule="bytes"),
        ("bytes", "python"): lambda: _bytes_one_liner(short_texts),
        ("messages", "mindcore"): lambda: estimate_message_tokens(short_texts),
        ("messages", "python"): lambda: _messages_one_liner(short_texts),
    }
    reference = {"chars": _chars_one_liner, "bytes": _bytes_one_liner, "messages": _messages_one_liner}[case]
    assert benchmark(fns[(case, impl)]) == reference(short_texts)
