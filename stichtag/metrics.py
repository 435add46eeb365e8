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
  generate, total (per run).
- ``stichtag_http_requests_total{operation,status}``, ``stichtag_http_request_seconds{operation}``.
- ``stichtag_throttled_total{operation,reason}``: requests refused by back-pressure (per
  request): ``key_rate`` (a key over its token bucket, 429), ``tenant_queue_full`` /
  ``tenant_queue_timeout`` (a tenant over its slots and queue, 429), ``node_queue_full`` /
  ``node_busy`` (the node saturated, 503). Denominator: ``stichtag_http_requests_total``
  of the same operation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

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
        self.stages = Histogram("stichtag_stage_seconds", "Answer/search stage latency",
                                ["stage"], buckets=_SECONDS, registry=r)
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
