"""Question salience (stichtag.domain.salience), one test per rule, and a table of 64 questions.

The df table is built here from a handful of real-looking passages (sentences of DeckRV,
VVG and VAG as in the shared corpus), so every weight below is reproducible by hand.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from stichtag.domain.aspect_support import support, support_in_force
from stichtag.domain.compounds import split_compound
from stichtag.domain.german_terms import SNOWBALL_GERMAN_STOPWORDS, analyze, term
from stichtag.domain.salience import (
    AMOUNT,
    COMPOUND,
    NUMBER,
    PERCENTAGE,
    SALIENCE_ID,
    TERM,
    YEAR,
    InForce,
    salient_aspects,
)
from stichtag.domain.scope import DEFAULT_SCOPE_THRESHOLD, gate_scope
from tests.conftest import shared_path

PASSAGES = (
    # DeckRV
    "§ 2 Höchstzinssatz (1) Bei Versicherungsverträgen mit Zinsgarantie, die auf Euro lauten, "
    "wird der Höchstzinssatz für die Berechnung der Deckungsrückstellungen auf 0,25 Prozent "
    "festgesetzt.",
    "(2) Bei Versicherungsverträgen mit Zinsgarantie gilt der von einem Versicherungsunternehmen "
    "zum Zeitpunkt des Vertragsabschlusses verwendete Rechnungszins für die Berechnung der "
    "Deckungsrückstellung für die gesamte Laufzeit des Vertrages.",
    "§ 4 Höchstzillmersätze (1) Der Höchstzillmersatz beträgt 25 Promille der Summe aller "
    "Prämien des Vertrages.",
    "(3) Bei einer erforderlichen Berechnung der zu erwartenden Erträge ist als Rendite ein "
    "Referenzzins zugrunde zu legen, der kalenderjährlich ermittelt wird. Der Referenzzins des "
    "Kalenderjahres 2017 beträgt 2,21 Prozent.",
    "(4) Ist der Referenzzins kleiner als der höchste maßgebliche Rechnungszins, so ist der "
    "Berechnung der Deckungsrückstellung eine Zinszusatzreserve zugrunde zu legen.",
    # VVG
    "§ 8 Widerrufsrecht des Versicherungsnehmers (1) Der Versicherungsnehmer kann seine "
    "Vertragserklärung innerhalb von 14 Tagen widerrufen.",
    "§ 152 Widerruf des Versicherungsnehmers (1) Abweichend von § 8 Abs. 1 Satz 1 beträgt die "
    "Widerrufsfrist bei einer Lebensversicherung 30 Tage.",
    "§ 153 Überschussbeteiligung (1) Dem Versicherungsnehmer steht eine Beteiligung an dem "
    "Überschuss und an den Bewertungsreserven (Überschussbeteiligung) zu.",
    "§ 15 Hemmung der Verjährung Ist ein Anspruch aus dem Versicherungsvertrag beim Versicherer "
    "angemeldet worden, ist die Verjährung bis zu dem Zeitpunkt gehemmt, zu dem die Entscheidung "
    "des Versicherers dem Anspruchsteller in Textform zugeht.",
    "§ 11 Verlängerung, Kündigung (4) Ein Versicherungsvertrag kann vom Versicherungsnehmer unter "
    "Einhaltung einer Frist von drei Monaten gekündigt werden.",
    "§ 115 Direktanspruch Der Dritte kann seinen Anspruch auf Schadensersatz auch gegen den "
    "Versicherer geltend machen, bei der Kraftfahrzeug-Haftpflichtversicherung.",
    # VAG
    "§ 141 Verantwortlicher Aktuar (1) Lebensversicherungsunternehmen haben einen "
    "Verantwortlichen Aktuar zu bestellen.",
    "§ 102 Solvabilitätskapitalanforderung (3) Jedes Risikomodul wird unter Verwendung des "
    "Risikomaßes Value-at-Risk zu dem Konfidenzniveau von 99,5 Prozent über den Zeitraum von "
    "einem Jahr kalibriert.",
    "§ 125 Sicherungsvermögen (1) Der Vorstand eines Erstversicherungsunternehmens hat Beträge "
    "dem Sicherungsvermögen zuzuführen und vorschriftsmäßig anzulegen.",
    "§ 7 Begriffsbestimmungen Versicherungsunternehmen sind Erstversicherungsunternehmen und "
    "Rückversicherungsunternehmen; der Versicherer schließt den Vertrag.",
    "§ 294 Aufgaben der Aufsichtsbehörde Die Aufsichtsbehörde überwacht den gesamten "
    "Geschäftsbetrieb der Versicherungsunternehmen; der Versicherer hat ihr Auskunft zu geben.",
)

DOCS = ("deckrv", "DeckRV", "vvg2008", "VVG", "vag2016", "VAG")
IN_FORCE = InForce.from_texts(PASSAGES)


def surfaces(question: str, in_force: InForce = IN_FORCE, **kw: object) -> list[str]:
    return [a.surface for a in salient_aspects(question, in_force, documents=DOCS, **kw)]


def aspect(question: str, surface: str, in_force: InForce = IN_FORCE):  # type: ignore[no-untyped-def]
    found = [a for a in salient_aspects(question, in_force, documents=DOCS) if a.surface == surface]
    assert found, (question, surface)
    return found[0]


def test_the_rule_is_versioned() -> None:
    assert re.fullmatch(r"salience-\d+", SALIENCE_ID)


# --- the analysis is the index's -------------------------------------------------------------


def _tantivy_terms():  # type: ignore[no-untyped-def]
    analyzer = pytest.importorskip("stichtag.index.analyzer").GermanAnalyzer()
    return analyzer.terms


def test_analysis_matches_tantivy_on_the_corpus() -> None:
    """Term for term what the index stores, on the newest version of every law."""
    tantivy_terms = _tantivy_terms()
    root = shared_path("corpus", "de-insurance-law")
    words: set[str] = set()
    for doc in ("deckrv", "vag2016", "vag_old", "vvg2008"):
        newest = sorted((root / doc).iterdir())[-1]
        words |= set(re.findall(r"[^\W_]+", newest.read_text(encoding="utf-8")))
    assert len(words) > 5000
    mismatched = [w for w in sorted(words) if tantivy_terms(w) != analyze(w)]
    assert mismatched == []


def test_analysis_matches_tantivy_on_questions_and_stop_words() -> None:
    tantivy_terms = _tantivy_terms()
    text = " ".join([q for q, _, _ in TABLE] + list(PASSAGES) + sorted(SNOWBALL_GERMAN_STOPWORDS))
    text += " Hoechstzinssatz Quelle queue Café HÖCHSTZINSSATZ Straße Systeme Mitteln Vertreterin"
    assert tantivy_terms(text) == analyze(text)


# --- rule 1: rarity ---------------------------------------------------------------------------


def test_weight_is_rarity_in_force_and_absent_terms_weigh_most() -> None:
    table = InForce.from_counts(100, {"versich": 100, "vertrag": 60, "hochstzinssatz": 3})
    assert table.weight("arbeitslohn") == 1.0  # occurs nowhere in force: maximally salient
    assert table.weight("versich") < 0.01  # in every passage: weighs (almost) nothing
    weights = [table.weight(t) for t in ("versich", "vertrag", "hochstzinssatz")]
    assert 0 < weights[0] < weights[1] < weights[2] < 1
    assert InForce.from_counts(0, {}).weight("x") == 1.0  # nothing visible: all absent
    clamped = InForce.from_counts(10, {"a": 99}).weight("a")  # df > passages: a caller's slip
    assert clamped == InForce.from_counts(10, {"a": 10}).weight("a")


def test_generic_legal_words_get_low_weight_from_df_alone() -> None:
    q = "Welcher Höchstzinssatz gilt für den Versicherer beim Vertrag?"
    weights = {a.surface: a.weight for a in salient_aspects(q, IN_FORCE)}
    assert "gilt" not in weights  # a stop word of the house list
    assert weights["Versicherer"] < weights["Höchstzinssatz"]
    assert weights["Vertrag"] < weights["Höchstzinssatz"]


# --- rule 2: compounds ------------------------------------------------------------------------

VOCAB = InForce.from_counts(10, {"grunderwerb": 0, "steu": 4, "satz": 6, "hoch": 3,
                                 "rechnungszin": 2, "referenzzin": 2, "berechn": 5},
                            vocabulary={"grunderwerb"})


def test_a_compound_that_occurs_as_such_is_a_term() -> None:
    a = aspect("Welcher Höchstzinssatz gilt?", "Höchstzinssatz")
    assert (a.kind, a.stems, a.parts) == (TERM, ("hochstzinssatz",), ())


def test_an_unknown_compound_is_split_over_the_vocabulary() -> None:
    a = aspect("Wie hoch ist der Grunderwerbsteuersatz?", "Grunderwerbsteuersatz", VOCAB)
    assert a.kind == COMPOUND
    assert [(p.surface, p.stem) for p in a.parts] == [
        ("Grunderwerb", "grunderwerb"), ("steuer", "steu"), ("satz", "satz")]
    assert a.weight == max(p.weight for p in a.parts) == 1.0  # "Grunderwerb" occurs nowhere


def test_a_fugen_element_may_close_a_modifier() -> None:
    assert split_compound("Höchstrechnungszins", VOCAB.vocabulary) == [
        ("Höchst", "hoch"), ("rechnungszins", "rechnungszin")]
    assert split_compound("Rechnungszinsberechnung", VOCAB.vocabulary) == [
        ("Rechnungszins", "rechnungszin"), ("berechnung", "berechn")]
    vocab = InForce.from_counts(1, {"arbeit": 1, "lohn": 1}).vocabulary
    assert split_compound("Arbeitslohn", vocab) == [("Arbeits", "arbeit"), ("lohn", "lohn")]


def test_splitting_prefers_few_long_parts_and_gives_up_rather_than_shred() -> None:
    vocab = InForce.from_counts(1, {"grund": 1, "erwerb": 1, "steu": 1, "satz": 1}).vocabulary
    assert split_compound("Grunderwerbsteuersatz", vocab) == []  # would need four parts
    assert split_compound("Satz", vocab) == []  # one part is no compound
    assert split_compound("Xyzsatz", vocab) == []  # "Xyz" is shorter than a part may be


def test_a_split_compound_needs_all_its_parts_in_one_text() -> None:
    [a] = salient_aspects("Grunderwerbsteuersatz?", VOCAB)
    assert not support([a], ["Der Steuersatz beträgt nach Satz 2 ..."]).covered
    assert not support([a], ["Grunderwerb ist ...", "Steuer und Satz ..."]).covered
    assert support([a], ["Der Grunderwerbsteuersatz beträgt ..."]).covered  # as such
    assert support([a], ["Beim Grunderwerb fällt Steuer zum Satz von 5 % an."]).covered


def test_hyphenated_words_are_compounds_of_their_hyphen_parts() -> None:
    a = aspect("Was gilt für die Referenzzins-Berechnung?", "Referenzzins-Berechnung")
    assert a.kind == COMPOUND and [p.surface for p in a.parts] == ["Referenzzins", "Berechnung"]
    assert support([a], ["Der Referenzzins wird bei der Berechnung ..."]).covered
    assert not support([a], ["Der Referenzzins beträgt 2,21 Prozent."]).covered
    # a document name inside a hyphenated word is dropped, the rest stays salient
    assert surfaces("Welcher DeckRV-Höchstzinssatz gilt?") == ["Höchstzinssatz"]
    assert aspect("Welcher DeckRV-Höchstzinssatz gilt?", "Höchstzinssatz").kind == TERM


# --- rule 3: numbers, years, percentages, amounts ----------------------------------------------


def test_quantities_are_salient_with_their_kind_and_normalized_value() -> None:
    q = "Gilt 1,75 % oder 0,25 Prozent, 25 Promille, EUR 500 und 30 Tage?"
    found = [(a.surface, a.kind, a.stems) for a in salient_aspects(q, IN_FORCE)]
    assert found == [("1,75 %", PERCENTAGE, ("1.75 %",)), ("0,25 Prozent", PERCENTAGE, ("0.25 %",)),
                     ("25 Promille", PERCENTAGE, ("25 ‰",)), ("EUR 500", AMOUNT, ("500 EUR",)),
                     ("30 Tage", NUMBER, ("30 days",))]
    assert all(a.weight == 1.0 for a in salient_aspects(q, IN_FORCE))


def test_years_are_salient_but_dates_and_section_numbers_are_not() -> None:
    a = aspect("Wie hoch ist der Referenzzins des Kalenderjahres 2017?", "2017")
    assert a.kind == YEAR and a.stems == ("2017",) and 0 < a.weight < 1  # 2017 occurs once
    for q in ("Welcher Höchstzinssatz galt am 1. Januar 2022?", "Höchstzinssatz am 2022-01-01?",
              "Höchstzinssatz am 1.1.2022?", "Höchstzinssatz on January 1, 2022?",
              "Höchstzinssatz nach § 2 Abs. 1 Satz 2 Nr. 3?", "Höchstzinssatz im Januar 2022?"):
        assert surfaces(q) == ["Höchstzinssatz"], q


def test_quantities_are_supported_by_the_same_value_in_any_spelling() -> None:
    [a] = [x for x in salient_aspects("Gilt 1,75 %?", IN_FORCE) if x.kind == PERCENTAGE]
    assert support([a], ["auf 1,75 vom Hundert festgesetzt"]).covered
    assert support([a], ["1.75 percent"]).covered
    assert not support([a], ["auf 1,25 vom Hundert festgesetzt", "§ 1 Abs. 75"]).covered
    [y] = salient_aspects("Referenzzins 2017", InForce.from_counts(1, {}))[1:]
    assert support([y], ["des Kalenderjahres 2017"]).covered
    assert not support([y], ["20172"]).covered


# --- rule 4: what is not salient ----------------------------------------------------------------


def test_question_words_and_stop_words_are_not_salient() -> None:
    assert surfaces("Was ist denn eigentlich aktuell bitte genau wie hoch?") == []
    assert surfaces("What is it, and how much does it currently apply, please?") == []
    assert surfaces("Welche Frist gilt?") == ["Frist"]
    assert surfaces("Which Frist applies under the law?") == ["Frist"]


def test_names_of_the_documents_in_the_evidence_are_not_salient() -> None:
    q = "Welcher Höchstzinssatz gilt nach der DeckRV, dem VVG und dem VAG 2016?"
    assert surfaces(q) == ["Höchstzinssatz"]
    # without the documents in the evidence, their names are ordinary (rare) words
    assert [a.surface for a in salient_aspects(q, IN_FORCE)] == [
        "Höchstzinssatz", "DeckRV", "VVG", "VAG", "2016"]
    titles = ("Verordnung über Rechnungsgrundlagen für die Deckungsrückstellungen",
              "Deckungsrückstellungsverordnung")
    q = ("Welcher Höchstzinssatz gilt nach der Deckungsrückstellungsverordnung für "
         "Deckungsrückstellungen?")
    named = salient_aspects(q, IN_FORCE, documents=titles)
    assert [a.surface for a in named] == ["Höchstzinssatz"]
    # a year is dropped only right after a document name
    assert "2016" in surfaces("Welcher Höchstzinssatz galt 2016?")


# --- purity and determinism -----------------------------------------------------------------


def test_aspects_are_in_question_order_deduplicated_and_independent_of_passage_order() -> None:
    q = "Höchstzinssatz, Höchstzinssatzes und 0,25 % oder 0,25 Prozent für Deckungsrückstellungen"
    shuffled = list(PASSAGES)
    shuffled = shuffled[7:] + shuffled[:7][::-1]
    again = InForce.from_texts(shuffled)
    first = salient_aspects(q, IN_FORCE, documents=DOCS)
    assert first == salient_aspects(q, again, documents=list(reversed(DOCS)))
    assert [a.surface for a in first] == ["Höchstzinssatz", "0,25 %", "Deckungsrückstellungen"]
    assert [a.start for a in first] == sorted(a.start for a in first)


def test_support_matches_the_way_the_index_does() -> None:
    aspects = salient_aspects("Höchstrechnungszins, Zillmersatz, Zins und Versicherungsnehmer",
                              IN_FORCE)
    by = {a.surface: a for a in aspects}
    assert support([by["Zillmersatz"]], ["Die HÖCHSTZILLMERSÄTZE betragen ..."]).covered  # inside
    assert support([by["Versicherungsnehmer"]], ["des versicherungsnehmers"]).covered  # case
    assert support([by["Höchstrechnungszins"]], ["des Höchstrechnungszinses"]).covered  # ending
    assert support([by["Höchstrechnungszins"]], ["höchstens der Rechnungszins"]).covered  # parts
    assert not support([by["Zins"]], ["Der Höchstzinssatz ..."]).covered  # short stems: whole words
    assert support([by["Zins"]], ["Zinsen"]).covered
    assert support(aspects, []).uncovered == tuple(aspects)


def test_support_in_force_uses_df_co_occurrence_and_candidate_texts() -> None:
    aspects = salient_aspects("Höchstzinssatz und Grunderwerbsteuersatz in Bayern, 2 %", VOCAB)
    result = support_in_force(aspects, InForce.from_counts(10, {"hochstzinssatz": 2}))
    assert [a.surface for a in result.covered] == ["Höchstzinssatz"]
    assert [a.surface for a in result.uncovered] == ["Grunderwerbsteuersatz", "Bayern"]  # no %
    split = [a for a in aspects if a.kind == COMPOUND]
    assert not support_in_force(split, VOCAB).covered  # parts' separate counts prove nothing
    together = InForce.from_texts(["Grunderwerb, Steuer, Satz"])
    assert support_in_force(split, together).covered  # co-occurrence in one passage in force
    assert support_in_force(split, VOCAB, ["Grunderwerb Steuer Satz"]).covered


# --- the table: 64 questions ----------------------------------------------------------------

TABLE: list[tuple[str, str, bool]] = [
    ('Welcher Höchstzinssatz gilt für die Berechnung der Deckungsrückstellungen?',
     'Höchstzinssatz | Berechnung | Deckungsrückstellungen', True),
    ('Welcher Höchstzinssatz gilt nach § 2 DeckRV für Verträge in Euro?',
     'Höchstzinssatz | Verträge | Euro', True),
    ('Wie hoch ist der Höchstrechnungszins am 1. Januar 2022?',
     'Höchstrechnungszins', True),
    ('Auf welchen Prozentsatz ist der Höchstzinssatz festgesetzt?',
     'Prozentsatz | Höchstzinssatz | festgesetzt', True),
    ('Gilt der Rechnungszins für die gesamte Laufzeit des Vertrages?',
     'Rechnungszins | gesamte | Laufzeit | Vertrages', True),
    ('Wie hoch darf der Zillmersatz höchstens sein?',
     'Zillmersatz | höchstens', True),
    ('Beträgt der Höchstzillmersatz 25 Promille?',
     'Höchstzillmersatz | 25 Promille', True),
    ('Wie hoch ist der Referenzzins des Kalenderjahres 2017?',
     'Referenzzins | Kalenderjahres | 2017', True),
    ('Wann ist der Berechnung eine Zinszusatzreserve zugrunde zu legen?',
     'Berechnung | Zinszusatzreserve | zugrunde | legen', True),
    ('Was gilt für die Referenzzins-Berechnung?',
     'Referenzzins-Berechnung', True),
    ('Wie lang ist die Widerrufsfrist bei einer Lebensversicherung?',
     'Widerrufsfrist | Lebensversicherung', True),
    ('Innerhalb welcher Frist kann der Versicherungsnehmer seine Vertragserklärung widerrufen?',
     'Innerhalb | Frist | Versicherungsnehmer | Vertragserklärung | widerrufen', True),
    ('Beträgt die Widerrufsfrist 30 Tage?',
     'Widerrufsfrist | 30 Tage', True),
    ('Steht dem Versicherungsnehmer eine Überschussbeteiligung zu?',
     'Steht | Versicherungsnehmer | Überschussbeteiligung', True),
    ('Sind Bewertungsreserven Teil der Überschussbeteiligung?',
     'Bewertungsreserven | Teil | Überschussbeteiligung', True),
    ('Wann ist die Verjährung eines Anspruchs gehemmt?',
     'Verjährung | Anspruchs | gehemmt', True),
    ('Mit welcher Frist kann der Versicherungsnehmer kündigen?',
     'Frist | Versicherungsnehmer | kündigen', True),
    ('Muss ein Lebensversicherungsunternehmen einen Verantwortlichen Aktuar bestellen?',
     'Lebensversicherungsunternehmen | Verantwortlichen | Aktuar | bestellen', True),
    ('Auf welches Konfidenzniveau ist die Solvabilitätskapitalanforderung kalibriert?',
     'Konfidenzniveau | Solvabilitätskapitalanforderung | kalibriert', True),
    ('Gilt ein Konfidenzniveau von 99,5 %?',
     'Konfidenzniveau | 99,5 %', True),
    ('Was muss der Vorstand dem Sicherungsvermögen zuführen?',
     'Vorstand | Sicherungsvermögen | zuführen', True),
    ('Was überwacht die Aufsichtsbehörde?',
     'überwacht | Aufsichtsbehörde', True),
    ('Wer kann einen Direktanspruch gegen den Versicherer geltend machen?',
     'Direktanspruch | Versicherer | geltend', True),
    ('Welche Unternehmen sind Rückversicherungsunternehmen?',
     'Unternehmen | Rückversicherungsunternehmen', True),
    ('Was gilt für die Kraftfahrzeug-Haftpflichtversicherung?',
     'Kraftfahrzeug-Haftpflichtversicherung', True),
    ('Welcher Höchstzinssatz galt am 2022-01-01 für Versicherungsverträge mit Zinsgarantie?',
     'Höchstzinssatz | Versicherungsverträge | Zinsgarantie', True),
    ('Wird der Höchstzinssatz auf 0,25 Prozent festgesetzt?',
     'Höchstzinssatz | 0,25 Prozent | festgesetzt', True),
    ('Wie hoch ist der Höchstzinssatz nach dem VAG 2016?',
     'Höchstzinssatz', True),
    ('What is the Höchstzinssatz for Deckungsrückstellungen?',
     'Höchstzinssatz | Deckungsrückstellungen', True),
    ('Is the Widerrufsfrist 30 days?',
     'Widerrufsfrist | 30 days', True),
    ('Wie hoch ist der Grunderwerbsteuersatz in Bayern?',
     'Grunderwerbsteuersatz | Bayern', False),
    ('Wie viel Kfz-Steuer zahlt man für ein Elektroauto?',
     'Kfz-Steuer | zahlt | Elektroauto', False),
    ('Wie hoch ist der Spitzensteuersatz der Einkommensteuer?',
     'Spitzensteuersatz | Einkommensteuer', False),
    ('Welcher Freibetrag gilt bei der Erbschaftsteuer?',
     'Freibetrag | Erbschaftsteuer', False),
    ('Wie hoch ist die Kapitalertragsteuer auf Zinsen?',
     'Kapitalertragsteuer | Zinsen', False),
    ('What is the real estate transfer tax rate?',
     'real | estate | transfer | tax | rate', False),
    ('Wann verjährt der Anspruch auf Arbeitslohn?',
     'verjährt | Anspruch | Arbeitslohn', False),
    ('Welche Kündigungsfrist gilt nach zehn Jahren Betriebszugehörigkeit?',
     'Kündigungsfrist | zehn | Betriebszugehörigkeit', False),
    ('Wie hoch ist der gesetzliche Mindestlohn pro Stunde?',
     'gesetzliche | Mindestlohn | Stunde', False),
    ('Wie viele Tage Urlaubsanspruch hat ein Arbeitnehmer?',
     'Tage | Urlaubsanspruch | Arbeitnehmer', False),
    ('Wie lange darf die Probezeit dauern?',
     'Probezeit | dauern', False),
    ('What is the statutory minimum wage?',
     'statutory | minimum | wage', False),
    ('Wann ist eine Mietminderung wegen Schimmel zulässig?',
     'Mietminderung | Schimmel | zulässig', False),
    ('Wie hoch darf die Mietkaution sein?',
     'Mietkaution', False),
    ('Wann darf der Vermieter wegen Eigenbedarf kündigen?',
     'Vermieter | Eigenbedarf | kündigen', False),
    ('Gilt die Mietpreisbremse für Neubauten?',
     'Mietpreisbremse | Neubauten', False),
    ('Gibt es ein Tempolimit auf Autobahnen?',
     'Tempolimit | Autobahnen', False),
    ('Ab wie vielen Punkten in Flensburg wird der Führerschein entzogen?',
     'Punkten | Flensburg | Führerschein | entzogen', False),
    ('Welche Promillegrenze gilt für Fahranfänger?',
     'Promillegrenze | Fahranfänger', False),
    ('What is the speed limit on motorways?',
     'speed | limit | motorways', False),
    ('Wie hoch ist der Rentenbeitragssatz 2024?',
     'Rentenbeitragssatz | 2024', False),
    ('Wie viel Kindergeld gibt es für das zweite Kind?',
     'Kindergeld | zweite | Kind', False),
    ('Welcher Pflegegrad steht bei Demenz zu?',
     'Pflegegrad | steht | Demenz', False),
    ('Wann ist ein Krankenkassenwechsel möglich?',
     'Krankenkassenwechsel | möglich', False),
    ('Welcher Höchstzinssatz gilt in Österreich?',
     'Höchstzinssatz | Österreich', False),
    ('Welcher Höchstrechnungszins gilt in der Schweiz?',
     'Höchstrechnungszins | Schweiz', False),
    ('How does the NAIC risk-based capital formula work?',
     'NAIC | risk-based | capital | formula | work', False),
    ('What is the maximum technical interest rate in Japan?',
     'maximum | technical | interest | rate | Japan', False),
    ('Welche Eigenkapitalquote müssen Banken nach Basel III einhalten?',
     'Eigenkapitalquote | Banken | Basel | III | einhalten', False),
    ('Wie hoch ist die harte Kernkapitalquote für Kreditinstitute?',
     'harte | Kernkapitalquote | Kreditinstitute', False),
    ('Which leverage ratio must a bank hold?',
     'leverage | ratio | bank | hold', False),
    ('Wer gewann die Fußball-Weltmeisterschaft 2014?',
     'gewann | Fußball-Weltmeisterschaft | 2014', False),
    ('Wie hoch ist der Leitzins der Europäischen Zentralbank?',
     'Leitzins | Europäischen | Zentralbank', False),
    ('Was kostet eine Bahncard 50?',
     'kostet | Bahncard', False),
]


def test_table_has_enough_questions_of_both_kinds() -> None:
    assert len(TABLE) >= 60
    assert sum(1 for *_, ok in TABLE if ok) >= 25 and sum(1 for *_, ok in TABLE if not ok) >= 30


@pytest.mark.parametrize(("question", "expected", "in_scope"), TABLE)
def test_table(question: str, expected: str, in_scope: bool) -> None:
    """Salient aspects in the question's words, and the scope verdict at the default threshold."""
    aspects = salient_aspects(question, IN_FORCE, documents=DOCS)
    assert " | ".join(a.surface for a in aspects) == expected
    decision = gate_scope(aspects, support_in_force(aspects, IN_FORCE, PASSAGES),
                          DEFAULT_SCOPE_THRESHOLD, valid_at="2024-06-01")
    assert decision.passed is in_scope, decision.detail


def test_the_module_is_pure() -> None:
    """Only the standard library and the domain (the AST rule soon enforced for
    app/stichtag/domain)."""
    domain = Path(__file__).resolve().parents[2] / "app" / "stichtag" / "domain"
    for name in ("salience", "compounds", "aspect_support", "scope", "german_terms"):
        tree = ast.parse((domain / f"{name}.py").read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        allowed = {"__future__", "collections", "dataclasses", "functools", "math", "re",
                   "unicodedata", "stichtag"}
        assert all(m.split(".")[0] in allowed for m in imported), imported
        inside = [m for m in imported if m.startswith("stichtag")]
        assert all(m.startswith("stichtag.domain") for m in inside), imported
    assert term("und") is None and term("Zinsen") == "zin"


def test_a_verb_form_is_supported_by_its_noun() -> None:
    in_force = InForce.from_texts(["Die Überschussbeteiligung des Versicherungsnehmers.",
                                   "Die Verjährung beginnt mit dem Schluss des Jahres."])
    aspects = salient_aspects("Woran ist er beteiligt und wann verjährt es?", in_force)
    assert [a.surface for a in aspects] == ["beteiligt", "verjährt"]
    assert support(aspects, ["Zur Überschussbeteiligung."]).covered == (aspects[0],)
    assert support(aspects, ["Die Verjährung ist gehemmt."]).covered == (aspects[1],)
    other = salient_aspects("Was ist gerecht?", in_force)
    assert support(other, ["Das Gericht entscheidet."]).covered == ()


def test_an_ieren_participle_is_supported_by_its_ation_noun() -> None:
    in_force = InForce.from_texts(["Die Überschussdeklaration für 2024.",
                                   "Die Gesamtverzinsung beträgt 3,1 %."])
    [deklariert, gesamt] = salient_aspects("Wie hoch ist die deklarierte Gesamtverzinsung?",
                                           in_force)
    assert deklariert.surface == "deklarierte"
    covered = support([deklariert, gesamt], ["Laut Überschussdeklaration beträgt die "
                                             "Gesamtverzinsung 3,1 %."]).covered
    assert covered == (deklariert, gesamt)
    # the noun of another root does not support it, nor does the bare root
    assert support([deklariert], ["Die Deklamation.", "Die Deklar-Stelle."]).covered == ()
