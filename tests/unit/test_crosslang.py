"""Languages of questions and passages, and the scope rule across languages
(docs/salience.md, "Scope across languages")."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from stichtag.domain.answer import SCOPE, GateDecision
from stichtag.domain.crosslang import Crossing, best_across, crossing_of, gate_scope_across
from stichtag.domain.language import DE, EN, detect
from tests.conftest import REPO

LEXICAL_FAIL = GateDecision(gate=SCOPE, passed=False, threshold=0.45, observed=0.0,
                            detail="none of: maximum, technical occurs in a document in force")


def test_the_generated_questions_are_detected_in_their_language() -> None:
    """Every item of the law question set carries its language; the detector reads it
    from the text alone (all but a handful of very short ones, which stay unknown rather
    than wrong)."""
    items = [json.loads(line) for half in ("fit", "test")
             for line in (REPO / "eval" / "law_questions" / f"{half}.jsonl").read_text(
                 encoding="utf-8").splitlines() if line]
    wrong = [i["question"] for i in items if detect(i["question"]) not in (i["lang"], None)]
    unknown = [i["question"] for i in items if detect(i["question"]) is None]
    assert not wrong
    assert len(unknown) <= len(items) // 20


def test_passages_of_both_demo_languages() -> None:
    corpus = REPO / "app" / "stichtag" / "demo" / "corpus"
    assert detect((corpus / "claims-handbook-en" / "2023-03-01.md").read_text()) == EN
    assert detect((corpus / "surplus-declaration" / "2022-01-01.md").read_text()) == DE
    assert detect((corpus / "underwriting-guideline" / "2025-01-01.md").read_text()) == DE


def test_unknown_when_too_little_or_too_close() -> None:
    assert detect("Gesamtverzinsung 2024?") is None
    assert detect("VAG") is None
    assert detect("") is None


def test_others_are_the_candidates_in_another_known_language() -> None:
    c = crossing_of("What is the maximum technical interest rate?",
                    ["Der Höchstrechnungszins beträgt 0,25 %.", "The rate is set by the board.",
                     "§ 2"])
    assert c.question == EN and c.passages == (DE, EN, None)
    assert c.others() == (0,) and not c.pure()
    assert best_across(c, [0.81, 0.9, 0.95]) == 0.81
    assert Crossing(question=None, passages=(DE, EN)).others() == ()


def test_scope_across_passes_on_meaning_and_refuses_naming_values_not_words() -> None:
    pure = Crossing(question=EN, passages=(DE, DE))
    passed = gate_scope_across(LEXICAL_FAIL, pure, 0.83, 0.8)
    assert passed.passed and passed.observed == 0.83 and passed.threshold == 0.8
    refused = gate_scope_across(LEXICAL_FAIL, pure, 0.75, 0.8)
    assert not refused.passed and refused.observed == 0.75
    assert "0.7500 below 0.8" in refused.detail and "maximum" not in refused.detail
    # where some candidates share the question's language, its words mean something
    mixed = Crossing(question=EN, passages=(EN, DE))
    named = gate_scope_across(LEXICAL_FAIL, mixed, 0.75, 0.8)
    assert not named.passed and "maximum" in named.detail and "0.7500" in named.detail
    assert named.observed == LEXICAL_FAIL.observed


def test_scope_across_fails_closed() -> None:
    pure = Crossing(question=EN, passages=(DE,))
    assert not gate_scope_across(LEXICAL_FAIL, pure, None, 0.8).passed
    assert not gate_scope_across(LEXICAL_FAIL, pure, 0.9, math.nan).passed
    assert best_across(pure, [math.nan]) is None


def test_relevance_across_reads_the_cross_encoder_when_its_model_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cross-language relevance model fitted with the cross-encoder's logit decides on
    the best logit among the other-language candidates, and refuses without it."""
    from stichtag.domain.relevance import Candidate, RelevanceModel, features
    from stichtag.services import crosslang
    from stichtag.services.assess import Assessment

    model = RelevanceModel(method="logistic", features=("rerank", "cross"),
                           weights=(0.0, 1.0), intercept=0.0, means=(0.0, 0.0),
                           scales=(1.0, 1.0), cross_encoder="ce-1")
    monkeypatch.setattr(crosslang, "MODEL", model)
    monkeypatch.setattr(crosslang, "CROSS_SCOPE", 0.8)
    relevance_fail = GateDecision(gate="relevance", passed=False, threshold=0.6,
                                  observed=0.1, detail="below")

    def decided(logits: tuple[float | None, float | None], serving: str | None) -> Any:
        candidates = [Candidate(rerank=0.9, matched=0.0, coverage=0.0, numbers=1.0, cross=x)
                      for x in logits]
        a = Assessment(aspects=[], in_force_passages=1, in_force=None,  # type: ignore[arg-type]
                       candidates=candidates, pooled=features(candidates),
                       crossing=Crossing(question=EN, passages=(DE, DE)))
        return crosslang.decide_across(a, [0.9, 0.85], [LEXICAL_FAIL, relevance_fail],
                                       theta_rel=0.6, stale=None, cross_encoder=serving)

    assert decided((3.0, -1.0), "ce-1").passed  # sigmoid(3) >= 0.6
    low = decided((-2.0, -1.0), "ce-1")
    assert not low.passed and low.decisions[1].observed < 0.6
    for logits, serving in (((3.0, -1.0), None), ((3.0, -1.0), "ce-2"), ((None, None), "ce-1")):
        refused = decided(logits, serving)
        assert not refused.passed and refused.decisions[1].observed is None
        assert "models build" in refused.decisions[1].detail
