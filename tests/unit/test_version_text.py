"""Whole versions and excerpts cut the same text (the answer's evidence takes either).

A context window of 32 code points before a sentence near the start of a version begins
below 0; a plain ``text[start:end]`` would wrap a negative start around to the end and
return nothing, and a cached whole version would then give a different prefix than an
excerpt of the same version (found by bench/bench_answer.py comparing both ways).
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.records import VersionContent, VersionExcerpt, VersionRow

TEXT = "---\nTitle: Verordnung über Rechnungsgrundlagen\n\n§ 1 \U0001d538 Zins.\n" * 3


def _whole() -> VersionContent:
    row = VersionRow(version_id="b3:x", media_type="text/markdown", segmenter_id="s",
                     len_cp=len(TEXT), len_u16=len(TEXT.encode("utf-16-le")) // 2,
                     n_sentences=0, created_at=datetime(2020, 1, 1, tzinfo=UTC))
    return VersionContent(version=row, text=TEXT, sentences=())


def _excerpt() -> VersionExcerpt:
    cut = len(TEXT) // 3
    return VersionExcerpt(version_id="b3:x", length=len(TEXT),
                          pieces=((0, TEXT[:cut]), (cut, TEXT[cut:])), sentences=())


@given(st.integers(-80, len(TEXT) + 80), st.integers(0, 120))
def test_both_cut_as_the_clamped_text(start: int, width: int) -> None:
    end = start + width
    expected = TEXT[max(0, start):max(0, end)]
    assert _whole().slice(start, end) == expected
    assert _excerpt().slice(start, end) == expected


def test_the_prefix_of_the_first_sentence_is_the_text_before_it() -> None:
    assert _whole().slice(4 - 32, 4) == _excerpt().slice(4 - 32, 4) == "---\n"
