"""Re-anchoring a cited sentence in another version."""

from __future__ import annotations

from stichtag.domain.prepared import sentence_hash
from stichtag.domain.reanchor import Located, reanchor


def _located(sentences: list[str]) -> list[Located]:
    out, pos = [], 0
    for s in sentences:
        out.append(Located(start=pos, end=pos + len(s), text=s, hash=sentence_hash(s)))
        pos += len(s) + 1
    return out


Q = "Der Höchstzinssatz beträgt 0,25 Prozent."


def test_unchanged_moved_changed_removed() -> None:
    same = _located(["Einleitung.", Q])
    assert reanchor(Q, sentence_hash(Q), same[1].start, same).status == "unchanged"
    moved = _located(["Neue Einleitung mit mehr Text.", "Noch ein Satz.", Q])
    anchor = reanchor(Q, sentence_hash(Q), same[1].start, moved)
    assert anchor.status == "moved" and anchor.target == moved[2]
    changed = _located(["Einleitung.", "Der Höchstzinssatz beträgt 1,00 Prozent."])
    anchor = reanchor(Q, sentence_hash(Q), same[1].start, changed)
    assert anchor.status == "changed" and anchor.target == changed[1]
    assert 0.6 <= anchor.similarity < 1
    removed = _located(["Einleitung.", "Die Sterbetafel DAV 2004 R gilt weiter."])
    assert reanchor(Q, sentence_hash(Q), same[1].start, removed).status == "removed"
    assert reanchor(Q, sentence_hash(Q), 0, []).status == "removed"


def test_duplicate_sentences_pick_the_nearest() -> None:
    twice = _located([Q, "Zwischensatz.", Q])
    anchor = reanchor(Q, sentence_hash(Q), twice[2].start, twice)
    assert anchor.status == "unchanged" and anchor.target == twice[2]
