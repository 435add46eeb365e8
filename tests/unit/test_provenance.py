"""The three sets (app/stichtag/domain/provenance.py): found, cited, consulted — derived from what
the generator did, never from what it says it read (docs/architecture.md §7)."""

from __future__ import annotations

from stichtag.domain.answer import Draft, DraftSentence
from stichtag.domain.provenance import NONE, cited_ids, derive, gate_sources
from tests.unit.test_answer_domain import ev

SURPLUS_1 = ev("E1", "Der Höchstrechnungszins beträgt 0,25 %.", document="surplus-declaration")
SURPLUS_2 = ev("E2", "Die Gesamtverzinsung beträgt 2,30 %.", document="surplus-declaration",
               start=40)
GUIDE = ev("E3", "Anträge werden nach Risikoklassen geprüft.", document="underwriting-guideline")
HANDBOOK = ev("E4", "Claims are settled within 14 days.", document="claims-handbook-en")
FOUND = [SURPLUS_1, GUIDE, SURPLUS_2, HANDBOOK]


def test_an_excerpt_is_consulted_only_where_the_answer_cites_it() -> None:
    p = derive(FOUND, ["E1"])
    assert p.found == ("surplus-declaration", "underwriting-guideline", "claims-handbook-en")
    assert p.cited == p.consulted == ("surplus-declaration",)
    assert p.consulted_evidence == {"E1"}  # E2 was shown, not cited: not consulted
    assert not p.is_consulted("underwriting-guideline")


def test_a_document_opened_in_full_is_consulted_without_a_link() -> None:
    p = derive(FOUND, ["E1"], opened=["underwriting-guideline"])
    assert p.consulted == ("surplus-declaration", "underwriting-guideline")
    assert p.cited == ("surplus-declaration",)
    assert p.opened == ("underwriting-guideline",)
    assert "E3" in p.consulted_evidence  # every sentence of an opened document was read


def test_a_document_seen_only_as_a_title_is_never_consulted() -> None:
    p = derive(FOUND, ["E1"], listed=["vvg2008"])
    assert "vvg2008" in p.cited and "vvg2008" in p.found
    assert not p.is_consulted("vvg2008") and p.titles_only == ("vvg2008",)
    # ... unless it was read as well: reading is what counts
    read = derive(FOUND, ["E3"], listed=["underwriting-guideline"])
    assert read.consulted == ("underwriting-guideline",) and read.titles_only == ()


def test_sets_follow_evidence_order_and_ignore_unknown_ids() -> None:
    p = derive(FOUND, ["E4", "E9-foreign", "E1", "E4"])
    assert p.consulted == ("surplus-declaration", "claims-handbook-en")
    assert p.consulted_evidence == {"E1", "E4"}
    assert p.record()["consulted"] == ["surplus-declaration", "claims-handbook-en"]


def test_cited_ids_are_the_markers_once_each_in_order() -> None:
    draft = Draft(sentences=[DraftSentence(text="a.", evidence_ids=["E2", "E1"]),
                             DraftSentence(text="b.", evidence_ids=["E1", "E3"])], gaps=[])
    assert cited_ids(draft) == ["E2", "E1", "E3"]
    assert cited_ids(None) == []


def test_the_sources_gate_fails_closed_without_a_consulted_document() -> None:
    assert not gate_sources(NONE).passed
    assert not gate_sources(derive(FOUND, [])).passed  # shown everything, cited nothing
    assert not gate_sources(derive([], [], listed=["deckrv"])).passed
    ok = gate_sources(derive(FOUND, ["E3"]))
    assert ok.passed and ok.observed == 1.0 and "underwriting-guideline" in ok.detail


def test_a_section_read_through_a_tool_is_consulted_sentence_by_sentence() -> None:
    section = ev("E5", "Die Mindestbeteiligung beträgt 90 %.", document="vag2016", start=90)
    p = derive([*FOUND, section], ["E1"], read=["E5"])
    assert p.consulted == ("surplus-declaration", "vag2016")
    assert p.consulted_evidence == {"E1", "E5"} and p.opened == ()


def test_a_title_from_a_listing_tool_is_found_never_cited_or_consulted() -> None:
    p = derive(FOUND, ["E1"], titles=["vvg2008"])
    assert "vvg2008" in p.found and "vvg2008" not in p.cited
    assert p.titles_only == ("vvg2008",) and not p.is_consulted("vvg2008")
