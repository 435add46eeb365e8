"""DOCX extraction with python-docx, after a zip-bomb check; footnotes read with lxml.

* The zip is checked *before* anything decompresses it: member count, the sum of the
  declared uncompressed sizes, and each large member's compression ratio (limits in
  ``stichtag.extract.limits``). zipfile stops at the declared size and checks the CRC, so a
  member that lies about its size fails instead of filling memory.
* Body order is kept: paragraphs and tables as they come in ``w:body``.
* Headings: paragraph styles "Heading 1".."Heading 6" (also "Überschrift n", "Titre n",
  "Title" as level 1) or an outline level in the paragraph's properties.
* List paragraphs (``w:numPr``) start with "- ": the numbers Word shows are computed
  from numbering.xml at display time and are not part of the text.
* Tables: one ``| a | b |`` row per table row, merged cells once.
* Footnotes and endnotes (``word/footnotes.xml``, ``word/endnotes.xml``) follow the
  body, each as "[n] text". Page headers and footers are running furniture: left out.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import docx
import lxml.etree
from docx.table import Table
from docx.text.paragraph import Paragraph

from stichtag.extract.builder import TextBuilder
from stichtag.extract.errors import ExtractionRefused
from stichtag.extract.limits import (
    MAX_DOCX_MEMBERS,
    MAX_DOCX_RATIO,
    MAX_DOCX_UNCOMPRESSED,
    MAX_INPUT_BYTES,
)
from stichtag.extract.result import Extracted, finish, library_version

__all__ = ["DOCX_EXTRACTOR_ID", "DOCX_MEDIA_TYPE", "check_zip", "extract_docx"]

DOCX_EXTRACTOR_ID = "docx-1"
"""Bump on any change to what is kept or how it is written."""

DOCX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_HEADING_STYLE = re.compile(r"(?:heading|\u00fcberschrift|titre|titolo|t\u00edtulo)\s*(\d)",
                            re.IGNORECASE)
_RATIO_FROM = 1024 * 1024  # small members compress well legitimately (XML of one tag)
_XML = lxml.etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def check_zip(data: bytes) -> zipfile.ZipFile:
    """Open the DOCX zip or refuse: corrupt, encrypted, or bigger than the limits."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise ExtractionRefused("file", "not a readable DOCX (corrupt zip archive)") from None
    if len(members) > MAX_DOCX_MEMBERS:
        raise ExtractionRefused("file", f"the DOCX zip has {len(members)} members, more "
                                f"than the limit of {MAX_DOCX_MEMBERS}", limit=True)
    total = sum(m.file_size for m in members)
    if total > MAX_DOCX_UNCOMPRESSED:
        raise ExtractionRefused("file", f"the DOCX unpacks to {total} bytes, more than the "
                                f"limit of {MAX_DOCX_UNCOMPRESSED} (zip bomb?)", limit=True)
    for m in members:
        if m.flag_bits & 0x1:
            raise ExtractionRefused("file", "the DOCX is encrypted")
        if m.file_size >= _RATIO_FROM and m.file_size > MAX_DOCX_RATIO * max(m.compress_size, 1):
            raise ExtractionRefused("file", f"member {m.filename} of the DOCX is compressed "
                                    f"{m.file_size // max(m.compress_size, 1)}:1, more than "
                                    f"the limit of {MAX_DOCX_RATIO}:1 (zip bomb?)", limit=True)
    if "word/document.xml" not in archive.namelist():
        raise ExtractionRefused("file", "the zip archive has no word/document.xml: not a DOCX")
    return archive


def _style_level(name: str) -> int | None:
    """Markdown heading level a paragraph style name stands for."""
    if name.strip().lower() == "title":
        return 1
    m = _HEADING_STYLE.fullmatch(name.strip())
    return min(max(int(m.group(1)), 1), 6) if m else None


def _outline_level(p: Any) -> int | None:
    """Heading level from an outline level set directly on the paragraph."""
    lvl = p.find(f"{{{_W}}}pPr/{{{_W}}}outlineLvl")
    value = lvl.get(f"{{{_W}}}val") if lvl is not None else None
    if value is not None and value.isdigit() and int(value) < 9:
        return min(int(value) + 1, 6)
    return None


def _squash(text: str) -> str:
    return " ".join(text.split())


class _Writer:
    def __init__(self, builder: TextBuilder) -> None:
        self.b = builder
        # style id -> level, asked once per style: python-docx resolves a paragraph's
        # style by scanning styles.xml every time (90 % of the run time before).
        self.levels: dict[str | None, int | None] = {}
        self.headings = 0
        self.tables = 0
        self.notes = 0

    def paragraph(self, paragraph: Any, path: str) -> None:
        text = _squash(paragraph.text)
        if not text:
            return
        style_id = paragraph._p.style  # the w:pStyle value, None for the default style
        if style_id not in self.levels:
            style = paragraph.style
            self.levels[style_id] = _style_level(style.name or "") if style is not None else None
        level = self.levels[style_id]
        if level is None:
            level = _outline_level(paragraph._p)
        if level is not None:
            self.b.text("#" * level + " ")
            self.headings += 1
        elif paragraph._p.find(f"{{{_W}}}pPr/{{{_W}}}numPr") is not None:
            self.b.text("- ")
        elif text.startswith("#"):
            self.b.text("\\")  # a '#' opening a block would become a heading
        self.b.node(text, path)
        self.b.text("\n\n")

    def table(self, table: Any, path: str) -> None:
        wrote = False
        for r, row in enumerate(table.rows, start=1):
            seen: set[int] = set()
            cells = []
            for c, cell in enumerate(row.cells, start=1):
                if id(cell._tc) in seen:  # a merged cell repeats per grid column
                    continue
                seen.add(id(cell._tc))
                cells.append((_squash(cell.text).replace("|", "/"), f"{path}/tr[{r}]/tc[{c}]"))
            if not any(t for t, _ in cells):
                continue
            self.b.text("| ")
            for k, (text, cell_path) in enumerate(cells):
                self.b.text(" | " if k else "")
                self.b.node(text, cell_path)
            self.b.text(" |\n")
            wrote = True
        if wrote:
            self.b.text("\n")
            self.tables += 1

    def notes_part(self, archive: zipfile.ZipFile, part: str, kind: str) -> None:
        """Foot- or endnotes with an id >= 1 (0 and -1 are Word's separators)."""
        if part not in archive.namelist():
            return
        root = lxml.etree.fromstring(archive.read(part), parser=_XML)
        for note in root.iterfind(f"{{{_W}}}{kind}"):
            ident = note.get(f"{{{_W}}}id") or ""
            if not ident.lstrip("-").isdigit() or int(ident) < 1:
                continue
            text = _squash("".join(t.text or "" for t in note.iter(f"{{{_W}}}t")))
            if text:
                self.b.text(f"[{ident}] ")
                self.b.node(text, f"{kind}s/{kind}[{ident}]")
                self.b.text("\n\n")
                self.notes += 1


def extract_docx(data: bytes) -> Extracted:
    """Extract a DOCX's text in body order (see the module docstring)."""
    if len(data) > MAX_INPUT_BYTES:
        raise ExtractionRefused("file", f"the DOCX has {len(data)} bytes, more than the "
                                f"limit of {MAX_INPUT_BYTES}", limit=True)
    archive = check_zip(data)
    builder = TextBuilder()
    try:
        document = docx.Document(io.BytesIO(data))
        writer = _Writer(builder)
        counts = {"p": 0, "tbl": 0}
        for child in document.element.body.iterchildren():
            tag = lxml.etree.QName(child).localname
            if tag not in counts:
                continue
            counts[tag] += 1
            path = f"body/{tag}[{counts[tag]}]"
            if tag == "p":
                writer.paragraph(Paragraph(child, document), path)
            else:
                writer.table(Table(child, document), path)
        writer.notes_part(archive, "word/footnotes.xml", "footnote")
        writer.notes_part(archive, "word/endnotes.xml", "endnote")
    except ExtractionRefused:
        raise
    except Exception:  # python-docx raises whatever a broken package makes it meet
        raise ExtractionRefused("file", "not a readable DOCX (corrupt document parts)") from None
    text, layout = builder.build()
    text = text.rstrip("\n") + "\n" if text.strip() else text
    provenance = {
        "extractor_id": DOCX_EXTRACTOR_ID,
        "libraries": {"python-docx": library_version("python-docx"),
                      "lxml": library_version("lxml")},
        "paragraphs": counts["p"], "tables": writer.tables, "headings": writer.headings,
        "notes": writer.notes,
        "limits": {"max_uncompressed": MAX_DOCX_UNCOMPRESSED, "max_ratio": MAX_DOCX_RATIO,
                   "max_members": MAX_DOCX_MEMBERS},
    }
    markdown = writer.headings > 0 or writer.tables > 0
    return finish(text, layout=layout, media_type="text/markdown" if markdown else "text/plain",
                  source_media_type=DOCX_MEDIA_TYPE, provenance=provenance,
                  empty_reason="the DOCX has no text")
