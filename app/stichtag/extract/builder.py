"""Accumulates extracted text piece by piece and records where each piece came from.

Every extractor writes through one builder, so the offsets in the layout map are the
offsets of the final text by construction: pieces are cleaned and NFC-composed *before*
they are appended, and nothing rewrites the text afterwards.
"""

from __future__ import annotations

import re
import unicodedata

from stichtag.extract.layout import Furniture, Layout, Page

__all__ = ["TextBuilder", "clean"]

# C0/C1 controls other than LF and TAB, DEL, noncharacters (pdfium marks hyphens and
# unmapped glyphs with U+FFFE/U+FFFF), surrogates (cannot be UTF-8), BOMs inside text.
_UNWANTED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
_HORIZONTAL_SPACE = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")


def clean(piece: str) -> str:
    """NFC text without control characters; leading combining marks are dropped,
    because composing them with the previous piece would move earlier offsets."""
    piece = unicodedata.normalize("NFC", _UNWANTED.sub("", piece.replace("\r", "")))
    i = 0
    while i < len(piece) and unicodedata.combining(piece[i]):
        i += 1
    return piece[i:]


def squash(text: str) -> str:
    """Runs of horizontal whitespace (incl. NBSP) as one space, trimmed."""
    return _HORIZONTAL_SPACE.sub(" ", text).strip()


class TextBuilder:
    """Appends text; PDF pieces map to (line, x-range), HTML/DOCX pieces to a path."""

    def __init__(self) -> None:
        """Start with no text."""
        self._parts: list[str] = []
        self._len = 0
        self._last = ""
        self._pages: list[Page] = []
        self._line_page: list[int] = []
        self._line_y0: list[int] = []
        self._line_y1: list[int] = []
        self._runs: tuple[list[int], list[int], list[int], list[int], list[int]] = (
            [], [], [], [], [])
        self._paths: dict[str, int] = {}
        self._nodes: tuple[list[int], list[int], list[int]] = ([], [], [])
        self._furniture: list[Furniture] = []

    def __len__(self) -> int:
        """Code points written so far."""
        return self._len

    @property
    def last(self) -> str:
        """The last character written ('' at the start)."""
        return self._last

    def text(self, piece: str) -> None:
        """Append text that maps nowhere (separators, markdown marks)."""
        piece = clean(piece)
        if piece:
            self._parts.append(piece)
            self._len += len(piece)
            self._last = piece[-1]

    def drop_last(self) -> None:
        """Remove the last character written (a line-end hyphen found to split a word)."""
        if not self._parts:
            return
        last = self._parts[-1][:-1]
        if last:
            self._parts[-1] = last
        else:
            self._parts.pop()
        self._len -= 1
        self._last = self._parts[-1][-1] if self._parts else ""
        ends = self._runs[1]
        if ends and ends[-1] > self._len:
            ends[-1] = self._len
            if ends[-1] <= self._runs[0][-1]:
                for column in self._runs:
                    column.pop()

    def page(self, page: Page) -> None:
        """Register the next PDF page (pages are numbered 1.. in order)."""
        self._pages.append(page)

    def line(self, page: int, y0: int, y1: int) -> int:
        """Register a PDF line (quantized y-range) and return its index."""
        self._line_page.append(page)
        self._line_y0.append(y0)
        self._line_y1.append(y1)
        return len(self._line_page) - 1

    def run(self, piece: str, line: int, x0: int, x1: int) -> None:
        """Append PDF text that sits on ``line`` between x0 and x1 (quantized)."""
        start = self._len
        self.text(piece)
        if self._len > start:
            for column, value in zip(self._runs, (start, self._len, line, x0, x1), strict=True):
                column.append(value)

    def node(self, piece: str, path: str) -> None:
        """Append HTML/DOCX text found at element ``path``."""
        start = self._len
        self.text(piece)
        if self._len == start:
            return
        index = self._paths.setdefault(path, len(self._paths))
        starts, ends, paths = self._nodes
        if ends and ends[-1] == start and paths[-1] == index:
            ends[-1] = self._len  # the same element continues: one node, not many
            return
        starts.append(start)
        ends.append(self._len)
        paths.append(index)

    def furniture(self, kind: str, page: int, box: tuple[int, int, int, int], text: str) -> None:
        """Keep a removed header/footer/page number in the map."""
        self._furniture.append(Furniture(kind=kind, page=page, box=box, text=clean(text)))

    def build(self) -> tuple[str, Layout]:
        """The text and its layout map."""
        runs, nodes = self._runs, self._nodes
        layout = Layout(
            pages=tuple(self._pages), line_page=tuple(self._line_page),
            line_y0=tuple(self._line_y0), line_y1=tuple(self._line_y1),
            run_start=tuple(runs[0]), run_end=tuple(runs[1]), run_line=tuple(runs[2]),
            run_x0=tuple(runs[3]), run_x1=tuple(runs[4]),
            paths=tuple(self._paths), node_start=tuple(nodes[0]), node_end=tuple(nodes[1]),
            node_path=tuple(nodes[2]), furniture=tuple(self._furniture),
        )
        return "".join(self._parts), layout
