"""The segmenter's contracts on the real German insurance-law corpus.

The corpus (read-only, beside the checkout) has three shapes: kmein markdown with
blank-line paragraphs, hard-wrapped bundestag markdown with YAML front matter, and
gii plain-text dumps with one line per paragraph and inline enumerations.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from stichtag.domain.segment import Block, heading_paths, segment_block, split_blocks
from stichtag.domain.text import normalize

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "de-insurance-law"
FILES = (
    sorted(p for p in CORPUS.rglob("*") if p.suffix in {".md", ".txt"}) if CORPUS.is_dir() else []
)

# A sentence this short is only acceptable as a bare enumeration marker.
_BARE_MARKER = re.compile(r"[-*+\u2022\u2013\u2014]|\d{1,3}[a-z]?[.)]|[a-z]{1,3}\)")
_HEADING_TITLE = "§ 2 \u2013 Höchstzinssatz"
# Sentences of every distinct block seen so far, across files (as the store keeps them).
_SEEN: dict[tuple[str, str], tuple[tuple[int, int], ...]] = {}


def _media_type(path: Path) -> str:
    return "text/markdown" if path.suffix == ".md" else "text/plain"


def _require_corpus() -> None:
    if not FILES:
        pytest.skip(f"corpus missing: {CORPUS}")


def _load(path: Path) -> tuple[str, list[Block]]:
    text = normalize(path.read_bytes(), field=path.name)
    return text, split_blocks(text, _media_type(path))


def test_corpus_is_complete() -> None:
    _require_corpus()
    assert len(FILES) == 81
    assert {p.suffix for p in FILES} == {".md", ".txt"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_contracts_hold_on_corpus_file(path: Path) -> None:
    _require_corpus()
    text, blocks = _load(path)
    media_type = _media_type(path)
    # 1. exact partition
    assert blocks[0].start == 0
    assert blocks[-1].end == len(text)
    assert all(a.end == b.start for a, b in itertools.pairwise(blocks))
    for block in blocks:
        body = text[block.start : block.end]
        # 2. locality: what the store reuses by block hash is what it would compute.
        # Versions share most blocks, so each distinct block is re-segmented once.
        key = (body, media_type)
        if key not in _SEEN:
            _SEEN[key] = segment_block(body, media_type)
        assert block.sentences == _SEEN[key]
        # 3. spans: ordered, trimmed, and together covering every visible character
        gaps = []
        cursor = 0
        for s, e in block.sentences:
            assert cursor <= s < e, (path, block.start, s, e)
            quote = body[s:e]
            assert quote == quote.strip()
            if len(quote) < 2:
                # The source has a few paragraphs that are one stray letter (a table
                # cell): with nothing else in the block there is nothing to join.
                alone = len(block.sentences) == 1
                assert alone or _BARE_MARKER.fullmatch(quote), (path, block.start + s, quote)
            gaps.append(body[cursor:s])
            cursor = e
        if block.kind == "heading":
            assert media_type == "text/markdown"
            assert [body[s:e] for s, e in block.sentences] == [block.title]
            continue
        gaps.append(body[cursor:])
        assert not "".join(gaps).strip(), (path, block.start)
    assert len(heading_paths(blocks)) == len(blocks)


def test_shapes_are_recognised() -> None:
    """Each corpus shape yields the structure a reader sees in it."""
    _require_corpus()
    gii = next(p for p in FILES if p.suffix == ".txt" and p.parent.name == "vag2016")
    text, blocks = _load(gii)
    assert all(b.kind == "text" for b in blocks)
    sentences = [text[b.start + s : b.start + e] for b in blocks for s, e in b.sentences]
    assert "## § 1 Geltungsbereich" in sentences
    # Inline enumeration items of § 1 (1) become sentences of their own.
    assert "3.Versicherungs-Zweckgesellschaften im Sinne des § 168," in sentences

    bundestag = next(p for p in FILES if "bundestag" in p.name and p.parent.name == "vvg2008")
    text, blocks = _load(bundestag)
    first = blocks[0]
    assert text[first.start : first.end].startswith("---\n")
    assert "slug: vvg_2008" in [text[s:e] for s, e in first.sentences]
    titles = {b.title: b.level for b in blocks if b.kind == "heading"}
    assert titles["§ 1 Vertragstypische Pflichten"] == 5
    wrapped = next(b for b in blocks if text[b.start :].startswith("Der Versicherer verpflichtet"))
    # Hard-wrapped lines continue the sentence: two sentences over five lines.
    assert len(wrapped.sentences) == 2


def test_deckrv_hoechstzinssatz_has_its_heading_path() -> None:
    _require_corpus()
    versions = [p for p in FILES if p.parent.name == "deckrv" and "kmein" in p.name]
    assert versions
    for path in versions:
        text, blocks = _load(path)
        hits = [
            (path_, text[b.start + s : b.start + e])
            for b, path_ in zip(blocks, heading_paths(blocks), strict=True)
            for s, e in b.sentences
            if "wird der Höchstzinssatz für die Berechnung" in text[b.start + s : b.start + e]
        ]
        assert len(hits) == 1, path
        heading_path, quote = hits[0]
        assert heading_path[-2:] == (_HEADING_TITLE, "(1)"), path
        assert quote.startswith("(1) Bei Versicherungsverträgen mit Zinsgarantie")
        assert quote.endswith("Prozent festgesetzt.")
