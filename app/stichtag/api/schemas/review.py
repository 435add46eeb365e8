"""Bodies of the support-review routes (``stichtag.api.review``): a module apart from
the controller, so that the client imports them without Litestar."""

from __future__ import annotations

from typing import Any

import msgspec


class SampleBody(msgspec.Struct, forbid_unknown_fields=True):
    """Draw a sample: seed, strata (document, generator, coverage, run_month, asof_year;
    none = one stratum), pairs per stratum, and an optional window on the runs' recording time
    ``[run_from, run_to)`` (RFC 3339 or YYYY-MM-DD in the tenant's zone)."""

    seed: int
    strata: list[str] = msgspec.field(default_factory=list)
    n: int = 20
    run_from: str | None = None
    run_to: str | None = None


class VerdictBody(msgspec.Struct, forbid_unknown_fields=True):
    """A verdict on one item: full | partial | none | contradicts, an optional note, and
    for a second opinion on the same item the id of the current verdict it supersedes."""

    sample_id: str
    item: int
    verdict: str
    note: str | None = None
    supersedes: str | None = None


class SampleOut(msgspec.Struct):
    """A sample: its spec, population per stratum and items (sentence beside citation)."""

    sample_id: str
    created_by: str
    created_at: str
    seed: int
    strata: list[str]
    n_per_stratum: int
    filters: dict[str, Any]
    population: dict[str, int]
    items: list[dict[str, Any]]


class SampleSummary(msgspec.Struct):
    """A sample in the list, without its items."""

    sample_id: str
    created_by: str
    created_at: str
    seed: int
    strata: list[str]
    n_per_stratum: int
    items: int


class SampleListOut(msgspec.Struct):
    """The tenant's samples, newest first (at most 100)."""

    samples: list[SampleSummary]


class VerdictOut(msgspec.Struct):
    """A recorded verdict and its place in the run log."""

    # The replay verdict (stichtag.api.schemas.VerdictOut) has this name too, so the
    # published names of both are module-qualified: review_VerdictOut in OpenAPI,
    # stichtag.api.review.VerdictOut in review-verdict.schema.json. They were published
    # while this class lived in the controller's module, and they stay.
    __module__ = "stichtag.api.review"

    verdict_id: str
    sample_id: str
    item: int
    verdict: str
    note: str | None
    reviewer: str
    supersedes: str | None
    created_at: str
    seq: int


class ReportOut(msgspec.Struct):
    """Support rates with raw counts, both denominators, Wilson 95 % intervals, verdict
    counts, unreviewed counts and the pairs judged none or contradicts."""

    sample_id: str
    overall: dict[str, Any]
    strata: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    rules: dict[str, str]
