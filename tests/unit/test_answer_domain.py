"""Gated answering, pure part: integrity, coverage, gates, citations, contradictions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.answer import (
    ABSTAINED,
    ANSWERED,
    CONTRADICTORY_SOURCES,
    COVERAGE_BELOW_THRESHOLD,
    DOC_CLASS_RANK,
    HIGHER_DOC_CLASS,
    INSUFFICIENT_EVIDENCE,
    INTEGRITY_ERROR,
    LATER_VALID_FROM,
    NEXT_STEPS,
    PARTIAL,
    REASONS,
    REQUIRED_GATES,
    Draft,
    DraftSentence,
    Evidence,
    GateDecision,
    UnknownEvidence,
    check_integrity,
    coverage,
    detect_conflict,
    detect_conflicts,
    gate_conflict,
    gate_coverage,
    gate_generation,
    gate_relevance,
    resolve,
    resolve_conflict,
    sentence_splitter,
    status_for,
    without_superseded,
)
from stichtag.domain.quantities import numbers_in


def ev(eid: str, quote: str, *, document: str = "doc", start: int = 0,
       valid_from: str = "2022-01-01T00:00:00+00:00", doc_class: str = "declaration",
       heading: tuple[str, ...] = (), score: float = 0.5) -> Evidence:
    """Evidence whose offsets fit its quote (no astral characters in these texts)."""
    return Evidence(eid=eid, document=document, version_id="b3:" + "0" * 64, start=start,
                    end=start + len(quote), utf16_start=start, utf16_end=start + len(quote),
                    quote=quote, heading_path=heading, valid_from=valid_from, valid_to=None,
                    doc_class=doc_class, score=score)


E1 = ev("E1", "Der Höchstrechnungszins beträgt 0,25 %.")
E2 = ev("E2", "Die Gesamtverzinsung beträgt 2,30 %.", start=40)
BY_ID = {e.eid: e for e in (E1, E2)}
SPLIT = sentence_splitter()


def draft(*sentences: tuple[str, list[str]], gaps: list[str] | None = None) -> Draft:
    return Draft(sentences=[DraftSentence(text=t, evidence_ids=ids) for t, ids in sentences],
                 gaps=gaps or [])


# --- integrity ---------------------------------------------------------------------------

def test_integrity_passes_when_every_marker_is_evidence() -> None:
    g = check_integrity(draft(("a.", ["E1"]), ("b.", ["E2", "E1"])), BY_ID)
    assert (g.gate, g.passed, g.threshold, g.observed) == ("integrity", True, 0.0, 0.0)


@pytest.mark.parametrize("marker", ["E3", "e1", " E1", "E1 ", "E01", "", "E1,E2", "run7:E1"])
def test_integrity_rejects_any_marker_outside_the_run(marker: str) -> None:
    g = check_integrity(draft(("a.", ["E1"]), ("b.", ["E2", marker])), BY_ID)
    assert not g.passed
    assert g.observed == 1.0
    assert repr(marker) in g.detail


def test_integrity_counts_every_unknown_marker() -> None:
    g = check_integrity(draft(("a.", ["E9"]), ("b.", ["E1", "E8"])), BY_ID)
    assert not g.passed
    assert g.observed == 2.0
    assert "'E8'" in g.detail and "'E9'" in g.detail


def test_integrity_detail_is_bounded_for_hostile_markers() -> None:
    markers = ["X" * 10_000 + str(i) for i in range(50)]
    g = check_integrity(draft(("a.", markers)), BY_ID)
    assert not g.passed and g.observed == 50.0
    assert len(g.detail) < 400 and "and 45 more" in g.detail


# --- coverage ----------------------------------------------------------------------------

def test_coverage_counts_segmented_pieces_which_inherit_citations() -> None:
    d = draft(("Der Zins beträgt 0,25 %. Er gilt ab dem 1.1.2022.", ["E1"]),
              ("Das ist wenig.", []))
    assert coverage(d.sentences, SPLIT) == (2 / 3, 2, 3)


def test_uncited_glued_sentence_counts_every_piece_as_uncited() -> None:
    d = draft(("Der Zins beträgt 0,25 %.", ["E1"]), ("Das ist wenig. Sehr wenig.", []))
    assert coverage(d.sentences, SPLIT) == (1 / 3, 1, 3)


def test_german_abbreviations_do_not_inflate_the_denominator() -> None:
    d = draft(("Es gilt § 2 Abs. 1 Satz 2 i. V. m. § 5 z. B. für 1,75 %.", ["E1"]))
    assert coverage(d.sentences, SPLIT) == (1.0, 1, 1)


def test_empty_answer_has_zero_coverage() -> None:
    assert coverage([], SPLIT) == (0.0, 0, 0)
    assert coverage(draft(("   ", ["E1"])).sentences, SPLIT) == (0.0, 0, 0)


@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), max_size=8))
def test_coverage_is_cited_over_total(shape: list[tuple[int, bool]]) -> None:
    # a fake segmenter: the text says how many pieces it has
    sentences = [DraftSentence(text=str(n), evidence_ids=["E1"] if cited else [])
                 for n, cited in shape]
    cov, cited, total = coverage(sentences, lambda t: ["x"] * int(t))
    assert total == sum(n for n, _ in shape)
    assert cited == sum(n for n, c in shape if c)
    assert cov == (cited / total if total else 0.0)
    assert 0.0 <= cov <= 1.0


# --- gates -------------------------------------------------------------------------------

@pytest.mark.parametrize(("cov", "tau", "passed"), [
    (0.75, 0.75, True), (0.7499, 0.75, False), (1.0, 1.0, True), (0.0, 0.0, True),
    (math.nan, 0.5, False), (0.9, math.nan, False),
])
def test_gate_coverage(cov: float, tau: float, passed: bool) -> None:
    g = gate_coverage(cov, tau)
    assert (g.gate, g.passed) == ("coverage", passed)
    assert g.threshold is tau and g.observed is cov


@pytest.mark.parametrize(("best", "theta", "passed"), [
    (0.6, 0.6, True), (0.59, 0.6, False), (None, 0.0, False), (math.nan, 0.1, False),
])
def test_gate_relevance(best: float | None, theta: float, passed: bool) -> None:
    g = gate_relevance(best, theta)
    assert (g.gate, g.passed, g.threshold) == ("relevance", passed, theta)
    assert g.observed is best  # recorded as measured, NaN and None included


def _all_passed(cov_gate: GateDecision | None = None) -> list[GateDecision]:
    scope = GateDecision(gate="scope", passed=True, threshold=0.6, observed=1.0, detail="")
    support = GateDecision(gate="answer_support", passed=True, threshold=0.0, observed=1.0,
                           detail="")
    sources = GateDecision(gate="sources", passed=True, threshold=1.0, observed=1.0,
                           detail="")
    return [scope, gate_relevance(0.9, 0.5), gate_generation(None),
            check_integrity(draft(("a.", ["E1"])), BY_ID), gate_conflict([]),
            cov_gate or gate_coverage(1.0, 0.8), support, sources]


def test_status_answered_partial_and_abstained() -> None:
    assert status_for(_all_passed(), coverage=1.0, gaps=[]).status == ANSWERED
    assert status_for(_all_passed(), coverage=1.0, gaps=["no evidence for: x"]).status == PARTIAL
    partial = status_for(_all_passed(gate_coverage(0.8, 0.8)), coverage=0.8, gaps=[])
    assert (partial.status, partial.reason, partial.next_step) == (PARTIAL, None, None)
    low = gate_coverage(0.5, 0.8)
    out = status_for(_all_passed(low), coverage=0.5, gaps=[])
    assert (out.status, out.reason, out.failed) == (ABSTAINED, COVERAGE_BELOW_THRESHOLD, low)
    assert out.next_step == NEXT_STEPS[COVERAGE_BELOW_THRESHOLD]


def test_first_failed_gate_decides_the_reason() -> None:
    gates = [gate_relevance(0.1, 0.5), gate_coverage(0.0, 1.0)]
    assert status_for(gates, coverage=0.0, gaps=[]).reason == INSUFFICIENT_EVIDENCE
    gates = [gate_relevance(0.9, 0.5), gate_generation("timeout")]
    assert status_for(gates, coverage=0.0, gaps=[]).reason == INTEGRITY_ERROR


@pytest.mark.parametrize("missing", REQUIRED_GATES)
def test_status_refuses_when_a_gate_was_never_decided(missing: str) -> None:
    gates = [g for g in _all_passed() if g.gate != missing]
    with pytest.raises(ValueError, match=missing):
        status_for(gates, coverage=1.0, gaps=[])


def test_every_reason_has_a_next_step() -> None:
    assert set(NEXT_STEPS) == set(REASONS)
    assert all(len(step) > 40 for step in NEXT_STEPS.values())


# --- resolution --------------------------------------------------------------------------

def test_resolve_copies_evidence_verbatim_in_marker_order() -> None:
    out = resolve(draft(("Zins und Verzinsung.", ["E2", "E1", "E2"]), ("Frei.", [])), BY_ID)
    assert out[0].citations == [E2.citation(), E1.citation()]
    assert out[0].citations[0].quote == E2.quote and out[0].citations[0].start == 40
    assert out[1].citations == []


def test_resolve_never_drops_an_unknown_marker_silently() -> None:
    with pytest.raises(UnknownEvidence):
        resolve(draft(("a.", ["E1", "E9"])), BY_ID)


@pytest.mark.parametrize("kwargs", [
    {"end": 5}, {"start": -1, "end": 38}, {"utf16_end": 99}, {"valid_from": "1.1.2022"},
    {"eid": ""}, {"valid_to": "soon"},
])
def test_evidence_rejects_spans_that_do_not_fit(kwargs: dict[str, object]) -> None:
    fields = {"eid": "E1", "document": "d", "version_id": "b3:0", "start": 0, "end": 39,
              "utf16_start": 0, "utf16_end": 39, "quote": E1.quote, "heading_path": (),
              "valid_from": "2022-01-01", "valid_to": None, "doc_class": "note", "score": 1.0}
    Evidence(**fields)  # type: ignore[arg-type]  # the baseline is valid
    with pytest.raises(ValueError):
        Evidence(**{**fields, **kwargs})  # type: ignore[arg-type]


def test_evidence_utf16_span_counts_astral_characters_twice() -> None:
    quote = "Tarif \U0001d4d0 gilt."
    Evidence(eid="E1", document="d", version_id="v", start=3, end=3 + len(quote),
             utf16_start=3, utf16_end=4 + len(quote), quote=quote, heading_path=(),
             valid_from="2022-01-01", valid_to=None, doc_class="note", score=1.0)
    with pytest.raises(ValueError):
        Evidence(eid="E1", document="d", version_id="v", start=3, end=3 + len(quote),
                 utf16_start=3, utf16_end=3 + len(quote), quote=quote, heading_path=(),
                 valid_from="2022-01-01", valid_to=None, doc_class="note", score=1.0)


# --- numbers and contradictions ----------------------------------------------------------

@pytest.mark.parametrize(("text", "values"), [
    ("Der Zins beträgt 1,75 %.", {"1.75 %"}),
    ("Er beträgt 0,25 Prozent.", {"0.25 %"}),
    ("höchstens 12.000 EUR", {"12000 EUR"}),
    ("höchstens EUR 12.000,50 je Fall", {"12000.5 EUR"}),
    ("0,250 % und 2,5 v. H.", {"0.25 %", "2.5 %"}),
    ("binnen 14 Tagen, spätestens nach 3 Monaten", {"14 days", "3 months"}),
    ("within 30 days, at most 1.5 percent", {"30 days", "1.5 %"}),
    ("nach § 2 Abs. 1 Satz 2 DeckRV vom 1.1.2022 im Jahr 2022", set()),
    ("12\u00a0000 €", {"12000 EUR"}),
])
def test_numbers_in_reads_german_quantities(text: str, values: set[str]) -> None:
    assert numbers_in(text) == values


RATE_DECL = ev("E1", "Der Höchstrechnungszins für Neugeschäft beträgt 0,25 %.",
               document="surplus-declaration", doc_class="declaration")
RATE_NOTE = ev("E2", "Für Neugeschäft gilt ein Höchstrechnungszins von 0,90 %.",
               document="actuarial-note", doc_class="note")


def test_same_quantity_different_values_in_two_documents_conflict() -> None:
    c = detect_conflict([RATE_DECL, RATE_NOTE])
    assert c is not None
    assert (c.first, c.second) == (RATE_DECL, RATE_NOTE)
    assert (c.first_values, c.second_values) == (("0.25 %",), ("0.9 %",))
    assert "hochstrechnungszins" in c.shared_terms


def test_no_conflict_without_disagreement() -> None:
    same_value = ev("E3", "Der Höchstrechnungszins für Neugeschäft liegt bei 0,25 Prozent.",
                    document="other")
    same_doc = ev("E4", "Der Höchstrechnungszins für Neugeschäft beträgt 0,90 %.")
    other_topic = ev("E5", "Die Stornogebühr beträgt 150 EUR.", document="fees")
    no_value = ev("E6", "Der Höchstrechnungszins für Neugeschäft wird jährlich geprüft.",
                  document="memo")
    assert detect_conflicts([RATE_DECL, same_value, other_topic, no_value]) == []
    assert detect_conflicts([ev("E1", same_doc.quote.replace("0,90", "0,25")), same_doc]) == []


def test_heading_gives_a_pronoun_sentence_its_topic() -> None:
    pronoun = ev("E2", "Er beträgt 0,90 %.", document="note",
                 heading=("Notiz", "§ 3 Höchstrechnungszins im Neugeschäft"))
    assert detect_conflict([RATE_DECL, pronoun]) is not None
    assert detect_conflict([RATE_DECL, ev("E2", pronoun.quote, document="note")]) is None


def test_later_valid_from_wins_before_class() -> None:
    newer_note = ev("E2", RATE_NOTE.quote, document="actuarial-note", doc_class="note",
                    valid_from="2023-01-01")
    c = detect_conflict([RATE_DECL, newer_note])
    assert c is not None
    r = resolve_conflict(c)
    assert (r.rule, r.winner, r.loser) == (LATER_VALID_FROM, newer_note, RATE_DECL)


def test_higher_class_wins_on_equal_valid_from_across_offsets() -> None:
    # the same instant written with another offset is not "later"
    note = ev("E2", RATE_NOTE.quote, document="actuarial-note", doc_class="note",
              valid_from="2022-01-01T01:00:00+01:00")
    c = detect_conflict([note, RATE_DECL])
    assert c is not None
    r = resolve_conflict(c)
    assert (r.rule, r.winner, r.loser) == (HIGHER_DOC_CLASS, RATE_DECL, note)
    assert DOC_CLASS_RANK["regulation"] > DOC_CLASS_RANK["guideline"] > \
        DOC_CLASS_RANK["declaration"] > DOC_CLASS_RANK["handbook"] > \
        DOC_CLASS_RANK["note"] > DOC_CLASS_RANK["document"]


def test_no_rule_means_contradictory_sources_with_both_citations() -> None:
    twin = ev("E2", RATE_NOTE.quote, document="other-declaration", doc_class="declaration")
    c = detect_conflict([RATE_DECL, twin])
    assert c is not None
    r = resolve_conflict(c)
    assert (r.rule, r.winner, r.loser) == (None, None, None)
    assert r.citations == (RATE_DECL.citation(), twin.citation())
    gate = gate_conflict([r])
    assert (gate.passed, gate.observed) == (False, 1.0)
    out = status_for([gate_relevance(0.9, 0.5), gate_generation(None), gate], coverage=1.0,
                     gaps=[])
    assert (out.status, out.reason) == (ABSTAINED, CONTRADICTORY_SOURCES)


def test_undeclared_class_never_outranks_a_declared_one() -> None:
    odd = ev("E2", RATE_NOTE.quote, document="x", doc_class="wiki")
    c = detect_conflict([odd, ev("E1", RATE_DECL.quote, doc_class="document")])
    assert c is not None and resolve_conflict(c).rule is None
    c = detect_conflict([odd, RATE_DECL])
    assert c is not None and resolve_conflict(c).winner == RATE_DECL


def test_superseded_evidence_leaves_the_draft() -> None:
    newer = ev("E2", RATE_NOTE.quote, document="actuarial-note", valid_from="2023-01-01")
    c = detect_conflict([RATE_DECL, newer])
    assert c is not None
    r = resolve_conflict(c)
    gate = gate_conflict([r])
    assert gate.passed and LATER_VALID_FROM in gate.detail
    d = draft(("Er beträgt 0,25 %.", ["E1"]), ("Er beträgt 0,90 %.", ["E2"]),
              ("Zwei Quellen.", ["E1", "E2"]), ("Ohne Beleg.", []))
    kept = without_superseded(d, [r])
    assert [(s.text, s.evidence_ids) for s in kept.sentences] == [
        ("Er beträgt 0,90 %.", ["E2"]), ("Zwei Quellen.", ["E2"]), ("Ohne Beleg.", [])]
    assert without_superseded(d, []) is d
