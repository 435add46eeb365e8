"""From ordered PDF blocks to text: headings, paragraphs, hyphenation, tables.

* *Headings*: a block of at most three lines and 200 characters, not ending in ``,`` or
  ``;`` (nor in ``.`` unless it has at most six words), whose glyphs are at least 12 %
  taller than the body text (the most common size, weighted by characters) or all bold,
  or a single line numbered like ``§ 2``, ``Art. 3``, ``Artikel 3``. Larger sizes get
  lower levels (``#`` first); bold body-size and numbered ones come last; at most six.
* *Paragraphs*: blocks (split at vertical gaps by ``pdf_layout``) are also split where a
  line is indented by 0.8 line heights after a line that ended a sentence.
* *Hyphenation*: a line ending in a hyphen after a letter, followed by a line opening
  with a letter: before a lowercase word the hyphen goes and the halves join
  ("Versiche-" + "rung" -> "Versicherung"), except before a conjunction ("Kranken- und")
  and where the document itself writes the hyphenated form mid-line and never the
  joined one ("öffentlich-" + "rechtlich" stays "öffentlich-rechtlich");
  before an uppercase word or a digit the hyphen stays and the halves join
  ("VVG-" + "Reform" -> "VVG-Reform"). Soft hyphens always go.
* *Flow breaks*: at a new page or column, a text block continues the previous one when
  that one ended without a sentence end (or in a hyphen) and the new one does not open
  with an Absatz label or a list item: sentences run across page breaks.
* *Tables*: one markdown row per table row, ``| cell | cell |``, cells left to right.
* *Footnotes*: blocks smaller than the body text (85 %) in the page's lower third with
  no body text below them; moved to the end of their page and written after the
  paragraph open at the page break ends: they stay with their page and cut no sentence.
* *Lines* of a paragraph join with a space, or with a line break where the line ended
  with room for the next line's first word (a list, an address) or a list item follows
  a clause end.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from stichtag.extract.builder import TextBuilder
from stichtag.extract.layout import quantize
from stichtag.extract.pdf_layout import Block
from stichtag.extract.pdf_read import Frag, Word

__all__ = ["PageBlocks", "body_size", "emit", "heading_levels"]

_HEADING_SCALE = 1.12
_NUMBERED = re.compile(r"(?:§{1,2}\s*\d+[a-z]?|Art(?:ikel|\.)\s*\d+[a-z]?)(?:\s.{1,150})?")
_CONJUNCTIONS = frozenset({"und", "oder", "bzw", "sowie", "bis", "als", "noch", "wie",
                           "beziehungsweise", "respektive", "resp"})
_OPENER = re.compile(r"\(\d{1,3}[a-z]{0,2}\)|\d{1,3}[a-z]?\.|[a-z]{1,3}\)|§|[-\u2022\u2013*]")
# What opens a new paragraph after a page or column break: an Absatz or list label.
_NEW_PARAGRAPH = re.compile(r"\(\d{1,3}[a-z]{0,2}\)|\d{1,3}[a-z]?\.|[a-z]{1,3}\)|[-\u2022\u2013*]")
_PUNCT = "\"'()[]{}.,;:!?\u201e\u201c\u201d\u201a\u2018\u2019"
_SENTENCE_END = re.compile(r"[.!?:][\"'\u201c\u201d\u2019)\]]*$")
_INDENT = 0.8
_FOOTNOTE_SCALE = 0.85


@dataclass(frozen=True, kw_only=True, slots=True)
class PageBlocks:
    """One page's blocks in reading order, with its number."""

    page: int
    blocks: tuple[Block, ...]
    y0: float
    height: float


def _text(block: Block) -> str:
    return " ".join(f.text for row in block.rows for f in row)


def body_size(pages: Sequence[PageBlocks]) -> float:
    """The most common glyph height, weighted by characters (0.5 pt buckets)."""
    sizes: Counter[float] = Counter()
    for p in pages:
        for b in p.blocks:
            for row in b.rows:
                for f in row:
                    sizes[round(f.size * 2) / 2] += len(f.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _heading_kind(block: Block, body: float) -> float | None:
    """The size a heading is ranked by (0 for bold/numbered at body size), or None."""
    if block.kind != "text" or len(block.rows) > 3:
        return None
    text = _text(block)
    words = text.split()
    if (len(text) > 200 or text.endswith((",", ";"))
            or (text.endswith(".") and len(words) > 6)):
        return None
    letters = sum(c.isalpha() for c in text)
    if letters < 0.6 * len(text.replace(" ", "")) or not any(
            sum(c.isalpha() for c in w) >= 3 for w in words):
        return None  # a formula or symbol set large, not a heading
    frags = [f for row in block.rows for f in row]
    size = max(f.size for f in frags)
    if size >= _HEADING_SCALE * body:
        return round(size * 2) / 2
    if all(f.bold for f in frags) or (len(block.rows) == 1 and _NUMBERED.fullmatch(text)):
        return 0.0
    return None


def heading_levels(pages: Sequence[PageBlocks]) -> dict[int, int]:
    """``id(block)`` -> markdown level for every heading block."""
    body = body_size(pages)
    kinds = {id(b): k for p in pages for b in p.blocks
             if (k := _heading_kind(b, body)) is not None}
    ranks = sorted(set(kinds.values()), reverse=True)
    return {bid: min(ranks.index(k) + 1, 6) for bid, k in kinds.items()}


def _paragraphs(block: Block) -> list[list[Frag]]:
    """The block's lines cut where an indented line follows a sentence end."""
    lines = [row[0] for row in block.rows]
    paras = [[lines[0]]]
    for prev, cur in itertools.pairwise(lines):
        h = max(cur.height, 1.0)
        indented = cur.x0 - block.x0 > _INDENT * h and prev.x0 - block.x0 <= 0.3 * h
        if indented and _SENTENCE_END.search(prev.text):
            paras.append([cur])
        else:
            paras[-1].append(cur)
    return paras


def known_words(pages: Sequence[PageBlocks]) -> frozenset[str]:
    """Every word not ending a line, lower case without punctuation: the document's own
    spelling, which tells "öffentlich-rechtlich" (written so mid-line) from a word the
    line end hyphenated."""
    known: set[str] = set()
    for p in pages:
        for block in p.blocks:
            for row in block.rows:
                for f in row:
                    known.update(w.text.strip(_PUNCT).lower() for w in f.words[:-1])
    return frozenset(known)


def _hyphen_join(word: Word, nxt: Word, known: frozenset[str]) -> tuple[str, str] | None:
    """(text of ``word`` to write, separator) when ``word`` ends a line in a hyphen."""
    t = word.text
    if not (len(t) >= 2 and t.endswith("-") and t[-2].isalpha() and nxt.text[:1].isalpha()):
        return None
    if nxt.text[0].islower():
        tail = nxt.text.strip(_PUNCT).lower()
        if tail in _CONJUNCTIONS:
            return t, " "
        head = t[:-1].strip(_PUNCT).lower()
        if f"{head}-{tail}" in known and f"{head}{tail}" not in known:
            return t, ""
        return t[:-1], ""
    return t, ""


class _Writer:
    """Writes blocks into a builder, keeping what a flow break needs to know."""

    def __init__(self, builder: TextBuilder, levels: dict[int, int], markdown: bool,
                 known: frozenset[str]) -> None:
        self.b = builder
        self.known = known
        self.levels = levels
        self.markdown = markdown
        self.open_para = False  # the last thing written is a paragraph that may continue
        self.last_word: Word | None = None
        self.deferred: list[tuple[int, Block]] = []

    def words(self, page: int, frags: Sequence[Frag], *, one_line: bool = False,
              right: float = 0.0) -> None:
        """Write the lines of one paragraph (or heading), joining them; ``right`` is
        the block's right edge, to tell a full line from one broken on purpose."""
        pending = ""
        for n, frag in enumerate(frags):
            line = self.b.line(page, quantize(frag.y0), quantize(frag.y1))
            last = len(frag.words) - 1
            for k, w in enumerate(frag.words):
                text, sep = w.text, " "
                if k == last and n + 1 < len(frags):
                    nxt = frags[n + 1].words[0]
                    joined = _hyphen_join(w, nxt, self.known)
                    if joined is not None:
                        text, sep = joined
                    elif not one_line and (_opens_item(nxt.text, w.text) or _room_for(
                            frag, nxt, right)):
                        sep = "\n"
                self.b.text(pending)
                self.b.run(text, line, quantize(w.x0), quantize(w.x1))
                pending = sep
                self.last_word = w

    def block(self, page: int, block: Block, flow_break: bool) -> None:
        """Write one block; ``flow_break`` if it opens a new page or column."""
        if block.kind == "table":
            self.end_para()
            for row in block.rows:
                self.b.text("| ")
                for k, cell in enumerate(row):
                    self.b.text(" | " if k else "")
                    self.words(page, [cell])
                self.b.text(" |\n")
            self.b.text("\n")
            return
        level = self.levels.get(id(block))
        if level is not None:
            self.end_para()
            self.b.text("#" * level + " ")
            self.words(page, [r[0] for r in block.rows], one_line=True)
            self.b.text("\n\n")
            return
        for k, para in enumerate(_paragraphs(block)):
            first = para[0].words[0]
            if k == 0 and flow_break and self.open_para and self.last_word is not None:
                joined = _hyphen_join(self.last_word, first, self.known)
                if joined is not None or _continues(self.last_word.text, first.text):
                    self._unwrite_break(joined)
                    self.words(page, para, right=block.x1)
                    continue
            self.end_para()
            if self.markdown and first.text.startswith("#"):
                self.b.text("\\")  # a '#' opening a line would become a heading
            self.words(page, para, right=block.x1)
            self.open_para = True

    def _unwrite_break(self, joined: tuple[str, str] | None) -> None:
        """Continue the open paragraph: a hyphen split across the break, or a space."""
        if joined is None:
            self.b.text(" ")
        elif joined[0].endswith("-"):
            self.b.text(joined[1])
        else:
            self.b.drop_last()  # the hyphen written before the break goes

    def end_para(self) -> None:
        """Close the open paragraph with a blank line, then write deferred footnotes."""
        if self.open_para:
            self.b.text("\n\n")
            self.open_para = False
        notes, self.deferred = self.deferred, []
        for page, block in notes:
            for para in _paragraphs(block):
                self.words(page, para, right=block.x1)
                self.b.text("\n\n")


def _room_for(frag: Frag, nxt: Word, right: float) -> bool:
    """Whether the line ended with room for the next line's first word: a line broken
    on purpose (a list, an address), not by the wrap."""
    return right - frag.x1 > (nxt.x1 - nxt.x0) + 0.5 * frag.height


def _opens_item(next_text: str, prev_text: str) -> bool:
    """A list item or Absatz on its own line after a line that ended a clause."""
    return bool(_OPENER.fullmatch(next_text)) and prev_text.endswith((".", ":", ";", ","))


def _continues(prev: str, nxt: str) -> bool:
    """Whether a paragraph cut by a page/column break goes on in the next block."""
    return not _SENTENCE_END.search(prev) and not _NEW_PARAGRAPH.fullmatch(nxt)


def _is_footnote(block: Block, blocks: Sequence[Block], body: float, page_y0: float,
                 page_h: float) -> bool:
    """Smaller than the body text, in the lower third, with no body text below it."""
    if block.kind != "text" or block.y1 - page_y0 > page_h / 3:
        return False
    if max(f.size for row in block.rows for f in row) >= _FOOTNOTE_SCALE * body:
        return False
    return not any(
        other.y1 <= block.y0 and min(other.x1, block.x1) > max(other.x0, block.x0)
        and max(f.size for row in other.rows for f in row) >= _FOOTNOTE_SCALE * body
        for other in blocks)


def emit(builder: TextBuilder, pages: Sequence[PageBlocks], levels: dict[int, int], *,
         markdown: bool, body: float) -> None:
    """Write every page's blocks into ``builder``.

    Footnotes (see ``_is_footnote``) wait for the end of the paragraph open at the page
    break, so a sentence running onto the next page stays whole; they still come
    before anything that starts after that paragraph.
    """
    writer = _Writer(builder, levels, markdown, known_words(pages))
    prev: Block | None = None
    prev_page = 0
    for p in pages:
        notes = [b for b in p.blocks if _is_footnote(b, p.blocks, body, p.y0, p.height)]
        main = [b for b in p.blocks if all(b is not n for n in notes)]
        for block in main:
            flow_break = prev is None or p.page != prev_page or block.y1 > prev.y0
            writer.block(p.page, block, flow_break and prev is not None)
            prev, prev_page = block, p.page
        writer.deferred += [(p.page, b) for b in notes]
        if notes and not writer.open_para:
            writer.end_para()
    writer.end_para()
