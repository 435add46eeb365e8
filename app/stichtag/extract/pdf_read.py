"""Reading a PDF with pypdfium2: opening (passwords, corrupt files) and characters to lines.

pdfium gives characters in content-stream order with boxes; it does no layout analysis
beyond guessing spaces. This module turns one page's characters into *fragments*: runs
of words on one baseline without a wide gap, each with its box. Everything about reading
order happens later, on fragments (``pdf_layout``).

pdfium is not thread-safe: callers hold ``PDFIUM_LOCK`` around every use.
"""

from __future__ import annotations

import ctypes
import statistics
import threading
import time
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from stichtag.extract.errors import ExtractionRefused
from stichtag.extract.limits import MAX_CHARS_PER_PAGE, MAX_SECONDS

__all__ = ["PDFIUM_LOCK", "Frag", "Word", "open_pdf", "read_page"]

# One pdfium per process and it is not thread-safe (pypdfium2 documents this): a lock
# is the only module-level state the room keeps, because the library forces it.
PDFIUM_LOCK = threading.Lock()


# Fragment rules, in units of the line's glyph box height (~1.15 x the font size):
# a forward jump wider than this starts a new fragment (column gutter, table cell) ...
_GAP_NEW_FRAGMENT = 1.3
# ... a jump back further than this too (overprinting, a new column on the same
# baseline); right-to-left text steps back one glyph at a time and stays together ...
_JUMP_BACK = 2.0
# ... and a gap wider than this between glyphs with no space is a word break.
_GAP_WORD = 0.2
# Two glyph boxes are on one line when they overlap by half the lower one's height
# (superscripts overlap a line's box; the next line's boxes barely touch it).
_SAME_LINE = 0.5
_SPACES = frozenset({0x20, 0xA0, 0x2002, 0x2003, 0x2009, 0x202F, 0x3000})
_LINE_BREAKS = frozenset({0x0A, 0x0D})
_HYPHEN_MARK = 0x02  # pdfium's code for a hyphen it believes ends a line
_SOFT_HYPHEN = 0xAD
_MINUS = 0x2D
_BOLD_WEIGHT = 600
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi")
_FORCE_BOLD_FLAG = 1 << 18  # PDF font descriptor flag ForceBold (bit 19)


@dataclass(frozen=True, kw_only=True, slots=True)
class Word:
    """A word on a line: its text and x-range; ``hyphen`` if it ends in a line-end
    hyphen pdfium flagged or a soft hyphen (the text then ends in '-')."""

    text: str
    x0: float
    x1: float
    hyphen: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Frag:
    """Words on one baseline without a wide gap: a line, or a line of one column/cell."""

    words: tuple[Word, ...]
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool

    @property
    def text(self) -> str:
        """The words joined by single spaces."""
        return " ".join(w.text for w in self.words)

    @property
    def height(self) -> float:
        """Height of the fragment's box."""
        return self.y1 - self.y0


def open_pdf(data: bytes, password: str | None) -> pdfium.PdfDocument:
    """Open a PDF or refuse: encrypted without (the right) password, corrupt, no pages."""
    try:
        return pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        code = exc.err_code
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            if password is None:
                raise ExtractionRefused("password", "the PDF is encrypted; a password is needed "
                                        "to read it") from None
            raise ExtractionRefused("password", "the password does not open this PDF") from None
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise ExtractionRefused("file", "the PDF uses an unsupported encryption "
                                    "scheme") from None
        if code == pdfium_c.FPDF_ERR_SUCCESS:
            raise ExtractionRefused("file", "the PDF has no pages") from None
        raise ExtractionRefused("file", "not a readable PDF (corrupt or truncated: "
                                f"{str(exc).rstrip('.')})") from None


class _Line:
    """A fragment being built, glyph by glyph, with the word being built on it."""

    __slots__ = ("bold", "hyphen", "px0", "px1", "ref", "sizes", "word", "words",
                 "wx0", "wx1", "x0", "x1", "y0", "y1")

    def __init__(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.ref = (y0, y1)  # the first glyph's box: what "the same line" is measured to
        self.words: list[Word] = []
        self.word: list[str] = []
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.wx0 = self.wx1 = self.px0 = self.px1 = 0.0
        self.hyphen = False
        self.sizes: list[float] = []
        self.bold = 0

    @property
    def ref_h(self) -> float:
        """Height of the first glyph's box (at least a point)."""
        return max(self.ref[1] - self.ref[0], 1.0)

    def continues(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        """Whether a glyph continues this line (overlaps it, no gutter, no jump back)."""
        ry0, ry1 = self.ref
        overlap = min(y1, ry1) - max(y0, ry0)
        if overlap < _SAME_LINE * min(y1 - y0, ry1 - ry0):
            return False
        h = self.ref_h
        return x0 - self.px1 <= _GAP_NEW_FRAGMENT * h and self.px0 - x1 <= _JUMP_BACK * h

    def gap(self, x0: float, x1: float) -> float:
        """Distance to the previous glyph, whichever side the new one is on."""
        return max(x0 - self.px1, self.px0 - x1, 0.0)

    def add(self, ch: str, box: tuple[float, float, float, float], *, hyphen: bool,
            style: tuple[int, float]) -> None:
        """Append a glyph to the current word."""
        x0, y0, x1, y1 = box
        if not self.word:
            self.wx0, self.wx1 = x0, x1
        self.word.append(ch)
        self.hyphen = hyphen
        self.wx0, self.wx1 = min(self.wx0, x0), max(self.wx1, x1)
        self.x0, self.x1 = min(self.x0, x0), max(self.x1, x1)
        self.y0, self.y1 = min(self.y0, y0), max(self.y1, y1)
        self.bold += style[0]
        self.sizes.append(style[1])
        self.px0, self.px1 = x0, x1

    def end_word(self) -> None:
        """Close the current word, if any."""
        if self.word:
            self.words.append(Word(text="".join(self.word), x0=self.wx0, x1=self.wx1,
                                   hyphen=self.hyphen))
            self.word = []

    def finish(self) -> Frag:
        """The fragment."""
        self.end_word()
        n = len(self.sizes)
        return Frag(words=tuple(self.words), x0=self.x0, y0=self.y0, x1=self.x1, y1=self.y1,
                    size=statistics.median(self.sizes) if n else 0.0,
                    bold=n > 0 and self.bold >= 0.9 * n)


def read_page(textpage: pdfium.PdfTextPage, *, deadline: float, page_no: int) -> list[Frag]:
    """The fragments of one page in content-stream order."""
    n = textpage.count_chars()
    if n > MAX_CHARS_PER_PAGE:
        raise ExtractionRefused("file", f"page {page_no} has {n} characters, more than the "
                                f"limit of {MAX_CHARS_PER_PAGE}", limit=True)
    fonts = _FontCache(textpage)
    rect = pdfium_c.FS_RECTF()
    frags: list[Frag] = []
    line: _Line | None = None
    spaced = False
    style = (0, 0.0)
    # Bound once: this loop runs once per glyph and pdfium calls dominate its cost.
    get_unicode, get_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetLooseCharBox
    for i in range(n):
        if i % 4096 == 0 and time.monotonic() > deadline:
            raise _overtime()
        u = get_unicode(textpage, i)
        if u in _SPACES or u in _LINE_BREAKS:
            spaced = True
            continue
        if (u < 0x20 and u != _HYPHEN_MARK) or not get_box(textpage, i, rect):
            continue
        box = (rect.left, rect.bottom, rect.right, rect.top)
        if box[3] <= box[1] and pdfium_c.FPDFText_IsGenerated(textpage, i):
            continue
        if line is None or not line.continues(*box):
            if line is not None:
                frags.append(line.finish())
            line = _Line(*box)
        elif spaced or line.gap(box[0], box[2]) > _GAP_WORD * line.ref_h:
            line.end_word()
        spaced = False
        if not line.word:
            style = fonts.style(i)  # once per word: fonts rarely change inside one
        marked = u in (_HYPHEN_MARK, _SOFT_HYPHEN)
        hyphen = marked or (u == _MINUS and bool(pdfium_c.FPDFText_IsHyphen(textpage, i)))
        line.add("-" if marked else _char(u), box, style=style, hyphen=hyphen)
    if line is not None:
        frags.append(line.finish())
    return [f for f in frags if f.words]


def _char(u: int) -> str:
    try:
        return chr(u)
    except ValueError:  # pdfium hands out garbage for broken ToUnicode maps
        return "\ufffd"


def _overtime() -> ExtractionRefused:
    return ExtractionRefused("file", f"extraction took longer than {MAX_SECONDS:g} s",
                             limit=True)


class _FontCache:
    """Weight and size of a glyph's font, asked once per text object (one font run).

    The size is the nominal font size times the scale of the glyph's matrix, so
    producers that set ``1 Tf`` and scale with ``Tm``/``cm`` compare like the others;
    glyph boxes are no measure of size (a math font's bbox is twice a text font's).
    """

    def __init__(self, textpage: pdfium.PdfTextPage) -> None:
        self._tp = textpage
        self._last: int | None = None
        self._style = (0, 0.0)
        self._buf = ctypes.create_string_buffer(256)
        self._flags = ctypes.c_int()
        self._matrix = pdfium_c.FS_MATRIX()

    def style(self, i: int) -> tuple[int, float]:
        """(1 if bold else 0, effective size in points) of glyph ``i``."""
        obj = pdfium_c.FPDFText_GetTextObject(self._tp, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value
        if key != self._last or key is None:
            self._last = key
            weight = pdfium_c.FPDFText_GetFontWeight(self._tp, i)
            pdfium_c.FPDFText_GetFontInfo(self._tp, i, self._buf, 256, self._flags)
            name = self._buf.value.decode("latin-1").lower()
            bold = int(weight >= _BOLD_WEIGHT or any(b in name for b in _BOLD_NAMES)
                       or bool(self._flags.value & _FORCE_BOLD_FLAG))
            m = self._matrix
            scale = 1.0
            if pdfium_c.FPDFText_GetMatrix(self._tp, i, m):
                scale = abs(m.a * m.d - m.b * m.c) ** 0.5 or 1.0
            self._style = (bold, pdfium_c.FPDFText_GetFontSize(self._tp, i) * scale)
        return self._style
