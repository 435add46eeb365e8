"""Where each piece of extracted text sits in the original document (pure data).

The layout map is what the extraction room (``app/stichtag/extract``) builds and what the use
cases read back to place a citation on its page; it lives in the domain so both sides
share it without the services importing pdfium or lxml.

The layout map answers one question for a citation: given ``[start, end)`` code-point
offsets into the extracted text, where is that text in the source? For a PDF that is a
page and one box per line; for HTML and DOCX it is the element path.

Coordinates are PDF user space in points, *unrotated*, origin at the bottom-left of
the coordinate system the PDF's content uses, y growing upwards (what pdfium reports and
what ``PdfTextPage.get_text_bounded`` takes). Each page carries its box (origin, width,
height) and its ``/Rotate`` so a client can scale and turn boxes onto a rendered page.
They are kept as integers in tenths of a point, so a serialized map reads back exactly.

Serialized form (``dumps``): UTF-8 JSON, compact and columnar, offsets delta-coded;
format name ``LAYOUT_FORMAT``. Compress it (zlib/zstd) when storing if size matters.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LAYOUT_FORMAT", "SCALE", "Box", "Furniture", "Layout", "Page", "Region", "quantize"]

LAYOUT_FORMAT = "stichtag-layout-1"
# Tenths of a point: far below a glyph, and integers survive JSON unchanged.
SCALE = 10


@dataclass(frozen=True, kw_only=True, slots=True)
class Box:
    """A rectangle in PDF points: x0 left, y0 bottom, x1 right, y1 top (y grows up)."""

    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Page:
    """One PDF page: 1-based number, its box in user space and its /Rotate (degrees)."""

    number: int
    x0: float
    y0: float
    width: float
    height: float
    rotation: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Region:
    """Where a span (or a removed running header/footer) sits in the original.

    ``kind`` is ``text`` for spans of the extracted text, ``header``, ``footer`` or
    ``page_number`` for page furniture kept out of the text (then ``text`` holds it).
    PDF regions have ``page`` and ``boxes`` (one per line, reading order); HTML and
    DOCX regions have ``path``, the element path such as ``body/article/p[3]``.
    """

    kind: str
    page: int | None = None
    boxes: tuple[Box, ...] = ()
    page_width: float | None = None
    page_height: float | None = None
    path: str | None = None
    text: str | None = None


def _box(x0: int, y0: int, x1: int, y1: int) -> Box:
    return Box(x0=x0 / SCALE, y0=y0 / SCALE, x1=x1 / SCALE, y1=y1 / SCALE)


def quantize(value: float) -> int:
    """A coordinate in points as the integer tenths the map keeps."""
    return round(value * SCALE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Furniture:
    """A running header, footer or page number removed from the text (quantized box)."""

    kind: str
    page: int
    box: tuple[int, int, int, int]
    text: str


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Columnar map from text offsets to PDF lines/boxes or to element paths.

    PDF: ``runs`` (usually one per word) are ``[start, end)`` with an x-range on a
    ``line``; a line has a page and a y-range. HTML/DOCX: ``nodes`` are ``[start, end)``
    with an index into ``paths``. Runs and nodes are sorted and do not overlap; text
    between them (separators, markdown marks) maps nowhere.
    """

    pages: tuple[Page, ...] = ()
    line_page: tuple[int, ...] = ()
    line_y0: tuple[int, ...] = ()
    line_y1: tuple[int, ...] = ()
    run_start: tuple[int, ...] = ()
    run_end: tuple[int, ...] = ()
    run_line: tuple[int, ...] = ()
    run_x0: tuple[int, ...] = ()
    run_x1: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    node_start: tuple[int, ...] = ()
    node_end: tuple[int, ...] = ()
    node_path: tuple[int, ...] = ()
    furniture: tuple[Furniture, ...] = field(default=())

    def locate(self, start: int, end: int) -> list[Region]:
        """Regions covering text ``[start, end)``: per page one Region with a merged box
        per line (PDF), or one Region per element path (HTML/DOCX). Empty for an empty
        span or one that falls only on separators."""
        if not 0 <= start <= end:
            raise ValueError(f"bad span [{start}, {end})")
        if start == end:
            return []
        return self._locate_runs(start, end) + self._locate_nodes(start, end)

    def _locate_runs(self, start: int, end: int) -> list[Region]:
        i = bisect.bisect_right(self.run_end, start)
        merged: dict[int, list[int]] = {}
        order: list[int] = []
        while i < len(self.run_start) and self.run_start[i] < end:
            line = self.run_line[i]
            span = merged.get(line)
            if span is None:
                merged[line] = [self.run_x0[i], self.run_x1[i]]
                order.append(line)
            else:
                span[0] = min(span[0], self.run_x0[i])
                span[1] = max(span[1], self.run_x1[i])
            i += 1
        regions: list[Region] = []
        for line in order:
            page = self.pages[self.line_page[line] - 1]
            x0, x1 = merged[line]
            box = _box(x0, self.line_y0[line], x1, self.line_y1[line])
            if regions and regions[-1].page == page.number:
                last = regions[-1]
                regions[-1] = Region(kind="text", page=last.page, boxes=(*last.boxes, box),
                                     page_width=last.page_width, page_height=last.page_height)
            else:
                regions.append(Region(kind="text", page=page.number, boxes=(box,),
                                      page_width=page.width, page_height=page.height))
        return regions

    def _locate_nodes(self, start: int, end: int) -> list[Region]:
        i = bisect.bisect_right(self.node_end, start)
        regions: list[Region] = []
        while i < len(self.node_start) and self.node_start[i] < end:
            path = self.paths[self.node_path[i]]
            if not regions or regions[-1].path != path:
                regions.append(Region(kind="text", path=path))
            i += 1
        return regions

    def page_box(self, number: int) -> Page | None:
        """Page ``number`` (1-based) of a PDF map, None when the map has no such page."""
        if 1 <= number <= len(self.pages) and self.pages[number - 1].number == number:
            return self.pages[number - 1]
        return next((p for p in self.pages if p.number == number), None)

    def furniture_regions(self) -> list[Region]:
        """The running headers, footers and page numbers kept out of the text."""
        out: list[Region] = []
        for f in self.furniture:
            page = self.pages[f.page - 1]
            out.append(Region(kind=f.kind, page=f.page, boxes=(_box(*f.box),),
                              page_width=page.width, page_height=page.height, text=f.text))
        return out

    def dumps(self) -> bytes:
        """Compact, deterministic JSON (see the module docstring)."""
        doc: dict[str, Any] = {
            "format": LAYOUT_FORMAT,
            "pages": [[p.number, quantize(p.x0), quantize(p.y0), quantize(p.width),
                       quantize(p.height), p.rotation] for p in self.pages],
            "lines": {"page": _delta(self.line_page), "y0": list(self.line_y0),
                      "h": [b - a for a, b in zip(self.line_y0, self.line_y1, strict=True)]},
            "runs": {"gap": _gaps(self.run_start, self.run_end),
                     "len": [b - a for a, b in zip(self.run_start, self.run_end, strict=True)],
                     "line": _delta(self.run_line), "x0": list(self.run_x0),
                     "w": [b - a for a, b in zip(self.run_x0, self.run_x1, strict=True)]},
            "paths": list(self.paths),
            "nodes": {"gap": _gaps(self.node_start, self.node_end),
                      "len": [b - a for a, b in zip(self.node_start, self.node_end, strict=True)],
                      "path": list(self.node_path)},
            "furniture": [[f.kind, f.page, *f.box, f.text] for f in self.furniture],
        }
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, data: bytes) -> Layout:
        """Read what ``dumps`` wrote; ValueError for another format."""
        doc = json.loads(data)
        if doc.get("format") != LAYOUT_FORMAT:
            raise ValueError(f"not a {LAYOUT_FORMAT} layout: {doc.get('format')!r}")
        pages = tuple(Page(number=n, x0=x / SCALE, y0=y / SCALE, width=w / SCALE,
                           height=h / SCALE, rotation=r) for n, x, y, w, h, r in doc["pages"])
        lines, runs, nodes = doc["lines"], doc["runs"], doc["nodes"]
        y0 = tuple(lines["y0"])
        run_start, run_end = _ungap(runs["gap"], runs["len"])
        x0 = tuple(runs["x0"])
        node_start, node_end = _ungap(nodes["gap"], nodes["len"])
        return cls(
            pages=pages, line_page=_undelta(lines["page"]), line_y0=y0,
            line_y1=tuple(a + h for a, h in zip(y0, lines["h"], strict=True)),
            run_start=run_start, run_end=run_end, run_line=_undelta(runs["line"]),
            run_x0=x0, run_x1=tuple(a + w for a, w in zip(x0, runs["w"], strict=True)),
            paths=tuple(doc["paths"]), node_start=node_start, node_end=node_end,
            node_path=tuple(nodes["path"]),
            furniture=tuple(Furniture(kind=k, page=p, box=(a, b, c, d), text=t)
                            for k, p, a, b, c, d, t in doc["furniture"]),
        )


def _delta(values: tuple[int, ...]) -> list[int]:
    """Differences to the previous value (the first to 0): small numbers in JSON."""
    out: list[int] = []
    prev = 0
    for v in values:
        out.append(v - prev)
        prev = v
    return out


def _undelta(deltas: list[int]) -> tuple[int, ...]:
    out: list[int] = []
    prev = 0
    for d in deltas:
        prev += d
        out.append(prev)
    return tuple(out)


def _gaps(starts: tuple[int, ...], ends: tuple[int, ...]) -> list[int]:
    """Each start minus the previous end: the separators between spans."""
    out: list[int] = []
    prev = 0
    for s, e in zip(starts, ends, strict=True):
        out.append(s - prev)
        prev = e
    return out


def _ungap(gaps: list[int], lengths: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    starts: list[int] = []
    ends: list[int] = []
    prev = 0
    for g, n in zip(gaps, lengths, strict=True):
        starts.append(prev + g)
        prev = prev + g + n
        ends.append(prev)
    return tuple(starts), tuple(ends)
