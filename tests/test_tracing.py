"""OpenTelemetry spans (``mindcore[otel]``): named ``mindcore.<operation>``, identifiers and
counts as attributes, never stored text, and an escaping exception recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.tracing import span

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    # A process has one global provider: set it once, clear what earlier tests recorded.
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER


def _by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_recall_discover_and_writes_are_spans_without_stored_text(tmp_path: Any, spans: InMemorySpanExporter) -> None:
    ltm = mindcore.LongTermMemory.create(tmp_path / "s", user_id="u1", enabled=True, embedder=HashEmbedder())
    ltm.remember("Prefers green tea over coffee")
    ltm.recall("what does the user drink?", k=3)
    ltm.close()
    ctx = mindcore.Context(tmp_path / "c", dataset="travel")
    ctx.register([mindcore.Tool("get_weather", "Current weather for a city")])
    ctx.discover("weather in Paris", limit=2, strategy="bm25")
    got = _by_name(spans)
    assert got["mindcore.ltm.remember"].attributes["mindcore.user_id"] == "u1"
    assert dict(got["mindcore.ltm.recall"].attributes) == {"mindcore.queries": 1, "mindcore.k": 3}
    assert got["mindcore.context.register"].attributes["mindcore.dataset"] == "travel"
    assert dict(got["mindcore.context.discover"].attributes) == {
        "mindcore.dataset": "travel", "mindcore.strategy": "bm25", "mindcore.limit": 2}
    for s in got.values():
        assert not any("tea" in str(v) or "Paris" in str(v) for v in s.attributes.values())


def test_an_escaping_error_is_recorded_on_its_span(spans: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), span("probe", n=1, skipped=None, bad=[1]):
        raise ValueError("boom")
    (probe,) = spans.get_finished_spans()
    assert probe.name == "mindcore.probe" and dict(probe.attributes) == {"mindcore.n": 1}
    assert probe.status.status_code == trace.StatusCode.ERROR
    assert probe.events[0].name == "exception"


def test_a_traced_call_with_bad_arguments_raises_the_functions_own_error(spans: InMemorySpanExporter) -> None:
    ctx = mindcore.Context(None, dataset="d")
    with pytest.raises(TypeError, match="unexpected keyword argument 'limmit'"):
        ctx.discover("weather", limmit=2)  # type: ignore[call-arg]
    assert spans.get_finished_spans() == ()
    with pytest.raises(mindcore.MindcoreError):
        ctx.discover("weather", limit=-1)
    assert [s.name for s in spans.get_finished_spans()] == ["mindcore.context.discover"]
