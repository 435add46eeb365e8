"""List questions (app/stichtag/domain/listing.py): conservative, deterministic detection in German
and English, and the versions in force in a window (docs/architecture.md §7)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stichtag.domain.listing import (
    DOCUMENTS,
    VERSIONS,
    ListQuestion,
    list_question,
    on_topic,
    subject_matches,
    versions_in_window,
)
from stichtag.domain.records import AssertionRow


@pytest.mark.parametrize(("question", "expected"), [
    ("Welche Dokumente zum Thema Überschussbeteiligung gibt es?",
     ListQuestion(kind=DOCUMENTS, subject="Überschussbeteiligung")),
    ("Welche Dokumente gibt es zur Zinszusatzreserve?",
     ListQuestion(kind=DOCUMENTS, subject="Zinszusatzreserve")),
    ("welche unterlagen  über   Berufsunfähigkeit liegen vor",
     ListQuestion(kind=DOCUMENTS, subject="Berufsunfähigkeit")),
    ("Which documents are there about surplus participation?",
     ListQuestion(kind=DOCUMENTS, subject="surplus participation")),
    ("What documents on claims do you have?", ListQuestion(kind=DOCUMENTS, subject="claims")),
    ("List all documents about underwriting.",
     ListQuestion(kind=DOCUMENTS, subject="underwriting")),
    ("Welche Fassungen der DeckRV galten 2019?",
     ListQuestion(kind=VERSIONS, subject="DeckRV", years=(2019, 2019))),
    ("Welche Versionen des VAG waren 2015 bis 2017 in Kraft?",
     ListQuestion(kind=VERSIONS, subject="VAG", years=(2015, 2017))),
    ("Welche Fassungen der Überschussdeklaration gibt es?",
     ListQuestion(kind=VERSIONS, subject="Überschussdeklaration")),
    ("Which versions of the DeckRV were in force in 2019?",
     ListQuestion(kind=VERSIONS, subject="DeckRV", years=(2019, 2019))),
])
def test_questions_about_the_collection_are_recognised(question: str,
                                                       expected: ListQuestion) -> None:
    assert list_question(question) == expected


@pytest.mark.parametrize("question", [
    "Welcher Höchstrechnungszins gilt für Neugeschäft?",
    "Welche Unterlagen zur Antragsprüfung sind einzureichen?",  # no "gibt es": content
    "Welche Dokumente braucht die Annahme?",
    "Welche Fassung der DeckRV galt 2019?",  # one version: what it says is content
    "Welche Fassungen der DeckRV galten 2019 für Verträge in Euro?",
    "Which documents must a claimant submit?",
    "Welche Fassungen der DeckRV galten 2021 bis 2019?",  # an empty window is no question
    "Welche Dokumente gibt es zum Thema " + "x" * 100 + "?",  # a sentence, not a topic
    "",
])
def test_content_questions_are_not_list_questions(question: str) -> None:
    assert list_question(question) is None


def t(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def row(aid: int, valid: tuple[datetime, datetime | None],
        tx: tuple[datetime, datetime | None]) -> AssertionRow:
    return AssertionRow(assertion_id=aid, document="deckrv", version_id=f"b3:{aid:064d}",
                        valid_from=valid[0], valid_to=valid[1], tx_from=tx[0], tx_to=tx[1],
                        title=None, doc_class="regulation", confidentiality=0, provenance={},
                        ended=None, ended_reason=None)


def test_versions_in_window_are_those_known_then_whose_range_meets_the_window() -> None:
    rows = [
        row(1, (t(2015), t(2017)), (t(2015), None)),        # ended before 2019
        row(2, (t(2017), t(2019, 3, 1)), (t(2017), None)),  # in force on 2019's first days
        row(3, (t(2019, 3, 1), t(2020)), (t(2019, 2, 20), None)),  # the rest of 2019
        row(4, (t(2020), None), (t(2020), None)),           # starts when the window ends
        row(5, (t(2019, 6, 1), None), (t(2019), t(2019, 2, 1))),  # corrected: not known now
        row(6, (t(2019, 6, 1), None), (t(2030), None)),      # known only later
    ]
    window = (t(2019), t(2020))
    listed = versions_in_window(rows[::-1], known_at=t(2026), window=window)
    assert [i.assertion_id for i in listed] == [2, 3]
    assert listed[0].title == "deckrv"  # no title: the key
    as_known_in_2019 = versions_in_window(rows, known_at=t(2019, 1, 15), window=window)
    assert [i.assertion_id for i in as_known_in_2019] == [2, 5]
    assert [i.assertion_id for i in versions_in_window(rows, known_at=t(2026), window=None)
            ] == [1, 2, 3, 4]


def test_a_subject_names_a_document_by_key_or_title_folded() -> None:
    assert subject_matches("deckrv", "DeckRV")
    assert subject_matches("überschussdeklaration", "surplus-declaration", "Überschussdeklaration")
    assert subject_matches("claims handbook", "claims-handbook-en", "Claims Handbook")
    assert not subject_matches("deckrv", "deckrv-kommentar", None)
    assert not subject_matches("", "x")


def test_a_topic_is_carried_by_its_words_or_a_compound_s_parts() -> None:
    surplus = ["Überschussdeklaration 2022", "§ 6 Beteiligung an den Bewertungsreserven"]
    assert on_topic("Überschussbeteiligung", surplus)
    assert on_topic("Bewertungsreserven", surplus)
    assert not on_topic("Überschussbeteiligung", ["Überschussdeklaration 2022"])
    assert not on_topic("Berufsunfähigkeit", surplus)
    assert on_topic("surplus participation", ["Surplus participation rules"])
    assert not on_topic("surplus participation", ["Surplus rules"])  # every word needed
    assert not on_topic("", surplus) and not on_topic("Beteiligung", [])
