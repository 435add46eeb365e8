"""The scope gate, the partial rule and covering selection (stichtag.domain.scope)."""

from __future__ import annotations

import math

import pytest

from stichtag.domain.answer import (
    PARTIAL,
    REQUIRED_GATES,
    SCOPE,
    Evidence,
    GateDecision,
    status_for,
)
from stichtag.domain.aspect_support import support_in_force
from stichtag.domain.salience import InForce, salient_aspects
from stichtag.domain.scope import (
    ANSWER_SUPPORT,
    DEFAULT_SCOPE_THRESHOLD,
    LOWERCASE_WEIGHT,
    evidence_text,
    gap_surfaces,
    gate_answer_support,
    gate_scope,
    partial_gaps,
    scope_share,
    select_covering,
)

PASSAGES = (
    "§ 2 Höchstzinssatz (1) Der Höchstzinssatz für die Berechnung der Deckungsrückstellungen "
    "wird auf 0,25 Prozent festgesetzt.",
    "§ 15 Hemmung der Verjährung Ist ein Anspruch beim Versicherer angemeldet worden, ist die "
    "Verjährung gehemmt.",
    "§ 152 Widerruf (1) Abweichend von § 8 beträgt die Widerrufsfrist bei einer "
    "Lebensversicherung 30 Tage.",
    "§ 7 Der Versicherer schließt den Vertrag mit dem Versicherungsnehmer.",
)
IN_FORCE = InForce.from_texts(PASSAGES)


def scope(question: str, threshold: float = DEFAULT_SCOPE_THRESHOLD) -> GateDecision:
    aspects = salient_aspects(question, IN_FORCE)
    return gate_scope(aspects, support_in_force(aspects, IN_FORCE), threshold,
                      valid_at="2024-06-01")


def ev(eid: str, quote: str, score: float, *, document: str = "deckrv",
       start: int = 0) -> Evidence:
    return Evidence(eid=eid, document=document, version_id="b3:" + "0" * 64, start=start,
                    end=start + len(quote), utf16_start=start, utf16_end=start + len(quote),
                    quote=quote, heading_path=(), valid_from="2024-01-01", valid_to=None,
                    doc_class="regulation", score=score)


def test_scope_fails_naming_the_unsupported_terms_in_the_questions_words() -> None:
    d = scope("Ist Arbeitslohn verjährt?")
    assert (d.gate, d.passed, d.observed, d.threshold) == (SCOPE, False, 0.0, 0.6)
    assert d.detail == "none of: Arbeitslohn, verjährt occurs in a document in force on 2024-06-01"


def test_scope_passes_when_the_salient_content_is_in_force() -> None:
    d = scope("Welcher Höchstzinssatz gilt für die Berechnung der Deckungsrückstellungen?")
    assert d.passed and d.observed == 1.0
    assert d.detail == "salient share 1.0000 in force on 2024-06-01 >= 0.6"


def test_scope_observed_is_the_weighted_share_and_the_detail_names_what_is_missing() -> None:
    d = scope("Welcher Höchstzinssatz gilt in Österreich?")
    assert not d.passed and d.observed is not None and 0 < d.observed < 0.6
    assert d.detail.startswith("not in force on 2024-06-01: Österreich (salient share 0.")
    lenient = scope("Welcher Höchstzinssatz gilt in Österreich?", threshold=0.2)
    assert lenient.passed and lenient.detail.endswith("; not in force: Österreich")


def test_an_unknown_lower_case_word_weighs_less_than_an_unknown_noun() -> None:
    """German nouns carry the subject: "aufgehoben" (no such word in force) leaves the
    question about the Verjährung in scope, "Arbeitslohn" (no such noun) takes it out."""
    verb = salient_aspects("Wann ist die Verjährung aufgehoben?", IN_FORCE)
    noun = salient_aspects("Wann ist die Verjährung beim Arbeitslohn?", IN_FORCE)
    assert [a.surface for a in verb] == ["Verjährung", "aufgehoben"]
    assert next(a for a in verb if a.surface == "aufgehoben").weight == \
        next(a for a in noun if a.surface == "Arbeitslohn").weight == 1.0
    lower, upper = (scope_share(support_in_force(a, IN_FORCE)) for a in (verb, noun))
    assert lower is not None and upper is not None and lower > DEFAULT_SCOPE_THRESHOLD > upper
    d = next(a for a in verb if a.surface == "Verjährung")
    assert lower == pytest.approx(d.weight / (d.weight + LOWERCASE_WEIGHT * 1.0))


def test_scope_does_not_judge_values_and_years_and_passes_an_empty_question() -> None:
    d = scope("Gilt noch ein Höchstzinssatz von 4 % wie 1994?")
    assert d.passed and d.observed == 1.0  # a wrong or outdated value is still in scope
    empty = scope("Was gilt?")
    assert empty.passed and empty.observed == 1.0 and "no salient term" in empty.detail


def test_scope_fails_closed_on_nan() -> None:
    assert not scope("Welcher Höchstzinssatz gilt?", threshold=math.nan).passed


def test_partial_means_some_covered_and_some_not() -> None:
    aspects = salient_aspects("Welcher Höchstzinssatz und welche Widerrufsfrist gelten?", IN_FORCE)
    covered, uncovered = partial_gaps(aspects, [PASSAGES[0]])
    assert gap_surfaces(covered) == ["Höchstzinssatz"]
    assert gap_surfaces(uncovered) == ["Widerrufsfrist"]
    assert gate_answer_support(covered, uncovered).passed
    gates = [GateDecision(gate=g, passed=True, threshold=0.0, observed=1.0, detail="")
             for g in REQUIRED_GATES]
    outcome = status_for(gates, coverage=1.0, gaps=gap_surfaces(uncovered))
    assert outcome.status == PARTIAL


def test_an_answer_covering_everything_has_no_gaps() -> None:
    aspects = salient_aspects("Wie lang ist die Widerrufsfrist bei einer Lebensversicherung?",
                              IN_FORCE)
    covered, uncovered = partial_gaps(aspects, [PASSAGES[2]])
    assert uncovered == () and len(covered) == 2
    # stop words, question words and dates never become gaps ("wie", "lang", "1. Januar")
    aspects = salient_aspects("Wie lang ist am 1. Januar 2024 die Widerrufsfrist?", IN_FORCE)
    assert partial_gaps(aspects, [PASSAGES[2]])[1] == ()


def test_citations_covering_no_salient_aspect_abstain() -> None:
    aspects = salient_aspects("Welcher Höchstzinssatz gilt?", IN_FORCE)
    covered, uncovered = partial_gaps(aspects, [PASSAGES[2]])
    d = gate_answer_support(covered, uncovered)
    assert (d.gate, d.passed, d.observed) == (ANSWER_SUPPORT, False, 0.0)
    assert d.detail == "cited sentences cover none of: Höchstzinssatz"
    nothing = gate_answer_support((), ())
    assert nothing.passed and nothing.observed is None


def test_select_covering_prefers_coverage_over_score_and_stops_when_nothing_is_new() -> None:
    aspects = salient_aspects("Höchstzinssatz und Widerrufsfrist?", IN_FORCE)
    cands = [ev("a", "Der Versicherer schließt den Vertrag.", 0.99),
             ev("b", PASSAGES[0], 0.50),
             ev("c", PASSAGES[2], 0.40, document="vvg2008"),
             ev("d", "Der Höchstzinssatz gilt.", 0.60, start=9)]
    chosen = select_covering(aspects, cands, 3)
    assert [e.eid for e in chosen] == ["d", "c"]  # equal gain: the better score; then stop
    assert [e.eid for e in select_covering(aspects, list(reversed(cands)), 3)] == ["d", "c"]
    assert [e.eid for e in select_covering(aspects, cands, 1)] == ["d"]


def test_select_covering_falls_back_to_the_best_scored_and_skips_duplicates() -> None:
    aspects = salient_aspects("Arbeitslohn?", IN_FORCE)
    cands = [ev("a", "Der Versicherer schließt den Vertrag.", 0.7),
             ev("b", "Der Versicherer schließt den Vertrag.", 0.9, start=50),
             ev("c", "   ", 0.95, start=99), ev("d", "Anderes.", math.nan, start=7)]
    assert [e.eid for e in select_covering(aspects, cands, 3)] == ["b"]
    assert select_covering(aspects, [], 3) == []


def test_evidence_text_includes_the_heading_path() -> None:
    e = Evidence(eid="x", document="deckrv", version_id="b3:" + "0" * 64, start=0, end=3,
                 utf16_start=0, utf16_end=3, quote="(1)", heading_path=("DeckRV", "§ 2"),
                 valid_from="2024-01-01", valid_to=None, doc_class="regulation", score=1.0)
    assert evidence_text(e) == "DeckRV § 2 (1)"
