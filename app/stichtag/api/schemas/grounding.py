"""Evidence for an outside formulator and the grounding check of an answer written
elsewhere (docs/assistants.md)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from stichtag.api.schemas.answers import CitationOut, GateOut
from stichtag.api.schemas.documents import AsOf


class EvidenceItemOut(msgspec.Struct):
    """One evidence sentence, numbered: an answer cites it as ``[n]``. ``quote ==
    text[start:end]`` of that version, as for every Fundstelle."""

    n: int
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
    score: float


class EvidenceResponse(msgspec.Struct):
    """Gated evidence for a question at an as-of pair, recorded as a run. ``status``:
    ``ready`` (evidence follows) or ``abstained`` with the reason, threshold, observed
    value and next step of ``/v1/answer`` — a refusal hands out no evidence."""

    run_id: str
    status: str
    reason: str | None
    next_step: str | None
    threshold: float | None
    observed: float | None
    evidence: list[EvidenceItemOut]
    gates: list[GateOut]
    as_of: AsOf
    thresholds_version: int


class QuoteCitationBody(msgspec.Struct, forbid_unknown_fields=True):
    """A citation by quote: the answer sentence it supports (an index from 0, or the
    sentence's text), the document key, the quote character for character, and
    optionally the version and the code-point offsets (re-anchored when they are off)."""

    sentence: int | str
    document: str
    quote: str
    version_id: str | None = None
    start: int | None = None
    end: int | None = None


class CheckBody(msgspec.Struct, forbid_unknown_fields=True):
    """An answer written elsewhere, with its references: either ``run_id`` (an evidence
    run of this tenant; the answer cites its evidence as ``[n]``, at that run's as-of
    pair) or ``citations`` (quotes, checked at ``valid_at``/``known_at``, default now)."""

    answer: str
    run_id: str | None = None
    citations: list[QuoteCitationBody] | None = None
    valid_at: str | None = None
    known_at: str | None = None


class CheckReferenceOut(msgspec.Struct):
    """A reference as the answer wrote it (``[2]``, ``citation 3``). ``failure`` is a
    reason of the check (``invented_citation``, ``quote_not_in_source``,
    ``not_visible_at_as_of``), absent when it resolved; ``reanchored``: the quote was
    found elsewhere than its offsets said."""

    label: str
    resolved: bool
    failure: str | None = None
    detail: str = ""
    reanchored: bool = False


class CheckSentenceOut(msgspec.Struct):
    """One sentence of the checked answer with the Fundstellen its references resolved
    to (empty: uncited) and each reference as written with why it failed, if it did."""

    text: str
    citations: list[CitationOut]
    references: list[CheckReferenceOut]


class CheckResponse(msgspec.Struct):
    """The verdict on an answer written elsewhere, like ``/v1/answer``'s: ``answered``,
    ``partial`` with its ``gaps`` (the uncited sentences), or ``abstained`` with the
    reason (``invented_citation``, ``quote_not_in_source``, ``not_visible_at_as_of``,
    ``below_coverage``), threshold, observed value and next step. Recorded as a run."""

    run_id: str
    status: str
    reason: Annotated[str | None, msgspec.Meta(description=(
        "invented_citation, quote_not_in_source, not_visible_at_as_of or below_coverage; "
        "null unless abstained"))]
    next_step: str | None
    threshold: float | None
    observed: float | None
    detail: str | None
    coverage: float | None
    gaps: list[str]
    sentences: list[CheckSentenceOut]
    gates: list[GateOut]
    as_of: AsOf
    evidence_run: str | None
    thresholds_version: int
    source_line: list[str]
