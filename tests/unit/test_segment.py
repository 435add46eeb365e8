"""Sentence segmentation, blocks and heading paths for German legal text."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stichtag.domain.segment import (
    SEGMENTER_ID,
    Block,
    heading_paths,
    segment_block,
    split_blocks,
)

MD = "text/markdown"
PLAIN = "text/plain"


def sentences(text: str, media_type: str = PLAIN) -> list[str]:
    return [text[s:e] for s, e in segment_block(text, media_type)]


def block_texts(text: str, media_type: str = MD) -> list[str]:
    return [text[b.start : b.end] for b in split_blocks(text, media_type)]


# Each case: input, expected sentences. Cases hold for both media types.
GERMAN = [
    # abbreviations and references
    (
        "Der Satz gilt nach § 2 Abs. 1 Satz 2. Die Frist beginnt.",
        ["Der Satz gilt nach § 2 Abs. 1 Satz 2.", "Die Frist beginnt."],
    ),
    ("Siehe Nr. 3 der Anlage. Weiteres folgt.", ["Siehe Nr. 3 der Anlage.", "Weiteres folgt."]),
    (
        "Dies gilt z. B. Lebensversicherern gegenüber. Andere nicht.",
        ["Dies gilt z. B. Lebensversicherern gegenüber.", "Andere nicht."],
    ),
    ("Dies gilt z.B. Pensionskassen gegenüber.", ["Dies gilt z.B. Pensionskassen gegenüber."]),
    (
        "Es gilt § 5 i. V. m. § 7 VAG. Danach ist zu prüfen.",
        ["Es gilt § 5 i. V. m. § 7 VAG.", "Danach ist zu prüfen."],
    ),
    (
        "Geändert durch Art. 1 V v. 10.10.2018 I 1653. Die Änderung gilt.",
        ["Geändert durch Art. 1 V v. 10.10.2018 I 1653.", "Die Änderung gilt."],
    ),
    (
        "Es gelten die §§ 13, 37 Abs. 1 und § 38. Ferner gilt § 39.",
        ["Es gelten die §§ 13, 37 Abs. 1 und § 38.", "Ferner gilt § 39."],
    ),
    (
        "Vgl. BGH, Urt. v. 12.3.2020, Rn. 15. Dort wird es erläutert.",
        ["Vgl. BGH, Urt. v. 12.3.2020, Rn. 15.", "Dort wird es erläutert."],
    ),
    (
        "Die Summe beträgt 5 Mio. Euro. Sie ist anzupassen.",
        ["Die Summe beträgt 5 Mio. Euro.", "Sie ist anzupassen."],
    ),
    ("Ca. 3 Mrd. Euro entfallen darauf.", ["Ca. 3 Mrd. Euro entfallen darauf."]),
    (
        "Das Verfahren folgt §§ 5 ff. VAG. Ergänzend gilt die DeckRV.",
        ["Das Verfahren folgt §§ 5 ff. VAG.", "Ergänzend gilt die DeckRV."],
    ),
    (
        "Maßgeblich ist § 5 f. VVG. Ergänzend gilt § 7.",
        ["Maßgeblich ist § 5 f. VVG.", "Ergänzend gilt § 7."],
    ),
    (
        "Vgl. Buchst. a und Ziff. 3. Dies ist abschließend.",
        ["Vgl. Buchst. a und Ziff. 3.", "Dies ist abschließend."],
    ),
    (
        "Anzuwenden ist § 3 Abs. 2 S. 1 Nr. 4. Im Übrigen gilt Satz 2.",
        ["Anzuwenden ist § 3 Abs. 2 S. 1 Nr. 4.", "Im Übrigen gilt Satz 2."],
    ),
    (
        "Er zahlt Prämien, Kosten usw. Die Höhe bestimmt die Satzung.",
        ["Er zahlt Prämien, Kosten usw.", "Die Höhe bestimmt die Satzung."],
    ),
    ("Prämien, Kosten usw. sind auszuweisen.", ["Prämien, Kosten usw. sind auszuweisen."]),
    (
        "Der Vorstand (Dr. Müller, Prof. Schmidt) entscheidet.",
        ["Der Vorstand (Dr. Müller, Prof. Schmidt) entscheidet."],
    ),
    (
        "Fundstelle: BGBl. I 2015, S. 434. Inkrafttreten am 1.1.2016.",
        ["Fundstelle: BGBl. I 2015, S. 434.", "Inkrafttreten am 1.1.2016."],
    ),
    (
        "Siehe ABl. L 335 vom 17.12.2009, S. 1. Die Richtlinie gilt.",
        ["Siehe ABl. L 335 vom 17.12.2009, S. 1.", "Die Richtlinie gilt."],
    ),
    (
        "Die Frist beträgt zwei Monate, d. h. Verträge laufen weiter.",
        ["Die Frist beträgt zwei Monate, d. h. Verträge laufen weiter."],
    ),
    (
        "Gem. § 341f HGB i. V. m. § 2 DeckRV ist sie zu bilden. Das gilt auch hier.",
        ["Gem. § 341f HGB i. V. m. § 2 DeckRV ist sie zu bilden.", "Das gilt auch hier."],
    ),
    ("Vgl. hierzu lit. b und Ziff. 2 der Anlage.", ["Vgl. hierzu lit. b und Ziff. 2 der Anlage."]),
    (
        "Der Versicherer informiert ggf. Dritte. Sie sind gebunden.",
        ["Der Versicherer informiert ggf. Dritte.", "Sie sind gebunden."],
    ),
    ("Art. I des Gesetzes gilt fort.", ["Art. I des Gesetzes gilt fort."]),
    ("Das ist eine Art. Die andere fehlt.", ["Das ist eine Art.", "Die andere fehlt."]),
    ("Rn. 12 ff. beschreiben das.", ["Rn. 12 ff. beschreiben das."]),
    (
        "Das ist in Kap. 3 geregelt. Kap. 4 regelt den Rest.",
        ["Das ist in Kap. 3 geregelt.", "Kap. 4 regelt den Rest."],
    ),
    ("Abs. 2 gilt entsprechend.", ["Abs. 2 gilt entsprechend."]),
    (
        "Zuletzt geändert durch Art. 2 Abs. 79 G v. 22.12.2011 I 3044",
        ["Zuletzt geändert durch Art. 2 Abs. 79 G v. 22.12.2011 I 3044"],
    ),
    (
        "Stand: Zuletzt geändert durch Art. 10 G v. 25.3.2019 I 357. Dieses Gesetz dient.",
        ["Stand: Zuletzt geändert durch Art. 10 G v. 25.3.2019 I 357.", "Dieses Gesetz dient."],
    ),
    # numbers, decimals, dates, ordinals
    (
        "Der Zins beträgt 1,75 %. Er gilt ab 2022.",
        ["Der Zins beträgt 1,75 %.", "Er gilt ab 2022."],
    ),
    (
        "Der Zins beträgt 0.25 % p. a. und gilt fort.",
        ["Der Zins beträgt 0.25 % p. a. und gilt fort."],
    ),
    (
        "Das Gesetz trat am 1.1.2016 in Kraft. Es ersetzt das VAG a. F.",
        ["Das Gesetz trat am 1.1.2016 in Kraft.", "Es ersetzt das VAG a. F."],
    ),
    (
        "Bis zum 31. Dezember 2021 galt 0,9 Prozent. Ab dem 1. Januar 2022 gilt 0,25 Prozent.",
        ["Bis zum 31. Dezember 2021 galt 0,9 Prozent.", "Ab dem 1. Januar 2022 gilt 0,25 Prozent."],
    ),
    (
        "Nach Vollendung des 67. Lebensjahres endet die Pflicht. Danach nicht.",
        ["Nach Vollendung des 67. Lebensjahres endet die Pflicht.", "Danach nicht."],
    ),
    ("Die Zahlung ist am 3. Arbeitstag fällig.", ["Die Zahlung ist am 3. Arbeitstag fällig."]),
    ("Im 2. Abschnitt gilt anderes.", ["Im 2. Abschnitt gilt anderes."]),
    (
        "Die Meldung ist bis zum 5. Werktag abzugeben.",
        ["Die Meldung ist bis zum 5. Werktag abzugeben."],
    ),
    ("Zu zahlen bis zum 31.12. des Jahres.", ["Zu zahlen bis zum 31.12. des Jahres."]),
    (
        "Der Bericht betrifft 2021. Danach folgt 2022.",
        ["Der Bericht betrifft 2021.", "Danach folgt 2022."],
    ),
    (
        "Die Rückstellung beträgt 1.234.567,89 Euro. Sie ist zu bilden.",
        ["Die Rückstellung beträgt 1.234.567,89 Euro.", "Sie ist zu bilden."],
    ),
    ("Mindestens 3 Jahre. 5 Jahre sind üblich.", ["Mindestens 3 Jahre.", "5 Jahre sind üblich."]),
    (
        "Er gilt nach § 9 Absatz 2 Nummer 2. Das Erfordernis entfällt.",
        ["Er gilt nach § 9 Absatz 2 Nummer 2.", "Das Erfordernis entfällt."],
    ),
    (
        "Der Text vom 5. November 2002 (ABl. EG Nr. L 345 S. 1) ist zu beachten.",
        ["Der Text vom 5. November 2002 (ABl. EG Nr. L 345 S. 1) ist zu beachten."],
    ),
    # punctuation, quotes, brackets, ellipses
    ("Ist der Vertrag wirksam? Das hängt ab.", ["Ist der Vertrag wirksam?", "Das hängt ab."]),
    ("Achtung! Die Frist läuft.", ["Achtung!", "Die Frist läuft."]),
    (
        "Er schrieb: „Die Frist ist abgelaufen.“ Danach geschah nichts.",
        ["Er schrieb: „Die Frist ist abgelaufen.“", "Danach geschah nichts."],
    ),
    (
        "Die Regel gilt. „Ausnahmen“ bestehen nicht.",
        ["Die Regel gilt.", "„Ausnahmen“ bestehen nicht."],
    ),
    (
        "Die Anzeige ist einzureichen (§ 47 Nr. 12). Sie ist zu begründen.",
        ["Die Anzeige ist einzureichen (§ 47 Nr. 12).", "Sie ist zu begründen."],
    ),
    (
        "Die Prämie ist fällig. § 5 Absatz 3 bleibt unberührt.",
        ["Die Prämie ist fällig.", "§ 5 Absatz 3 bleibt unberührt."],
    ),
    (
        "Die Prämie ist fällig. (2) Der Versicherer zahlt.",
        ["Die Prämie ist fällig.", "(2) Der Versicherer zahlt."],
    ),
    ("Es gibt Ausnahmen ... Die Regel bleibt.", ["Es gibt Ausnahmen ... Die Regel bleibt."]),
    ("Er zögerte… Dann zahlte er.", ["Er zögerte… Dann zahlte er."]),
    (
        "Die BaFin (Bundesanstalt) prüft. Sie kann Auskunft verlangen!",
        ["Die BaFin (Bundesanstalt) prüft.", "Sie kann Auskunft verlangen!"],
    ),
    (
        "Das gilt, soweit nichts anderes bestimmt ist; die Satzung regelt Weiteres.",
        ["Das gilt, soweit nichts anderes bestimmt ist; die Satzung regelt Weiteres."],
    ),
    # enumerations, hard-wrapped lines
    ("II. Allgemeine Vorschriften", ["II. Allgemeine Vorschriften"]),
    (
        "1. Versicherungsunternehmen im Sinne des § 7 Nummer 33 und 34,",
        ["1. Versicherungsunternehmen im Sinne des § 7 Nummer 33 und 34,"],
    ),
    (
        "(1) Der Aufsicht unterliegen\n1. Versicherungsunternehmen,\n2. Pensionsfonds.",
        ["(1) Der Aufsicht unterliegen", "1. Versicherungsunternehmen,", "2. Pensionsfonds."],
    ),
    (
        "Die Unternehmen haben\na) eine Risikofunktion,\naa) intern,\nb) eine Compliance-Funktion\n"
        "einzurichten.",
        [
            "Die Unternehmen haben",
            "a) eine Risikofunktion,",
            "aa) intern,",
            "b) eine Compliance-Funktion\neinzurichten.",
        ],
    ),
    (
        "Anzugeben sind:\n- Name,\n* Anschrift,\n\u2013 Geburtsdatum.",
        ["Anzugeben sind:", "- Name,", "* Anschrift,", "\u2013 Geburtsdatum."],
    ),
    (
        "Der Versicherer verpflichtet sich, ein\nbestimmtes Risiko abzusichern. "
        "Der Versicherungsnehmer ist\nverpflichtet, zu zahlen.",
        [
            "Der Versicherer verpflichtet sich, ein\nbestimmtes Risiko abzusichern.",
            "Der Versicherungsnehmer ist\nverpflichtet, zu zahlen.",
        ],
    ),
    ("Zum Stichtag 31.\nDezember 2021 gilt das.", ["Zum Stichtag 31.\nDezember 2021 gilt das."]),
    (
        "Nach der Richtlinie vom\n18\\. Juni 1992 zur Koordinierung.",
        ["Nach der Richtlinie vom\n18\\. Juni 1992 zur Koordinierung."],
    ),
    # gii dumps glue enumeration items into the prose
    (
        "(1) Der Aufsicht unterliegen 1.Versicherungsunternehmen,2.Pensionsfonds im Sinne des "
        "§ 236 Absatz 1. (2) Die Geschäfte fallen darunter.",
        [
            "(1) Der Aufsicht unterliegen",
            "1.Versicherungsunternehmen,",
            "2.Pensionsfonds im Sinne des § 236 Absatz 1.",
            "(2) Die Geschäfte fallen darunter.",
        ],
    ),
    (
        "Es gelten 4.Sicherungsfonds und5.Pensionsfonds.",
        ["Es gelten", "4.Sicherungsfonds und", "5.Pensionsfonds."],
    ),
    (
        "Behörden sind zuständig.2.Ausgliederung: eine Vereinbarung.",
        ["Behörden sind zuständig.", "2.Ausgliederung: eine Vereinbarung."],
    ),
    ("  Führende und folgende Leerzeichen.  \n", ["Führende und folgende Leerzeichen."]),
    # a one-letter "sentence" is an artefact and joins its neighbour; bullets stay
    ("Es gilt Anlage 2. A", ["Es gilt Anlage 2. A"]),
    ("j\nDer Faktor gilt.", ["j\nDer Faktor gilt."]),
    ("Liste:\n-\n- Punkt", ["Liste:", "-", "- Punkt"]),
    ("|\nZeile folgt.", ["|\nZeile folgt."]),
]

ENGLISH = [
    (
        "The rate is 0.25 %. It applies from 1 January 2022.",
        ["The rate is 0.25 %.", "It applies from 1 January 2022."],
    ),
    (
        "Mr. Smith met Dr. Jones. They discussed the rate.",
        ["Mr. Smith met Dr. Jones.", "They discussed the rate."],
    ),
    (
        "See e.g. Sec. 3 of the Act. It applies i.e. to all insurers.",
        ["See e.g. Sec. 3 of the Act.", "It applies i.e. to all insurers."],
    ),
    (
        "The figure is in No. 5 of the annex. Other figures follow.",
        ["The figure is in No. 5 of the annex.", "Other figures follow."],
    ),
    ("Is the rate fixed? Yes, until 2025.", ["Is the rate fixed?", "Yes, until 2025."]),
    (
        "Prices rose 3.5 percent in 2021. Growth slowed.",
        ["Prices rose 3.5 percent in 2021.", "Growth slowed."],
    ),
    ("The U.S. market is large.", ["The U.S. market is large."]),
    ("Apples, pears, etc. are fruit.", ["Apples, pears, etc. are fruit."]),
    ("We bought pears etc. Then we left.", ["We bought pears etc.", "Then we left."]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("The hearing is on Jan. 5 in London.", ["The hearing is on Jan. 5 in London."]),
    ("Say no. The answer stands.", ["Say no.", "The answer stands."]),
]


@pytest.mark.parametrize(("text", "expected"), GERMAN + ENGLISH)
@pytest.mark.parametrize("media_type", [PLAIN, MD])
def test_sentence_table(text: str, expected: list[str], media_type: str) -> None:
    assert sentences(text, media_type) == expected


def test_table_is_large_enough() -> None:
    assert len(GERMAN) >= 50
    assert len(ENGLISH) >= 10


def test_segmenter_id_is_versioned() -> None:
    assert SEGMENTER_ID == "de-legal-1"


class TestBlocks:
    def test_blank_lines_end_blocks_and_stay_with_the_block_before(self) -> None:
        assert block_texts("A.\n\n\nB.\n  \nC.") == ["A.\n\n\n", "B.\n  \n", "C."]

    def test_leading_blank_lines_join_the_first_block(self) -> None:
        blocks = split_blocks("\n\n# Titel\nText.", MD)
        assert [b.kind for b in blocks] == ["heading", "text"]
        assert blocks[0].start == 0
        assert blocks[0].title == "Titel"

    def test_heading_is_its_own_block_without_blank_lines(self) -> None:
        text = "Satz eins.\n## § 1 Titel\nSatz zwei.\n"
        blocks = split_blocks(text, MD)
        assert block_texts(text) == ["Satz eins.\n", "## § 1 Titel\n", "Satz zwei.\n"]
        assert [(b.kind, b.level, b.title) for b in blocks] == [
            ("text", 0, None),
            ("heading", 2, "§ 1 Titel"),
            ("text", 0, None),
        ]

    def test_heading_sentence_is_the_title(self) -> None:
        text = "###   § 2 \u2013 Höchstzinssatz   \n\n"
        (block,) = split_blocks(text, MD)
        assert block.title == "§ 2 \u2013 Höchstzinssatz"
        assert [text[s:e] for s, e in block.sentences] == ["§ 2 \u2013 Höchstzinssatz"]

    @pytest.mark.parametrize("line", ["#Titel", "####### sieben", "#", "##   ", "    # eingerückt"])
    def test_not_headings(self, line: str) -> None:
        blocks = split_blocks(line + "\nText.", MD)
        assert all(b.kind == "text" for b in blocks)

    @pytest.mark.parametrize("media_type", ["text/markdown; charset=utf-8", "Text/Markdown"])
    def test_markdown_media_type_parameters_are_ignored(self, media_type: str) -> None:
        assert [b.kind for b in split_blocks("# T\nText.", media_type)] == ["heading", "text"]

    def test_plain_text_has_no_headings(self) -> None:
        text = "## § 1 Geltungsbereich\n(1) Der Aufsicht unterliegen Unternehmen.\n"
        blocks = split_blocks(text, PLAIN)
        assert all(b.kind == "text" and b.title is None and b.level == 0 for b in blocks)
        assert block_texts(text, PLAIN) == [
            "## § 1 Geltungsbereich\n",
            "(1) Der Aufsicht unterliegen Unternehmen.\n",
        ]
        # In plain text the marks are content and part of the sentence.
        assert [text[s:e] for s, e in blocks[0].sentences] == ["## § 1 Geltungsbereich"]

    def test_absatz_marker_starts_a_block_with_its_label(self) -> None:
        text = "Vorspann.\n(1) Eins.\n(2a) Zwei.\nweiter.\n\n1. Aufzählung"
        blocks = split_blocks(text, MD)
        assert block_texts(text) == [
            "Vorspann.\n",
            "(1) Eins.\n",
            "(2a) Zwei.\nweiter.\n\n",
            "1. Aufzählung",
        ]
        assert [b.label for b in blocks] == [None, "(1)", "(2a)", None]

    def test_front_matter_lines_are_sentences(self) -> None:
        text = "---\ntitle: VVG\nslug: vvg_2008\n---\n\n# Gesetz\n"
        first = split_blocks(text, MD)[0]
        assert [text[s:e] for s, e in first.sentences] == [
            "---",
            "title: VVG",
            "slug: vvg_2008",
            "---",
        ]

    def test_table_rows_are_sentences(self) -> None:
        text = "| § | Titel |\n|---|---|\n| § 1 | Geltung |\n"
        assert sentences(text, MD) == ["| § | Titel |", "|---|---|", "| § 1 | Geltung |"]

    def test_empty_and_blank_text(self) -> None:
        assert split_blocks("", MD) == []
        (block,) = split_blocks(" \n\n", MD)
        assert (block.start, block.end, block.sentences) == (0, 3, ())

    def test_block_is_frozen(self) -> None:
        block = split_blocks("Text.", MD)[0]
        assert isinstance(block, Block)
        with pytest.raises(AttributeError):
            block.start = 1  # type: ignore[misc]

    def test_edit_in_one_paragraph_keeps_all_other_blocks(self) -> None:
        paragraphs = [
            "# § 1 \u2013 Geltung",
            "(1) Der Aufsicht unterliegen\n1. Versicherer,\n2. Pensionsfonds.",
            "(2) Abs. 1 gilt z. B. für Kassen. Sie sind klein.",
            "## Unterabschnitt",
            "Text mit\nweichem Umbruch. Und noch ein Satz.",
        ]
        before = "\n\n".join(paragraphs)
        edited = paragraphs.copy()
        edited[2] = "(2) Völlig\n\nneu.\n(3) Mit Marker.\n# Überschrift mitten drin"
        after = "\n\n".join(edited)
        old = [(before[b.start : b.end], b.sentences, b.label) for b in split_blocks(before, MD)]
        new = [(after[b.start : b.end], b.sentences, b.label) for b in split_blocks(after, MD)]
        assert old[:2] == new[:2]
        assert old[-2:] == new[-2:]
        assert len(new) > len(old)


class TestHeadingPaths:
    def test_deckrv_example(self) -> None:
        text = "# § 2 \u2013 Höchstzinssatz\n\n(1) Bei Verträgen gilt 0,25 Prozent.\n\n1. foo\n"
        blocks = split_blocks(text, MD)
        assert heading_paths(blocks) == [
            ("§ 2 \u2013 Höchstzinssatz",),
            ("§ 2 \u2013 Höchstzinssatz", "(1)"),
            ("§ 2 \u2013 Höchstzinssatz", "(1)"),
        ]

    def test_levels_pop_and_headings_close_the_absatz(self) -> None:
        text = "# A\n## B\n(1) x\n\ny\n### C\nz\n## D\nw\n# E\nv"
        paths = heading_paths(split_blocks(text, MD))
        assert paths == [
            ("A",),
            ("A", "B"),
            ("A", "B", "(1)"),
            ("A", "B", "(1)"),
            ("A", "B", "C"),
            ("A", "B", "C"),
            ("A", "D"),
            ("A", "D"),
            ("E",),
            ("E",),
        ]

    def test_skipped_levels(self) -> None:
        text = "##### § 1 Titel\ntext\n# Teil 2\n##### § 2 Titel\n(1) x\n(2) y"
        assert heading_paths(split_blocks(text, MD)) == [
            ("§ 1 Titel",),
            ("§ 1 Titel",),
            ("Teil 2",),
            ("Teil 2", "§ 2 Titel"),
            ("Teil 2", "§ 2 Titel", "(1)"),
            ("Teil 2", "§ 2 Titel", "(2)"),
        ]

    def test_plain_text_paths_carry_only_labels(self) -> None:
        text = "# kein Titel\n(1) a\n\nb"
        assert heading_paths(split_blocks(text, PLAIN)) == [(), ("(1)",), ("(1)",)]


# ---- properties -------------------------------------------------------------

_FRAGMENTS = [
    "Der Versicherer",
    "zahlt",
    "die Prämie",
    "nach § 2 Abs. 1 Satz 2",
    "z. B.",
    "i. V. m.",
    "Nr. 3",
    "1,75 %",
    "0.25",
    "am 1.1.2016",
    "31. Dezember 2021",
    "usw.",
    "Art. 1 V v. 10.10.2018",
    "\U0001d518",
    "e\u0301",
    "😀",
    "„Zitat“",
    "(Klammer)",
    "...",
    "…",
    ".",
    ". ",
    "? ",
    "! ",
    ";",
    ",",
    "Satz.",
    "Ende.",
    "\\.",
    "1.Foo",
    ",2.Bar",
    "und5.Baz",
    "ß",
    "Ä",
    "\t",
    "  ",
    "\u00a0",
    "|",
]
_LINE_STARTS = [
    "",
    "",
    "",
    "# ",
    "## ",
    "###### ",
    "####### ",
    "(1) ",
    "(2a) ",
    "1. ",
    "12. ",
    "a) ",
    "aa) ",
    "- ",
    "* ",
    "\u2013 ",
    "| ",
    "---",
    "% ",
    "<p>",
    "   ",
    "II. ",
    "#",
]


@st.composite
def _lines(draw: st.DrawFn) -> str:
    start = draw(st.sampled_from(_LINE_STARTS))
    words = draw(st.lists(st.sampled_from(_FRAGMENTS), max_size=8))
    return start + " ".join(words)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.one_of(_lines(), st.sampled_from(["", " ", "\t"])), max_size=14))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


_PIECES = [*"aB .\n#(1)2-*a)§ä\t|\u00a0\u2028\x0c", "z. B.", "Abs.", "\n\n", "1.", "## "]
_ANY_TEXT = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    st.text(max_size=60),
)
_MEDIA = st.sampled_from([MD, PLAIN])


def _check_contracts(text: str, media_type: str) -> None:
    blocks = split_blocks(text, media_type)
    # 1. exact partition
    if not text:
        assert blocks == []
        return
    assert blocks[0].start == 0
    assert blocks[-1].end == len(text)
    for a, b in itertools.pairwise(blocks):
        assert a.end == b.start
    assert "".join(text[b.start : b.end] for b in blocks) == text
    for block in blocks:
        body = text[block.start : block.end]
        assert block.start < block.end
        # 2. locality
        assert block.sentences == segment_block(body, media_type)
        # 3. sentence spans
        previous_end = 0
        covered = [False] * len(body)
        for s, e in block.sentences:
            assert previous_end <= s < e <= len(body)
            assert body[s:e] == body[s:e].strip()
            previous_end = e
            covered[s:e] = [True] * (e - s)
        if block.kind == "heading":
            assert media_type == MD
            assert len(block.sentences) == 1
            s, e = block.sentences[0]
            assert body[s:e] == block.title
            assert 1 <= block.level <= 6
            assert block.label is None
        else:
            assert block.level == 0
            assert block.title is None
            assert all(c or ch.isspace() for c, ch in zip(covered, body, strict=True))
    assert len(heading_paths(blocks)) == len(blocks)


@settings(max_examples=300, deadline=None)
@given(_documents(), _MEDIA)
def test_contracts_on_markdownish_text(text: str, media_type: str) -> None:
    _check_contracts(text, media_type)


@settings(max_examples=300, deadline=None)
@given(_ANY_TEXT, _MEDIA)
def test_contracts_on_arbitrary_text(text: str, media_type: str) -> None:
    _check_contracts(text, media_type)


@st.composite
def _paragraph(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_lines(), min_size=1, max_size=4))
    # A paragraph has no blank line and starts and ends with text.
    lines = [line for line in lines if line.strip()] or ["Text."]
    return "\n".join(lines).strip()


@settings(max_examples=200, deadline=None)
@given(st.lists(_paragraph(), min_size=2, max_size=6), _paragraph(), st.data(), _MEDIA)
def test_edit_leaves_other_paragraphs_alone(
    paragraphs: list[str], replacement: str, data: st.DataObject, media_type: str
) -> None:
    k = data.draw(st.integers(0, len(paragraphs) - 1))
    sep = data.draw(st.sampled_from(["\n\n", "\n\n\n", "\n \n"]))
    edited = [*paragraphs[:k], replacement, *paragraphs[k + 1 :]]
    before, after = sep.join(paragraphs), sep.join(edited)
    edit_start = sum(len(p) + len(sep) for p in paragraphs[:k])
    tail_old = len(before) - sum(len(p) + len(sep) for p in paragraphs[k + 1 :])
    tail_new = len(after) - sum(len(p) + len(sep) for p in edited[k + 1 :])

    def view(text: str, lo: int, hi: int) -> list[tuple[str, tuple[tuple[int, int], ...]]]:
        return [
            (text[b.start : b.end], b.sentences)
            for b in split_blocks(text, media_type)
            if (b.end <= lo) or (b.start >= hi)
        ]

    old_blocks = view(before, edit_start, tail_old)
    new_blocks = view(after, edit_start, tail_new)
    assert old_blocks == new_blocks
    # Every paragraph boundary is a block boundary, so nothing straddles the edit.
    starts_old = {b.start for b in split_blocks(before, media_type)}
    assert edit_start in starts_old or k == 0
