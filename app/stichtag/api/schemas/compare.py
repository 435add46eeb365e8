"""Bodies of POST /v1/answer/compare: two answers and the causes of their differences."""

from __future__ import annotations

import msgspec

from stichtag.api.schemas.answers import AnswerResponse
from stichtag.api.schemas.changes import SentenceDiffOut


class PairBody(msgspec.Struct, forbid_unknown_fields=True):
    """One as-of pair; absent values are now (plain dates in the tenant's zone)."""

    valid_at: str | None = None
    known_at: str | None = None


class CompareBody(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One question at two as-of pairs (``from`` first, usually the earlier one)."""

    question: str
    from_: PairBody = msgspec.field(name="from")
    to: PairBody
    generator: str = "extractive"


class ValidityOut(msgspec.Struct):
    """A version in force and its validity ``[valid_from, valid_to)`` (null end = open)."""

    assertion_id: int
    version_id: str
    valid_from: str | None
    valid_to: str | None


class LawChangeOut(msgspec.Struct, kw_only=True):
    """Another version in force at the second valid date (as known at the first
    known_at): the one at each valid date; null = not in force."""

    from_: ValidityOut | None = msgspec.field(name="from")
    to: ValidityOut | None


class AssertionChangeOut(msgspec.Struct):
    """An assertion that made the second valid date read differently between the two
    known dates: ``change`` is how it ended (superseded, retracted, corrected) or how it
    appeared (asserted, backdated, imported), ``at`` when (transaction time)."""

    assertion_id: int
    version_id: str
    change: str
    at: str | None
    valid_from: str | None
    valid_to: str | None


class CompareChangeOut(msgspec.Struct):
    """What the two answers cite of one document: ``kind`` unchanged, changed, added or
    removed; ``cause`` from the bitemporal history: valid_time (the law changed),
    transaction_time (the knowledge changed), both, or none (same version in force)."""

    document: str
    kind: str
    cause: str
    from_version: str | None
    to_version: str | None
    explanation: str
    law: LawChangeOut | None
    knowledge: list[AssertionChangeOut]
    diff: SentenceDiffOut | None
    """The sentence diff of the two cited versions (changed documents only)."""


class CompareResponse(msgspec.Struct, kw_only=True):
    """Both answers (each a recorded run), the per-document changes and one summary line;
    ``run_id`` is the compare record, which references both runs."""

    run_id: str
    from_: AnswerResponse = msgspec.field(name="from")
    to: AnswerResponse
    changes: list[CompareChangeOut]
    summary: str
