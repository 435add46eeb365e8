"""The knowledge diff's pure rules: the window, classification, version pairs, sentence diff."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stichtag.domain.bitemporal import Interval
from stichtag.domain.changes import (
    DocumentChanges,
    Stated,
    Window,
    classify,
    pair_versions,
    subtract,
)
from stichtag.domain.prepared import sentence_hash
from stichtag.domain.sentence_diff import DiffSentence, diff_sentences


def at(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


T = {i: at(2030, 1, i) for i in range(1, 10)}  # transaction times t1 < t2 < ...


def row(aid: int, version: str, valid: tuple[int, int | None], tx: tuple[int, int | None],
        ended: str | None = None, *, document: str = "d") -> Stated:
    return Stated(assertion_id=aid, document=document, version_id=version,
                  valid=Interval(start=at(valid[0]), end=at(valid[1]) if valid[1] else None),
                  tx_from=T[tx[0]], tx_to=T[tx[1]] if tx[1] else None, ended=ended)


# t1: v1 from 2020.  t3: v2 from 2022 (v1 carried for 2020-2022).  t5: retract from 2024
# (v2 carried for 2022-2024).  t7: v3 from 2025.  t8: v3's assertion corrected.
HISTORY = [
    row(1, "v1", (2020, None), (1, 3), "superseded"),
    row(2, "v1", (2020, 2022), (3, None)),
    row(3, "v2", (2022, None), (3, 5), "retracted"),
    row(4, "v2", (2022, 2024), (5, None)),
    row(5, "v3", (2025, None), (7, 8), "corrected"),
]


def window(a: int, b: int) -> Window:
    return Window(known_from=T[a], known_to=T[b])


def only(rows: list[Stated], w: Window, *, known: bool = True) -> DocumentChanges:
    [doc] = classify(rows, w, known_before=frozenset({"d"} if known else ()))
    return doc


def test_window_is_open_on_the_left_and_closed_on_the_right() -> None:
    w = window(2, 4)
    assert not w.contains(T[2]) and w.contains(T[3]) and w.contains(T[4])
    assert not w.contains(T[5]) and not w.contains(None)
    assert not Window(known_from=T[3], known_to=T[3]).contains(T[3])  # empty window
    with pytest.raises(ValueError, match="known_to"):
        Window(known_from=T[4], known_to=T[3])


def test_a_new_version_supersedes_and_pairs_with_what_was_known_before() -> None:
    doc = only(HISTORY, window(2, 4))
    assert [r.assertion_id for r in doc.appeared] == [2, 3]
    assert [r.assertion_id for r in doc.ended] == [1]
    assert doc.corrected == ()
    [pair] = doc.pairs
    # The carried-over part (v1 for 2020-2022) is no content change: no pair for it.
    assert (pair.from_version, pair.to_version) == ("v1", "v2")
    assert pair.ranges == (Interval(start=at(2022), end=None),)
    assert set(pair.assertion_ids) == {1, 3}


def test_a_retraction_pairs_the_old_version_with_nothing() -> None:
    doc = only(HISTORY, window(4, 6))
    assert [r.assertion_id for r in doc.appeared] == [4]
    assert [(r.assertion_id, r.ended) for r in doc.ended] == [(3, "retracted")]
    [pair] = doc.pairs
    assert (pair.from_version, pair.to_version, pair.to_state) == ("v2", None, "not_in_force")
    assert pair.ranges == (Interval(start=at(2024), end=None),)


def test_a_correction_is_listed_apart_and_removes_the_version() -> None:
    doc = only(HISTORY, window(7, 9))
    assert doc.appeared == () and doc.ended == ()
    assert [r.assertion_id for r in doc.corrected] == [5]
    [pair] = doc.pairs
    assert (pair.from_version, pair.to_version) == ("v3", None)
    # Appeared and corrected inside one window: in both lists, paired with "not in force".
    doc = only(HISTORY, window(6, 8))
    assert [r.assertion_id for r in doc.appeared] == [5]
    assert [r.assertion_id for r in doc.corrected] == [5]
    [pair] = doc.pairs
    assert (pair.from_version, pair.from_state, pair.to_version) == (None, "not_in_force", "v3")


def test_a_new_document_and_untouched_windows() -> None:
    # t1 itself lies outside (t1, t2]: nothing happened in that window.
    assert classify(HISTORY, window(1, 2), known_before=frozenset()) == []
    doc = only(HISTORY[:1], Window(known_from=at(2000), known_to=T[2]), known=False)
    [pair] = doc.pairs
    assert (pair.from_version, pair.from_state, pair.to_version) == (None, "new_document", "v1")
    assert classify(HISTORY, window(5, 5), known_before=frozenset({"d"})) == []


def test_backdated_version_inside_an_old_range_splits_it() -> None:
    # v1 from 2020 known since t1; at t3 a backdated v2 for [2021, 2022) only.
    rows = [row(1, "v1", (2020, None), (1, 3), "superseded"),
            row(2, "v1", (2020, 2021), (3, None)), row(3, "v2", (2021, 2022), (3, None)),
            row(4, "v1", (2022, None), (3, None))]
    doc = only(rows, window(2, 3))
    assert [r.assertion_id for r in doc.appeared] == [2, 3, 4]
    [pair] = doc.pairs
    assert (pair.from_version, pair.to_version) == ("v1", "v2")
    assert pair.ranges == (Interval(start=at(2021), end=at(2022)),)


def test_documents_are_grouped_and_sorted() -> None:
    rows = [row(1, "x", (2020, None), (3, None), document="b"),
            row(2, "y", (2020, None), (3, None), document="a")]
    docs = classify(rows, window(2, 4), known_before=frozenset({"a"}))
    assert [(d.document, d.new_document) for d in docs] == [("a", False), ("b", True)]
    assert docs[1].pairs[0].from_state == "new_document"
    assert docs[0].pairs[0].from_state == "not_in_force"


def test_subtract_and_pairs_merge_ranges() -> None:
    whole = Interval(start=at(2020), end=None)
    assert subtract(whole, [Interval(start=at(2021), end=at(2022))]) == [
        Interval(start=at(2020), end=at(2021)), Interval(start=at(2022), end=None)]
    assert subtract(whole, [whole]) == []
    rows = [row(1, "v", (2020, 2021), (3, None)), row(2, "v", (2021, None), (3, None))]
    [pair] = pair_versions(rows, window(2, 4), known_before=False)
    assert pair.ranges == (whole,)


# -- sentence diff ----------------------------------------------------------------------


def sentences(*texts: str) -> list[DiffSentence]:
    out, pos = [], 0
    for t in texts:
        out.append(DiffSentence(start=pos, end=pos + len(t), utf16_start=pos,
                                utf16_end=pos + len(t), text=t, hash=sentence_hash(t)))
        pos += len(t) + 1
    return out


OLD = sentences("Einleitung.", "Der Höchstrechnungszins beträgt 2,80 %.",
                "Die Sterbetafel DAV 2004 R gilt.", "Telefax ist zulässig.")
NEW = sentences("Neue Präambel mit ganz anderem Inhalt und mehr Wörtern.", "Einleitung.",
                "Der Höchstrechnungszins beträgt 2,75 %.", "Die Sterbetafel DAV 2004 R gilt.")


def test_sentence_diff_counts_added_removed_changed_unchanged() -> None:
    d = diff_sentences(OLD, NEW, max_changes=100)
    assert (d.added, d.removed, d.changed, d.unchanged) == (1, 1, 1, 2)
    assert [c.op for c in d.changes] == ["added", "changed", "removed"]
    changed = d.changes[1]
    assert changed.old is not None and "2,80 %" in changed.old.text
    assert changed.new is not None and "2,75 %" in changed.new.text
    assert changed.similarity is not None and 0.6 <= changed.similarity < 1
    # Offsets point into the new version's text: the moved sentence is "unchanged".
    assert changed.new.start == NEW[2].start and not d.truncated


def test_sentence_diff_of_nothing_and_the_bound() -> None:
    d = diff_sentences([], NEW, max_changes=2)
    assert (d.added, d.removed, d.changed, d.unchanged) == (4, 0, 0, 0)
    assert len(d.changes) == 2 and d.truncated
    d = diff_sentences(OLD, [], max_changes=0)
    assert d.removed == 4 and d.changes == () and d.truncated
    assert diff_sentences(OLD, OLD, max_changes=5) == diff_sentences(OLD, OLD, max_changes=0)
    unrelated = sentences("Ganz etwas anderes hier.")
    d = diff_sentences(sentences("Kurz."), unrelated, max_changes=10)
    assert [c.op for c in d.changes] == ["removed", "added"]
