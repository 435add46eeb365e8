"""msgspec Structs of the public API (request and response bodies), a module per
resource; everything is importable from here."""

from __future__ import annotations

from typing import Any

import msgspec

from stichtag.api.schemas.answers import (
    AnswerBody,
    AnswerResponse,
    AnswerSentenceOut,
    CitationBox,
    CitationOut,
    ConflictOut,
    DocumentSourceOut,
    GateOut,
    ListedOut,
    ListingOut,
    Selector,
    SourceOut,
    TextPositionSelector,
    TextQuoteSelector,
)
from stichtag.api.schemas.changes import (
    ChangesResponse,
    ChangeWindow,
    DiffSentenceOut,
    DocumentChangesOut,
    SentenceChangeOut,
    SentenceDiffOut,
    ValidRange,
    VersionDiffResponse,
    VersionPairOut,
)
from stichtag.api.schemas.citations import AnchorBody, AnchorResponse, ResolveResponse
from stichtag.api.schemas.documents import (
    AsOf,
    Assertion,
    CorrectBody,
    DocumentResponse,
    EraseBody,
    ErasureOut,
    ErasureRecordOut,
    HistoryResponse,
    IngestBody,
    IngestResponse,
    RetractBody,
    Sentence,
    VersionResponse,
    VersionSourceOut,
    WriteResponse,
)
from stichtag.api.schemas.grounding import (
    CheckBody,
    CheckReferenceOut,
    CheckResponse,
    CheckSentenceOut,
    EvidenceItemOut,
    EvidenceResponse,
    QuoteCitationBody,
)
from stichtag.api.schemas.keys import Health, KeyBody, KeyCreated, KeyInfo, KeyList
from stichtag.api.schemas.problems import FieldError, Problem
from stichtag.api.schemas.runs import (
    DeliveryOut,
    GapsOut,
    ImpactOut,
    LeverageOut,
    RunResponse,
    ThresholdBody,
    ThresholdOut,
)
from stichtag.api.schemas.search import (
    IndexOut,
    IndexStatusResponse,
    Scores,
    SearchBody,
    SearchHit,
    SearchResponse,
)


# Defined here, not in runs.py: the review API has a VerdictOut too, so the published
# names are module-qualified (JSON Schema stichtag.api.schemas.VerdictOut, OpenAPI
# schemas_VerdictOut) and they predate the split of this package into modules.
class VerdictOut(msgspec.Struct):
    """A replay verdict: ``reproduced`` only when ``differences`` is empty."""

    run_id: str
    kind: str
    reproduced: bool
    differences: list[dict[str, Any]]
    notes: list[str]
    status: str = "reproduced"
    """``reproduced``, ``differs``, or ``erased``: a version the run relied on was erased
    (GDPR), so it cannot be recomputed; ``erased`` lists the erasure records."""
    erased: list[dict[str, Any]] = msgspec.field(default_factory=list)

__all__ = [
    "AnchorBody",
    "AnchorResponse",
    "AnswerBody",
    "AnswerResponse",
    "AnswerSentenceOut",
    "AsOf",
    "Assertion",
    "ChangeWindow",
    "ChangesResponse",
    "CheckBody",
    "CheckReferenceOut",
    "CheckResponse",
    "CheckSentenceOut",
    "CitationBox",
    "CitationOut",
    "ConflictOut",
    "CorrectBody",
    "DeliveryOut",
    "DiffSentenceOut",
    "DocumentChangesOut",
    "DocumentResponse",
    "DocumentSourceOut",
    "EraseBody",
    "ErasureOut",
    "ErasureRecordOut",
    "EvidenceItemOut",
    "EvidenceResponse",
    "FieldError",
    "GapsOut",
    "GateOut",
    "Health",
    "HistoryResponse",
    "ImpactOut",
    "IndexOut",
    "IndexStatusResponse",
    "IngestBody",
    "IngestResponse",
    "KeyBody",
    "KeyCreated",
    "KeyInfo",
    "KeyList",
    "LeverageOut",
    "ListedOut",
    "ListingOut",
    "Problem",
    "QuoteCitationBody",
    "ResolveResponse",
    "RetractBody",
    "RunResponse",
    "Scores",
    "SearchBody",
    "SearchHit",
    "SearchResponse",
    "Selector",
    "Sentence",
    "SentenceChangeOut",
    "SentenceDiffOut",
    "SourceOut",
    "TextPositionSelector",
    "TextQuoteSelector",
    "ThresholdBody",
    "ThresholdOut",
    "ValidRange",
    "VerdictOut",
    "VersionDiffResponse",
    "VersionPairOut",
    "VersionResponse",
    "VersionSourceOut",
    "WriteResponse",
]
