"""What ``mindcore serve`` reports at ``/metrics``, in Prometheus' text format (version 0.0.4).

=====================================================  =========  ==========================================
metric                                                 type       what
=====================================================  =========  ==========================================
``mindcore_http_requests_total{route,method,status}``  counter    requests answered
``mindcore_http_request_duration_seconds{route}``      histogram  time from the first byte read to the answer
``mindcore_http_requests_in_worker``                   gauge      requests being handled in worker threads
``mindcore_http_connections_open``                     gauge      client connections open now
``mindcore_http_connections_refused_total``            counter    connections answered 503 (over the cap)
``mindcore_http_requests_timed_out_total``             counter    requests answered 408 (too slow to arrive)
``mindcore_store_commits_total``                       counter    commits this server made to the store
``mindcore_tools_embedding_queue``                     gauge      datasets waiting for their tools to be embedded
``mindcore_inbox_pending{agent}``                      gauge      events waiting in an agent's inbox in the store
                                                                  (:class:`~mindcore.consciousness.Inbox`)
``mindcore_inbox_dead_letters{agent}``                 gauge      its dead letters (both store-wide: every worker
                                                                  reports the same; take the max, not the sum)
``mindcore_process_id``                                gauge      this process (with ``--workers``, each scrape
                                                                  reaches one worker; sum over this label)
=====================================================  =========  ==========================================

``route`` is the path with its dataset id replaced by ``{id}`` (``/api/v1/datasets/{id}/discover``),
so one series stands for every dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["route_of"]

_ROUTES = {"health", "metrics"}
_API = {"turns", "messages", "context"}


def route_of(segments: Sequence[str]) -> str:
    """The route a request's path segments belong to, its dataset id as ``{id}``; ``other`` for a
    path the server does not serve (so a scan of random paths adds no series)."""
    if len(segments) == 1 and segments[0] in _ROUTES:
        return "/" + segments[0]
    if len(segments) == 3 and segments[:2] == ["api", "v1"] and segments[2] in _API:
        return "/api/v1/" + segments[2]
    if len(segments) == 5 and segments[:3] == ["api", "v1", "datasets"] and segments[4] in ("tools", "discover"):
        return "/api/v1/datasets/{id}/" + segments[4]
    return "other"
