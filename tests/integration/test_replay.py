"""Replay: recorded runs reproduce after further versions were ingested; a changed
threshold or model shows up as a difference; retroactive impact after a backdated change."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer

RUNS = int(os.environ.get("STICHTAG_REPLAY_RUNS", "200"))
QUESTIONS = [
    ("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2022-06-01"),
    ("Wie hoch ist die Gesamtverzinsung?", "2024-03-15"),
    ("Wie hoch ist der Schlussüberschussanteil?", "2023-10-01"),
    ("Bis zu welcher Rente gilt die Annahme ohne ärztliche Untersuchung?", "2023-07-20"),
    ("What is the decision deadline for claims?", "2023-06-01"),
    ("Ab welchem Betrag ist eine zweite Prüfung erforderlich?", "2025-08-01"),
    ("Wer gewann die Fußball-Weltmeisterschaft 2014?", "2024-01-01"),
    ("Höchsteintrittsalter", "2025-03-01"),
]


def test_replay_reproduces_then_reports_changes(live: LiveServer, tenant: Any) -> None:
    svc = live.services
    ingest_manifest(svc, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    run_ids: list[str] = []
    with live.client(key) as http:
        for i in range(RUNS):
            q, valid = QUESTIONS[i % len(QUESTIONS)]
            body = ({"question": q, "valid_at": valid} if i % 4 else
                    {"question": q, "valid_at": valid, "known_at": "2024-01-01"})
            if i % 5 == 4:
                r = http.post("/v1/search", json={"query": q, "valid_at": valid})
            else:
                r = http.post("/v1/answer", json=body)
            assert r.status_code == 200, r.text
            run_ids.append(r.json()["run_id"])
        # Further versions after the runs: invisible at their as-of pairs, but they change
        # the corpus statistics (BM25) of the tenant's index.
        now = datetime.now(UTC)
        for n in range(3):
            svc.documents.ingest(tenant, f"rundschreiben-{n}", IngestRequest(
                text=f"# Rundschreiben {n}\n\n(1) Der Höchstrechnungszins und die "
                     f"Gesamtverzinsung werden im Rundschreiben {n} erläutert.\n",
                valid_from=now, doc_class="note"))
        svc.indexer.catch_up(tenant.tenant_id)
        verdicts = [http.post(f"/v1/runs/{rid}/replay").json() for rid in run_ids]
        failed = [v for v in verdicts if not v["reproduced"]]
        assert not failed, failed[:3]
        assert len(verdicts) == RUNS
        # A deliberately changed threshold is reported (answer runs only).
        assert http.post("/v1/thresholds", json={
            "theta_rel": 0.5, "tau": 0.9, "rationale": "replay test: deliberately changed"}
        ).status_code == 201
        answer_run = run_ids[1]
        changed = http.post(f"/v1/runs/{answer_run}/replay").json()
        assert not changed["reproduced"]
        assert {"thresholds.version", "thresholds.theta_rel", "thresholds.tau"} <= {
            d["what"] for d in changed["differences"]}


def test_replay_reports_a_changed_model(live: LiveServer, tenant: Any) -> None:
    svc = live.services
    ingest_manifest(svc, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    with live.client(key) as http:
        rid = http.post("/v1/answer", json={"question": QUESTIONS[0][0],
                                            "valid_at": QUESTIONS[0][1]}).json()["run_id"]
        assert http.post(f"/v1/runs/{rid}/replay").json()["reproduced"]
        assert svc.answers is not None
        real = svc.answers.reranker

        class Swapped:  # a different model file: same interface, other hash and scores
            model_hash = "sha256:" + "0" * 64
            label = real.label

            def score(self, question: str, vectors: Any) -> list[float]:
                return [s * 0.5 for s in real.score(question, vectors)]

            def score_vectors(self, q: Any, v: Any) -> list[float]:
                return [s * 0.5 for s in real.score_vectors(q, v)]

        svc.answers.reranker = Swapped()
        try:
            verdict = http.post(f"/v1/runs/{rid}/replay").json()
        finally:
            svc.answers.reranker = real
        whats = {d["what"] for d in verdict["differences"]}
        assert not verdict["reproduced"] and "models.reranker" in whats
        assert any(w.endswith(".rerank") for w in whats)


def test_retroactive_impact_after_a_backdated_correction(live: LiveServer, tenant: Any) -> None:
    svc = live.services
    ingest_manifest(svc, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    with live.client(key) as http:
        asked = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2022-06-01"}).json()
        assert asked["status"] in ("answered", "partial")
        other = http.post("/v1/answer", json={
            "question": "What is the decision deadline for claims?",
            "valid_at": "2023-06-01"}).json()
        assert http.get("/v1/impact").json()["runs"] == []
        # Backdated: the 2022 declaration is corrected with a new text valid from 2022-01-01.
        text = (DEMO_DIR / "surplus-declaration" / "2022-01-01.md").read_text(encoding="utf-8")
        corrected = text.replace("0,25 %", "0,50 %")
        assert corrected != text
        r = http.post("/v1/documents/surplus-declaration/versions", json={
            "text": corrected, "valid_from": "2022-01-01", "doc_class": "declaration",
            "confidentiality": "public", "title": "Überschussdeklaration"})
        assert r.status_code == 201, r.text
        svc.indexer.catch_up(tenant.tenant_id)
        impact = http.get("/v1/impact").json()["runs"]
        assert [i["run_id"] for i in impact] == [asked["run_id"]]
        assert impact[0]["citations_removed"] and impact[0]["citations_added"]
        assert other["run_id"] not in {i["run_id"] for i in impact}
