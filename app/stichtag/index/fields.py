"""The lexical index's document: its fields and schema, the (assertion, passage) record
it stores, and that record's checks (split out of tantivy_index.py, which searches and
writes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tantivy

from stichtag.index import analyzer
from stichtag.index.ranges import INF_US

# tantivy 0.27 / tantivy-py does not expose commit payloads (PreparedCommit.set_payload),
# so the applied sequence lives in one marker document keyed by this term instead.
META_KEY = "meta"
KEY = "ap"
SEQ = "applied_seq"
TEXT = "text"
INT_FIELDS = (
    "assertion_id",
    "passage_id",
    "start",
    "end",
    "valid_from",
    "valid_to",
    "tx_from",
    "tx_to",
    "confidentiality",
)
STR_FIELDS = ("document", "version_id", "heading_path")
MAX_CONFIDENTIALITY = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexedPassage:
    """One (assertion, passage) pair as the lexical index stores it.

    Times are int microseconds since the Unix epoch (UTC); ``INF_US`` is an open end.
    ``heading_path`` is the heading path joined with U+203A (single right-pointing angle
    quotation mark) between spaces.
    """

    assertion_id: int
    passage_id: int
    document: str
    version_id: str
    start: int
    end: int
    text: str
    heading_path: str
    valid_from: int
    valid_to: int
    tx_from: int
    tx_to: int
    confidentiality: int


@dataclass(frozen=True, kw_only=True, slots=True)
class LexicalHit:
    """A visible passage that matched a query, with its BM25 score."""

    assertion_id: int
    passage_id: int
    bm25: float


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # Delete key "assertion_id:passage_id" (or the marker key); raw = one exact term.
    builder.add_text_field(KEY, tokenizer_name="raw", index_option="basic")
    # BM25 needs term frequencies but no positions: no phrase queries are offered, and
    # positions would roughly double the postings.
    builder.add_text_field(
        TEXT, stored=True, tokenizer_name=analyzer.ANALYZER_ID, index_option="freq"
    )
    for name in STR_FIELDS:
        builder.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    for name in INT_FIELDS:
        # Fast (columnar) for range filters and cheap hit decoding; stored so that a
        # close can rebuild the document; assertion_id also indexed for delete-by-term.
        builder.add_integer_field(name, stored=True, fast=True, indexed=name == "assertion_id")
    builder.add_integer_field(SEQ, stored=True, fast=True)
    return builder.build()


def doc_key(assertion_id: int, passage_id: int) -> str:
    return f"{assertion_id}:{passage_id}"


def check(passage: IndexedPassage) -> None:
    times = (passage.valid_from, passage.valid_to, passage.tx_from, passage.tx_to)
    if any(not -INF_US <= t <= INF_US for t in times):
        raise ValueError(f"time outside [-INF_US, INF_US] in {key_of(passage)}")
    if not 0 <= passage.confidentiality <= MAX_CONFIDENTIALITY:
        raise ValueError(f"confidentiality must be 0..3 in {key_of(passage)}")
    if not 0 <= passage.start <= passage.end:
        raise ValueError(f"offsets must satisfy 0 <= start <= end in {key_of(passage)}")


def key_of(passage: IndexedPassage) -> str:
    return doc_key(passage.assertion_id, passage.passage_id)


def passage_of(doc: tantivy.Document) -> IndexedPassage:
    values: dict[str, Any] = {}
    for name in INT_FIELDS:
        value = doc.get_first(name)
        if value is None:
            raise ValueError(f"indexed document lacks {name}; rebuild the index")
        values[name] = int(value)
    for name in (*STR_FIELDS, TEXT):
        # tantivy stores an empty string as no value at all.
        values[name] = str(doc.get_first(name) or "")
    return IndexedPassage(**values)
