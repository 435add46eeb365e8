"""POST /v1/answer on the demo corpus over real HTTP: pinned citations, gate 1, sources,
thresholds with rationale, citation resolution and the run record."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from stichtag.cli.demo import DEMO_DIR, demo_examples
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import LiveServer


@pytest.fixture
def demo(live: LiveServer, tenant: Any) -> Iterator[tuple[LiveServer, str]]:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    yield live, live.key(tenant)


def _check_citations(http: Any, body: dict[str, Any]) -> None:
    found = {(s["citation"]["version_id"], s["citation"]["start"], s["citation"]["end"])
             for s in body["sources"]}
    for sentence in body["sentences"]:
        for c in sentence["citations"]:
            text = http.get(f"/v1/versions/{c['version_id']}").json()["text"]
            assert text[c["start"]:c["end"]] == c["quote"]
            u16 = text.encode("utf-16-le")
            assert u16[2 * c["utf16_start"]:2 * c["utf16_end"]].decode("utf-16-le") == c["quote"]
            assert (c["version_id"], c["start"], c["end"]) in found


def test_answer_cites_the_version_in_force(demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        body = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2022-06-01"}).json()
        assert body["status"] in ("answered", "partial"), body
        assert body["sentences"] and all(s["citations"] for s in body["sentences"])
        assert any("0,25 %" in c["quote"] for s in body["sentences"] for c in s["citations"])
        assert all(c["valid_from"] <= "2022-06-01"
                   for s in body["sentences"] for c in s["citations"])
        _check_citations(http, body)
        assert body["coverage"] == 1.0
        assert {g["gate"] for g in body["gates"]} >= {"relevance", "integrity", "coverage"}
        assert any(s["cited"] for s in body["sources"])
        # consulted = cited excerpts (docs/architecture.md §7; tests/integration/test_sources.py)
        assert all(s["consulted"] == s["cited"] for s in body["sources"])
        # The answer as of 2025 cites the 2025 declaration (1,00 %), not 2022's.
        later = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2025-05-01"}).json()
        quotes = [c["quote"] for s in later["sentences"] for c in s["citations"]]
        assert any("1,00 %" in q for q in quotes) and not any("0,25 %" in q for q in quotes)
        # The run record holds the as-of pair, thresholds, candidates and gate decisions.
        run = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
        assert run["as_of"]["valid_at"] == "2022-06-01T00:00:00Z"  # the tenant zone is UTC
        assert run["thresholds"]["version"] == 0 and run["candidates"] and run["gates"]


def test_an_off_topic_question_abstains_out_of_scope_with_values_and_next_step(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        body = http.post("/v1/answer", json={"question": "Wer gewann die Fußball-WM 2014?"}).json()
        assert body["status"] == "abstained" and body["reason"] == "out_of_scope"
        scope = body["gates"][0]
        assert scope["gate"] == "scope" and not scope["passed"]
        assert body["threshold"] == scope["threshold"] and body["observed"] < body["threshold"]
        assert "Fußball-WM" in scope["detail"]  # the unsupported terms, in the question's words
        assert body["next_step"] and body["sentences"] == []
        assert [g["gate"] for g in body["gates"]] == ["scope", "relevance"]  # no generator ran


def test_thresholds_are_versioned_with_rationale(demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        bad = http.post("/v1/thresholds", json={"theta_rel": 0.99, "tau": 1.0, "rationale": ""})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "rationale"
        ok = http.post("/v1/thresholds", json={
            # 1.0: no logistic score reaches it (at 0.99 the demo question scores ~0.99)
            "theta_rel": 1.0, "tau": 1.0,
            "rationale": "Stricter gate while the claims handbook is under review."})
        assert ok.status_code == 201 and ok.json()["version"] == 1
        body = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2022-06-01"}).json()
        assert body["status"] == "abstained" and body["thresholds_version"] == 1
        assert body["threshold"] == 1.0
        history = http.get("/v1/thresholds").json()
        assert [t["version"] for t in history] == [0, 1]
        # the built-in version 0 carries its fitted relevance model and scope threshold,
        # and a version that did not set the scope threshold keeps it
        assert history[0]["relevance"]["method"] == "logistic"
        # ... which reads the student cross-encoder's logit and is bound to it
        assert history[0]["relevance"]["features"] == ["rerank", "matched", "coverage",
                                                       "numbers", "cross"]
        assert history[0]["relevance"]["id"] == "relevance-2"
        cross = live.services.answers.cross if live.services.answers else None
        assert cross is not None
        assert history[0]["relevance"]["cross_encoder"] == cross.model_hash
        assert history[1]["theta_scope"] == history[0]["theta_scope"] > 0
        strict = http.post("/v1/thresholds", json={
            "theta_rel": 0.5, "tau": 1.0, "theta_scope": 0.99,
            "rationale": "Only questions whose every term is in force, for the audit."})
        assert strict.status_code == 201 and strict.json()["theta_scope"] == 0.99
        # "Riester" occurs in no demo document: most of the question is in force, not all
        out = http.post("/v1/answer", json={
            "question": "Wie hoch ist die deklarierte Gesamtverzinsung für Riester-Verträge?",
            "valid_at": "2024-03-15"}).json()
        assert (out["status"], out["reason"], out["threshold"]) == ("abstained",
                                                                    "out_of_scope", 0.99)
        assert "Riester" in out["gates"][0]["detail"]
        bad = http.post("/v1/thresholds", json={"theta_rel": 0.5, "tau": 1.0,
                                                "theta_scope": 1.5, "rationale": "x" * 20})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "theta_scope"


def test_citation_resolves_across_versions(demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        body = http.post("/v1/answer", json={
            "question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
            "valid_at": "2022-06-01"}).json()
        c = next(c for s in body["sentences"] for c in s["citations"] if "0,25 %" in c["quote"])
        r = http.get("/v1/citations/resolve", params={
            "version_id": c["version_id"], "start": c["start"], "end": c["end"]}).json()
        assert r["citation"]["quote"] == c["quote"]
        assert r["status"] == "changed" and "1,00 %" in r["current"]["quote"]
        bad = http.get("/v1/citations/resolve", params={
            "version_id": c["version_id"], "start": c["start"] + 1, "end": c["end"]})
        assert bad.status_code == 422


def test_answer_before_embeddings_exist(services: Any, tenant: Any) -> None:
    """Right after an ingest the background embedder may not have run: the answer still
    reranks (embedding the few missing passages) instead of failing or going blind."""
    from datetime import UTC, datetime

    from stichtag.services.documents import IngestRequest

    services.documents.ingest(tenant, "note", IngestRequest(
        text="# Hinweis\n\n(1) Der Höchstrechnungszins für Neugeschäft beträgt 0,25 %.\n",
        valid_from=datetime(2022, 1, 1, tzinfo=UTC), doc_class="note"))
    assert services.indexer.status(tenant.tenant_id).pending_embeddings > 0
    assert services.answers is not None
    now = datetime.now(UTC)
    r = services.answers.answer(tenant, "Welcher Höchstrechnungszins gilt für Neugeschäft?",
                                valid_at=now, known_at=now)
    assert r.status in ("answered", "partial"), (r.reason, r.gates)
    assert any("0,25 %" in c.quote for s in r.sentences for c in s.citations)
    # The vectors the answer computed are stored, and a later writer (the indexer, which
    # batches differently, so its int8 vectors differ slightly) does not replace them:
    # the run replays exactly.
    with services.store.tx(tenant.tenant_id) as conn:
        before = dict(conn.execute(
            "SELECT passage_id, embedding::text FROM passages WHERE embedding IS NOT NULL"
        ).fetchall())
        assert before
    services.store.retrieval.store_vectors(
        tenant.tenant_id, list(before), np.ones((len(before), 384), dtype=np.float32),
        services.indexer.embedder.model_hash)
    services.indexer.embed_pending(tenant.tenant_id)
    with services.store.tx(tenant.tenant_id) as conn:
        after = dict(conn.execute(
            "SELECT passage_id, embedding::text FROM passages WHERE passage_id = ANY(%s)",
            (list(before),)).fetchall())
    assert after == before
    assert services.replay.replay(tenant, str(r.run_id)).reproduced


def test_the_demo_examples_run_and_the_last_one_refuses(demo: tuple[LiveServer, str]) -> None:
    """The calls `make serve` prints, as a new user would paste them: every one answers,
    the gated answers cite (the English question from the German underwriting guideline),
    and the out-of-scope one abstains with reason, threshold, observed value and next
    step."""
    live, key = demo
    calls = [shlex.split(line) for line in demo_examples(live.base_url, key)
             if line.startswith("curl ")]
    assert len(calls) == 5
    bodies = []
    with live.client(key) as http:
        for argv in calls:
            url = next(a for a in argv if a.startswith(live.base_url))
            data = argv[argv.index("-d") + 1] if "-d" in argv else None
            r = (http.post(url, json=json.loads(data)) if data is not None else http.get(url))
            assert r.status_code == 200, (argv, r.text)
            bodies.append(r.json())
    assert bodies[2]["status"] in ("answered", "partial") and bodies[2]["sentences"]
    # asked in English of the German underwriting guideline: judged on meaning and
    # answered, citing its German sentence
    across = bodies[3]
    assert across["status"] == "answered", across["gates"]
    scope = next(g for g in across["gates"] if g["gate"] == "scope")
    assert "passages in de: best cosine" in scope["detail"], across["gates"]
    first = across["sentences"][0]["citations"][0]
    assert first["document"] == "underwriting-guideline"
    assert first["quote"] == "(2) Das Höchsteintrittsalter beträgt 55 Jahre."
    refusal = bodies[4]
    assert (refusal["status"], refusal["reason"]) == ("abstained", "out_of_scope")
    assert refusal["threshold"] is not None and refusal["observed"] < refusal["threshold"]
    assert refusal["next_step"] and refusal["sentences"] == []
    assert "Kfz-Steuer" in refusal["gates"][0]["detail"]


def test_thresholds_fitted_for_another_reranker_never_gate_answers(
        demo: tuple[LiveServer, str], tenant: Any) -> None:
    live, key = demo
    svc = live.services
    assert svc.answers is not None
    serving = svc.answers.reranker.model_hash
    question = {"question": "Welcher Höchstrechnungszins gilt für Neugeschäft?",
                "valid_at": "2022-06-01"}
    now = svc.thresholds.current(tenant.tenant_id)
    assert now.relevance.reranker is None  # built in: fitted on the default cosine
    # a calibration made for a cross-encoder (another model hash) while this node still
    # serves the cosine: the relevance gate refuses until the tenant recalibrates
    other = replace(now.relevance, reranker="ab" * 32)
    svc.thresholds.set(tenant, theta_rel=now.theta_rel, tau=1.0, calibration=None,
                       relevance=other, rationale="Fitted for the trained cross-encoder.")
    with live.client(key) as http:
        body = http.post("/v1/answer", json=question).json()
        assert (body["status"], body["reason"]) == ("abstained", "insufficient_evidence")
        relevance = next(g for g in body["gates"] if g["gate"] == "relevance")
        assert not relevance["passed"] and "recalibrate" in relevance["detail"]
        assert "abababababab" in relevance["detail"] and serving[:12] in relevance["detail"]
        assert not body["sentences"]
        # a bare calibration keeps the binding of the version it replaces
        bare = http.post("/v1/thresholds", json={
            "theta_rel": now.theta_rel, "tau": 1.0,
            "rationale": "Same gate, new rationale, still the cross-encoder's fit."})
        assert bare.status_code == 201
        assert bare.json()["relevance"]["reranker"] == "ab" * 32
        assert http.post("/v1/answer", json=question).json()["status"] == "abstained"
    svc.thresholds.set(tenant, theta_rel=now.theta_rel, tau=1.0, calibration=None,
                       relevance=replace(now.relevance, reranker=serving),
                       rationale="Refitted for the reranker this node serves.")
    with live.client(key) as http:
        assert http.post("/v1/answer", json=question).json()["status"] in ("answered",
                                                                          "partial")
