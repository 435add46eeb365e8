"""Originals: the files versions were extracted from, and where a citation sits in them.

A version extracted from a PDF keeps its original bytes and a layout map (docs/extraction.md, "How
the server uses it",
docs/extraction.md "Serving originals and pages"). This service reads them back for the
caller's tenant and clearance: the original file, a page as an image, a citation's page
and boxes, and what the run record says about the extraction of each cited version.

Coordinates of placed citations: PDF points, origin at the bottom-left corner of the
page's box (the visible page, unrotated), y growing upwards; each region carries the
page's width and height, so a client scales a box onto the rendered page image
(``page_png`` renders the same unrotated frame).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from uuid import UUID

from stichtag.domain.errors import Invalid, NotFound
from stichtag.domain.extraction import PDF, ExtractionRefused
from stichtag.domain.fundstelle import Citation
from stichtag.domain.layout import Box, Layout, Region
from stichtag.domain.records import OriginalFile, VersionSource
from stichtag.domain.text import version_id as text_version_id
from stichtag.ports import DocumentStore, Extractor, PageRenderer, SourceStore
from stichtag.services.access import Principal
from stichtag.services.erasure import gone_or_missing

C = TypeVar("C", bound=Citation)

MIN_PIXELS, MAX_PIXELS, DEFAULT_PIXELS = 200, 2400, 1400
"""Bounds of a page image's longer side: enough to read 6 pt text, never a huge bitmap."""
LAYOUT_BUDGET_RUNS = 600_000
"""Runs (about one per word) the layout cache holds over all layouts. Measured: the VVG
as a 55-page PDF is 28,500 runs, 5.8 MB parsed (~200 bytes a run), so the budget keeps
the cache near 120 MB (a dozen laws of that size); the least recently used go first."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reextraction:
    """Whether the stored original, extracted again today, gives the stored version."""

    version_id: str
    original_id: str
    stored_extractor_id: str
    extractor_id: str
    reproduced: bool
    differences: list[str]


class LayoutCache:
    """Parsed layout maps by (tenant, version, original): immutable, so safe to keep.

    Entries are only put and read by ``SourceService`` after the store checked the
    version's visibility for the caller (``sources`` runs on every call), so the cache
    never widens what a key sees.
    """

    def __init__(self, budget_runs: int = LAYOUT_BUDGET_RUNS, capacity: int = 64) -> None:
        self.budget_runs = budget_runs
        self.capacity = capacity
        self._items: OrderedDict[tuple[UUID, str, str], Layout] = OrderedDict()
        self._runs = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[UUID, str, str]) -> Layout | None:
        """The cached layout, marked as recently used."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[UUID, str, str], layout: Layout) -> None:
        """Keep a layout, dropping the least recently used ones over the budget."""
        with self._lock:
            if key in self._items:
                return
            self._items[key] = layout
            self._runs += len(layout.run_start)
            while len(self._items) > 1 and (self._runs > self.budget_runs
                                            or len(self._items) > self.capacity):
                _, old = self._items.popitem(last=False)
                self._runs -= len(old.run_start)


class SourceService:
    """Originals, page images and citation places for one principal at a time."""

    def __init__(self, store: SourceStore, *, renderer: PageRenderer | None = None,
                 extractor: Extractor | None = None, cache: LayoutCache | None = None,
                 documents: DocumentStore | None = None) -> None:
        self.store = store
        self.documents = documents  # tells an erased version (410) from an unknown one
        self.renderer = renderer
        self.extractor = extractor
        self.cache = cache or LayoutCache()

    # -- what the answer, citation and version reads use --------------------------------

    def describe(self, principal: Principal, version_ids: Sequence[str]
                 ) -> dict[str, VersionSource]:
        """The first source of each version that has one (one read, within clearance)."""
        return self.store.sources(principal.tenant_id, version_ids,
                                  clearance=principal.clearance)

    def place(self, principal: Principal, citations: Sequence[C]) -> list[C]:
        """The citations with ``regions`` filled in for PDF-sourced versions (page, page
        size, one box per line); others unchanged. One read for all, layouts cached."""
        if not citations:
            return []
        sources = self.describe(principal, [c.version_id for c in citations])
        out: list[C] = []
        for c in citations:
            src = sources.get(c.version_id)
            if src is None or src.media_type != PDF:
                out.append(c)
                continue
            regions = pdf_regions(self._layout(principal.tenant_id, src), c.start, c.end)
            out.append(replace(c, regions=regions))
        return out

    def run_record(self, principal: Principal, version_ids: Sequence[str]) -> dict[str, Any]:
        """What a run record notes about the extraction of the versions it cites: per
        version with an original, the original, its type, the extractor and library
        versions. Empty (no key at all) when every version was ingested as text."""
        sources = self.describe(principal, version_ids)
        if not sources:
            return {}
        return {"sources": {vid: source_record(src) for vid, src in sorted(sources.items())}}

    # -- the routes ---------------------------------------------------------------------

    def original(self, principal: Principal, version_id: str, *,
                 original_id: str | None = None) -> OriginalFile:
        """The version's original file, exactly as uploaded: the first one stored, or
        ``original_id`` when the same text came from several files (each assertion's
        provenance names its own). NotFound: none, or unknown, foreign or above
        clearance — indistinguishable."""
        principal.require("read")
        found = self.store.original(principal.tenant_id, version_id=version_id,
                                    clearance=principal.clearance, original_id=original_id)
        if found is None:
            raise self._missing(principal, version_id, "version")
        return found

    def page_png(self, principal: Principal, version_id: str, page: int, *,
                 max_pixels: int = DEFAULT_PIXELS) -> bytes:
        """Page ``page`` (1-based) of a PDF original as a PNG, unrotated, its longer side
        ``max_pixels`` pixels: the frame citation boxes are given in."""
        principal.require("read")
        if not MIN_PIXELS <= max_pixels <= MAX_PIXELS:
            raise Invalid("width", f"must be between {MIN_PIXELS} and {MAX_PIXELS} pixels")
        if page < 1:
            raise Invalid("page", "pages are numbered from 1")
        src = self.describe(principal, [version_id]).get(version_id)
        if src is None:
            raise self._missing(principal, version_id, "page")
        if src.media_type != PDF or page > int(src.provenance.get("pages", 0)):
            raise NotFound("page")
        if self.renderer is None:
            raise Invalid("page", "page images need the extraction room (pypdfium2)")
        original = self.original(principal, version_id)
        try:
            return self.renderer.render_png(original.data, page, max_pixels=max_pixels)
        except ExtractionRefused as exc:
            if exc.field == "password":
                raise Invalid("page", "the original PDF is password-protected and the server "
                              "keeps no password, so it renders no page images; download "
                              "the original instead") from None
            raise Invalid("page", exc.reason) from None

    def reextract(self, principal: Principal, version_id: str, *,
                  password: str | None = None) -> Reextraction:
        """Extract the stored original again and compare: the same version id and layout
        map mean the extraction is reproducible (deterministic) with today's extractor."""
        principal.require("read")
        if self.extractor is None:
            raise Invalid("version_id", "re-extraction needs the extraction room")
        src = self.describe(principal, [version_id]).get(version_id)
        if src is None:
            raise NotFound("version")
        original = self.original(principal, version_id)
        again = self.extractor.extract(original.data, src.media_type, password=password)
        differences: list[str] = []
        now_id = text_version_id(again.text)
        if now_id != version_id:
            differences.append(f"text: the extraction now gives {now_id}")
        stored = self.store.layout(principal.tenant_id, version_id=version_id,
                                   original_id=src.original_id)
        if stored != again.layout.dumps():
            differences.append("layout map differs")
        extractor_id = str(again.provenance.get("extractor_id", ""))
        if extractor_id != src.extractor_id:
            differences.append(f"extractor {src.extractor_id} is now {extractor_id}")
        return Reextraction(version_id=version_id, original_id=src.original_id,
                            stored_extractor_id=src.extractor_id, extractor_id=extractor_id,
                            reproduced=not differences, differences=differences)

    # -- inside -------------------------------------------------------------------------

    def _missing(self, principal: Principal, version_id: str, what: str) -> Exception:
        """Gone when the version was erased (its original and pages with it), else
        NotFound."""
        if self.documents is None:
            return NotFound(what)
        return gone_or_missing(self.documents, principal, version_id, what)

    def _layout(self, tenant_id: UUID, src: VersionSource) -> Layout:
        key = (tenant_id, src.version_id, src.original_id)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        raw = self.store.layout(tenant_id, version_id=src.version_id,
                                original_id=src.original_id)
        layout = Layout.loads(raw) if raw is not None else Layout()
        self.cache.put(key, layout)
        return layout


def source_record(src: VersionSource) -> dict[str, Any]:
    """The run record's note on one version's extraction (what replay compares)."""
    return {"original_id": src.original_id, "media_type": src.media_type,
            "extractor_id": src.extractor_id,
            "libraries": src.provenance.get("libraries", {})}


def pdf_regions(layout: Layout, start: int, end: int) -> tuple[Region, ...]:
    """The PDF regions of ``[start, end)`` with boxes relative to the page box's
    bottom-left corner (the frame of the rendered page image)."""
    out: list[Region] = []
    for region in layout.locate(start, end):
        if region.page is None:
            continue
        page = layout.page_box(region.page)
        dx, dy = (page.x0, page.y0) if page is not None else (0.0, 0.0)
        boxes = tuple(Box(x0=round(b.x0 - dx, 1), y0=round(b.y0 - dy, 1),
                          x1=round(b.x1 - dx, 1), y1=round(b.y1 - dy, 1)) for b in region.boxes)
        out.append(replace(region, boxes=boxes))
    return tuple(out)
