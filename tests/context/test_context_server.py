"""The HTTP server over real sockets, driven by the agentified Python SDK (PyPI 0.3.0) as its users
would drive it, plus raw requests for the status codes and error bodies the SDK never reads."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _serve_process import ServeProcess

agentified = pytest.importorskip("agentified")
uvicorn = pytest.importorskip("uvicorn")

from agentified import Agentified, BackendTool, RegisterInput  # noqa: E402
from agentified.models import ApiClientConfig, RecallConfig, RecallToolsConfig, ServerTool  # noqa: E402

import mindcore  # noqa: E402
from mindcore.llm import ScriptedLLM  # noqa: E402
from mindcore.server import create_app  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Running:
    """An app served by uvicorn in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Running:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Running]:
    llm = ScriptedLLM(lambda messages: "The user planned a trip.")
    with Running(create_app(tmp_path / "store", llm=llm, embedder=mindcore.embed.HashEmbedder(dim=64))) as running:
        yield running


def handler(args: dict) -> dict:
    return {"ok": True}


TOOLS = [
    BackendTool(name="get_weather", description="Get the weather forecast for a city",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}}, handler=handler),
    BackendTool(name="book_flight", description="Book a flight between two airports",
                parameters={"type": "object", "properties": {"to": {"type": "string"}}}, handler=handler),
    BackendTool(name="escalate", description="Hand over to a human agent", parameters={}, handler=handler,
                always_include=True),
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_sdk_registers_discovers_updates_and_assembles(served: Running) -> None:
    async def scenario() -> None:
        ag = Agentified()
        await ag.connect(served.url)
        instance = await ag.dataset("travel").register(RegisterInput(tools=TOOLS))
        session = instance.session("chat-1")

        found = await session.discover_tool.execute({"query": "weather forecast", "limit": 1})
        assert [t.name for t in found] == ["get_weather"] and found[0].score == 1.0
        # The session now holds get_weather: it is not ranked again for this session.
        again = await session.discover_tool.execute({"query": "weather forecast", "limit": 1})
        assert [t.name for t in again] == ["book_flight"]
        assert "escalate" not in {t.name for t in found + again}
        for strategy in ("semantic", "hybrid"):
            ranked = await ag._sdk.discover("travel", "weather in a city", limit=2, strategy=strategy)
            assert len(ranked) == 2 and all(isinstance(t.score, float) for t in ranked)

        conversation = [{"role": "user", "content": "I want to fly to Paris"},
                        {"role": "assistant", "content": "When?"}]
        await session.update_conversation(conversation)
        await session.update_conversation([*conversation, {"role": "user", "content": "Friday, and the weather?"}])
        stored = await session.conversation.messages(limit=10)
        assert [m.seq for m in stored] == [1, 2, 3]

        recent = await session.context.messages(strategy="recent", max_tokens=4000).assemble()
        assert [m.seq for m in recent.messages] == [1, 2, 3] and recent.strategy_used == "recent"
        assert recent.total_messages == 3 and recent.included_messages == 3 and not recent.fallback
        full = await session.context.messages(strategy="full", max_tokens=7).assemble()
        assert [m.seq for m in full.messages] == [1, 2]
        compacted = await session.context.messages(strategy="compacted", max_tokens=10).assemble()
        assert compacted.strategy_used == "compacted" and compacted.summary == "The user planned a trip."
        assert compacted.summary_range is not None and compacted.summary_range.first_seq == 1
        assert compacted.messages[0].id == "summary" or compacted.messages[1].id == "summary"
        recalled = await (session.context.messages(strategy="recent")
                          .recall(RecallConfig(tools=RecallToolsConfig(limit=2))).assemble())
        assert [t["name"] for t in recalled.recalled["tools"]][:2] == ["get_weather", "book_flight"]
        assert set(recalled.tools) == {"get_weather", "book_flight"}

        async def summarise(older: list) -> dict:
            return {"summary": f"{len(older)} older"}

        client_side = await session.context.messages(strategy="compacted", max_tokens=10,
                                                     compaction_strategy=summarise).assemble()
        assert client_side.strategy_used == "compacted" and client_side.summary.endswith("older")
        await ag.disconnect()

    run(scenario())


def test_the_low_level_client_sends_metadata_turns_and_pages(served: Running) -> None:
    async def scenario() -> None:
        config = ApiClientConfig(server_url=served.url, tools=[
            ServerTool(name="pay", description="pay an invoice", parameters={},
                       metadata={"requires": ["invoice_id"]}),
            ServerTool(name="find_invoice", description="look up", parameters={},
                       metadata={"provides": ["invoice_id"]}),
        ])
        from agentified import ApiClient

        client = ApiClient(config)
        assert (await client.register("billing")).registered == 2
        ranked = await client.discover("billing", "pay invoice", limit=1)
        assert [(t.name, t.score, t.graph_expanded) for t in ranked] == [("pay", 1.0, None), ("find_invoice", 0.0, True)]
        turn = await client.capture_turn("ns", "s", tools_loaded=["find_invoice"], message="hello")
        first = await client.discover("billing", "pay", limit=1, turn_id=turn.turn_id)
        assert [t.name for t in first] == ["find_invoice", "pay"]
        appended = await client.append_messages("billing", "ns", "s", [{"role": "user", "content": str(i)}
                                                                       for i in range(7)])
        assert (appended.appended, appended.first_seq, appended.last_seq) == (7, 1, 7)
        page = await client.get_messages("billing", "ns", "s", limit=3, around_seq=4)
        assert [m.seq for m in page.messages] == [3, 4, 5] and page.has_more and page.max_seq == 7
        await client.close()

    run(scenario())


def test_status_codes_and_error_bodies(tmp_path: Path) -> None:
    with Running(create_app(tmp_path / "store", max_body=10_000)) as served:
        url = served.url
        with httpx.Client(base_url=url) as http:
            assert http.get("/health").json() == {"status": "ok"}
            r = http.post("/api/v1/datasets/d/tools", json={"tools": [{"name": "t", "description": "d"}]})
            assert (r.status_code, r.json()) == (201, {"registered": 1})
            assert http.get("/api/v1/datasets/d/tools").json() == {"tools": [
                {"name": "t", "description": "d", "parameters": {}, "always_include": False, "type": "backend"}],
                "has_more": False}
            r = http.post("/api/v1/turns", json={"tools_loaded": ["t"], "message": "m"})
            assert r.status_code == 201 and len(r.json()["turn_id"]) == 36

            def error(response: httpx.Response) -> tuple[int, str]:
                return response.status_code, response.json()["error"]

            assert error(http.post("/api/v1/datasets/d/tools", content=b"{not json")) [0] == 400
            deep = b"[" * 1000 + b"]" * 1000  # deeper than the JSON parser goes: a 400, not a 500
            for path in ("/api/v1/datasets/d/tools", "/api/v1/datasets/d/discover", "/api/v1/context"):
                assert error(http.post(path, content=deep)) == (400, "invalid JSON body: nested too deeply")
            assert error(http.post("/api/v1/turns", content=b'{"a":' * 1000 + b"1" + b"}" * 1000))[0] == 400
            for constant in ("NaN", "Infinity", "-Infinity"):  # Python's parser reads them; JSON has none
                nan_tool = b'{"tools": [{"name": "n", "description": "d", "parameters": {"x": %s}}]}' % constant.encode()
                assert error(http.post("/api/v1/datasets/d/tools", content=nan_tool)) == (
                    400, f"invalid JSON body: {constant} is not a JSON value")
            assert [t["name"] for t in http.get("/api/v1/datasets/d/tools").json()["tools"]] == ["t"]
            assert error(http.post("/api/v1/datasets/d/tools", json={"tools": [
                {"name": "m", "description": "d", "type": "mcp"}]})) == (400, "tool 'm': mcp tools require server_uri")
            assert error(http.post("/api/v1/datasets/d/discover", json={"query": "q", "turn_id": "nope"})) == (
                404, "turn not found: nope")
            assert error(http.post("/api/v1/datasets/d/discover", json={"query": "q", "strategy": "fuzzy"}))[0] == 400
            assert error(http.post("/api/v1/datasets/d/discover", json={"query": "q", "limit": -1}))[0] == 400
            base = {"dataset": "d", "namespace": "n", "session": "s"}
            assert http.post("/api/v1/messages", json={**base, "messages": [{"role": "user", "content": "hi"}]}).json() == {
                "appended": 1, "first_seq": 1, "last_seq": 1}
            assert error(http.post("/api/v1/messages", json={**base, "messages": [{"role": "user"}]}))[0] == 400
            assert error(http.get("/api/v1/messages", params={**base, "after_seq": 1, "around_seq": 2})) == (
                400, "cannot specify both after_seq and around_seq")
            assert http.get("/api/v1/messages", params={**base, "limit": 0}).json() == {
                "messages": [], "has_more": False, "max_seq": 1}
            assert error(http.get("/api/v1/messages", params={"dataset": "d"}))[0] == 400
            assert error(http.post("/api/v1/context", json={**base, "messages": {"strategy": "bm25"}})) == (
                400, "unknown strategy: bm25")
            assert error(http.post("/api/v1/context", json={**base, "messages": {"strategy": "compacted"}})) == (
                422, "Compacted strategy requires LLM configuration")
            r = http.post("/api/v1/context", json=base)
            assert r.status_code == 200 and r.json()["strategy_used"] == "recent"
            assert set(r.json()) == {"messages", "strategy_used", "total_messages", "included_messages", "recalled",
                                     "token_estimate", "conversation_messages", "fallback"}
            assert error(http.post("/api/v1/messages", content=b"x" * 20_000))[0] == 413
            assert error(http.get("/api/v1/nowhere"))[0] == 404
            assert error(http.delete("/api/v1/context"))[0] == 405
            assert error(http.post("/api/v1/datasets/d/discover", json=["not", "an", "object"]))[0] == 400
            # Hostile ids are data: nothing of dataset d leaks into another.
            hostile = http.get("/api/v1/datasets/x%27%20OR%201%3D1%20--/tools").json()
            assert hostile == {"tools": [], "has_more": False}


def test_an_optional_bearer_token_guards_the_api(tmp_path: Path) -> None:
    with Running(create_app(tmp_path / "store", token="s3cret")) as served, httpx.Client(base_url=served.url) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/api/v1/datasets/d/tools").status_code == 401
        assert http.get("/api/v1/datasets/d/tools", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/api/v1/datasets/d/tools", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_mindcore_serve_keeps_everything_across_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "new" / "store"  # created if missing
    with ServeProcess(store) as server:
        url = server.url
        httpx.post(f"{url}/api/v1/datasets/d/tools", json={"tools": [{"name": "kept", "description": "d"}]})
        httpx.post(f"{url}/api/v1/messages", json={"dataset": "d", "namespace": "n", "session": "s",
                                                   "messages": [{"role": "user", "content": "hi"}]})
        compacted = httpx.post(f"{url}/api/v1/context", json={"dataset": "d", "namespace": "n", "session": "s",
                                                              "messages": {"strategy": "compacted"}})
        assert compacted.status_code == 422  # no LLM configured
    assert '"POST /api/v1/datasets/d/tools" 201' in server.output  # one log line per request
    with ServeProcess(store) as server:
        url = server.url
        assert [t["name"] for t in httpx.get(f"{url}/api/v1/datasets/d/tools").json()["tools"]] == ["kept"]
        page = httpx.get(f"{url}/api/v1/messages", params={"dataset": "d", "namespace": "n", "session": "s"}).json()
        assert [m["content"] for m in page["messages"]] == ["hi"]


class BrokenEmbedder:
    dim = 8
    model_id = "broken-8"

    def embed(self, texts: list[str]) -> Any:
        raise mindcore.errors.EmbeddingError("embedder 'broken-8': endpoint down")


def test_an_embedding_failure_is_a_502(tmp_path: Path) -> None:
    with Running(create_app(tmp_path / "store", embedder=BrokenEmbedder())) as served, \
            httpx.Client(base_url=served.url) as http:
        http.post("/api/v1/datasets/d/tools", json={"tools": [{"name": "t", "description": "d"}]})
        for _ in range(10_000):  # until the background pass has failed: BM25 answers meanwhile
            r = http.post("/api/v1/datasets/d/discover", json={"query": "q", "strategy": "semantic"})
            if r.status_code != 200:
                break
            assert r.json()["strategy_used"] == "bm25"
        assert r.status_code == 502 and "endpoint down" in r.json()["error"]
        assert http.post("/api/v1/datasets/d/discover", json={"query": "q"}).status_code == 200  # bm25 needs no model


class GatedEmbedder:
    """Embeds only once ``release`` is set, counting the texts it was asked for."""

    dim = 16
    model_id = "gated-16"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()
        self.texts = 0
        self._inner = mindcore.embed.HashEmbedder(dim=16)

    def embed(self, texts: list[str]) -> Any:
        self.asked.set()
        assert self.release.wait(300)
        self.texts += len(texts)
        return self._inner.embed(texts)


TRAVEL = [{"name": "get_weather", "description": "Weather forecast for a city"},
          {"name": "book_flight", "description": "Book a flight"}]


def test_registration_never_waits_for_embeddings_and_discovery_says_what_it_used(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with Running(create_app(tmp_path / "store", embedder=embedder)) as served, \
            httpx.Client(base_url=served.url, timeout=120) as http:
        assert http.post("/api/v1/datasets/d/tools", json={"tools": TRAVEL}).status_code == 201
        assert embedder.asked.wait(300)  # the background pass has started, and is held
        for strategy in ("semantic", "hybrid"):
            got = http.post("/api/v1/datasets/d/discover", json={"query": "weather", "strategy": strategy}).json()
            assert got["strategy_used"] == "bm25" and got["tools"][0]["name"] == "get_weather"
        assert http.post("/api/v1/datasets/d/discover", json={"query": "weather"}).json()["strategy_used"] == "bm25"
        embedder.release.set()
        for _ in range(100_000):  # until the vectors are in
            got = http.post("/api/v1/datasets/d/discover", json={"query": "weather", "strategy": "semantic"}).json()
            if got["strategy_used"] == "semantic":
                break
        assert got["strategy_used"] == "semantic" and len(got["tools"]) == 2
        assert embedder.texts == 4 + 1  # each tool's name and description once, and the one query ranked by meaning


def test_on_demand_embedding_waits_for_the_first_semantic_discovery(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    embedder.release.set()
    with Running(create_app(tmp_path / "store", embedder=embedder, embed_tools="on-demand")) as served, \
            httpx.Client(base_url=served.url, timeout=120) as http:
        http.post("/api/v1/datasets/d/tools", json={"tools": TRAVEL}).raise_for_status()
        http.post("/api/v1/datasets/d/discover", json={"query": "weather", "strategy": "bm25"}).raise_for_status()
        assert not embedder.asked.is_set()  # BM25 alone never embeds
        first = http.post("/api/v1/datasets/d/discover", json={"query": "weather", "strategy": "hybrid"}).json()
        assert first["strategy_used"] in ("bm25", "hybrid")
        assert embedder.asked.wait(300)
    with pytest.raises(mindcore.errors.InvalidInputError, match="embed_tools"):
        create_app(tmp_path / "store", embed_tools="eager")  # type: ignore[arg-type]


def test_compacted_through_an_openai_compatible_llm(tmp_path: Path, openai_server: Any) -> None:
    from mindcore.llm import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM("summariser", base_url=openai_server.base_url)
    with Running(create_app(tmp_path / "store", llm=llm)) as served, httpx.Client(base_url=served.url) as http:
        base = {"dataset": "d", "namespace": "n", "session": "s"}
        http.post("/api/v1/messages", json={**base, "messages": [{"role": "user", "content": "x" * 100}] * 5})
        body = http.post("/api/v1/context", json={**base, "messages": {"strategy": "compacted", "max_tokens": 60}}).json()
        assert body["summary"] and body["summary_range"] == {"first_seq": 1, "last_seq": 4, "count": 4}
        assert [m["seq"] for m in body["messages"]] == [5] and body["fallback"] is False


def test_serve_options_and_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from mindcore.server.serve import add_arguments
    from mindcore.server.settings import ServeSettings

    def _llm(model: str | None, base_url: str | None) -> object:
        return ServeSettings(llm_model=model, llm_base_url=base_url).llm()

    def parse(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        return parser.parse_args(argv)

    defaults = parse()
    assert (defaults.host, defaults.port, defaults.token, defaults.llm_model) == ("127.0.0.1", 9119, None, None)
    assert _llm(defaults.llm_model, defaults.llm_base_url) is None
    monkeypatch.setenv("MINDCORE_TOKEN", "t0k")
    monkeypatch.setenv("MINDCORE_LLM_MODEL", "llama3.2")
    monkeypatch.setenv("MINDCORE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    env = parse()
    llm = _llm(env.llm_model, env.llm_base_url)
    assert env.token == "t0k" and llm is not None and llm.model == "llama3.2"  # type: ignore[attr-defined]
    assert parse("--token", "other").token == "other"


def test_responses_are_the_same_json_with_or_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson only speeds the answer up: the bytes are what the standard library writes."""
    import json

    from mindcore.context.types import StoredMessage
    from mindcore.server import http

    payload = {"messages": [StoredMessage({"role": "user", "content": "héllo ☃ \"q\"\n"}, seq=1, id="m1",
                                          created_at=0).to_wire()],
               "nested": {"a": [1, 2.5, None, True], "k": "</x>"}}
    huge = {"big": 2**70}  # over 64 bits: orjson declines, the standard library writes it
    fast, fast_huge = http.encode(payload), http.encode(huge)
    monkeypatch.setattr(http, "orjson", None)
    assert http.encode(payload) == fast
    assert http.encode(huge) == fast_huge
    assert json.loads(fast_huge)["big"] == 2**70
