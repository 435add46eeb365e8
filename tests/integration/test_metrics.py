"""GET /metrics: answers, abstentions by reason, coverage, citation validity, gate-1
scores, stage and request latencies — and no tenant label anywhere."""

from __future__ import annotations

from typing import Any

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import METRICS_AUTH, LiveServer


def _value(text: str, prefix: str) -> float:
    for line in text.splitlines():
        if line.startswith(prefix + " ") or (line.startswith(prefix) and "{" not in prefix
                                             and line[len(prefix):].startswith(" ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_answers_abstentions_and_citations(live: LiveServer, tenant: Any) -> None:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    with live.client(key) as http:
        answered = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2022-06-01"}).json()
        http.post("/v1/answer", json={"question": "Wer gewann die Fußball-WM 2014?"})
        http.post("/v1/search", json={"query": "Gesamtverzinsung"})
        text = http.get("/metrics", headers=METRICS_AUTH).text
    n_citations = sum(len(s["citations"]) for s in answered["sentences"])
    assert n_citations > 0
    assert _value(text, 'stichtag_citations_total{valid="true"}') == n_citations
    assert _value(text, 'stichtag_citations_total{valid="false"}') == 0
    # the off-topic question is refused by the scope gate, and counted under its reason
    assert _value(text, 'stichtag_abstentions_total{reason="out_of_scope"}') == 1
    assert _value(text, 'stichtag_abstentions_total{reason="insufficient_evidence"}') == 0
    assert _value(text, f'stichtag_answers_total{{status="{answered["status"]}"}}') == 1
    assert _value(text, "stichtag_gate1_score_count") == 2
    assert _value(text, "stichtag_answer_coverage_count") == 1
    assert _value(text, 'stichtag_http_requests_total{operation="answer",status="200"}') == 2
    assert _value(text, 'stichtag_stage_seconds_count{stage="rerank"}') == 2
    # the one search has stage times of its own, apart from the answers' "total"
    assert _value(text, 'stichtag_search_stage_seconds_count{stage="vector"}') == 1
    assert _value(text, 'stichtag_search_stage_seconds_count{stage="total"}') == 1
    assert _value(text, 'stichtag_stage_seconds_count{stage="total"}') == 2
    assert str(tenant.tenant_id) not in text and "tenant" not in text


def test_gap_report_groups_abstained_questions(live: LiveServer, tenant: Any) -> None:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    questions = ["Wie hoch ist der Eiffelturm?", "Wie hoch ist der Eiffelturm in Paris?",
                 "Welche Höhe hat der Eiffelturm?", "Wer gewann die Fußball-WM 2014?"]
    with live.client(key) as http:
        for q in questions:
            assert http.post("/v1/answer", json={"question": q}).json()["status"] == "abstained"
        http.post("/v1/answer", json={"question": "Welcher Höchstrechnungszins gilt?",
                                      "valid_at": "2022-06-01"})
        groups = http.get("/v1/gaps").json()["groups"]
        reader = live.key(tenant, scopes="read")
    assert sum(g["count"] for g in groups) == 4
    assert groups[0]["count"] == 3 and all("Eiffelturm" in q for q in groups[0]["questions"])
    assert groups[0]["reasons"] == {"out_of_scope": 3}  # what to write: the missing subject
    with live.client(reader) as http:
        assert http.get("/v1/gaps").status_code == 403
