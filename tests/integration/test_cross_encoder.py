"""The student cross-encoder in every answer, with the real models on the demo corpus:
``stichtag models build`` assembled it from the committed artifact, the built-in
thresholds read its logit (relevance-2), the run records it, replay recomputes it, and a
node without it refuses instead of guessing (docs/models.md, "The student
cross-encoder"; docs/thresholds.md, "Switching the reranker")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stichtag.bootstrap import Services
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.models.build import RERANK_ARTIFACT
from stichtag.models.cross_encoder import RERANK_NAME, artifact_sha256
from stichtag.services.access import Principal
from stichtag.services.thresholds import DEFAULTS

VALID = datetime(2025, 1, 1, tzinfo=UTC)
KNOWN = datetime(2026, 11, 30, tzinfo=UTC)
QUESTION = "Who receives reports of fraud indicators?"


@pytest.fixture
def demo(services: Services, tenant: Principal) -> Iterator[tuple[Services, Principal]]:
    ingest_manifest(services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    services.indexer.catch_up(tenant.tenant_id)
    yield services, tenant


def test_the_build_assembles_the_student_the_defaults_are_bound_to(models_dir: Path) -> None:
    manifest = json.loads((models_dir / f"{RERANK_NAME}-int8" / "manifest.json").read_text())
    assert manifest["kind"] == "cross-encoder" and "4-layer student" in manifest["description"]
    assert artifact_sha256(RERANK_ARTIFACT) in manifest["source"]
    # the committed thresholds name exactly what this build assembled
    from stichtag.bootstrap import load_cross_encoder
    from stichtag.config import Settings

    served = load_cross_encoder(Settings(models_path=models_dir))
    assert served is not None
    assert DEFAULTS.relevance.cross_encoder == served.model_hash


def test_an_answer_reads_records_and_replays_the_cross_encoder(
        demo: tuple[Services, Principal]) -> None:
    svc, who = demo
    assert svc.answers is not None and svc.replay is not None and svc.answers.cross
    result = svc.answers.answer(who, QUESTION, valid_at=VALID, known_at=KNOWN)
    assert result.status in ("answered", "partial"), (result.reason, result.gates)
    assert "Special Investigations Unit" in result.sentences[0].text
    assert "cross" in result.timings_ms
    record = svc.runs.get(who, str(result.run_id)).record
    assert record["models"]["cross_encoder"] == svc.answers.cross.model_hash
    logits = [c["cross"] for c in record["candidates"]]
    assert len(logits) == len(record["candidates"]) > 0
    assert record["relevance"]["features"]["cross"] == max(logits)
    verdict = svc.replay.replay(who, str(result.run_id))
    assert verdict.reproduced, verdict.differences


def test_an_unrelated_question_gets_a_low_logit_and_is_refused(
        demo: tuple[Services, Principal]) -> None:
    svc, who = demo
    assert svc.answers is not None
    answered = svc.answers.answer(who, QUESTION, valid_at=VALID, known_at=KNOWN)
    refused = svc.answers.answer(who, "Which football club won the 2014 World Cup final?",
                                 valid_at=VALID, known_at=KNOWN)
    assert refused.status == "abstained"
    assert (refused.assessment.pooled or {}).get("cross", -99.0) < \
        (answered.assessment.pooled or {})["cross"]


def test_without_the_cross_encoder_the_built_in_thresholds_refuse_and_say_why(
        demo: tuple[Services, Principal]) -> None:
    svc, who = demo
    assert svc.answers is not None
    serving = svc.answers.scorer.cross
    svc.answers.scorer.cross = None  # STICHTAG_CROSS_ENCODER=off, or models not built
    try:
        r = svc.answers.answer(who, QUESTION, valid_at=VALID, known_at=KNOWN)
    finally:
        svc.answers.scorer.cross = serving
    assert (r.status, r.reason) == ("abstained", "insufficient_evidence")
    assert r.failed is not None and r.failed.gate == "relevance"
    assert "stichtag models build" in r.failed.detail
    assert "stichtag calibrate" in r.failed.detail
