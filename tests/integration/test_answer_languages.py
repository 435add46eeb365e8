"""Questions in the other language than their documents, on the demo corpus, through the
real pipeline (embedded PostgreSQL, tantivy, the e5 model): German questions answered from
the English claims handbook, English questions from the German surplus declaration and
underwriting guideline, out-of-scope questions refused in both languages, and a run across
languages replays (docs/salience.md, "Scope across languages")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stichtag.bootstrap import Services
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal

MISSED = pytest.mark.xfail(strict=True, reason=(
    "missed: the cross-language threshold fitted on the law corpus (cosine 0.8376) is above "
    "what this demo question reaches across languages (0.80-0.82); docs/evaluation.md, "
    "\"Questions across languages\""))
ACROSS = [  # question, valid_at, document, a phrase of the sentence that answers it
    pytest.param(
        "Innerhalb wie vieler Arbeitstage muss über einen Leistungsantrag entschieden werden?",
        "2023-06-01", "claims-handbook-en", "working days after receipt", marks=MISSED),
    ("Ab welchem Leistungsbetrag ist eine zweite Prüfung vorgeschrieben?",
     "2023-06-01", "claims-handbook-en", "mandatory second review"),
    pytest.param("What is the maximum technical interest rate for new business?",
                 "2022-06-01", "surplus-declaration", "0,25 %", marks=MISSED),
    pytest.param("Up to which annual pension is no medical examination required?",
                 "2023-07-20", "underwriting-guideline", "keine ärztliche Untersuchung",
                 marks=MISSED),
]
ENGLISH_OF_GERMAN = ("What is the maximum technical interest rate for new business?",
                     "2022-06-01")
OUT_OF_SCOPE = [
    ("How much is the motor vehicle tax for a diesel car?", "2024-06-01"),
    ("Wie hoch ist die Kfz-Steuer für einen Diesel?", "2024-06-01"),
    ("How do I bake an apple strudel?", "2024-06-01"),
    ("Wie backe ich einen Apfelstrudel?", "2024-06-01"),
]


@pytest.fixture
def demo(services: Services, tenant: Principal) -> Iterator[tuple[Services, Principal]]:
    ingest_manifest(services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    services.indexer.catch_up(tenant.tenant_id)
    yield services, tenant


def _ask(services: Services, tenant: Principal, question: str, valid_at: str) -> Any:
    assert services.answers is not None
    return services.answers.answer(
        tenant, question, valid_at=parse_time(valid_at, field="valid_at", tz="UTC"),
        known_at=datetime.now(UTC))


@pytest.mark.parametrize(("question", "valid_at", "document", "phrase"), ACROSS)
def test_a_question_is_answered_from_a_document_in_the_other_language(
        demo: tuple[Services, Principal], question: str, valid_at: str, document: str,
        phrase: str) -> None:
    services, tenant = demo
    result = _ask(services, tenant, question, valid_at)
    assert result.status == "answered", [g.detail for g in result.gates]
    quotes = [(c.document, c.quote) for s in result.sentences for c in s.citations]
    assert quotes and all(doc == document for doc, _ in quotes)
    assert any(phrase in quote for _, quote in quotes), quotes
    scope = next(g for g in result.gates if g.gate == "scope")
    assert "across languages" in scope.detail
    assert result.gaps == []  # words are not compared across languages


@pytest.mark.parametrize(("question", "valid_at"), OUT_OF_SCOPE)
def test_out_of_scope_is_refused_in_both_languages(
        demo: tuple[Services, Principal], question: str, valid_at: str) -> None:
    services, tenant = demo
    result = _ask(services, tenant, question, valid_at)
    assert result.status == "abstained" and result.reason == "out_of_scope", result.gates
    scope = next(g for g in result.gates if g.gate == "scope")
    assert "cosine" in scope.detail  # the semantic evidence that fell short, with its value


def test_a_question_across_languages_is_judged_on_meaning_with_its_values(
        demo: tuple[Services, Principal]) -> None:
    """Today's outcome of the English question over the German declaration: the scope
    gate names the cosine of the German candidates against the fitted threshold."""
    services, tenant = demo
    question, valid_at = ENGLISH_OF_GERMAN
    result = _ask(services, tenant, question, valid_at)
    scope = next(g for g in result.gates if g.gate == "scope")
    assert "passages in de: best cosine" in scope.detail
    assert result.assessment.crossing is not None
    assert result.assessment.crossing.others()  # German candidates were looked for


def test_a_run_across_languages_records_its_languages_and_replays(
        demo: tuple[Services, Principal]) -> None:
    services, tenant = demo
    question, valid_at = ENGLISH_OF_GERMAN
    result = _ask(services, tenant, question, valid_at)
    record = services.runs.get(tenant, str(result.run_id)).record
    assert record["salience"]["languages"]["question"] == "en"
    assert "de" in record["salience"]["languages"]["passages"]
    assert services.replay is not None
    verdict = services.replay.replay(tenant, str(result.run_id))
    assert verdict.reproduced, verdict.differences
