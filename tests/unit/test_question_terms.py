"""Gaps only for content words (docs/salience.md, "Gaps only for content words"): the fitted
framing terms hold question words and generic verbs, never a subject."""

from __future__ import annotations

from stichtag.domain.question_terms import content_gaps, frames
from stichtag.domain.question_terms_fit import FRAMING
from stichtag.domain.salience import COMPOUND, TERM, Aspect, InForce, salient_aspects

IN_FORCE = InForce.from_counts(100, {"hochstzinssatz": 3, "deckungsruckstell": 5})


def test_framing_words_are_not_gaps_subject_words_are() -> None:
    aspects = salient_aspects("Was regelt die Vorschrift zum Höchstzinssatz?", IN_FORCE)
    by_surface = {a.surface: a for a in aspects}
    assert frames(by_surface["regelt"]) and frames(by_surface["Vorschrift"])
    assert not frames(by_surface["Höchstzinssatz"])
    assert [a.surface for a in content_gaps(aspects)] == ["Höchstzinssatz"]


def test_no_subject_of_the_law_corpus_headings_is_framing() -> None:
    for word in ("hochstzinssatz", "deckungsruckstell", "zillmersatz", "kundig", "treuhand",
                 "solvabilitatskapitalanford", "versicherungsnehm", "claim", "rat"):
        assert word not in FRAMING


def test_only_terms_frame() -> None:
    compound = Aspect(surface="Regel-Vorschrift", kind=COMPOUND, stems=("regel", "vorschrift"),
                      weight=1.0, start=0)
    bare = Aspect(surface="x", kind=TERM, stems=(), weight=1.0, start=0)
    assert not frames(compound) and not frames(bare)
