"""TextQuoteSelector matching (app/stichtag/domain/selectors.py): exact, then prefix/suffix
disambiguation, then fuzzy; context cut in code points."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.selectors import CONTEXT, TextQuote, context_score, find_quote, quote_context


def _spans(text: str) -> list[tuple[int, int]]:
    """Sentences of a test text: one per line."""
    out, at = [], 0
    for line in text.split("\n"):
        if line:
            out.append((at, at + len(line)))
        at += len(line) + 1
    return out


def test_context_is_up_to_32_code_points_each_side() -> None:
    text = "a" * 40 + "QUOTE" + "b" * 40
    assert quote_context(text, 40, 45) == ("a" * CONTEXT, "b" * CONTEXT)
    assert quote_context("xQUOTEy", 1, 6) == ("x", "y")  # fewer at the text's ends
    # code points, not UTF-16 units or bytes: an astral character is one of the 32
    astral = "\U0001d11e" * 40 + "Q"
    assert quote_context(astral, 40, 41) == ("\U0001d11e" * CONTEXT, "")


def test_the_only_occurrence_is_an_exact_match() -> None:
    text = "(1) Der Zins beträgt 0,9 Prozent.\n(2) Er gilt ab 2021.\n"
    got = find_quote(text, TextQuote(exact="(2) Er gilt ab 2021."), _spans(text))
    assert got is not None and (got.method, got.occurrences, got.similarity) == ("exact", 1, 1.0)
    assert text[got.start:got.end] == "(2) Er gilt ab 2021."


def test_prefix_and_suffix_pick_the_occurrence_they_surround() -> None:
    text = "§ 1 Satz.\n(weggefallen)\n§ 2 Satz.\n(weggefallen)\n§ 3 Satz.\n"
    second = text.index("(weggefallen)", text.index("§ 2"))
    prefix, suffix = quote_context(text, second, second + 13)
    # the text grew in front of it: offsets are stale, the context is not
    later = "Neu.\n" + text
    got = find_quote(later, TextQuote(exact="(weggefallen)", prefix=prefix, suffix=suffix),
                     _spans(later))
    assert got is not None and (got.method, got.occurrences) == ("context", 2)
    assert got.start == second + 5
    # a suffix alone decides as well
    got = find_quote(later, TextQuote(exact="(weggefallen)", suffix="\n§ 2"), _spans(later))
    assert got is not None and later[got.end:].startswith("\n§ 2")


def test_equal_contexts_fall_back_to_the_position_then_the_first() -> None:
    text = "x. Ja.\nx. Ja.\nx. Ja.\n"
    quote = TextQuote(exact="Ja.", prefix="x. ")
    first = find_quote(text, quote, _spans(text))
    assert first is not None and first.start == 3
    near = find_quote(text, quote, _spans(text), near=16)
    assert near is not None and near.start == 17


def test_a_changed_sentence_is_found_fuzzily_and_a_removed_one_not_at_all() -> None:
    old = "(1) Der Höchstzinssatz beträgt 0,9 Prozent."
    text = "(1) Der Höchstzinssatz beträgt 0,25 Prozent.\n(2) Ganz anderer Text hier.\n"
    got = find_quote(text, TextQuote(exact=old), _spans(text))
    assert got is not None and got.method == "fuzzy" and got.occurrences == 0
    assert text[got.start:got.end] == old.replace("0,9", "0,25")
    assert 0.6 <= got.similarity < 1.0
    assert find_quote(text, TextQuote(exact="Die Estnische Krone entfällt."), _spans(text)) is None


def test_fuzzy_ties_are_broken_by_context() -> None:
    text = "A: Der Satz gilt.\nB: Der Satz gilt.\n"
    got = find_quote(text, TextQuote(exact="Der Satz galt.", prefix="B: "),
                     [(3, 17), (21, 35)])
    assert got is not None and (got.method, got.start) == ("fuzzy", 21)


def test_an_empty_quote_is_refused() -> None:
    with pytest.raises(ValueError, match="exact must not be empty"):
        TextQuote(exact="")


@given(st.text(alphabet="ab\u0301\U0001d11e .", min_size=1, max_size=60),
       st.integers(0, 59), st.integers(1, 20))
def test_a_quote_cut_from_a_text_is_found_there_with_its_own_context(
        text: str, start: int, width: int) -> None:
    start = min(start, len(text) - 1)
    end = min(len(text), start + width)
    prefix, suffix = quote_context(text, start, end)
    quote = TextQuote(exact=text[start:end], prefix=prefix, suffix=suffix)
    got = find_quote(text, quote, [(0, len(text))], near=start)
    assert got is not None and got.method in ("exact", "context")
    assert text[got.start:got.end] == text[start:end]
    # the true place has its full context: only an equally surrounded one can win over it,
    # and the position hint then keeps the true one
    assert context_score(text, start, end, quote) == len(prefix) + len(suffix)
    assert got.start == start
