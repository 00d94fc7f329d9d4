"""Request counters and latency histograms of mindcore's HTTP servers, rendered in Prometheus'
text format (version 0.0.4): ``mindcore serve`` (:mod:`mindcore.server.metrics` lists its
metrics) and ``mindcore mcp --http``."""

from __future__ import annotations

import bisect
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping

from mindcore._http_guard import ConnectionStats

__all__ = ["LATENCY_BUCKETS", "Metrics"]

#: Upper bounds (seconds) of the latency histogram's buckets.
LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                      2.5, 5.0, 10.0)


class _Histogram:
    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)  # the last: above every bound
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds
        self.count += 1


class Metrics:
    """The server's counters and latency histograms, rendered by :meth:`render` (thread-safe)."""

    def __init__(self, connections: ConnectionStats | None = None,
                 commits: Callable[[], int] | None = None, embedding_queue: Callable[[], int] | None = None,
                 inboxes: Callable[[], Mapping[str, tuple[int, int]]] | None = None) -> None:
        self.connections = connections if connections is not None else ConnectionStats()
        self._commits = commits
        self._embedding_queue = embedding_queue
        self._inboxes = inboxes
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, int]] = Counter()
        self._latency: dict[str, _Histogram] = {}
        self._in_worker = 0

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        with self._lock:
            self._requests[(route, method, status)] += 1
            histogram = self._latency.get(route)
            if histogram is None:
                histogram = self._latency[route] = _Histogram()
            histogram.observe(seconds)

    def worker(self, delta: int) -> None:
        """A request handed to (``+1``) or back from (``-1``) a worker thread."""
        with self._lock:
            self._in_worker += delta

    def render(self) -> str:
        """Every metric in Prometheus' text format (blocking: the inbox counts read the store)."""
        with self._lock:
            requests = sorted(self._requests.items())
            latency = sorted((route, list(h.counts), h.total, h.count) for route, h in self._latency.items())
            in_worker = self._in_worker
        lines = ["# HELP mindcore_http_requests_total Requests answered.",
                 "# TYPE mindcore_http_requests_total counter"]
        lines += [f'mindcore_http_requests_total{{route="{r}",method="{m}",status="{s}"}} {n}'
                  for (r, m, s), n in requests]
        lines += ["# HELP mindcore_http_request_duration_seconds Time from the request's first byte read to its answer.",
                  "# TYPE mindcore_http_request_duration_seconds histogram"]
        for route, counts, total, count in latency:
            running = 0
            for bound, n in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(f'mindcore_http_request_duration_seconds_bucket{{route="{route}",le="{le}"}} {running}')
            lines.append(f'mindcore_http_request_duration_seconds_sum{{route="{route}"}} {total!r}')
            lines.append(f'mindcore_http_request_duration_seconds_count{{route="{route}"}} {count}')
        conn = self.connections
        lines += _one("mindcore_http_requests_in_worker", "gauge", "Requests being handled in worker threads.",
                      in_worker)
        lines += _one("mindcore_http_connections_open", "gauge", "Client connections open now.", conn.open)
        lines += _one("mindcore_http_connections_refused_total", "counter",
                      "Connections answered 503 because the connection cap was reached.", conn.refused)
        lines += _one("mindcore_http_requests_timed_out_total", "counter",
                      "Requests answered 408 because their headers or body did not arrive in time.", conn.timed_out)
        if self._commits is not None:
            lines += _one("mindcore_store_commits_total", "counter", "Commits this server made to the store.",
                          self._commits())
        if self._embedding_queue is not None:
            lines += _one("mindcore_tools_embedding_queue", "gauge",
                          "Datasets waiting for their tools to be embedded in the background.", self._embedding_queue())
        if self._inboxes is not None:
            inboxes = sorted(self._inboxes().items())
            for index, (name, text) in enumerate((
                    ("mindcore_inbox_pending", "Events waiting in an agent's inbox in the store (not acked, not dead)."),
                    ("mindcore_inbox_dead_letters", "Events of an agent's inbox delivered too often without an ack."))):
                lines += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
                lines += [f'{name}{{agent="{agent}"}} {counts[index]}' for agent, counts in inboxes]
        lines += _one("mindcore_process_id", "gauge", "The serving process that answered this scrape.", os.getpid())
        return "\n".join(lines) + "\n"


def _one(name: str, kind: str, text: str, value: int) -> list[str]:
    return [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name} {value}"]
