"""What ``mindcore serve`` tells its operators, from a real server process: ``/metrics`` in
Prometheus' text format (parsed back line by line), a request id on every answer and log line, and
JSON log lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

from _serve_process import ServeProcess

from mindcore._http_metrics import LATENCY_BUCKETS, Metrics
from mindcore.server.metrics import route_of

SESSION = {"dataset": "d", "namespace": "n", "session": "s"}
_SAMPLE = re.compile(r'^([a-z_]+)(\{.*\})? (\S+)$')


def samples(text: str) -> dict[str, float]:
    """Every sample of a Prometheus text exposition, keyed by name and labels as written."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            assert line.startswith(("# HELP ", "# TYPE ")) or not line, line
            continue
        m = _SAMPLE.match(line)
        assert m is not None, f"not a sample line: {line!r}"
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def test_metrics_count_requests_latency_connections_and_commits(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "store", "--log-format", "json") as server, \
            httpx.Client(base_url=server.url, timeout=120) as http:
        assert http.post("/api/v1/datasets/d1/tools", json={"tools": [{"name": "t", "description": "d"}]}).status_code == 201
        for dataset in ("d1", "d2"):
            http.post(f"/api/v1/datasets/{dataset}/discover", json={"query": "q"})
        http.post("/api/v1/messages", json={**SESSION, "messages": [{"role": "user", "content": "hi"}]})
        assert http.get("/nowhere/at/all").status_code == 404
        answer = http.get("/metrics")
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
        got = samples(answer.text)
        assert got['mindcore_http_requests_total{route="/api/v1/datasets/{id}/discover",method="POST",status="200"}'] == 2
        assert got['mindcore_http_requests_total{route="/api/v1/datasets/{id}/tools",method="POST",status="201"}'] == 1
        assert got['mindcore_http_requests_total{route="other",method="GET",status="404"}'] == 1
        route = 'route="/api/v1/datasets/{id}/discover"'
        assert got[f"mindcore_http_request_duration_seconds_count{{{route}}}"] == 2
        assert got[f'mindcore_http_request_duration_seconds_bucket{{{route},le="+Inf"}}'] == 2
        buckets = [got[f'mindcore_http_request_duration_seconds_bucket{{{route},le="{b!r}"}}'] for b in LATENCY_BUCKETS]
        assert buckets == sorted(buckets)  # cumulative
        assert got["mindcore_http_connections_open"] >= 1  # this client's
        assert got["mindcore_store_commits_total"] >= 2  # the tools and the message at least
        assert got["mindcore_http_requests_in_worker"] == 0
        assert got["mindcore_tools_embedding_queue"] >= 0 and got["mindcore_process_id"] == server.pid
        assert http.post("/metrics").status_code == 405
    assert all(line.startswith("{") for line in server.lines), server.output  # every line JSON, uvicorn's too
    lines = [json.loads(line) for line in server.lines]
    requests = [line for line in lines if "request_id" in line]
    assert {r["route"] for r in requests} >= {"/api/v1/datasets/{id}/discover", "/metrics", "other"}
    assert all(r["level"] == "info" and r["logger"] == "mindcore.server" and r["ts"].endswith("+00:00")
               for r in requests)


def test_metrics_report_each_agents_inbox_in_the_store(tmp_path: Path) -> None:
    from mindcore.consciousness import Inbox

    with ServeProcess(tmp_path / "store") as server, httpx.Client(base_url=server.url, timeout=120) as http:
        got = samples(http.get("/metrics").text)
        assert not any(name.startswith("mindcore_inbox_") for name in got)  # no inbox in the store yet
        with Inbox(tmp_path / "store", agent="support", max_attempts=1) as inbox:  # another process writes it
            inbox.push_many([{"kind": "plan", "text": "a"}, {"kind": "plan", "text": "b"}])
            inbox.nack([e.id for e in inbox.receive(max_events=1)], error="poisoned")
        got = samples(http.get("/metrics").text)
        assert got['mindcore_inbox_pending{agent="support"}'] == 1
        assert got['mindcore_inbox_dead_letters{agent="support"}'] == 1


def test_every_answer_carries_a_request_id_and_the_log_line_names_it(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "store") as server, httpx.Client(base_url=server.url, timeout=120) as http:
        mine = http.get("/health", headers={"x-request-id": "trace-42.a:b"})
        assert mine.headers["x-request-id"] == "trace-42.a:b"
        made = http.get("/health", headers={"x-request-id": "bad id"}).headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", made)
        assert http.get("/api/v1/nothing").headers["x-request-id"] != made
    assert any(line.endswith("trace-42.a:b") for line in server.lines)
    assert any(line.endswith(made) for line in server.lines)


def test_metrics_need_the_token_when_one_is_set(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "store", "--token", "s3cret-token") as server:
        assert httpx.get(f"{server.url}/metrics").status_code == 401
        ok = httpx.get(f"{server.url}/metrics", headers={"authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200 and "mindcore_http_requests_total" in ok.text
        assert httpx.get(f"{server.url}/health").status_code == 200


def test_routes_are_templates_so_series_stay_few() -> None:
    assert route_of(["api", "v1", "datasets", "any-name", "discover"]) == "/api/v1/datasets/{id}/discover"
    assert route_of(["api", "v1", "messages"]) == "/api/v1/messages"
    assert route_of(["health"]) == "/health"
    assert route_of(["api", "v1", "datasets", "x", "drop"]) == "other"
    assert route_of(["wp-admin", "login.php"]) == "other"


def test_histogram_buckets_and_sums() -> None:
    m = Metrics()
    for seconds in (0.0004, 0.003, 0.003, 20.0):
        m.observe("/health", "GET", 200, seconds)
    got = samples(m.render())
    assert got['mindcore_http_request_duration_seconds_bucket{route="/health",le="0.0005"}'] == 1
    assert got['mindcore_http_request_duration_seconds_bucket{route="/health",le="0.005"}'] == 3
    assert got['mindcore_http_request_duration_seconds_bucket{route="/health",le="10.0"}'] == 3
    assert got['mindcore_http_request_duration_seconds_bucket{route="/health",le="+Inf"}'] == 4
    assert got['mindcore_http_request_duration_seconds_sum{route="/health"}'] == pytest.approx(20.0064)
    assert "mindcore_store_commits_total" not in m.render()  # no store given
