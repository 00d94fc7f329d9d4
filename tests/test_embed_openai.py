"""OpenAIEmbedder against a real local HTTP server: batching, order, retries, timeouts, bad answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import numpy as np
import pytest
from _openai_server import FakeOpenAI, Fault, fake_vector

from mindcore.embed import CachedEmbedder, Embedder, EmbeddingCache, EmbeddingError, OpenAIEmbedder

FAST_RETRY = {"retry-after-ms": "5"}  # the SDK honours it: retries without the default 0.5 s backoff


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dim=8) as s:
        yield s


def expected(texts: list[str], dim: int = 8) -> np.ndarray:
    raw = np.array([fake_vector(t or " ", dim) for t in texts], dtype=np.float64)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def make(server: FakeOpenAI, **kwargs: object) -> OpenAIEmbedder:
    options: dict[str, object] = {"base_url": server.base_url, "api_key": "sk-test", "cache": False}
    options.update(kwargs)
    return OpenAIEmbedder("embed-model", **options)  # type: ignore[arg-type]


def test_embeds_in_batches_and_normalises(server: FakeOpenAI) -> None:
    emb = make(server, batch_size=3, dim=8)
    texts = [f"text {i}" for i in range(7)]
    out = emb.embed(texts)
    assert out.shape == (7, 8) and out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(out, expected(texts), atol=1e-6)
    bodies = [r.body for r in server.requests]
    assert server.paths() == ["/v1/embeddings"] * 3
    assert [b["input"] for b in bodies] == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(b["model"] == "embed-model" and b["encoding_format"] == "float" for b in bodies)
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_answers_out_of_order_are_put_back_in_order() -> None:
    with FakeOpenAI(dim=8, reversed_order=True) as server:
        texts = ["first", "second", "third"]
        np.testing.assert_allclose(make(server).embed(texts), expected(texts), atol=1e-6)


def test_empty_string_is_sent_as_a_space(server: FakeOpenAI) -> None:
    out = make(server).embed(["", "x"])
    assert server.requests[0].body["input"] == [" ", "x"]
    np.testing.assert_allclose(out, expected(["", "x"]), atol=1e-6)


def test_dim_is_learnt_from_the_first_response(server: FakeOpenAI) -> None:
    emb = make(server)
    assert emb.dim == 8  # one probe request
    assert len(server.requests) == 1
    assert emb.embed([]).shape == (0, 8)
    assert len(server.requests) == 1
    fresh = make(server)
    assert asyncio.run(fresh.aembed([])).shape == (0, 8)


def test_protocol_checks_do_not_send_requests(server: FakeOpenAI) -> None:
    emb = make(server)  # dim unknown: reading it would probe the server
    assert isinstance(emb, Embedder)
    wrapped = CachedEmbedder(emb, cache=EmbeddingCache())
    assert server.requests == []
    assert wrapped.dim == 8 and len(server.requests) == 1


def test_given_dim_is_checked(server: FakeOpenAI) -> None:
    emb = make(server, dim=16)
    assert emb.embed([]).shape == (0, 16)  # no request needed
    assert server.requests == []
    with pytest.raises(EmbeddingError, match=r"embedding model 'embed-model' at POST http://127.0.0.1:\d+/v1/embeddings returned 8-d vectors, expected dim=16"):
        emb.embed(["x"])


def test_settings_come_from_the_environment(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_EMBEDDING_MODEL", "env-model")
    emb = OpenAIEmbedder(cache=False)
    assert (emb.model, emb.base_url) == ("env-model", server.base_url)
    emb.embed(["hi"])
    assert server.requests[0].body["model"] == "env-model"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    assert OpenAIEmbedder("arg-model", cache=False).model == "arg-model"  # arguments win


def test_missing_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="model: not given and OPENAI_EMBEDDING_MODEL is not set"):
        OpenAIEmbedder()
    with pytest.raises(ValueError, match="api_key: not given and OPENAI_API_KEY is not set"):
        OpenAIEmbedder("text-embedding-3-small")
    # local servers need no key
    assert OpenAIEmbedder("m", base_url="http://localhost:11434/v1").endpoint.api_key
    with pytest.raises(ValueError, match="base_url: expected an http"):
        OpenAIEmbedder("m", base_url="localhost:11434")
    with pytest.raises(ValueError, match=r"batch_size: must be in \[1, 2048\]"):
        OpenAIEmbedder("m", base_url="http://h/v1", batch_size=0)
    with pytest.raises(ValueError, match="timeout: must be > 0"):
        OpenAIEmbedder("m", base_url="http://h/v1", timeout=0)
    with pytest.raises(ValueError, match="max_retries: must be >= 0"):
        OpenAIEmbedder("m", base_url="http://h/v1", max_retries=-1)
    with pytest.raises(TypeError, match="dim: expected int"):
        OpenAIEmbedder("m", base_url="http://h/v1", dim="8")  # type: ignore[arg-type]


def test_server_errors_are_retried(server: FakeOpenAI) -> None:
    server.fail(Fault.status(500, headers=FAST_RETRY), Fault.status(503, headers=FAST_RETRY))
    out = make(server, max_retries=3).embed(["retry me"])
    np.testing.assert_allclose(out, expected(["retry me"]), atol=1e-6)
    assert len(server.requests) == 3


def test_retries_back_off(server: FakeOpenAI) -> None:
    server.fail(Fault.status(502))  # no Retry-After: the SDK's exponential backoff (0.5 s first, -25% jitter)
    start = time.monotonic()
    make(server, max_retries=1).embed(["x"])
    assert time.monotonic() - start >= 0.3
    assert len(server.requests) == 2


def test_failure_after_the_retries_names_endpoint_and_cause(server: FakeOpenAI) -> None:
    server.fail(*[Fault.status(500, headers=FAST_RETRY)] * 3)
    with pytest.raises(EmbeddingError) as info:
        make(server, max_retries=2).embed(["x"])
    message = str(info.value)
    assert f"POST {server.base_url}/embeddings failed" in message
    assert "HTTP 500: injected failure (3 attempts)" in message
    assert len(server.requests) == 3
    assert info.value.__cause__ is not None


def test_client_errors_are_not_retried_and_carry_a_hint(server: FakeOpenAI) -> None:
    server.fail(Fault.status(401, body='{"error": {"message": "Incorrect API key provided"}}'))
    with pytest.raises(EmbeddingError, match=r"HTTP 401: Incorrect API key provided; check api_key / OPENAI_API_KEY"):
        make(server).embed(["x"])
    assert len(server.requests) == 1
    server.fail(Fault.status(404, body="<html>Not Found</html>"))
    with pytest.raises(EmbeddingError, match=r"HTTP 404: <html>Not Found</html>; check base_url"):
        make(server).embed(["x"])


def test_a_hanging_server_times_out_naming_the_endpoint(server: FakeOpenAI) -> None:
    server.fail(Fault.hang(), Fault.hang())
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match=r"at POST http://127\.0\.0\.1:\d+/v1/embeddings failed: timed out after 0\.3 s \(2 attempts\)"):
        make(server, timeout=0.3, max_retries=1).embed(["x"])
    assert time.monotonic() - start < 5


def test_connection_refused_is_explained() -> None:
    with FakeOpenAI() as dead:
        url = dead.base_url
    with pytest.raises(EmbeddingError, match=r"connection failed: .*\(1 attempt\)"):
        OpenAIEmbedder("m", base_url=url, max_retries=0, cache=False).embed(["x"])


@pytest.mark.parametrize(
    ("fault", "match"),
    [
        (Fault.malformed(), "malformed response"),
        (Fault.wrong_count(), "malformed response: 1 vectors for 2 texts"),
        (Fault.nan(), "the vector for text 0 contains NaN or inf"),
    ],
)
def test_bad_answers_are_clear_errors(server: FakeOpenAI, fault: Fault, match: str) -> None:
    server.fail(fault)
    with pytest.raises(EmbeddingError, match=match) as info:
        make(server, dim=8).embed(["a", "b"])
    assert server.base_url in str(info.value)


def test_cache_avoids_repeat_requests(server: FakeOpenAI) -> None:
    cache = EmbeddingCache()
    emb = make(server, cache=cache)
    first = emb.embed(["a", "b", "a"])
    assert [r.body["input"] for r in server.requests] == [["a", "b"]]
    second = emb.embed(["b", "c"])
    assert server.requests[-1].body["input"] == ["c"]
    np.testing.assert_array_equal(second[0], first[1])
    emb.embed(["a", "c"])
    assert len(server.requests) == 2
    # the same model name on another server is another model
    with FakeOpenAI(dim=8) as other:
        make(other, cache=cache).embed(["a"])
        assert len(other.requests) == 1


def test_shared_cache_is_the_default(server: FakeOpenAI) -> None:
    emb = OpenAIEmbedder("m", base_url=server.base_url)
    assert emb.cache is EmbeddingCache.shared()
    emb.embed(["shared cache text"])
    OpenAIEmbedder("m", base_url=server.base_url).embed(["shared cache text"])
    assert len(server.requests) == 1


def test_async_matches_sync_and_survives_new_event_loops(server: FakeOpenAI) -> None:
    emb = make(server, batch_size=2)
    texts = ["one", "two", "three"]
    for _ in range(2):  # a second asyncio.run gets its own client
        np.testing.assert_allclose(asyncio.run(emb.aembed(texts)), expected(texts), atol=1e-6)
    server.fail(Fault.status(400))
    with pytest.raises(EmbeddingError, match="HTTP 400: injected failure"):
        asyncio.run(emb.aembed(["x"]))


def test_async_uses_the_cache(server: FakeOpenAI) -> None:
    emb = make(server, cache=EmbeddingCache())

    async def twice() -> tuple[np.ndarray, np.ndarray]:
        return await emb.aembed(["p", "q"]), await emb.aembed(["q", "p", "p"])

    a, b = asyncio.run(twice())
    assert len(server.requests) == 1
    np.testing.assert_array_equal(b, a[[1, 0, 0]])
