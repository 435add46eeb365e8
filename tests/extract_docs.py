"""Test documents for app/stichtag/extract, generated from the real law corpus (no mocks).

``law_blocks`` reads a law version (markdown) into headings and paragraphs; ``law_pdf``
typesets them with fpdf2 the way a publisher would: running header, footer with
"Seite X von Y", hyphenation at line ends, one or two columns, a table and footnotes.
The same blocks become DOCX (python-docx) and HTML strings. Core PDF fonts speak
Latin-1 only, so the few characters outside it are transliterated in the *source*
too: the comparison is about layout, not fonts.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from stichtag.domain.prepared import prepare

LAW = ("corpus", "de-insurance-law", "vvg2008", "2026-07-05__kmein__90f81197.md")
_LATIN1 = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-",
                         "\u2014": "-", "\u201e": '"', "\u201c": '"', "\u201d": '"',
                         "\u201a": "'", "\u2018": "'", "\u2019": "'",
                         "\u2026": "...", "\u20ac": "EUR"})
_CONJUNCTIONS = {"und", "oder", "bzw", "sowie", "bis", "als", "noch", "wie"}
HEADER = "Versicherungsvertragsgesetz (VVG) - konsolidierte Fassung"
# Footnotes differ from page to page (else they would be a running footer).
FOOTNOTE = "Vgl. die Begruendung zu Abschnitt {section}, Fussnote {n}."
TABLE = (("Vorschrift", "Inhalt", "Teil"), ("§ 1", "Pflichten", "Teil 1"),
         ("§ 2", "Rueckwaerts", "Teil 1"), ("§ 3", "Schein", "Teil 1"))


@dataclass(frozen=True, kw_only=True, slots=True)
class LawBlock:
    """A heading (level 1) or a paragraph of the law."""

    heading: bool
    text: str


def law_blocks(path: Path, max_chars: int) -> list[LawBlock]:
    """The first paragraphs of a law version, up to about ``max_chars``."""
    out: list[LawBlock] = []
    total = 0
    for raw in path.read_text(encoding="utf-8").split("\n"):
        line = _latin1(raw.strip())
        if not line or line.startswith("%"):
            continue
        heading = line.startswith("# ")
        text = line[2:].strip() if heading else line
        if heading and out and out[-1].heading:
            out.pop()  # an empty section ("Inhaltsübersicht"): nothing to typeset
        out.append(LawBlock(heading=heading, text=text))
        total += len(text)
        if total >= max_chars and not heading:
            break
    return out


def _latin1(text: str) -> str:
    """``text`` in the characters core PDF fonts have (others as their NFKD base or '?')."""
    text = text.translate(_LATIN1)
    if all(ord(c) < 256 for c in text):
        return text
    out = []
    for c in text:
        if ord(c) < 256:
            out.append(c)
        else:
            base = unicodedata.normalize("NFKD", c)
            out.append(base if all(ord(b) < 256 for b in base) else "?")
    return "".join(out)


def source_markdown(blocks: list[LawBlock]) -> str:
    """The blocks as the markdown a version of them would be."""
    return "".join(f"# {b.text}\n\n" if b.heading else f"{b.text}\n\n" for b in blocks)


def ws(text: str) -> str:
    """Whitespace-normalized text."""
    return " ".join(text.split())


def sentences(text: str, media_type: str) -> list[tuple[int, int, str]]:
    """(start, end, whitespace-normalized text) of every sentence, via the real segmenter."""
    prepared = prepare(text, media_type)
    out: list[tuple[int, int, str]] = []
    offset = 0
    for block in prepared.blocks:
        for s, e in zip(block.sent_starts, block.sent_ends, strict=True):
            out.append((offset + s, offset + e, ws(block.text[s:e])))
        offset += block.len_cp
    return out


def shared_share(expected: list[str], got: list[str]) -> float:
    """Share of ``expected`` sentences found in ``got`` (as a multiset)."""
    found = Counter(expected) & Counter(got)
    return sum(found.values()) / max(len(expected), 1)


def _roman(n: int) -> str:
    out = ""
    for value, digits in ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out, n = out + digits, n - value
    return out


def _hyphenate(pdf: object, word: str, room: float) -> tuple[str, str] | None:
    """Split ``word`` so the first part plus '-' fits in ``room`` points, or None."""
    width = pdf.get_string_width  # type: ignore[attr-defined]
    dash = word.find("-")
    if 0 < dash < len(word) - 1 and width(word[:dash + 1]) <= room:
        return word[:dash + 1], word[dash + 1:]  # break after a hyphen the word has
    for p in range(len(word) - 3, 2, -1):
        head, tail = word[:p], word[p:]
        if (head[-1].isalpha() and tail[0].isalpha() and tail[0].islower()
                and tail.rstrip(".,;:") not in _CONJUNCTIONS and width(head + "-") <= room):
            return head + "-", tail
    return None


class _Typesetter:
    """Lays out blocks on pages and columns with explicit positions (fpdf2, points)."""

    def __init__(self, *, columns: int, size: float, page: tuple[float, float],
                 margin: float, footnotes: bool, header: str, total: int) -> None:
        from fpdf import FPDF  # a dev dependency, only the tests need it

        self.pdf = FPDF(unit="pt", format=page)
        self.pdf.set_auto_page_break(False)
        self.total = total  # pages in all, known from a first pass
        self.columns, self.size, self.margin = columns, size, margin
        self.w, self.h = page
        self.gutter = 18.0
        self.col_w = (self.w - 2 * margin - (columns - 1) * self.gutter) / columns
        self.footnotes, self.header = footnotes, header
        self.col = 0
        self.y = 0.0
        self.pages = 0
        self.hyphenated = 0
        self._new_page()

    def _new_page(self) -> None:
        pdf = self.pdf
        font = (pdf.font_family, pdf.font_style, pdf.font_size_pt)
        pdf.add_page()
        self.pages += 1
        pdf.set_font("Helvetica", "I", 8)
        pdf.text(self.margin, self.margin - 14, self.header)
        pdf.line(self.margin, self.margin - 10, self.w - self.margin, self.margin - 10)
        footer = f"Seite {self.pages} von {self.total}"
        pdf.text((self.w - pdf.get_string_width(footer)) / 2, self.h - self.margin + 24, footer)
        pdf.text(self.margin, self.h - self.margin + 24, "Stand: 05.07.2026")
        if self.footnotes and self.pages % 2 == 1:
            pdf.set_font("Helvetica", "", 7)
            pdf.line(self.margin, self.h - self.margin - 14, self.margin + 100,
                     self.h - self.margin - 14)
            note = FOOTNOTE.format(n=self.pages, section=_roman(self.pages))
            pdf.text(self.margin, self.h - self.margin - 4, f"{self.pages} {note}")
        if font[0]:
            pdf.set_font(*font)
        self.col = 0
        self.y = self.margin

    @property
    def bottom(self) -> float:
        return self.h - self.margin - (24 if self.footnotes else 0)

    def _advance(self, lead: float) -> float:
        """Baseline of the next line, moving to the next column/page when full."""
        if self.y + lead > self.bottom:
            self.col += 1
            if self.col == self.columns:
                self._new_page()
            else:
                self.y = self.margin
        self.y += lead
        return self.y

    def paragraph(self, text: str, *, size: float, style: str, space: float,
                  keep: int = 0) -> None:
        """Typeset a paragraph; ``keep`` lines of room are needed below it (a heading
        is kept with the start of what follows, as publishers do)."""
        pdf = self.pdf
        pdf.set_font("Helvetica", style, size)
        lead = size * 1.25
        self.y += space
        if keep and self.y + (keep + 2) * lead > self.bottom:
            self.y = self.bottom  # start the heading in the next column or page
        words = text.split()
        line: list[str] = []
        space_w = pdf.get_string_width(" ")
        used = 0.0
        while words:
            word = words.pop(0)
            w = pdf.get_string_width(word)
            if not line or used + space_w + w <= self.col_w:
                used += (space_w if line else 0) + w
                line.append(word)
                continue
            split = _hyphenate(pdf, word, self.col_w - used - space_w) if len(word) >= 8 else None
            if split is not None:
                line.append(split[0])
                words.insert(0, split[1])
                self.hyphenated += 1
            else:
                words.insert(0, word)
            self._line(" ".join(line), lead)
            line, used = [], 0.0
        if line:
            self._line(" ".join(line), lead)

    def _line(self, text: str, lead: float) -> None:
        y = self._advance(lead)
        x = self.margin + self.col * (self.col_w + self.gutter)
        self.pdf.text(x, y, text)

    def table(self, rows: tuple[tuple[str, ...], ...]) -> None:
        pdf = self.pdf
        pdf.set_font("Helvetica", "", self.size)
        widths = (self.col_w * 0.25, self.col_w * 0.4, self.col_w * 0.25)
        self.y += self.size
        for row in rows:
            y = self._advance(self.size * 1.8)
            x = self.margin + self.col * (self.col_w + self.gutter)
            for cell, w in zip(row, widths, strict=True):
                pdf.rect(x, y - self.size * 1.3, w, self.size * 1.8)
                pdf.text(x + 3, y, cell)
                x += w
        self.y += self.size * 0.5

    def output(self) -> bytes:
        return bytes(self.pdf.output())


def law_pdf(blocks: list[LawBlock], *, columns: int = 1, size: float = 10,
            page: tuple[float, float] = (595.28, 841.89), margin: float = 60,
            footnotes: bool = True, table: bool = True, header: str = HEADER) -> bytes:
    """The blocks typeset as a PDF (see the module docstring)."""
    total = 0
    for _ in range(2):  # the first pass counts the pages for "Seite X von Y"
        ts = _Typesetter(columns=columns, size=size, page=page, margin=margin,
                         footnotes=footnotes, header=header, total=total)
        for k, b in enumerate(blocks):
            if b.heading:
                ts.paragraph(b.text, size=size * 1.2, style="B", space=size, keep=3)
            else:
                ts.paragraph(b.text, size=size, style="", space=size * 0.5)
            if table and k == 0:
                ts.table(TABLE)
        total = ts.pages
    return ts.output()


def law_docx(blocks: list[LawBlock], *, table: bool = True, footnote: bool = False) -> bytes:
    """The blocks as a DOCX: headings in style 'Heading 1', body paragraphs, a table."""
    import docx  # only the tests build documents

    document = docx.Document()
    for k, b in enumerate(blocks):
        if b.heading:
            document.add_heading(b.text, level=1)
        else:
            document.add_paragraph(b.text)
        if table and k == 0:
            t = document.add_table(rows=len(TABLE), cols=3)
            for r, row in enumerate(TABLE):
                for c, cell in enumerate(row):
                    t.cell(r, c).text = cell
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def strip_key(text: str) -> str:
    """Text without whitespace, hyphens, table bars and escapes: what survives a re-read."""
    return re.sub(r"[\s\-\u00ad\u0002\ufffe|\\]", "", text)


NOISE = ("Startseite Gesetze Impressum", "trackPageView", "Cookie-Hinweis schliessen",
         "Versteckter Absatz", "Nur fuer Screenreader verborgen", "Unsichtbarer Text",
         "Verwandte Artikel")


def law_html(blocks: list[LawBlock], *, charset: str = "utf-8") -> bytes:
    """The blocks as an article page wrapped in the usual navigation, scripts, hidden
    nodes and sidebars (whose texts are ``NOISE``), encoded in ``charset``."""
    from html import escape  # stdlib, only this helper needs it

    body = []
    for k, b in enumerate(blocks):
        body.append(f"<h2>{escape(b.text)}</h2>" if b.heading else f"<p>{escape(b.text)}</p>")
        if k == 0:
            rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>"
                           for r in TABLE)
            body.append(f"<table>{rows}</table>")
        if k == 3:
            body.append(f'<p hidden>{NOISE[3]}</p><p aria-hidden="true">{NOISE[4]}</p>'
                        f'<div style="display: none">{NOISE[5]}</div>')
    page = (f'<!DOCTYPE html>\n<html lang="de"><head><meta charset="{charset}">'
            f"<title>VVG</title><style>p {{ color: red }}</style></head><body>"
            f"<header><nav><a href='/'>{NOISE[0]}</a></nav></header>"
            f"<script>window.{NOISE[1]}()</script>"
            f"<div class='cookie-banner'><button>{NOISE[2]}</button></div>"
            f"<main><article>{''.join(body)}</article>"
            f"<aside class='sidebar'>{NOISE[6]}</aside></main>"
            f"<footer>Impressum</footer></body></html>")
    return page.encode(charset)
