"""The learned list rule's words (app/stichtag/domain/list_intent.py): what a recognised
list question names and which years it asks for; a vector of another model never lists."""

from __future__ import annotations

import pytest

from stichtag.domain import list_intent_fit as fitted
from stichtag.domain.list_intent import learned_list_question, subject_words, years


@pytest.mark.parametrize(("question", "subject"), [
    ("Welche Stände der Annahmerichtlinie sind vorhanden?", "Annahmerichtlinie"),
    ("Show the revision history of the underwriting guideline.", "underwriting guideline"),
    ("Which versions of the guideline are there?", "guideline"),
    ("Welche Texte liegen zu Schadenregulierung vor?", "Schadenregulierung"),
    ("Wie viele Versionen des Rundschreibens 2/2017 sind gespeichert?",
     "Rundschreibens 2/2017"),
    ("Welche Fassungen der DeckRV galten 2019?", "DeckRV"),
    ("What documents do you have?", ""),  # the whole collection: no subject
    ("What is in your collection?", ""),
])
def test_the_subject_is_what_the_framing_leaves(question: str, subject: str) -> None:
    assert subject_words(question) == subject


@pytest.mark.parametrize(("question", "window"), [
    ("Welche Fassungen der DeckRV galten 2019?", (2019, 2019)),
    ("What versions of the VVG applied between 2020 and 2022?", (2020, 2022)),
    ("Welche Fassungen des VAG gab es seit 2015?", (2015, 9998)),
    ("Which versions of the DeckRV exist?", None),
    ("Welche Versionen galten 2022 bis 2019?", None),  # an empty window names none
])
def test_the_window_is_the_years_the_question_names(question: str,
                                                     window: tuple[int, int] | None) -> None:
    assert years(question) == window


def test_a_vector_of_another_model_is_never_a_list_question() -> None:
    # the weights themselves, as a vector, score as high as any vector can
    vector = [w / sum(x * x for x in fitted.INTENT) ** 0.5 for w in fitted.INTENT]
    question = "Which versions of the DeckRV are there?"
    assert learned_list_question(question, vector, f"{fitted.MODEL}:int8") is not None
    assert learned_list_question(question, vector, "another-model:int8") is None
    # a list question that names nothing to list stays a content question
    assert learned_list_question("Which versions are there?", vector,
                                 f"{fitted.MODEL}:float") is None
    # as does one whose years make no window (the patterns refuse it too)
    assert learned_list_question("Welche Fassungen der DeckRV galten 2021 bis 2019?", vector,
                                 f"{fitted.MODEL}:int8") is None


def test_a_circulars_number_or_a_date_is_no_window() -> None:
    assert years("Welche Fassungen des Rundschreibens 2/2017 gibt es?") is None
    assert years("Welche Fassungen galten am 1.1.2020?") is None
    assert years("Was bestimmt § 166 des VAG, Stand 2026-03-17?") is None
    assert years("Welche Fassungen der DeckRV galten 2016-2019?") == (2016, 2019)
