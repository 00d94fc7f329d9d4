"""Tool discovery, scored as the agentified server scores it: BM25 (k1 0.9, b 0.4, min-max over the
candidates), weighted-cosine semantic, 0.7/0.3 hybrid; exclusions, always-included tools, turns,
session-held tools, graph expansion and limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _context_helpers import TableEmbedder, bm25_oracle

import mindcore
import mindcore.context.discovery as discovery
from mindcore.context import Context, ContextConfig, Tool, ToolFields
from mindcore.errors import ContextError, NotFoundError

TOOLS = [
    Tool("get_weather", "Get the current weather forecast for a city",
         {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                            "units": {"type": "string"}}}),
    Tool("book_flight", "Book a flight between two airports",
         {"type": "object", "properties": {"origin": {"description": "departure airport code"}}}),
    Tool("send_email", "Send an email message to a recipient"),
    Tool("search_hotels", "Search hotels in a city for given dates"),
    Tool("convert_currency", "Convert an amount between two currencies"),
]


@pytest.fixture
def ctx(store: mindcore.Store) -> Context:
    c = Context(store, dataset="travel")
    c.register(TOOLS)
    return c


def scores(found: list) -> dict[str, float]:
    return {t.name: t.score for t in found}


@pytest.mark.parametrize("query", ["weather forecast in the city", "book a flight", "airport code",
                                   "two", "nothing matches zzz"])
def test_bm25_scores_equal_the_reference_formula(ctx: Context, query: str) -> None:
    expected = bm25_oracle(query, [t.document() for t in TOOLS])
    found = ctx.discover(query, limit=5, strategy="bm25")
    assert len(found) == 5
    got = scores(found)
    for tool, want in zip(TOOLS, expected, strict=True):
        assert got[tool.name] == pytest.approx(want, abs=1e-5)
    assert [t.score for t in found] == sorted((t.score for t in found), reverse=True)


def test_the_document_is_name_description_and_parameters(ctx: Context) -> None:
    assert TOOLS[0].document() == "get_weather Get the current weather forecast for a city city City name units"
    # A word only in a parameter's description finds the tool.
    assert ctx.discover("departure", limit=1)[0].name == "book_flight"


def test_fields_replace_name_and_description_in_the_document(store: mindcore.Store) -> None:
    ctx = Context(store)
    ctx.register([Tool("t1", "zebra crossing", fields=ToolFields("t1", "pedestrian path")),
                  Tool("t2", "plain tool")])
    assert ctx.discover("zebra", limit=1)[0].score == 0.0  # "zebra" is not indexed for t1
    assert ctx.discover("pedestrian", limit=1)[0].name == "t1"


def test_all_equal_scores_normalise_to_zero_and_keep_registration_order(ctx: Context) -> None:
    found = ctx.discover("zzz", limit=3)
    assert [(t.name, t.score) for t in found] == [("get_weather", 0.0), ("book_flight", 0.0), ("send_email", 0.0)]
    single = ctx.discover("weather", limit=5, exclude=[t.name for t in TOOLS[1:]])
    assert [(t.name, t.score) for t in single] == [("get_weather", 0.0)]


def test_bm25_corpus_is_the_candidate_set(ctx: Context) -> None:
    kept = [t for t in TOOLS if t.name not in ("search_hotels", "send_email")]
    expected = bm25_oracle("city weather", [t.document() for t in kept])
    got = scores(ctx.discover("city weather", limit=5, exclude=["search_hotels", "send_email"]))
    assert set(got) == {t.name for t in kept}
    for tool, want in zip(kept, expected, strict=True):
        assert got[tool.name] == pytest.approx(want, abs=1e-5)


def semantic_ctx(store: mindcore.Store, **kwargs: object) -> tuple[Context, TableEmbedder]:
    emb = TableEmbedder({
        "query": [1, 0, 0, 0],
        "alpha": [1, 0, 0, 0], "alpha does things": [0, 1, 0, 0],
        "beta": [0, 0, 1, 0], "beta does things": [1, 1, 0, 0],
        "in-schema": [1, 0, 0, 0], "out-schema": [0, 0, 0, 1],
    })
    ctx = Context(store, embedder=emb, **kwargs)  # type: ignore[arg-type]
    ctx.register([
        Tool("alpha", "alpha does things"),
        Tool("beta", "beta does things",
             fields=ToolFields("beta", "beta does things", input_schema="in-schema", output_schema="out-schema")),
    ])
    return ctx, emb


def test_semantic_is_the_weighted_cosine_of_the_fields_a_tool_has(store: mindcore.Store) -> None:
    ctx, _ = semantic_ctx(store)
    got = scores(ctx.discover("query", strategy="semantic"))
    assert got["alpha"] == pytest.approx((0.1 * 1 + 0.5 * 0) / 0.6, abs=1e-6)
    assert got["beta"] == pytest.approx((0.1 * 0 + 0.5 * math.sqrt(0.5) + 0.3 * 1 + 0.1 * 0) / 1.0, abs=1e-6)
    heavy_name = scores(ctx.discover("query", strategy="semantic", weights={"name": 0.9, "description": 0.1}))
    assert heavy_name["alpha"] == pytest.approx(0.9, abs=1e-6)


def test_hybrid_is_seven_tenths_semantic_and_three_tenths_bm25(store: mindcore.Store) -> None:
    ctx, _ = semantic_ctx(store)
    sem = scores(ctx.discover("query alpha", strategy="semantic"))
    lex = scores(ctx.discover("query alpha", strategy="bm25"))
    hyb = scores(ctx.discover("query alpha", strategy="hybrid"))
    for name in ("alpha", "beta"):
        assert hyb[name] == pytest.approx(0.7 * sem[name] + 0.3 * lex[name], abs=1e-5)


def _z(values: dict[str, float]) -> dict[str, float]:
    mean = sum(values.values()) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / len(values))
    return {k: (v - mean) / spread if spread else 0.0 for k, v in values.items()}


def test_zscore_fusion_standardises_each_score_over_the_candidates(store: mindcore.Store) -> None:
    ctx, emb = semantic_ctx(store, config=ContextConfig(fusion="zscore"))
    emb.table["gamma"] = [0, 0.6, 0.8, 0]
    emb.table["gamma does things"] = [0.8, 0, 0.6, 0]
    ctx.register([Tool("gamma", "gamma does things")])
    for query in ("query alpha", "query gamma", "query"):
        sem = scores(ctx.discover(query, strategy="semantic"))
        lex = scores(ctx.discover(query, strategy="bm25"))
        hyb = scores(ctx.discover(query, strategy="hybrid"))
        zs, zl = _z(sem), _z(lex)
        assert hyb == pytest.approx({k: 0.7 * zs[k] + 0.3 * zl[k] for k in sem}, abs=1e-4)
    weighted = Context(store, embedder=emb)  # the same tools, the agentified server's fusion
    got = scores(weighted.discover("query gamma", strategy="hybrid"))
    sem = scores(weighted.discover("query gamma", strategy="semantic"))
    lex = scores(weighted.discover("query gamma", strategy="bm25"))
    assert got == pytest.approx({k: 0.7 * sem[k] + 0.3 * lex[k] for k in sem}, abs=1e-5)


def test_fusion_must_be_known() -> None:
    with pytest.raises(ContextError, match="fusion: 'rrf' is not one of 'weighted', 'zscore'"):
        ContextConfig(fusion="rrf")  # type: ignore[arg-type]


def test_the_default_strategy_is_the_contexts(store: mindcore.Store) -> None:
    ctx, _ = semantic_ctx(store, default_strategy="semantic")
    assert scores(ctx.discover("query")) == scores(ctx.discover("query", strategy="semantic"))


def test_field_vectors_are_stored_and_never_embedded_twice(tmp_path: object) -> None:
    path = str(tmp_path) + "/store"
    ctx, emb = semantic_ctx(mindcore.open(path))
    ctx.discover("query", strategy="semantic")
    embedded = [t for call in emb.calls for t in call]
    assert sorted(embedded) == sorted(["alpha", "alpha does things", "beta", "beta does things", "in-schema",
                                       "out-schema", "query"])
    # Another context on the same store with the same model reads the stored vectors.
    again = Context(path, embedder=emb)
    emb.calls.clear()
    assert scores(again.discover("query", strategy="semantic")) == pytest.approx(scores(ctx.discover("query", strategy="semantic")))
    assert {t for call in emb.calls for t in call} == {"query"}  # tool fields come from the store


def test_ranking_runs_in_the_rust_kernels(store: mindcore.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, _ = semantic_ctx(store)
    calls = {"topk": 0, "bm25": 0}
    real_topk, real_index = discovery.hybrid_topk, discovery.BM25Index

    def topk(*args: object, **kwargs: object) -> object:
        calls["topk"] += 1
        return real_topk(*args, **kwargs)  # type: ignore[arg-type]

    class Index(real_index):  # type: ignore[misc, valid-type]
        def scores(self, query: str) -> np.ndarray:
            calls["bm25"] += 1
            return super().scores(query)

    monkeypatch.setattr(discovery, "hybrid_topk", topk)
    monkeypatch.setattr(discovery, "BM25Index", Index)
    ctx._catalog_now = None
    ctx.discover("query alpha", strategy="hybrid")
    assert calls == {"topk": 1, "bm25": 1}


def test_exclude_and_always_include_are_never_ranked(store: mindcore.Store) -> None:
    ctx = Context(store)
    ctx.register([Tool("escalate", "escalate weather to a human", always_include=True), *TOOLS])
    names = [t.name for t in ctx.discover("weather", limit=10, exclude=["get_weather"])]
    assert "escalate" not in names and "get_weather" not in names and len(names) == 4


def test_a_turns_tools_come_first_with_score_one(ctx: Context) -> None:
    turn = ctx.turn(tools_loaded=["send_email", "not_registered", "book_flight"], message="hi")
    found = ctx.discover("weather", limit=2, turn_id=turn)
    assert [(t.name, t.score) for t in found[:2]] == [("send_email", 1.0), ("book_flight", 1.0)]
    assert [t.name for t in found[2:]] == ["get_weather", "search_hotels"]
    with pytest.raises(NotFoundError, match="turn not found: nope"):
        ctx.discover("weather", turn_id="nope")


def test_a_sessions_held_tools_are_excluded_and_the_union_is_kept(ctx: Context) -> None:
    first = ctx.discover("weather", limit=1, namespace="ns", session="s1")
    assert [t.name for t in first] == ["get_weather"]
    second = ctx.discover("weather city", limit=1, namespace="ns", session="s1")
    assert [t.name for t in second] == ["search_hotels"]
    assert ctx.session("s1", namespace="ns").held_tools == ["get_weather", "search_hotels"]
    # Another session, or no session, is unaffected.
    assert ctx.discover("weather", limit=1, namespace="ns", session="s2")[0].name == "get_weather"
    assert ctx.discover("weather", limit=1)[0].name == "get_weather"


def test_graph_expansion_adds_providers_of_what_ranked_tools_require(store: mindcore.Store) -> None:
    ctx = Context(store)
    ctx.register([
        Tool("pay", "pay an invoice", metadata={"requires": ["invoice_id", "account"]}),
        Tool("p_one", "zzz", metadata={"provides": ["account"]}),
        Tool("p_both", "zzz", metadata={"provides": ["invoice_id", "account"]}),
        Tool("p_inv", "zzz", metadata={"provides": ["invoice_id"]}),
        Tool("p_excluded", "zzz", metadata={"provides": ["invoice_id", "account"]}),
    ])
    found = ctx.discover("pay invoice", limit=1, exclude=["p_excluded"])
    assert [(t.name, t.score, t.graph_expanded) for t in found] == [
        ("pay", 1.0, False), ("p_both", 0.0, True)]  # ceil(0.6 * 1) = 1 provider
    found = ctx.discover("pay invoice", limit=3, exclude=["p_excluded"])
    ranked = [t.name for t in found if not t.graph_expanded]
    assert ranked[0] == "pay" and len(ranked) == 3
    expanded = [t for t in found if t.graph_expanded]
    assert all(t.score == 0.0 for t in expanded)
    assert {t.name for t in expanded}.isdisjoint(ranked) and "p_excluded" not in {t.name for t in found}
    assert found[0].to_wire()["score"] == 1.0 and "graph_expanded" not in found[0].to_wire()


def test_limit_defaults_to_five_and_is_capped_at_one_hundred(store: mindcore.Store) -> None:
    ctx = Context(store)
    ctx.register([Tool(f"tool_{i}", f"does thing {i}") for i in range(120)])
    assert len(ctx.discover("thing")) == 5
    assert len(ctx.discover("thing", limit=500)) == 100
    assert ctx.discover("thing", limit=0) == []
    with pytest.raises(ContextError, match="limit"):
        ctx.discover("thing", limit=-1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"strategy": "fuzzy"}, "strategy"),
    ({"exclude": "get_weather"}, "exclude"),
    ({"weights": {"name": -1}}, "weights.name"),
    ({"weights": {"colour": 1}}, "unknown fields"),
    ({"session": ""}, "session"),
])
def test_bad_discovery_arguments_are_clear_errors(ctx: Context, kwargs: dict, match: str) -> None:
    with pytest.raises(ContextError, match=match):
        ctx.discover("weather", **kwargs)


def test_an_empty_dataset_discovers_nothing(store: mindcore.Store) -> None:
    assert Context(store, dataset="empty").discover("anything", strategy="hybrid") == []


def test_hostile_ids_are_plain_data(store: mindcore.Store) -> None:
    hostile = "x' OR namespace != '' --"
    Context(store, dataset="victim").register([Tool("secret_tool", "weather")])
    evil = Context(store, dataset=hostile)
    assert evil.discover("weather") == []
    evil.register([Tool("t", "weather")])
    assert [t.name for t in Context(store, dataset="victim").tools()] == ["secret_tool"]


def test_embed_tools_readies_semantic_discovery_and_a_new_registration_unreadies_it(tmp_path) -> None:
    import asyncio

    from mindcore.embed import HashEmbedder

    calls: list[int] = []

    class Counting(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            calls.append(len(texts))
            return super().embed(texts)

    c = Context(tmp_path / "store", dataset="travel", embedder=Counting())
    c.register([Tool("get_weather", "Current weather for a city"), Tool("book_hotel", "Reserve a hotel room")])
    assert not c.tools_embedded()
    c.embed_tools()
    assert c.tools_embedded() and calls
    embedded = len(calls)
    c.discover("weather in Paris", strategy="semantic")
    assert len(calls) == embedded + 1  # the query only: the tools' vectors were at hand
    c.register([Tool("find_flight", "Search flights between two cities")])
    assert not asyncio.run(c.atools_embedded())
    asyncio.run(c.aembed_tools())
    assert asyncio.run(c.atools_embedded())
    reopened = Context(tmp_path / "store", dataset="travel", embedder=Counting())  # stored vectors are read back
    calls.clear()
    reopened.embed_tools()
    assert reopened.tools_embedded() and calls == []
    c.close(), reopened.close()
