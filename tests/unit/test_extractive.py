"""The extractive generator: best evidence sentences, each citing itself; gaps; determinism."""

from __future__ import annotations

import pytest

from stichtag.domain.answer import (
    Evidence,
    check_integrity,
    coverage,
    sentence_splitter,
)
from stichtag.generators.extractive import ExtractiveGenerator, gaps_for


def ev(eid: str, quote: str, score: float, *, document: str = "surplus-declaration",
       start: int = 0, heading: tuple[str, ...] = ()) -> Evidence:
    return Evidence(eid=eid, document=document, version_id="b3:" + "1" * 64, start=start,
                    end=start + len(quote), utf16_start=start, utf16_end=start + len(quote),
                    quote=quote, heading_path=heading, valid_from="2022-01-01",
                    valid_to=None, doc_class="declaration", score=score)


RATE = ev("E1", "Der Höchstrechnungszins für Neugeschäft beträgt 0,25 %.", 0.9, start=100,
          heading=("Überschussdeklaration 2022", "§ 3 Höchstrechnungszins im Neugeschäft"))
TOTAL = ev("E2", "Die Gesamtverzinsung für das Kalenderjahr 2022 beträgt 2,30 %.", 0.7,
           start=10, heading=("Überschussdeklaration 2022", "§ 2 Gesamtverzinsung"))
FINAL = ev("E3", "Bei Kündigung wird der Schlussüberschussanteil zur Hälfte gewährt.", 0.5,
           start=300, heading=("Überschussdeklaration 2022", "§ 4 Schlussüberschussanteil"))
EXISTING = ev("E4", "Für bestehende Verträge bleibt der Rechnungszins unverändert.", 0.3,
              start=200)
ALL = [RATE, TOTAL, FINAL, EXISTING]


def test_best_sentences_each_cite_exactly_themselves() -> None:
    d = ExtractiveGenerator().generate("Welcher Höchstrechnungszins gilt?", ALL)
    assert [(s.text, s.evidence_ids) for s in d.sentences] == [
        (RATE.quote, ["E1"]), (TOTAL.quote, ["E2"]), (FINAL.quote, ["E3"])]
    assert not hasattr(d, "consulted")  # what it read is derived, never self-reported


def test_max_sentences_bounds_the_answer() -> None:
    d = ExtractiveGenerator(max_sentences=1).generate("Höchstrechnungszins", ALL)
    assert [s.evidence_ids for s in d.sentences] == [["E1"]]
    with pytest.raises(ValueError):
        ExtractiveGenerator(max_sentences=0)


def test_equal_scores_fall_back_to_document_order() -> None:
    a = ev("E7", "Satz sieben im Dokument.", 0.5, document="b", start=50)
    b = ev("E8", "Satz acht im Dokument.", 0.5, document="b", start=10)
    c = ev("E9", "Satz neun im Dokument.", 0.5, document="a", start=90)
    d = ExtractiveGenerator().generate("Satz", [a, b, c])
    assert [s.evidence_ids[0] for s in d.sentences] == ["E9", "E8", "E7"]


def test_duplicate_quotes_are_answered_once() -> None:
    twin = ev("E5", RATE.quote, 0.85, document="surplus-declaration-copy")
    d = ExtractiveGenerator().generate("Höchstrechnungszins", [RATE, twin, TOTAL])
    assert [s.evidence_ids for s in d.sentences] == [["E1"], ["E2"]]


def test_nan_score_ranks_last_instead_of_scrambling_the_order() -> None:
    broken = ev("E6", "Ein Satz ohne brauchbaren Score.", float("nan"), start=0)
    order = ExtractiveGenerator(max_sentences=5).select([broken, FINAL, RATE])
    assert [e.eid for e in order] == ["E1", "E3", "E6"]


def test_same_input_same_output_in_any_order() -> None:
    gen = ExtractiveGenerator()
    question = "Wie hoch ist die Gesamtverzinsung und der Schlussüberschussanteil?"
    first = gen.generate(question, ALL)
    assert gen.generate(question, ALL) == first
    for reordered in (ALL[::-1], ALL[2:] + ALL[:2]):
        again = gen.generate(question, reordered)
        assert again.sentences == first.sentences and again.gaps == first.gaps


def test_terms_no_selected_sentence_covers_become_gaps() -> None:
    d = ExtractiveGenerator(max_sentences=1).generate(
        "Wie hoch sind Höchstrechnungszins und Schlussüberschussanteil 2022?", ALL)
    assert d.gaps == ["no evidence for: Schlussüberschussanteil"]


def test_inflection_compounds_and_headings_count_as_covered() -> None:
    # "Höchstrechnungszinses" is the genitive; "Neugeschäft" is only in the heading
    assert gaps_for("Höhe des Höchstrechnungszinses im Neugeschäft?", [RATE]) == [
        "no evidence for: Höhe"]
    assert gaps_for("Wie hoch ist die Gesamtverzinsung?", [TOTAL]) == []
    assert gaps_for("Which interest rate applies?", [RATE]) == [
        "no evidence for: interest", "no evidence for: rate"]


def test_no_evidence_means_no_sentences_and_every_term_a_gap() -> None:
    d = ExtractiveGenerator().generate("Wie hoch ist der Schlussüberschussanteil?", [])
    assert d.sentences == []
    assert d.gaps == ["no evidence for: Schlussüberschussanteil"]


def test_output_passes_integrity_with_full_coverage() -> None:
    d = ExtractiveGenerator().generate("Höchstrechnungszins", ALL)
    assert check_integrity(d, {e.eid: e for e in ALL}).passed
    assert coverage(d.sentences, sentence_splitter())[0] == 1.0


def test_run_records_no_exchanges() -> None:
    generation = ExtractiveGenerator().run("Höchstrechnungszins", ALL)
    assert generation.exchanges == []
    assert generation.draft == ExtractiveGenerator().generate("Höchstrechnungszins", ALL)
