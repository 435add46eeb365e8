"""Prometheus metrics (one registry per app, built in bootstrap — no module singletons).

No metric carries a tenant label: per-tenant series would let one tenant's scrape-visible
activity be inferred and would grow without bound; dashboards are per deployment.
Definitions (denominators named):
- ``stichtag_answers_total{status}``: answer runs by final status (per run).
- ``stichtag_abstentions_total{reason}``: abstained runs by reason (per run).
- ``stichtag_answer_coverage``: coverage of delivered answers = cited answer sentences /
  answer sentences after re-segmentation (per run).
- ``stichtag_citations_total{valid}``: citations returned, ``valid`` = quote equals the
  version text at its offsets (per citation; anything but 100 % valid is a bug).
- ``stichtag_gate1_score``: the calibrated best rerank score gate 1 compared (per run).
- ``stichtag_stage_seconds{stage}``: retrieve_sync/lexical/vector/details, rerank,
  generate, total (per answer run).
- ``stichtag_search_stage_seconds{stage}``: sync, lexical, vector, details, total (per
  search run; a histogram of its own, so an answer's ``total`` and a search's never mix).
- ``stichtag_http_requests_total{operation,status}``, ``stichtag_http_request_seconds{operation}``.
- ``stichtag_throttled_total{operation,reason}``: requests refused by back-pressure (per
  request): ``key_rate`` (a key over its token bucket, 429), ``tenant_queue_full`` /
  ``tenant_queue_timeout`` (a tenant over its slots and queue, 429), ``node_queue_full`` /
  ``node_busy`` (the node saturated, 503). Denominator: ``stichtag_http_requests_total``
  of the same operation.
- ``stichtag_replica_reads_total{target,reason}``: as-of read transactions by where they ran
  (``standby``: ``stable_past``, ``caught_up``, ``waited``, ``immutable``; ``primary``:
  ``behind``, ``missing``, ``standby_error``), only on a node with
  ``STICHTAG_READ_DATABASE_URL`` (per read transaction; docs/operations.md, "Read replicas").
- ``stichtag_replica_wait_seconds``: how long a read waited for the standby (per wait).
- ``stichtag_replica_lag_bytes``, ``stichtag_replica_lag_seconds``,
  ``stichtag_replica_replay_paused``, ``stichtag_replica_up``: the standby against the
  primary's flush position, measured at scrape time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from stichtag.domain.records import VersionText

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5, 10)
_UNIT = tuple(i / 20 for i in range(1, 21))


class Metrics:
    """The metric families of one server."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("stichtag_http_requests", "HTTP requests",
                                ["operation", "status"], registry=r)
        self.latency = Histogram("stichtag_http_request_seconds", "HTTP request latency",
                                 ["operation"], buckets=_SECONDS, registry=r)
        self.stages = Histogram("stichtag_stage_seconds", "Answer stage latency",
                                ["stage"], buckets=_SECONDS, registry=r)
        self.search_stages = Histogram("stichtag_search_stage_seconds",
                                       "Search stage latency", ["stage"], buckets=_SECONDS,
                                       registry=r)
        self.answers = Counter("stichtag_answers", "Answer runs by status", ["status"], registry=r)
        self.abstentions = Counter("stichtag_abstentions", "Abstentions by reason", ["reason"],
                                   registry=r)
        self.coverage = Histogram("stichtag_answer_coverage", "Coverage of delivered answers",
                                  buckets=_UNIT, registry=r)
        self.citations = Counter("stichtag_citations", "Citations returned by validity",
                                 ["valid"], registry=r)
        self.throttled = Counter("stichtag_throttled", "Requests refused by rate limits or queues",
                                 ["operation", "reason"], registry=r)
        self.gate1 = Histogram("stichtag_gate1_score", "Calibrated best rerank score at gate 1",
                               buckets=_UNIT, registry=r)
        self.replica_reads = Counter("stichtag_replica_reads", "As-of reads by where they ran",
                                     ["target", "reason"], registry=r)
        self.replica_wait = Histogram("stichtag_replica_wait_seconds",
                                      "Time a read waited for the standby", buckets=_SECONDS,
                                      registry=r)
        self.replica_lag_bytes = Gauge("stichtag_replica_lag_bytes",
                                       "WAL bytes the standby has not replayed", registry=r)
        self.replica_lag_seconds = Gauge("stichtag_replica_lag_seconds",
                                         "Age of the standby's last replayed commit while it "
                                         "is behind (0 when caught up)", registry=r)
        self.replica_paused = Gauge("stichtag_replica_replay_paused",
                                    "1 while the standby's replay is paused", registry=r)
        self.replica_up = Gauge("stichtag_replica_up", "1 while the standby answers",
                                registry=r)
        self.worker_slot = Gauge("stichtag_worker_slot",
                                 "This server process's worker slot on its node (each "
                                 "process of `serve --workers N` is scraped on its own)",
                                 registry=r)
        self.index_pending_embeddings = Gauge(
            "stichtag_index_pending_embeddings",
            "Passages without a vector of the current model, summed over the replicas this "
            "process keeps (read at scrape time; docs/api.md, Index status)",
            registry=r)
        self.index_lexical_pending = Gauge(
            "stichtag_index_lexical_pending",
            "Outbox rows this process's lexical replicas have not applied, summed (read at "
            "scrape time)", registry=r)
        self.index_filling = Gauge(
            "stichtag_index_filling",
            "Replicas of this process whose derived indexes are behind PostgreSQL",
            registry=r)
        # Unknown until measured (and always on a node without a standby): NaN, not 0.
        self.observe_replica_status(reachable=False, lag_bytes=None, lag_seconds=None,
                                    paused=None)

    def count_replica_read(self, target: str, reason: str) -> None:
        """One routed read transaction."""
        self.replica_reads.labels(target, reason).inc()

    def observe_replica_status(self, *, reachable: bool, lag_bytes: int | None,
                               lag_seconds: float | None, paused: bool | None) -> None:
        """The standby's state at scrape time (NaN for what an unreachable one cannot say)."""
        nan = float("nan")
        self.replica_up.set(1 if reachable else 0)
        self.replica_lag_bytes.set(nan if lag_bytes is None else lag_bytes)
        self.replica_lag_seconds.set(nan if lag_seconds is None else lag_seconds)
        self.replica_paused.set(nan if paused is None else int(paused))

    def observe_answer(self, result: Any, texts: Mapping[str, VersionText]) -> None:
        """Count one answer run; ``texts`` maps version ids to what the citations were cut
        from (a whole version or an excerpt) for validity."""
        self.answers.labels(result.status).inc()
        if result.reason:
            self.abstentions.labels(result.reason).inc()
        if result.coverage is not None and result.status != "abstained":
            self.coverage.observe(result.coverage)
        if result.gates and result.gates[0].observed is not None:
            self.gate1.observe(result.gates[0].observed)
        for stage, ms in result.timings_ms.items():
            self.stages.labels(stage).observe(ms / 1000)
        for sentence in result.sentences:
            for c in sentence.citations:
                text = texts.get(c.version_id)
                valid = text is not None and text.slice(c.start, c.end) == c.quote
                self.citations.labels("true" if valid else "false").inc()

    def observe_search(self, timings_ms: Mapping[str, float]) -> None:
        """One search run's stage times."""
        for stage, ms in timings_ms.items():
            self.search_stages.labels(stage).observe(ms / 1000)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


async def count_request(metrics: Metrics, scope: Any, receive: Any, send: Any,
                        next_app: Any) -> None:
    """Run the request, then count it by operation id and status."""
    started = time.perf_counter()
    status = {"code": 500}

    async def capture(message: Any) -> None:
        if message["type"] == "http.response.start":
            status["code"] = message["status"]
        await send(message)

    try:
        await next_app(scope, receive, capture)
    finally:
        handler = scope.get("route_handler")
        op = getattr(handler, "operation_id", None)
        op = op if isinstance(op, str) else "unmatched"
        metrics.requests.labels(op, str(status["code"])).inc()
        metrics.latency.labels(op).observe(time.perf_counter() - started)
