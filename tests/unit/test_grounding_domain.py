"""The pure grounding check (app/stichtag/domain/grounding.py): splitting an answer written
elsewhere, finding quotes, and the order and reasons of its gates (docs/assistants.md,
"What the check guarantees")."""

from __future__ import annotations

import math

import pytest

from stichtag.domain import grounding as g
from stichtag.domain.fundstelle import Citation

TEXT = "(1) Der Höchstzinssatz beträgt 0,25 Prozent. (2) Er gilt ab dem 1. Januar 2022."


def _citation(start: int = 0, end: int = 10) -> Citation:
    return Citation(document="deckrv", version_id="b3:" + "0" * 64, start=start, end=end,
                    utf16_start=start, utf16_end=end, quote=TEXT[start:end], heading_path=(),
                    valid_from="2022-01-01T00:00:00Z", valid_to=None)


def _ten(cited: int) -> tuple[list[g.AnswerSentence], list[g.Reference]]:
    sentences = g.split_answer(" ".join(f"Satz Nummer {i} gilt." for i in range(10)))
    refs = [g.Reference(label=f"[{i + 1}]", sentence=i, citation=_citation())
            for i in range(cited)]
    return sentences, refs


def test_markers_after_the_full_stop_belong_to_the_sentence_before() -> None:
    answer = "Der Höchstzinssatz beträgt 0,25 Prozent. [1] Er gilt ab 2022 [2][3]."
    sentences = g.split_answer(answer)
    assert [s.markers for s in sentences] == [(1,), (2, 3)]
    assert all(answer[s.start:s.end] == s.text for s in sentences)


def test_abbreviations_do_not_split_a_sentence() -> None:
    sentences = g.split_answer("Nach § 2 Abs. 1 Nr. 3 DeckRV gilt z. B. ein Satz von 1,75 %. "
                               "Das ist alles.")
    assert len(sentences) == 2


@pytest.mark.parametrize(("start", "end", "expected"), [
    (4, 22, (4, 22, False)),        # exact offsets
    (0, 18, (4, 22, True)),         # offsets off: re-anchored
    (None, None, (4, 22, True)),    # no offsets: found
])
def test_locate_exact_then_reanchored(start: int | None, end: int | None,
                                      expected: tuple[int, int, bool]) -> None:
    assert g.locate(TEXT, "Der Höchstzinssatz", start, end) == expected


def test_one_changed_character_is_not_in_the_source() -> None:
    assert g.locate(TEXT, "Der Höchstzinssatz beträgt 0,26 Prozent.", None, None) is None
    assert g.locate(TEXT, "", 0, 0) is None


def test_the_nearest_occurrence_wins() -> None:
    text = "Satz. Satz. Satz."
    assert g.locate(text, "Satz.", 11, 17) == (12, 17, True)


def test_one_invented_reference_rejects_the_whole_answer() -> None:
    sentences, refs = _ten(10)
    refs[3] = g.Reference(label="[99]", sentence=3, citation=None,
                          failure=g.INVENTED_CITATION, detail="[99] is no evidence")
    out = g.decide(sentences, refs, tau=0.0)
    assert (out.status, out.reason) == ("abstained", g.INVENTED_CITATION)
    assert out.failed is not None and "[99]" in out.failed.detail
    assert [d.gate for d in out.gates] == [g.CITATIONS]  # coverage never runs


def test_one_uncited_sentence_of_ten_passes_at_08_and_fails_at_095() -> None:
    sentences, refs = _ten(9)
    passed = g.decide(sentences, refs, tau=0.8)
    assert (passed.status, passed.coverage) == ("partial", 0.9)
    assert passed.gaps == ["Satz Nummer 9 gilt."]
    failed = g.decide(sentences, refs, tau=0.95)
    assert (failed.status, failed.reason) == ("abstained", g.BELOW_COVERAGE)
    assert failed.failed is not None
    assert (failed.failed.threshold, failed.failed.observed) == (0.95, 0.9)


def test_fully_cited_is_answered_and_empty_or_nan_fail_closed() -> None:
    sentences, refs = _ten(10)
    assert g.decide(sentences, refs, tau=1.0).status == "answered"
    assert g.decide(sentences, refs, tau=math.nan).status == "abstained"
    assert g.decide([], [], tau=0.0).status == "abstained"


def test_sentence_by_index_or_text() -> None:
    sentences = g.split_answer("Erstens gilt das Gesetz. Zweitens gilt die Verordnung.")
    assert g.sentence_for(sentences, 1) == 1
    assert g.sentence_for(sentences, "Zweitens  gilt die Verordnung.") == 1
    assert g.sentence_for(sentences, 2) is None
    assert g.sentence_for(sentences, "Drittens") is None
