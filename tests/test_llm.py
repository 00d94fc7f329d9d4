"""LLM clients: ScriptedLLM, and OpenAICompatibleLLM against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from _openai_server import FakeOpenAI, Fault

from mindcore.llm import (
    LLM,
    LLMError,
    Message,
    OpenAICompatibleLLM,
    ScriptedCall,
    ScriptedLLM,
    ScriptExhaustedError,
)

FAST_RETRY = {"retry-after-ms": "5"}
HELLO: list[Message] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]


@pytest.fixture
def server(openai_server: FakeOpenAI) -> FakeOpenAI:
    return openai_server


def make(server: FakeOpenAI, **kwargs: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("chat-model", base_url=server.base_url, api_key="sk-test", **kwargs)


# --- message checks (shared by every client) --------------------------------------------------------


@pytest.mark.parametrize("make_llm", [lambda: ScriptedLLM(["x"] * 10), lambda: OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1")])
@pytest.mark.parametrize(
    ("messages", "error", "match"),
    [
        ("hello", TypeError, "wrap a single message in a list"),
        ({"role": "user", "content": "hi"}, TypeError, "wrap a single message in a list"),
        ([], ValueError, "at least one message"),
        ([{"role": "user", "content": "ok"}, "hi"], TypeError, r"messages\[1\]: expected a dict"),
        ([{"role": "usr", "content": "hi"}], ValueError, r"messages\[0\]\['role'\]: must be one of"),
        ([{"role": 1, "content": "hi"}], TypeError, r"messages\[0\]\['role'\]: expected str, got int"),
        ([{"role": "user"}], TypeError, r"messages\[0\]\['content'\]: expected str, got NoneType"),
        ([{"role": "user", "content": ["parts"]}], TypeError, r"messages\[0\]\['content'\]: expected str, got list"),
        (5, TypeError, "expected a sequence of messages, got int"),
    ],
)
def test_malformed_messages_are_refused(make_llm: Any, messages: Any, error: type[Exception], match: str) -> None:
    llm = make_llm()
    with pytest.raises(error, match=match):
        llm.complete(messages)
    with pytest.raises(error, match=match):
        asyncio.run(llm.acomplete(messages))


@pytest.mark.parametrize("make_llm", [lambda: ScriptedLLM(["x"] * 10), lambda: OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1")])
def test_bad_options_are_refused(make_llm: Any) -> None:
    llm = make_llm()
    with pytest.raises(ValueError, match="max_tokens: must be >= 1"):
        llm.complete(HELLO, max_tokens=0)
    with pytest.raises(TypeError, match="max_tokens: expected int or None, got float"):
        llm.complete(HELLO, max_tokens=1.5)
    with pytest.raises(TypeError, match="json: expected bool"):
        llm.complete(HELLO, json="yes")


# --- ScriptedLLM --------------------------------------------------------------------------------------


def test_scripted_replies_in_order_and_records_calls() -> None:
    llm = ScriptedLLM(["first", '{"ok": true}'])
    assert isinstance(llm, LLM)
    messages: list[Message] = [{"role": "user", "content": "one"}]
    assert llm.complete(messages) == "first"
    messages[0]["content"] = "changed later"  # the record is a copy
    assert asyncio.run(llm.acomplete([{"role": "user", "content": "two"}], max_tokens=50, json=True)) == '{"ok": true}'
    assert llm.calls == [
        ScriptedCall([{"role": "user", "content": "one"}], None, False),
        ScriptedCall([{"role": "user", "content": "two"}], 50, True),
    ]
    assert llm.remaining == 0


def test_scripted_running_out_is_a_clear_error() -> None:
    llm = ScriptedLLM(["only"])
    llm.complete(HELLO)
    with pytest.raises(ScriptExhaustedError, match=r"call #2 but the script has only 1 reply; last message: user: 'Hello'"):
        llm.complete(HELLO)
    assert len(llm.calls) == 2  # the failed call is recorded too
    assert isinstance(ScriptExhaustedError("x"), LLMError)
    with pytest.raises(ScriptExhaustedError, match="only 0 replies"):
        ScriptedLLM([]).complete(HELLO)


def test_scripted_function_replies() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message]) -> str:
        seen.append(messages)
        messages.append({"role": "assistant", "content": "mutation must not leak"})
        return f"{len(seen)}: {messages[0]['content']}"

    llm = ScriptedLLM(reply)
    assert llm.complete(HELLO) == "1: Be brief."
    assert llm.complete(HELLO) == "2: Be brief."
    assert llm.remaining is None
    assert llm.calls[0].messages == HELLO
    bad = ScriptedLLM(lambda m: 42)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="reply function returned int, expected str"):
        bad.complete(HELLO)


def test_scripted_exceptions_simulate_failures() -> None:
    llm = ScriptedLLM([LLMError("endpoint down"), "recovered"])
    with pytest.raises(LLMError, match="endpoint down"):
        llm.complete(HELLO)
    assert llm.complete(HELLO) == "recovered"


def test_scripted_checks_its_script() -> None:
    with pytest.raises(TypeError, match="got a bare str"):
        ScriptedLLM("reply")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"replies\[1\]: expected str, a Reply or an Exception instance, got int"):
        ScriptedLLM(["a", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a sequence of str or a function, got int"):
        ScriptedLLM(3)  # type: ignore[arg-type]
    assert "1 of 1 replies left" in repr(ScriptedLLM(["a"]))


# --- OpenAICompatibleLLM over HTTP --------------------------------------------------------------------


def test_complete_sends_the_chat_request(server: FakeOpenAI) -> None:
    llm = make(server, temperature=0)
    assert isinstance(llm, LLM)
    assert llm.complete(HELLO, max_tokens=20) == "echo: Hello"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": "chat-model", "messages": HELLO, "max_tokens": 20, "temperature": 0}
    assert request.headers["authorization"] == "Bearer sk-test"


def test_json_mode_sets_response_format(server: FakeOpenAI) -> None:
    reply = make(server).complete([{"role": "user", "content": "Answer in JSON"}], json=True)
    assert json.loads(reply) == {"echo": "Answer in JSON"}
    assert server.requests[0].body["response_format"] == {"type": "json_object"}
    assert "max_tokens" not in server.requests[0].body and "temperature" not in server.requests[0].body


def test_settings_come_from_the_environment(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_MODEL", "env-chat")
    llm = OpenAICompatibleLLM()
    assert llm.complete(HELLO) == "echo: Hello"
    assert server.requests[0].body["model"] == "env-chat"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


def test_missing_settings_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="model: not given and OPENAI_MODEL is not set"):
        OpenAICompatibleLLM()
    with pytest.raises(ValueError, match="api_key: not given and OPENAI_API_KEY is not set"):
        OpenAICompatibleLLM("gpt-4o-mini")
    with pytest.raises(TypeError, match="temperature: expected a finite number"):
        OpenAICompatibleLLM("m", base_url="http://h/v1", temperature=float("nan"))
    with pytest.raises(TypeError, match="model: expected str or None, got int"):
        OpenAICompatibleLLM(5)  # type: ignore[arg-type]


def test_server_errors_are_retried(server: FakeOpenAI) -> None:
    server.fail(Fault.status(500, headers=FAST_RETRY), Fault.status(429, headers=FAST_RETRY))
    assert make(server, max_retries=2).complete(HELLO) == "echo: Hello"
    assert len(server.requests) == 3


def test_failure_after_retries_names_endpoint_and_cause(server: FakeOpenAI) -> None:
    server.fail(*[Fault.status(503, headers=FAST_RETRY)] * 2)
    with pytest.raises(LLMError) as info:
        make(server, max_retries=1).complete(HELLO)
    assert str(info.value) == (
        f"chat model 'chat-model' at POST {server.base_url}/chat/completions failed: "
        "HTTP 503: injected failure (2 attempts)"
    )
    assert info.value.__cause__ is not None


def test_a_hanging_server_times_out_naming_the_endpoint(server: FakeOpenAI) -> None:
    server.fail(Fault.hang())
    start = time.monotonic()
    with pytest.raises(LLMError, match=r"at POST http://127\.0\.0\.1:\d+/v1/chat/completions failed: timed out after 0\.25 s \(1 attempt\)"):
        make(server, timeout=0.25, max_retries=0).complete(HELLO)
    assert time.monotonic() - start < 5


def test_malformed_json_is_a_clear_error(server: FakeOpenAI) -> None:
    server.fail(Fault.malformed())
    with pytest.raises(LLMError, match=r"/chat/completions failed: malformed response: Expecting"):
        make(server).complete(HELLO)


def test_answer_without_choices_is_a_clear_error(server: FakeOpenAI) -> None:
    server.fail(Fault.empty_choices())
    with pytest.raises(LLMError, match="failed: malformed response: no choices"):
        make(server).complete(HELLO)


def test_answer_without_text_is_a_clear_error() -> None:
    no_text = FakeOpenAI(reply=lambda messages, json_mode: None)  # type: ignore[arg-type, return-value]
    with no_text as server, pytest.raises(LLMError, match=r"returned no text \(finish_reason='stop'\)"):
        make(server).complete(HELLO)


def test_max_completion_tokens_fallback_is_remembered() -> None:
    with FakeOpenAI(reject_max_tokens=True) as server:
        llm = make(server)
        assert llm.complete(HELLO, max_tokens=7) == "echo: Hello"
        assert [("max_tokens" in r.body, r.body.get("max_completion_tokens")) for r in server.requests] == [
            (True, None),
            (False, 7),
        ]
        assert asyncio.run(llm.acomplete(HELLO, max_tokens=9)) == "echo: Hello"
        assert server.requests[-1].body.get("max_completion_tokens") == 9
        assert len(server.requests) == 3  # no second refusal


def test_other_bad_requests_are_not_retried(server: FakeOpenAI) -> None:
    server.fail(Fault.status(400, body='{"error": {"message": "context length exceeded"}}'))
    with pytest.raises(LLMError, match=r"HTTP 400: context length exceeded$"):
        make(server).complete(HELLO, max_tokens=5)
    assert len(server.requests) == 1


def test_async_complete(server: FakeOpenAI) -> None:
    llm = make(server)

    async def both() -> list[str]:
        return list(await asyncio.gather(llm.acomplete(HELLO), llm.acomplete([{"role": "user", "content": "B"}])))

    assert asyncio.run(both()) == ["echo: Hello", "echo: B"]
    assert asyncio.run(llm.acomplete(HELLO, json=True)) == '{"echo": "Hello"}'  # a new loop, a new client
    server.fail(Fault.hang())
    slow = make(server, timeout=0.25, max_retries=0)
    with pytest.raises(LLMError, match=r"timed out after 0\.25 s"):
        asyncio.run(slow.acomplete(HELLO))
