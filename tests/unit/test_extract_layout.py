"""The layout map: locating spans, merging per line, JSON round trip, format check."""

from __future__ import annotations

import pytest

from stichtag.extract.builder import TextBuilder
from stichtag.extract.layout import Layout, Page


def _pdf_layout() -> tuple[str, Layout]:
    b = TextBuilder()
    b.page(Page(number=1, x0=0, y0=0, width=595.3, height=841.9, rotation=0))
    b.page(Page(number=2, x0=0, y0=0, width=595.3, height=841.9, rotation=90))
    first = b.line(1, 7000, 7120)
    b.run("Der", first, 720, 900)
    b.text(" ")
    b.run("Versiche-", first, 950, 1500)
    b.drop_last()  # the line-end hyphen turned out to split the word
    second = b.line(2, 8000, 8120)
    b.run("rung", second, 720, 1000)
    b.text(".\n")
    b.furniture("page_number", 1, (2900, 300, 2960, 420), "1")
    return b.build()


def test_locate_merges_runs_per_line_and_pages() -> None:
    text, layout = _pdf_layout()
    assert text == "Der Versicherung.\n"
    regions = layout.locate(0, text.index("rung") + 4)
    assert [r.page for r in regions] == [1, 2]
    assert regions[0].boxes[0].x0 == 72.0 and regions[0].boxes[0].x1 == 150.0
    assert regions[0].boxes[0].y0 == 700.0 and regions[0].page_width == 595.3
    word = text.index("Versicherung")
    assert [r.page for r in layout.locate(word, word + 8)] == [1]  # the part on page 1
    assert layout.locate(3, 4) == []  # the separator maps nowhere
    assert layout.locate(5, 5) == []
    with pytest.raises(ValueError, match="bad span"):
        layout.locate(4, 2)


def test_furniture_and_json_round_trip() -> None:
    _, layout = _pdf_layout()
    (number,) = layout.furniture_regions()
    assert (number.kind, number.page, number.text) == ("page_number", 1, "1")
    back = Layout.loads(layout.dumps())
    assert back == layout
    assert back.pages[1].rotation == 90
    with pytest.raises(ValueError, match="not a stichtag-layout-1"):
        Layout.loads(b'{"format": "other"}')


def test_nodes_merge_within_one_element() -> None:
    b = TextBuilder()
    b.node("Hallo ", "html/body/p[1]")
    b.node("Welt", "html/body/p[1]")
    b.text("\n\n")
    b.node("Zwei", "html/body/p[2]")
    text, layout = b.build()
    assert layout.node_start == (0, 12) and layout.node_end == (10, 16)
    assert [r.path for r in layout.locate(0, len(text))] == ["html/body/p[1]", "html/body/p[2]"]
    assert Layout.loads(layout.dumps()) == layout
