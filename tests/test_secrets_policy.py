"""The secret policy end to end: credential-shaped text is refused however it is written (through
``looks_like_secret``, long-term memory and a Mind belief), the seeds' shapes are a floor, masked
values and slots stay clean, encoded secrets are decoded before judging, identifiers are screened
at construction, and ``mindcore import`` goes through the policy."""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import Clock

import mindcore
from mindcore.consciousness import Consciousness, Inbox
from mindcore.context import Context
from mindcore.embed import HashEmbedder
from mindcore.errors import SecretRefusedError
from mindcore.ltm import LongTermMemory
from mindcore.mind import Mind
from mindcore.policy import DECODE_MAX_CHARS, SecretPolicy
from mindcore.store import Store
from mindcore.working import WorkingMemory

# The five strings: stored before (their bodies are regular), refused now.
CREDENTIAL_SHAPED = [
    "my key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "AKIAZ7QWERTYUIOP4X2Q is the access key",
    "ghp_1234567890abcdefghijklmnopqrstuvwxAB",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
    "--softlayer-api-key abcd1234abcd1234abcd1234abcd1234",
]

# Each shape the seeds' filter refuses (seeds/long-term-memory.md, "Trust boundary"), written with
# a regular (placeholder-like) body: the seeds refuse these, so we do.
SEED_EXAMPLES = [
    "sk-abcdefghijklmnopqrstuvwxyz012345",  # OpenAI-style sk-…
    "sk-ant-abcdefghijklmnopqrstuvwxyz0123",  # Anthropic sk-ant-…
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",  # GitHub ghp_…
    "gho_abcdefghijklmnopqrstuvwxyz0123456789",  # … gho_ and the others
    "sk_live_abcdefghijklmnopqrstuvwx",  # Stripe sk_live_…
    "pk_live_abcdefghijklmnopqrstuvwx",  # … pk_live_…
    "AKIAABCDEFGHIJKLMNOP",  # AWS access key id
    "aws_secret_access_key = abcdefghijklmnopqrstuvwxyz0123456789ABCD",  # its assignment
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",  # Authorization / Bearer headers
    "curl -H 'X-Auth: Bearer abcdefghijklmnopqrst'",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Q2vX1F0qK8JY7\n-----END RSA PRIVATE KEY-----",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnopqrstuvwxyz",  # JWT
    "api_key = abcdefghijklmnop1234",  # generic assignments
    "token: abcdefghijklmnopqrst",
    "password = correcthorsebatterystaple",
    "secret=abcdefghijklmnopqrstu",
    "postgres://user:pass@host",  # the seed's own example
]

# Placeholders that name no value: masked, slots, variables.
NOT_SECRETS = [
    "sk-...",
    "ghp_xxxxxxxx\u2026",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "<your-api-key>",
    "OPENAI_API_KEY=<your-api-key>",
    "${OPENAI_API_KEY}",
    "export OPENAI_API_KEY=${OPENAI_API_KEY}",
    "api_key: $OPENAI_API_KEY",
    "token = {{ github_token }}",
    "password: ****************",
    "password=[REDACTED]",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",  # AWS's published documentation key
    "The key to the castle is patience.",
]


@pytest.mark.parametrize("text", CREDENTIAL_SHAPED + SEED_EXAMPLES)
def test_credential_shaped_text_is_a_secret(text: str) -> None:
    assert mindcore.looks_like_secret(text), text
    with pytest.raises(SecretRefusedError, match=r"field: not stored: it looks like a secret \(rule "):
        SecretPolicy().screen(text, "field")


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_masked_values_and_slots_are_not_secrets(text: str) -> None:
    assert not mindcore.looks_like_secret(text), text
    assert SecretPolicy().screen(text, "field") == text


@pytest.mark.parametrize("text", CREDENTIAL_SHAPED)
def test_long_term_memory_and_mind_refuse_them(store: Store, clock: Clock, text: str) -> None:
    ltm = LongTermMemory(store, user_id="u1", embedder=HashEmbedder(), clock=clock)
    assert ltm.remember(f"note: {text}") is None
    assert ltm.recall("deploy key", k=5) == []
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock)
    with pytest.raises(SecretRefusedError, match="content: not stored"):
        mind.believe(f"the deploy uses {text}")
    assert mind.beliefs() == []
    result = mind.call("mind_believe", {"content": f"the deploy uses {text}", "confidence": "high"})
    assert "not stored" in result["error"]


# -- decoding ------------------------------------------------------------------------------------

GITHUB = "ghp_R8fKq2Lm9Xv4Tz7Wn3Yb6Pc1Hd5Js0Ga2Ue4"


def _u_escaped(text: str) -> str:
    return "".join(f"\\u{ord(ch):04x}" for ch in text)


def test_a_u_escaped_token_in_tool_call_arguments_is_refused(store: Store, clock: Clock) -> None:
    # The model's arguments JSON carries a string whose own text is JSON-escaped.
    arguments = json.dumps({"content": "deploy key " + _u_escaped(GITHUB)})
    inner = json.loads(arguments)["content"]
    assert GITHUB not in inner and not mindcore.looks_like_secret(inner)
    with pytest.raises(SecretRefusedError, match=r"rule github-token in JSON-escaped text"):
        SecretPolicy().screen(inner, "content")
    # ... and the raw arguments string (as a message log stores a tool call) too.
    message = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "mind_believe", "arguments": json.dumps({"content": "k " + GITHUB}).replace("ghp", "\\u0067hp")}}]}
    with pytest.raises(SecretRefusedError, match="JSON-escaped"):
        SecretPolicy().screen_value(message, "message")
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock)
    result = mind.call("mind_believe", {"content": inner, "confidence": "high"})
    assert "github-token" in result["error"]
    assert mind.beliefs() == []


def test_percent_and_base64_runs_are_decoded() -> None:
    policy = SecretPolicy()
    percent = "callback?t=" + urllib.parse.quote(GITHUB, safe="").replace("_", "%5F")
    assert not mindcore.looks_like_secret(percent)
    with pytest.raises(SecretRefusedError, match="in percent-encoded text"):
        policy.screen(percent, "url")
    b64 = "blob " + base64.b64encode(f"token {GITHUB}".encode()).decode() + " end"
    with pytest.raises(SecretRefusedError, match="in base64 text"):
        policy.screen(b64, "note")
    # base64 that decodes to binary (a hash, an image) is left alone
    binary = "sha " + base64.b64encode(bytes(range(200, 212))).decode()
    assert policy.screen(binary, "x") == binary


def test_redaction_replaces_the_encoded_run() -> None:
    policy = SecretPolicy(action="redact")
    b64 = base64.b64encode(f"token {GITHUB}".encode()).decode()
    assert policy.screen(f"blob {b64} end", "note") == "blob [REDACTED:github-token] end"
    escaped = "key " + _u_escaped(GITHUB)
    assert policy.screen(escaped, "note") == "key [REDACTED:github-token]"
    assert policy.screen_batch(["fine", f"blob {b64} end"]) == ["fine", "blob [REDACTED:github-token] end"]
    assert SecretPolicy().screen_batch(["fine", f"blob {b64} end"]) == ["fine", None]


def test_decoding_is_capped_and_linear() -> None:
    policy = SecretPolicy()
    # A secret hidden past the decoding cap is not decoded (the raw text is still scanned whole).
    tail = "x " * (DECODE_MAX_CHARS // 2) + _u_escaped(GITHUB)
    assert policy.screen(tail, "big") == tail
    for unit in ("%41", "\\u0041", "QUFB", "%", "\\", "A" * 15 + " "):
        text = unit * ((4 << 20) // len(unit))
        t0 = time.perf_counter()
        policy.contains(text)
        assert time.perf_counter() - t0 < 10, unit


# -- identifiers ---------------------------------------------------------------------------------

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_screen_identifier_refuses_whatever_the_action() -> None:
    for policy in (SecretPolicy(), SecretPolicy(action="redact")):
        assert policy.screen_identifier("user-42", "user_id") == "user-42"
        assert policy.screen_identifier("550e8400-e29b-41d4-a716-446655440000", "thread_id")
        with pytest.raises(SecretRefusedError, match=r"user_id: not stored.*openai-api-key"):
            policy.screen_identifier(KEY, "user_id")


def test_identifiers_are_screened_at_construction(store: Store, clock: Clock, tmp_path: Path) -> None:
    emb = HashEmbedder()
    cases = [
        ("user_id", lambda: LongTermMemory(store, user_id=KEY, embedder=emb)),
        ("namespace", lambda: LongTermMemory(store, user_id="u", namespace=KEY, embedder=emb)),
        ("workspace_id", lambda: LongTermMemory(store, user_id="u", workspace_id=KEY, embedder=emb)),
        ("thread_id", lambda: WorkingMemory(store, thread_id=KEY)),
        ("resource_id", lambda: WorkingMemory(store, resource_id=KEY, scope="resource")),
        ("agent", lambda: Mind(store, agent=KEY, embedder=emb, clock=clock)),
        ("agent", lambda: Consciousness(store, agent=KEY)),
        ("agent", lambda: Inbox(store, KEY)),
        ("dataset", lambda: Context(store, dataset=KEY, embedder=emb)),
        ("session", lambda: Context(store, embedder=emb).session(KEY)),
        ("namespace", lambda: Context(store, embedder=emb).session("s1", namespace=KEY)),
        ("tool name", lambda: Context(store, embedder=emb).register([{"name": KEY, "description": "d"}])),
    ]
    for field, build in cases:
        with pytest.raises(SecretRefusedError, match=f"{field}: not stored"):
            build()
    assert all(KEY not in name for name in store.table_names())


# -- import --------------------------------------------------------------------------------------


def test_import_goes_through_the_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mindcore.cli import main

    src = mindcore.open(str(tmp_path / "src"))
    ltm = LongTermMemory(src, user_id="u1", embedder=HashEmbedder())
    ltm.remember("Prefers green tea")
    export = tmp_path / "out.jsonl"
    assert main(["export", "--store", str(tmp_path / "src"), str(export)]) == 0
    # A row edited to hold a key (what a hand-made or tampered file could carry) is refused.
    lines = export.read_text(encoding="utf-8").splitlines()
    tampered = [line.replace("Prefers green tea", f"uses {GITHUB}") for line in lines]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(tampered) + "\n", encoding="utf-8")
    assert main(["import", "--store", str(tmp_path / "dst"), str(bad)]) == 1
    assert re.search(r"line \d+ .*not stored.*github-token.*nothing imported", capsys.readouterr().err)
    assert not (tmp_path / "dst").exists()
    assert main(["import", "--store", str(tmp_path / "dst2"), str(export)]) == 0


def test_first_refused_finds_a_secret_anywhere_in_a_value_and_under_either_action() -> None:
    values: list[object] = ["fine", {"note": ["a", {"deep": "b"}]}, {GITHUB: "as a key"}, [f"x {GITHUB}"]]
    for action in ("refuse", "redact"):
        policy = SecretPolicy(action=action)  # type: ignore[arg-type]
        assert policy.first_refused(values) == 2
        assert policy.first_refused(values[3:]) == 0
        assert policy.first_refused(values[:2]) is None
        assert policy.first_refused([]) is None


def test_screen_object_finds_a_secret_in_any_object_a_framework_hands_over() -> None:
    import dataclasses

    import pydantic

    class Message(pydantic.BaseModel):
        content: str

    class Extra(Message):
        model_config = pydantic.ConfigDict(extra="allow")

    @dataclasses.dataclass
    class Note:
        text: object

    class Plain:
        def __init__(self, payload: object) -> None:
            self.payload = payload

    class Slotted:
        __slots__ = ("payload",)

        def __init__(self, payload: object) -> None:
            self.payload = payload

    encoded = base64.b64encode(GITHUB.encode()).decode()
    holders = [
        # Many models in a row, only the last holding the key.
        [Message(content=f"turn {i}") for i in range(50)] + [Message(content=f"key {GITHUB}")],
        Extra(content="fine", note=f"key {GITHUB}"),
        {"notes": (Note(text={"deep": [Plain(f"key {encoded}")]}),)},
        {frozenset({GITHUB}): 1},
        Slotted(GITHUB.encode()),
    ]
    for action in ("refuse", "redact"):
        policy = SecretPolicy(action=action)  # type: ignore[arg-type]
        for holder in holders:
            with pytest.raises(mindcore.errors.SecretRefusedError, match=r"state: not stored.*github-token"):
                policy.screen_object(holder, "state")
        policy.screen_object([Message(content="fine"), Note(text=Plain(b"\xff\x00")), Slotted(None)], "state")
    cyclic: list[object] = ["fine"]
    cyclic.append(cyclic)
    SecretPolicy().screen_object(cyclic, "state")
    deep: object = "fine"
    for _ in range(200):
        deep = [deep]
    with pytest.raises(mindcore.errors.InvalidInputError, match="nested"):
        SecretPolicy().screen_object(deep, "state")
