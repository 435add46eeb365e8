"""What one answer run returns (AnswerResult) and what the pipeline hands the run record
(Decided): the shapes shared by the answer use case, list answers, replay and the API."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from stichtag.domain.answer import AnsweredSentence, Evidence, GateDecision, Resolution
from stichtag.domain.generation import Generation, GeneratorError
from stichtag.domain.listing import Listing
from stichtag.domain.provenance import Provenance
from stichtag.domain.records import IndexState, VersionText
from stichtag.services.assess import Assessment
from stichtag.services.sentence_scores import SentenceScoring
from stichtag.services.thresholds import Thresholds


@dataclass(frozen=True, kw_only=True)
class AnswerResult:
    """Everything the API returns for one answer run."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    status: str
    reason: str | None
    next_step: str | None
    failed: GateDecision | None
    gates: list[GateDecision]
    sentences: list[AnsweredSentence]
    coverage: float | None
    gaps: list[str]
    evidence: list[Evidence]
    cited: set[str]
    provenance: Provenance
    """Found, cited and consulted documents, derived from what the generator did."""
    resolutions: list[Resolution]
    generator: str
    thresholds: Thresholds
    assessment: Assessment
    listing: Listing | None = None
    """Set for a list answer (a question about the collection): its items."""
    timings_ms: dict[str, float] = field(default_factory=dict)
    index: IndexState | None = None
    """Whether the indexes held every passage visible at the pair (None: not looked at,
    a list answer or a replay)."""


@dataclass(frozen=True, kw_only=True)
class Decided:
    """The result of the pipeline after retrieval, with what the run record needs."""

    result: AnswerResult
    raw: list[float]
    calibrated: list[float]
    generation: Generation | None
    error: GeneratorError | None
    contents: dict[str, VersionText]
    """What the evidence was cut from (read once per run): whole versions or excerpts."""
    sentence_scores: SentenceScoring | None = None
    """The rule, model and cosines the evidence sentences were scored with."""
    cross: list[float] | None = None
    """The cross-encoder's logit per candidate; None when the run read none."""
