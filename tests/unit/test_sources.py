"""Originals without a database: placing citations on PDF pages, the run record's note,
the ingest use case's extraction step, the two body forms, the public citation shape and
the PNG encoder (docs/extraction.md, "How the server uses it"; the end-to-end tests are
tests/integration/test_originals.py)."""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from stichtag.api import convert
from stichtag.api.uploads import is_json
from stichtag.domain.errors import Invalid
from stichtag.domain.extraction import PDF, Extracted, ExtractionRefused
from stichtag.domain.fundstelle import Citation
from stichtag.domain.layout import Layout, Page
from stichtag.domain.records import OriginalFile, VersionSource
from stichtag.extract.adapter import png
from stichtag.services.access import SCOPES, Principal
from stichtag.services.documents import DocumentService, IngestRequest
from stichtag.services.sources import SourceService, pdf_regions
from tests.fakes import FakeClock, FakeStore

WHO = Principal(tenant_id=uuid.uuid4(), key_id="k", scopes=frozenset(SCOPES), clearance=3)
TEXT = "Erster Satz. Zweiter Satz.\n"


def _layout() -> Layout:
    """Two words on one line of page 1 (box origin 10, 20), one word on page 2."""
    return Layout(
        pages=(Page(number=1, x0=10.0, y0=20.0, width=600.0, height=800.0, rotation=0),
               Page(number=2, x0=10.0, y0=20.0, width=600.0, height=800.0, rotation=0)),
        line_page=(1, 2), line_y0=(7000, 7000), line_y1=(7120, 7120),
        run_start=(0, 7, 13), run_end=(6, 12, 20), run_line=(0, 0, 1),
        run_x0=(1100, 1700, 1100), run_x1=(1650, 2300, 1800))


def _source(vid: str, media_type: str = PDF) -> VersionSource:
    return VersionSource(version_id=vid, original_id="b3:" + "1" * 64, media_type=media_type,
                         size=3, extractor_id="pdf-layout-1",
                         provenance={"pages": 2, "libraries": {"pypdfium2": "5"}},
                         created_at=datetime(2026, 1, 1, tzinfo=UTC))


class Sources:
    """A SourceStore over dicts."""

    def __init__(self, sources: dict[str, VersionSource], layout: bytes) -> None:
        self.rows, self.map, self.layout_reads = sources, layout, 0

    def sources(self, tenant_id: uuid.UUID, version_ids: Sequence[str], *,
                clearance: int) -> dict[str, VersionSource]:
        return {v: self.rows[v] for v in version_ids if v in self.rows}

    def layout(self, tenant_id: uuid.UUID, *, version_id: str, original_id: str) -> bytes:
        self.layout_reads += 1
        return self.map

    def original(self, tenant_id: uuid.UUID, *, version_id: str, clearance: int,
                 original_id: str | None = None) -> OriginalFile | None:
        return None


def _citation(vid: str, start: int, end: int) -> Citation:
    return Citation(document="d", version_id=vid, start=start, end=end, utf16_start=start,
                    utf16_end=end, quote=TEXT[start:end], heading_path=(),
                    valid_from="2026-01-01T00:00:00Z", valid_to=None)


def test_regions_are_relative_to_the_page_box_and_split_by_page() -> None:
    regions = pdf_regions(_layout(), 0, 20)
    assert [r.page for r in regions] == [1, 2]
    first = regions[0].boxes[0]
    # runs 110..230 pt at y 700..712, minus the page box origin (10, 20)
    assert (first.x0, first.y0, first.x1, first.y1) == (100.0, 680.0, 220.0, 692.0)
    assert regions[0].page_width == 600.0


def test_place_fills_pdf_citations_only_and_caches_the_layout() -> None:
    pdf_v, html_v, text_v = "b3:" + "a" * 64, "b3:" + "b" * 64, "b3:" + "c" * 64
    store = Sources({pdf_v: _source(pdf_v), html_v: _source(html_v, "text/html")},
                    _layout().dumps())
    svc = SourceService(store)
    cites = [_citation(pdf_v, 0, 12), _citation(html_v, 0, 12), _citation(text_v, 0, 12)]
    placed = svc.place(WHO, cites)
    assert placed[0].regions and placed[0].regions[0].page == 1
    assert placed[1] == cites[1] and placed[2] == cites[2]
    svc.place(WHO, cites)
    assert store.layout_reads == 1  # parsed once, then cached
    record = svc.run_record(WHO, [pdf_v, text_v])
    assert record == {"sources": {pdf_v: {"original_id": "b3:" + "1" * 64, "media_type": PDF,
                                          "extractor_id": "pdf-layout-1",
                                          "libraries": {"pypdfium2": "5"}}}}
    assert svc.run_record(WHO, [text_v]) == {}


def test_public_citation_has_page_and_boxes_only_for_placed_ones() -> None:
    vid = "b3:" + "a" * 64
    plain = convert.citation(_citation(vid, 0, 12))
    assert b'"page"' not in msgspec.json.encode(plain)
    svc = SourceService(Sources({vid: _source(vid)}, _layout().dumps()))
    out = convert.citation(svc.place(WHO, [_citation(vid, 0, 20)])[0])
    assert out.page == 1 and out.boxes is not None
    assert [(b.page, b.x0, b.page_height) for b in out.boxes] == [(1, 100.0, 800.0),
                                                                 (2, 100.0, 800.0)]


def test_page_images_check_their_arguments_before_any_lookup() -> None:
    svc = SourceService(Sources({}, b""))
    with pytest.raises(Invalid, match="pixels"):
        svc.page_png(WHO, "b3:x", 1, max_pixels=10)
    with pytest.raises(Invalid, match="numbered from 1"):
        svc.page_png(WHO, "b3:x", 0)


class FakeExtractor:
    """Turns any bytes into TEXT, as a PDF (or refuses, when told to)."""

    def __init__(self, refuse: ExtractionRefused | None = None) -> None:
        self.refuse = refuse

    def sniff(self, data: bytes) -> str | None:
        return PDF if data.startswith(b"%PDF-") else None

    def extract(self, data: bytes, media_type: str | None, *,
                password: str | None = None) -> Extracted:
        if self.refuse is not None:
            raise self.refuse
        return Extracted(text=TEXT, media_type="text/plain", source_media_type=PDF,
                         layout=_layout(), provenance={"extractor_id": "pdf-layout-1",
                                                       "producer": "x\x00y"})


def _documents(extractor: Any) -> DocumentService:
    return DocumentService(FakeStore(FakeClock()), FakeClock(), extractor=extractor)


def test_ingest_extracts_a_file_and_keeps_it_as_the_original() -> None:
    ready = _documents(FakeExtractor()).ready(IngestRequest(text=b"%PDF-1.7 ...",
                                                           media_type=PDF))
    assert ready.version.text == TEXT and ready.source is not None
    assert ready.source.data == b"%PDF-1.7 ..." and ready.source.media_type == PDF
    assert ready.source.original_id.startswith("b3:")
    assert ready.source.provenance["producer"] == "x\ufffdy"  # jsonb cannot hold NUL
    assert Layout.loads(ready.source.layout) == _layout()


def test_ingest_refusals_name_the_request_field() -> None:
    docs = _documents(FakeExtractor(ExtractionRefused("file", "corrupt")))
    with pytest.raises(ExtractionRefused) as refused:
        docs.ready(IngestRequest(text=b"%PDF-", media_type=PDF, text_field="text_base64"))
    assert refused.value.field == "text_base64" and refused.value.reason == "corrupt"
    with pytest.raises(Invalid, match="the bytes are application/pdf"):
        _documents(FakeExtractor()).ready(IngestRequest(text=b"%PDF-1.7", text_field="body"))
    with pytest.raises(Invalid, match="must be one of"):  # no extraction room wired
        _documents(None).ready(IngestRequest(text=b"%PDF-1.7", media_type=PDF))


@pytest.mark.parametrize(("body", "content_type", "json"), [
    (b'{"text": "x"}', "application/json", True),
    (b'{"text": "x"}', "application/merge-patch+json", True),
    (b'{"text": "x"}', None, True),
    (b' {"text": "x"}', "application/x-www-form-urlencoded", True),  # curl -d, no header
    (b"%PDF-1.7", "application/x-www-form-urlencoded", False),  # curl --data-binary @f.pdf
    (b"%PDF-1.7", None, False),
    (b'{"a": 1}', "text/plain", False),  # declared text is text
    (b"<html>", "text/html; charset=utf-8", False),
])
def test_which_body_is_json(body: bytes, content_type: str | None, json: bool) -> None:
    assert is_json(body, content_type) is json


def test_png_is_a_valid_image() -> None:
    raw = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9])  # 2 x 2 RGB, stride 6
    data = png(raw, width=2, height=2, stride=6, channels=3)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    _, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and struct.unpack(">II", data[16:24]) == (2, 2)
    idat = data.index(b"IDAT")
    size = struct.unpack(">I", data[idat - 4:idat])[0]
    assert zlib.decompress(data[idat + 4:idat + 4 + size]) == b"\x00" + raw[:6] + b"\x00" + raw[6:]
