"""Bodies of POST /v1/answer: citations with their W3C selectors, gates, sources, lists."""

from __future__ import annotations

from typing import Annotated

import msgspec

from stichtag.api.schemas.documents import AsOf
from stichtag.api.schemas.search import IndexOut


class AnswerBody(msgspec.Struct, forbid_unknown_fields=True):
    """A question as of a Stichtag; ``generator``: extractive (default) or openai-compatible."""

    question: str
    valid_at: str | None = None
    known_at: str | None = None
    generator: str = "extractive"
    wait_for_index: bool = False
    """Wait (at most STICHTAG_INDEX_WAIT seconds) for the index backlog at the pair."""


class CitationBox(msgspec.Struct):
    """One line of a quote on a PDF page: PDF points, origin at the bottom-left corner of
    the page (its visible box, unrotated), y growing upwards; ``page_width`` and
    ``page_height`` are the page's size in points, to scale the box onto a page image
    (``GET /v1/versions/{id}/pages/{page}`` renders the same frame)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    page_width: float
    page_height: float


class TextQuoteSelector(msgspec.Struct, tag_field="type", tag="TextQuoteSelector"):
    """W3C Web Annotation TextQuoteSelector: the quote and up to 32 code points of text
    before and after it (fewer at the text's ends)."""

    exact: str
    prefix: str = ""
    suffix: str = ""


class TextPositionSelector(msgspec.Struct, tag_field="type", tag="TextPositionSelector"):
    """W3C Web Annotation TextPositionSelector: ``[start, end)`` in code points of the
    version's normalized text, as the W3C model counts characters. JavaScript strings
    index UTF-16 code units: use the citation's ``utf16_start``/``utf16_end`` there (each
    character above U+FFFF before a position adds one unit)."""

    start: int
    end: int


Selector = TextQuoteSelector | TextPositionSelector


class CitationOut(msgspec.Struct, omit_defaults=True):
    """A Fundstelle: ``quote == text[start:end]`` of that exact version, always.

    ``source`` (the version's content address) and ``selector`` make the citation a W3C
    Web Annotation target (a SpecificResource): a TextQuoteSelector, which finds the quote
    again when offsets drift (``POST /v1/citations/anchor``), and a TextPositionSelector.
    For a version extracted from a PDF, ``page`` (1-based, where the quote starts) and
    ``boxes`` (one per line, reading order; a quote may run onto the next page) say
    where it stands in the original; both are absent for other versions.
    """

    document: str
    version_id: str
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    quote: str
    heading_path: list[str]
    valid_from: str
    valid_to: str | None
    source: str
    selector: list[Selector]
    page: int | None = None
    boxes: list[CitationBox] | None = None


class AnswerSentenceOut(msgspec.Struct):
    """One answer sentence with the citations that support it (empty = uncited)."""

    text: str
    citations: list[CitationOut]


class GateOut(msgspec.Struct):
    """A gate decision with its threshold and the observed value."""

    gate: str
    passed: bool
    threshold: float | None
    observed: float | None
    detail: str


class SourceOut(msgspec.Struct):
    """A found evidence sentence (retrieved for this run: the allow-list of citations).

    ``consulted`` is derived from what the generator did, never from its own account: an
    excerpt counts only where the answer cites it; every sentence of a document the
    generator opened in full counts. A client that does not know the flag treats it as
    true; the source line is ``AnswerResponse.source_line``."""

    id: str
    citation: CitationOut
    cited: bool
    consulted: Annotated[bool, msgspec.Meta(description=(
        "The generator read this sentence: the answer cites it, or it belongs to a "
        "document opened in full. Absent = true."))]
    score: float


class DocumentSourceOut(msgspec.Struct):
    """A document the answer links or read, in the version in force at the as-of pair.

    Only ``consulted`` documents belong in a source line: the generator read their text
    (an excerpt the answer cites, or the whole document opened through a tool). A cited
    document that was not consulted (seen only as a title, such as a list answer's
    items) keeps its clickable link in the text but gets no source chip. A client that
    does not know the flag treats it as true."""

    document: str
    version_id: str
    cited: bool
    consulted: Annotated[bool, msgspec.Meta(description=(
        "The generator read this document's text; only consulted documents form the "
        "source line. Absent = true."))] = True
    opened: bool = False
    title: str | None = None


class ListedOut(msgspec.Struct):
    """One item of a list answer: a document or one of its versions, with its valid
    range ``[valid_from, valid_to)`` (null end = open) as known at the run's known_at."""

    document: str
    version_id: str
    assertion_id: int
    title: str
    valid_from: str
    valid_to: str | None


class ListingOut(msgspec.Struct):
    """A list answer to a question about the collection itself, from the catalogue and
    the bitemporal history, not from text: ``kind`` is ``documents`` (on a topic, in
    force at valid_at) or ``versions`` (of one document, in force in ``window``)."""

    kind: str
    subject: str
    items: list[ListedOut]
    window: list[str | None] | None = None


class ConflictOut(msgspec.Struct):
    """Conflicting evidence and the declared rule that resolved it (null: none did)."""

    rule: str | None
    winner: str | None
    loser: str | None
    citations: list[CitationOut]


class AnswerResponse(msgspec.Struct):
    """An answer or a reasoned abstention.

    Sources are three sets (docs/architecture.md §7): ``sources`` holds what was found,
    ``cited`` marks what the answer links, ``consulted`` what the generator read.
    ``source_line`` lists consulted documents only; ``documents`` keeps every cited or
    consulted document with its ``consulted`` flag. A list answer (``listing``) links its
    items without consulting them: status answered, no sentence citations, empty
    source line."""

    run_id: str
    status: str
    reason: str | None
    next_step: str | None
    threshold: float | None
    observed: float | None
    sentences: list[AnswerSentenceOut]
    coverage: float | None
    gates: list[GateOut]
    gaps: list[str]
    sources: list[SourceOut]
    conflicts: list[ConflictOut]
    as_of: AsOf
    generator: str
    thresholds_version: int
    source_line: Annotated[list[str], msgspec.Meta(description=(
        "The documents this answer came from: the consulted ones only (cited excerpts, "
        "documents opened in full), best first. Empty for an abstention and for a list "
        "answer, whose items are listed, not read."))] = []
    documents: list[DocumentSourceOut] = []
    listing: ListingOut | None = None
    index: IndexOut | None = None
    """Whether the indexes held everything visible at the pair (null for a list
    answer: it reads the catalogue, not the indexes)."""
