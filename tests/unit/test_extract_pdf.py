"""PDF extraction against PDFs typeset in the test from the real VVG text.

Two editions of the same law (one column A4 10 pt; two columns Letter 9 pt), both with
a running header, a footer "Seite X von Y" plus a date, hyphenation at line ends, a
table and footnotes on odd pages. Sentences are compared whitespace-normalized with the
source's sentences, both cut by the real segmenter.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import pypdfium2 as pdfium
import pytest
from fpdf import FPDF

from stichtag.extract import Extracted, ExtractionRefused, Layout, extract
from stichtag.extract import pdf as pdf_module
from stichtag.extract.pdf import extract_pdf
from tests.conftest import shared_path
from tests.extract_docs import (
    FOOTNOTE,
    HEADER,
    LAW,
    TABLE,
    law_blocks,
    law_pdf,
    sentences,
    shared_share,
    source_markdown,
    strip_key,
)
from tests.originals import simple_pdf

FIDELITY_FLOOR = 0.99
# Passwords of the generated encrypted test PDF, not secrets.
USER_PASSWORD = "pw"  # noqa: S105
WRONG_PASSWORD = "wrong"  # noqa: S105


@dataclass(frozen=True)
class Edition:
    name: str
    data: bytes
    result: Extracted
    sentences: list[tuple[int, int, str]]


@pytest.fixture(scope="module")
def source() -> list[str]:
    blocks = law_blocks(shared_path(*LAW), 30_000)
    return [s for *_, s in sentences(source_markdown(blocks), "text/markdown")]


@pytest.fixture(scope="module")
def editions() -> list[Edition]:
    blocks = law_blocks(shared_path(*LAW), 30_000)
    out = []
    for name, kwargs in (("A4, one column, 10 pt", {}),
                         ("Letter, two columns, 9 pt", {"columns": 2, "size": 9,
                                                        "page": (612.0, 792.0)})):
        data = law_pdf(blocks, **kwargs)  # type: ignore[arg-type]
        result = extract(data, "application/pdf")
        out.append(Edition(name, data, result, sentences(result.text, result.media_type)))
    return out


def test_sentences_match_the_source(source: list[str], editions: list[Edition]) -> None:
    for ed in editions:
        got = [s for *_, s in ed.sentences]
        share = shared_share(source, got)
        print(f"{ed.name}: {share:.2%} of {len(source)} source sentences extracted verbatim")
        assert share >= FIDELITY_FLOOR, ed.name
        # ... and in the source's order (columns read column by column)
        common = set(source) & set(got)
        order = difflib.SequenceMatcher(None, [s for s in source if s in common],
                                        [s for s in got if s in common], autojunk=False)
        assert order.ratio() >= FIDELITY_FLOOR, ed.name


def test_two_editions_agree(editions: list[Edition]) -> None:
    a, b = ([s for *_, s in ed.sentences] for ed in editions)
    assert shared_share(a, b) >= FIDELITY_FLOOR
    assert editions[0].result.provenance["pages"] != editions[1].result.provenance["pages"]


def test_running_headers_and_page_numbers_stay_out_of_sentences(editions: list[Edition]) -> None:
    footer = re.compile(r"Seite \d+ von \d+|Stand: 05\.07\.2026")
    for ed in editions:
        for *_, s in ed.sentences:
            assert HEADER not in s
            assert not footer.search(s), s
        furniture = ed.result.layout.furniture_regions()
        pages = ed.result.provenance["pages"]
        headers = [r for r in furniture if r.kind == "header"]
        assert [r.page for r in headers] == list(range(1, pages + 1))
        assert all(r.text == HEADER for r in headers)
        footers = {r.text for r in furniture if r.kind in ("footer", "page_number")}
        assert {f"Seite {p} von {pages}" for p in range(1, pages + 1)} <= footers
        assert all(r.boxes and r.page_height for r in furniture)


def test_every_sentence_locates_to_boxes_that_reread_the_quote(editions: list[Edition]) -> None:
    for ed in editions:
        doc = pdfium.PdfDocument(ed.data)
        textpages = [doc[i].get_textpage() for i in range(len(doc))]
        for start, end, quote in ed.sentences:
            regions = ed.result.layout.locate(start, end)
            assert regions, quote
            reread = ""
            for region in regions:
                assert region.page is not None and region.boxes
                assert region.page_width and region.page_height
                for box in region.boxes:
                    assert 0 <= box.x0 < box.x1 <= region.page_width
                    assert 0 <= box.y0 < box.y1 <= region.page_height
                    reread += textpages[region.page - 1].get_text_bounded(
                        box.x0, box.y0, box.x1, box.y1)
            assert strip_key(quote) in strip_key(reread), quote
        doc.close()


def test_table_rows_come_out_in_row_order(editions: list[Edition]) -> None:
    rows = ["| " + " | ".join(r) + " |" for r in TABLE]
    for ed in editions:
        positions = [ed.result.text.find(r) for r in rows]
        assert -1 not in positions and positions == sorted(positions), ed.name
        assert ed.result.provenance["tables"] >= 1


def test_footnotes_stay_on_their_page(editions: list[Edition]) -> None:
    roman = {1: "I", 3: "III", 5: "V", 7: "VII"}
    for ed in editions:
        for page in range(1, ed.result.provenance["pages"] + 1, 2):
            note = f"{page} " + FOOTNOTE.format(section=roman.get(page, ""), n=page)
            if page not in roman:
                continue
            at = ed.result.text.find(note)
            assert at >= 0, (ed.name, note)
            assert {r.page for r in ed.result.layout.locate(at, at + len(note))} == {page}


def test_hyphenation_rule() -> None:
    pdf = FPDF(unit="pt", format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 10)
    lines = ["Der Vertrag regelt die Versiche-", "rung nach der VVG-", "Reform und die Kranken-",
             "und Pflegeversicherung sowie die Haftpflicht-", "Versicherung."]
    for k, line in enumerate(lines):
        pdf.text(72, 100 + 12.5 * k, line)
    text = extract_pdf(bytes(pdf.output())).text
    assert text == ("Der Vertrag regelt die Versicherung nach der VVG-Reform und die Kranken- "
                    "und Pflegeversicherung sowie die Haftpflicht-Versicherung.\n")


def test_extraction_is_deterministic_and_the_layout_round_trips(editions: list[Edition]) -> None:
    ed = editions[1]
    again = extract_pdf(ed.data)
    assert again.text == ed.result.text
    packed = ed.result.layout.dumps()
    assert again.layout.dumps() == packed
    back = Layout.loads(packed)
    assert back == ed.result.layout
    start, end, _ = ed.sentences[40]
    assert back.locate(start, end) == ed.result.layout.locate(start, end)
    print(f"layout: {len(packed)} bytes JSON for {len(ed.result.text)} characters of text")


def test_provenance_names_extractor_libraries_and_pages(editions: list[Edition]) -> None:
    prov = editions[0].result.provenance
    assert prov["extractor_id"] == pdf_module.PDF_EXTRACTOR_ID
    assert prov["libraries"]["pypdfium2"]
    assert prov["empty_pages"] == []
    assert editions[0].result.media_type == "text/markdown"
    assert editions[0].result.source_media_type == "application/pdf"


# -- refusals and partial documents ---------------------------------------------------




def test_encrypted_pdf_needs_its_password() -> None:
    data = simple_pdf(["Geheimer Vertragstext."], password=USER_PASSWORD)
    with pytest.raises(ExtractionRefused) as refused:
        extract(data, None)
    assert refused.value.field == "password" and "encrypted" in refused.value.reason
    with pytest.raises(ExtractionRefused, match="does not open"):
        extract(data, None, password=WRONG_PASSWORD)
    assert extract(data, None, password=USER_PASSWORD).text == "Geheimer Vertragstext.\n"


def test_the_sample_password_pdf_is_refused() -> None:
    path = shared_path("corpus", "pdf-samples", "005-libreoffice-writer-password",
                       "libreoffice-writer-password.pdf")
    with pytest.raises(ExtractionRefused) as refused:
        extract(path.read_bytes(), "application/pdf")
    assert refused.value.field == "password"


def test_no_text_layer_is_refused_naming_the_pages() -> None:
    with pytest.raises(ExtractionRefused) as refused:
        extract(simple_pdf(["", ""]), None)
    assert "no text layer" in refused.value.reason and "OCR" in refused.value.reason
    assert "1-2" in refused.value.reason


def test_pages_without_text_are_listed() -> None:
    result = extract(simple_pdf(["Erste Seite.", "", "Dritte Seite."]), None)
    assert result.provenance["empty_pages"] == [2]
    assert result.text == "Erste Seite.\n\nDritte Seite.\n"


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_pdf_is_refused(damage: str) -> None:
    good = simple_pdf(["Ein Satz."])
    garbage = b"%PDF-1.7\n" + bytes(range(256)) * 8
    data = good[: len(good) // 3] if damage == "truncated" else garbage
    with pytest.raises(ExtractionRefused) as refused:
        extract(data, "application/pdf")
    assert refused.value.field == "file"


def test_limits_refuse_instead_of_truncating(monkeypatch: pytest.MonkeyPatch) -> None:
    data = simple_pdf(["Eins.", "Zwei.", "Drei."])
    monkeypatch.setattr(pdf_module, "MAX_PDF_PAGES", 2)
    with pytest.raises(ExtractionRefused) as refused:
        extract(data, None)
    assert refused.value.limit and "3 pages" in refused.value.reason
    monkeypatch.setattr(pdf_module, "MAX_PDF_PAGES", 10)
    monkeypatch.setattr(pdf_module, "MAX_SECONDS", -1.0)
    with pytest.raises(ExtractionRefused, match="longer than"):
        extract(data, None)


def test_same_heading_atop_two_pages_is_content_not_a_running_head() -> None:
    pdf = FPDF(unit="pt", format="A4")
    for n in (6, 7):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 13)
        pdf.text(72, 60, f"§ {n} - Abweichende Vereinbarungen")
        pdf.set_font("Helvetica", "", 10)
        pdf.text(72, 90, f"Von § {n} kann nicht zum Nachteil des Versicherungsnehmers "
                 "abgewichen werden.")
    text = extract_pdf(bytes(pdf.output())).text
    assert text.count("Abweichende Vereinbarungen") == 2
    assert text.startswith("# § 6 - Abweichende Vereinbarungen\n")
