"""Reading order of PDF pages: page furniture, blocks, tables and columns.

Rules (each in units of the line box height ``h`` of the fragments involved):

* *Furniture*: fragments in the two outermost rows at the top or bottom of a page and
  within 20 % of the page height from that edge are a running header/footer when the
  same text (digits ignored) recurs near the same height (2 % of the page height) on at
  least two pages (running heads change with the chapter), is not set larger than 1.1 x
  the body size (that is a heading atop two pages) and the page has other text;
  page numbers ("7", "- 7 -", "Seite 7 von 9", "7/9", roman numerals) go from the
  outermost two rows of any page.
* *Rows*: fragments whose boxes overlap vertically by half form a row; a list label
  ("1.", "a)", a bullet) set apart from the text to its right joins that text.
* *Blocks*: a line joins the block above it when it overlaps it horizontally, has the
  same size (15 %) and weight, and the vertical gap is at most the document's usual
  line gap (lower quartile) plus 0.4 h. Blocks are paragraphs (or runs of them, split
  later on indentation).
* *Columns*: recursive cuts. A set of blocks with a vertical white gutter whose two
  sides stand side by side (their heights overlap by half) reads left side first;
  otherwise it is cut at horizontal white gaps into bands, top to bottom, and
  consecutive bands that share a gutter are read as one set again (so paragraph breaks
  that happen to line up in two columns do not interleave them).
* *Tables*: two or more consecutive bands, each of two or more blocks of at most three
  lines standing in one row (their heights overlap by half), are a table: read row by
  row, each row left to right, a cell's lines joined.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from stichtag.extract.pdf_read import Frag

__all__ = ["Block", "find_furniture", "line_gap", "page_blocks"]

_EDGE_BAND = 0.2
_EDGE_ROWS = 2
_REPEAT_Y = 0.02
_HEADING_SIZE = 1.1
_PAGE_NUMBER = re.compile(
    r"(?:(?:seite|page|p\.|s\.)\s*)?[-\u2013\u2014(\[]?\s*\d{1,5}\s*[-\u2013\u2014)\]]?"
    r"(?:\s*(?:/|von|of|sur|de)\s*\d{1,5})?|[ivxlcdm]{1,7}",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_LABEL = re.compile(r"\(?(?:\d{1,3}[a-z]?|[a-z]{1,2}|[ivx]{1,4})[.)]|[\u2022\u2013\u00b7*-]")
_CELL_LINES = 3
_LINE_GAP_EXTRA = 0.4
_SIZE_TOLERANCE = 0.15
_GUTTER = 0.5
_SIDE_BY_SIDE = 0.5


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """A paragraph-like block (rows of one fragment) or a table (rows of cells)."""

    kind: str
    rows: tuple[tuple[Frag, ...], ...]
    x0: float
    y0: float
    x1: float
    y1: float


def _norm(text: str) -> str:
    return " ".join(_DIGITS.sub("#", text.lower()).split())


def _rows(frags: Sequence[Frag]) -> list[list[Frag]]:
    """Fragments grouped into rows, top to bottom, each row left to right."""
    rows: list[list[Frag]] = []
    for f in sorted(frags, key=lambda f: (-(f.y0 + f.y1), f.x0)):
        if rows:
            first = rows[-1][0]
            overlap = min(f.y1, first.y1) - max(f.y0, first.y0)
            if overlap >= 0.5 * min(f.height, first.height):
                rows[-1].append(f)
                continue
        rows.append([f])
    for row in rows:
        row.sort(key=lambda f: f.x0)
    return rows


def _edge_frags(frags: Sequence[Frag], box: tuple[float, float, float, float]
                ) -> list[tuple[int, str, float]]:
    """(index, edge, height above the page bottom as a share) of the fragments in the
    outermost rows near the top and bottom edge."""
    index = {id(f): i for i, f in enumerate(frags)}
    rows = _rows(frags)
    height = max(box[3] - box[1], 1.0)
    out: list[tuple[int, str, float]] = []
    for edge, edge_rows in (("header", rows[:_EDGE_ROWS]), ("footer", rows[::-1][:_EDGE_ROWS])):
        for f in (f for row in edge_rows for f in row):
            dist = box[3] - f.y1 if edge == "header" else f.y0 - box[1]
            if dist <= _EDGE_BAND * height:
                out.append((index[id(f)], edge, ((f.y0 + f.y1) / 2 - box[1]) / height))
    return out


def _body_size(pages: Sequence[Sequence[Frag]]) -> float:
    """The most common font size, weighted by characters (0.5 pt buckets)."""
    sizes: Counter[float] = Counter()
    for frags in pages:
        for f in frags:
            sizes[round(f.size * 2) / 2] += len(f.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def find_furniture(pages: Sequence[Sequence[Frag]],
                   boxes: Sequence[tuple[float, float, float, float]]) -> list[dict[int, str]]:
    """Per page, fragment index -> ``header``, ``footer`` or ``page_number``."""
    found: list[dict[int, str]] = [{} for _ in pages]
    groups: dict[tuple[str, str], list[tuple[int, int, float]]] = defaultdict(list)
    heading = _HEADING_SIZE * _body_size(pages)
    for p, (frags, box) in enumerate(zip(pages, boxes, strict=True)):
        for i, edge, y in _edge_frags(frags, box):
            text = frags[i].text.strip()
            if _PAGE_NUMBER.fullmatch(text):
                found[p][i] = "page_number"
            elif frags[i].size < heading:  # "§ 67 - Abweichende ..." atop two pages: content
                groups[(edge, _norm(text))].append((p, i, y))
    for (edge, _key), members in groups.items():
        mid = statistics.median(y for _, _, y in members)
        near = [(p, i) for p, i, y in members if abs(y - mid) <= _REPEAT_Y]
        if len({p for p, _ in near}) >= 2:
            for p, i in near:
                found[p].setdefault(i, edge)
    for p, frags in enumerate(pages):
        if len(found[p]) == len(frags):  # nothing but "furniture": it is the content
            found[p] = {i: k for i, k in found[p].items() if k == "page_number"}
    return found


def _merge_labels(row: list[Frag]) -> list[Frag]:
    """Join a list label ("1.", "a)", bullet) set apart from its text to that text."""
    out: list[Frag] = []
    for f in row:
        prev = out[-1] if out else None
        if (prev is not None and _LABEL.fullmatch(prev.text)
                and f.x0 - prev.x1 <= 4 * max(f.height, 1.0)):
            out[-1] = Frag(words=prev.words + f.words, x0=prev.x0, y0=min(prev.y0, f.y0),
                           x1=f.x1, y1=max(prev.y1, f.y1), size=f.size, bold=f.bold)
        else:
            out.append(f)
    return out


def _vgap(a: list[Frag], b: list[Frag]) -> float:
    return max(max(f.y0 for f in a) - max(f.y1 for f in b),
               max(f.y0 for f in b) - max(f.y1 for f in a))


def line_gap(pages: Sequence[Sequence[Frag]]) -> float:
    """The document's usual gap between a line and the next one of the same paragraph,
    in line heights: the lower quartile over all pages, because a page of one-line
    items has nothing but paragraph gaps."""
    gaps: list[float] = []
    for frags in pages:
        gaps += _gaps(_rows(frags))
    if not gaps:
        return 0.1
    gaps.sort()
    return gaps[len(gaps) // 4]


def _gaps(rows: list[list[Frag]]) -> list[float]:
    """Gaps between horizontally overlapping fragments of consecutive rows."""
    gaps: list[float] = []
    for upper, lower in itertools.pairwise(rows):
        for f in lower:
            for g in upper:
                if min(f.x1, g.x1) > max(f.x0, g.x0):
                    gap = g.y0 - f.y1
                    if -0.3 * f.height <= gap <= 2 * f.height:
                        gaps.append(gap / max(f.height, 1.0))
    return gaps


class _Open:
    """A block being grown."""

    __slots__ = ("kind", "rows")

    def __init__(self, kind: str, row: tuple[Frag, ...]) -> None:
        self.kind = kind
        self.rows = [row]

    def freeze(self) -> Block:
        frags = [f for r in self.rows for f in r]
        return Block(kind=self.kind, rows=tuple(self.rows), x0=min(f.x0 for f in frags),
                     y0=min(f.y0 for f in frags), x1=max(f.x1 for f in frags),
                     y1=max(f.y1 for f in frags))


def _joins(last: Frag, f: Frag, max_gap: float) -> bool:
    """Whether line ``f`` continues the block whose last line is ``last``."""
    h = max(f.height, last.height, 1.0)
    gap = last.y0 - f.y1
    return (-0.3 * h <= gap <= max_gap * h and min(f.x1, last.x1) > max(f.x0, last.x0)
            and abs(f.size - last.size) <= _SIZE_TOLERANCE * max(f.size, last.size)
            and f.bold == last.bold)


def page_blocks(frags: Sequence[Frag], usual_gap: float) -> list[Block]:
    """The page's blocks in reading order (furniture already removed); ``usual_gap``
    is ``line_gap`` of the document."""
    if not frags:
        return []
    rows = [_merge_labels(r) for r in _rows(frags)]
    max_gap = max(usual_gap + _LINE_GAP_EXTRA, 0.3)
    blocks: list[_Open] = []
    for row in rows:
        for f in row:
            best: _Open | None = None
            best_overlap = 0.0
            for b in reversed(blocks[-12:]):
                last = b.rows[-1][0]
                if _joins(last, f, max_gap):
                    overlap = min(f.x1, last.x1) - max(f.x0, last.x0)
                    if overlap > best_overlap:
                        best, best_overlap = b, overlap
            if best is None:
                blocks.append(_Open("text", (f,)))
            else:
                best.rows.append((f,))
    frozen = [b.freeze() for b in blocks]
    gutter = _GUTTER * statistics.median(f.height for f in frags)
    return _order(frozen, gutter)


def _x_gap(blocks: Sequence[Block], gutter: float) -> tuple[float, float] | None:
    """The widest vertical white gap (at least ``gutter``) through all blocks."""
    spans = sorted((b.x0, b.x1) for b in blocks)
    best: tuple[float, float] | None = None
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= gutter and (best is None or x0 - reach > best[1] - best[0]):
            best = (reach, x0)
        reach = max(reach, x1)
    return best


def _side_by_side(blocks: Sequence[Block], gap: tuple[float, float]) -> bool:
    left = [b for b in blocks if b.x1 <= gap[0]]
    right = [b for b in blocks if b.x0 >= gap[1]]
    lo = (min(b.y0 for b in left), max(b.y1 for b in left))
    ro = (min(b.y0 for b in right), max(b.y1 for b in right))
    overlap = min(lo[1], ro[1]) - max(lo[0], ro[0])
    return overlap >= _SIDE_BY_SIDE * min(lo[1] - lo[0], ro[1] - ro[0])


def _bands(blocks: Sequence[Block]) -> list[list[Block]]:
    """Blocks cut at horizontal white gaps, top to bottom."""
    bands: list[list[Block]] = []
    floor = math.inf
    for b in sorted(blocks, key=lambda b: -b.y1):
        if bands and b.y1 > floor:  # its top is above the band's lowest bottom: same band
            bands[-1].append(b)
            floor = min(floor, b.y0)
        else:
            bands.append([b])
            floor = b.y0
    return bands


def _order(blocks: list[Block], gutter: float) -> list[Block]:
    """Blocks in reading order by recursive cuts (see the module docstring)."""
    if len(blocks) <= 1:
        return blocks
    gap = _x_gap(blocks, gutter)
    if gap is not None and _side_by_side(blocks, gap):
        left = [b for b in blocks if b.x1 <= gap[0]]
        right = [b for b in blocks if b.x0 >= gap[1]]
        return _order(left, gutter) + _order(right, gutter)
    bands = _bands(blocks)
    if len(bands) == 1:
        return sorted(blocks, key=lambda b: (-b.y1, b.x0))
    out: list[Block] = []
    for run in _table_runs(bands):
        if isinstance(run, Block):
            out.append(run)
        else:
            out += _order_bands(run, gutter, len(blocks))
    return out


def _row_band(band: list[Block]) -> bool:
    """Whether a band is one table row: short blocks side by side on one line."""
    if len(band) < 2 or any(len(b.rows) > _CELL_LINES for b in band):
        return False
    top = min(b.y1 for b in band)
    bottom = max(b.y0 for b in band)
    return top - bottom >= _SIDE_BY_SIDE * min(b.y1 - b.y0 for b in band)


def _merge_frags(frags: Sequence[Frag]) -> Frag:
    """A table cell's lines as one fragment (their words in order, the union box)."""
    return Frag(words=tuple(w for f in frags for w in f.words), x0=min(f.x0 for f in frags),
                y0=min(f.y0 for f in frags), x1=max(f.x1 for f in frags),
                y1=max(f.y1 for f in frags), size=max(f.size for f in frags),
                bold=all(f.bold for f in frags))


def _table_runs(bands: list[list[Block]]) -> list[Block | list[list[Block]]]:
    """Bands with each run of two or more table-row bands replaced by one table block."""
    out: list[Block | list[list[Block]]] = []
    k = 0
    while k < len(bands):
        j = k
        while j < len(bands) and _row_band(bands[j]):
            j += 1
        if j - k >= 2:
            rows = tuple(tuple(_merge_frags([r[0] for r in b.rows])
                               for b in sorted(band, key=lambda b: b.x0)) for band in bands[k:j])
            cells = [b for band in bands[k:j] for b in band]
            out.append(Block(kind="table", rows=rows, x0=min(b.x0 for b in cells),
                             y0=min(b.y0 for b in cells), x1=max(b.x1 for b in cells),
                             y1=max(b.y1 for b in cells)))
            k = j
        else:
            if out and isinstance(out[-1], list):
                out[-1].append(bands[k])
            else:
                out.append([bands[k]])
            k += 1
    return out


def _order_bands(bands: list[list[Block]], gutter: float, total: int) -> list[Block]:
    """Order bands top to bottom, re-joining consecutive bands that share a gutter."""
    groups: list[tuple[list[Block], tuple[float, float] | None]] = []
    for band in bands:
        g = _x_gap(band, gutter) if len(band) > 1 else None
        if g is not None and groups and groups[-1][1] is not None:
            prev_blocks, prev_gap = groups[-1]
            assert prev_gap is not None
            shared = (max(prev_gap[0], g[0]), min(prev_gap[1], g[1]))
            if shared[1] - shared[0] >= gutter:
                groups[-1] = (prev_blocks + band, shared)
                continue
        groups.append((list(band), g))
    out: list[Block] = []
    for group, _ in groups:
        out += _order(group, gutter) if len(group) < total else sorted(
            group, key=lambda b: (-b.y1, b.x0))
    return out
