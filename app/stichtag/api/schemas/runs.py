"""Bodies of runs, thresholds, review verdicts, impact and gaps."""

from __future__ import annotations

from typing import Any

import msgspec

from stichtag.api.schemas.documents import ErasureRecordOut


class RunResponse(msgspec.Struct):
    """A recorded run."""

    run_id: str
    kind: str
    key_id: str
    created_at: str
    record: dict[str, Any]
    erased: list[ErasureRecordOut] = msgspec.field(default_factory=list)
    """Erasures of versions the run took text from: that text reads ``[erased]`` in
    ``record`` (the signed record is in the log export unchanged)."""


class ThresholdBody(msgspec.Struct, forbid_unknown_fields=True):
    """A new threshold version; the rationale is mandatory. ``theta_scope`` absent: the
    current scope threshold is kept (the relevance model is kept too; `stichtag calibrate`
    fits a new one)."""

    theta_rel: float
    tau: float
    rationale: str
    theta_scope: float | None = None


class ThresholdOut(msgspec.Struct):
    """One threshold version (0 = built-in defaults)."""

    version: int
    theta_rel: float
    tau: float
    calibration: dict[str, Any]
    rationale: str
    set_by: str
    recorded_at: str | None
    theta_scope: float | None = None
    relevance: dict[str, Any] | None = None


class DeliveryOut(msgspec.Struct):
    """Delivery at one τ: the share of runs delivered, and what each model predicts."""

    tau: float
    observed: float
    binomial: float
    beta_binomial: float


class LeverageOut(msgspec.Struct):
    """The leverage of τ on the tenant's recorded answers (docs/thresholds.md, "The
    leverage of τ"); the figures are null when ``enough`` is false."""

    runs: int
    enough: bool
    note: str
    tau: float
    sentences: int | None = None
    presence: float | None = None
    rho: float | None = None
    leverage_binomial: float | None = None
    leverage_measured: float | None = None
    window_above_2: list[float] | None = None
    coverage_quantiles: dict[str, float] | None = None
    delivery: list[DeliveryOut] = msgspec.field(default_factory=list)


class ImpactOut(msgspec.Struct):
    """Recorded answers that would now differ at their Stichtag."""

    runs: list[dict[str, Any]]


class GapsOut(msgspec.Struct):
    """Groups of similar questions that abstained with insufficient_evidence."""

    groups: list[dict[str, Any]]
