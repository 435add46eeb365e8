"""Per-tenant gate thresholds, versioned with a written rationale (docs/architecture.md §7).

Until a tenant calibrates, documented defaults apply (docs/thresholds.md explains them).
Every run records the version and values it used, so a later change never rewrites why
an old answer was given or withheld.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from stichtag.domain.calibration import Calibration
from stichtag.domain.errors import Invalid
from stichtag.domain.records import ThresholdRow
from stichtag.domain.relevance import RelevanceModel
from stichtag.ports import ThresholdStore
from stichtag.services import defaults
from stichtag.services.access import Principal

DEFAULT_THETA_REL = defaults.THETA_REL
DEFAULT_TAU = defaults.TAU
DEFAULT_THETA_SCOPE = defaults.THETA_SCOPE
DEFAULT_RATIONALE = defaults.RATIONALE


@dataclass(frozen=True, kw_only=True, slots=True)
class Thresholds:
    """The gate values a run uses, with their provenance.

    ``relevance`` maps the run's features to the score θ_rel is compared with; a version
    recorded before the combined model existed has its calibration of the rerank score
    as a one-feature model. ``calibration`` maps one candidate's rerank score (evidence
    order; kept for those versions).
    """

    version: int  # 0 = the built-in defaults
    theta_rel: float
    tau: float
    theta_scope: float
    calibration: Calibration
    relevance: RelevanceModel
    rationale: str
    set_by: str
    recorded_at: datetime | None

    def record(self) -> dict[str, Any]:
        """What goes into a run record."""
        return {"version": self.version, "theta_rel": self.theta_rel, "tau": self.tau,
                "theta_scope": self.theta_scope, "calibration": self.calibration.to_dict(),
                "relevance": self.relevance.to_dict(), "rationale": self.rationale}


def built_in_as_recorded(recorded: dict[str, Any]) -> Thresholds | None:
    """The built-in thresholds a run recorded (version 0), when they differ from this
    build's: a replay recomputes that run with what it was gated by (the built-ins were
    refitted since, e.g. when the cross-encoder became a feature). None for a tenant's
    own versions (those are stored) or when nothing changed."""
    if recorded.get("version") != 0 or "relevance" not in recorded:
        return None
    if {k: recorded.get(k) for k in ("theta_rel", "tau", "theta_scope", "relevance")} == {
            k: v for k, v in DEFAULTS.record().items()
            if k in ("theta_rel", "tau", "theta_scope", "relevance")}:
        return None
    return replace(DEFAULTS, theta_rel=float(recorded["theta_rel"]), tau=float(recorded["tau"]),
                   theta_scope=float(recorded.get("theta_scope", DEFAULT_THETA_SCOPE)),
                   calibration=Calibration.from_dict(recorded["calibration"]),
                   relevance=RelevanceModel.from_dict(recorded["relevance"]),
                   rationale=str(recorded.get("rationale", "")))


DEFAULTS = Thresholds(version=0, theta_rel=DEFAULT_THETA_REL, tau=DEFAULT_TAU,
                      theta_scope=DEFAULT_THETA_SCOPE, calibration=Calibration.identity(),
                      relevance=RelevanceModel.from_dict(defaults.RELEVANCE),
                      rationale=DEFAULT_RATIONALE, set_by="default", recorded_at=None)


def _row(r: ThresholdRow) -> Thresholds:
    calibration = Calibration.from_dict(r.calibration)
    return Thresholds(
        version=r.version, theta_rel=r.theta_rel, tau=r.tau,
        theta_scope=DEFAULT_THETA_SCOPE if r.theta_scope is None else r.theta_scope,
        calibration=calibration,
        relevance=(RelevanceModel.from_calibration(calibration) if r.relevance is None
                   else RelevanceModel.from_dict(r.relevance)),
        rationale=r.rationale, set_by=r.set_by, recorded_at=r.recorded_at)


class ThresholdService:
    """Read and set a tenant's thresholds."""

    def __init__(self, store: ThresholdStore) -> None:
        self.store = store

    def current(self, tenant_id: UUID) -> Thresholds:
        """The newest version, or the defaults."""
        row = self.store.current_thresholds(tenant_id)
        return _row(row) if row else DEFAULTS

    def history(self, principal: Principal) -> list[Thresholds]:
        """All versions, oldest first (the defaults are version 0)."""
        principal.require("audit")
        return [DEFAULTS, *(_row(r) for r in self.store.threshold_history(principal.tenant_id))]

    def set(self, principal: Principal, *, theta_rel: float, tau: float,
            calibration: Calibration | None, rationale: str,
            theta_scope: float | None = None,
            relevance: RelevanceModel | None = None) -> Thresholds:
        """Record a new version; the rationale is mandatory (an auditor will read it).

        What is not given is kept from the current version (the calibration, the scope
        threshold, the relevance model); a new calibration without a relevance model
        brings its own one-feature model.
        """
        principal.require("admin")
        for name, value in (("theta_rel", theta_rel), ("tau", tau),
                            ("theta_scope", 0.0 if theta_scope is None else theta_scope)):
            if not 0.0 <= value <= 1.0:
                raise Invalid(name, "must be between 0 and 1")
        if len(rationale.strip()) < 10:
            raise Invalid("rationale", "explain the decision in at least a sentence")
        now = self.current(principal.tenant_id)
        cal = calibration or now.calibration
        # a bare calibration keeps the reranker binding of the version it replaces
        model = relevance or (replace(RelevanceModel.from_calibration(calibration),
                                      reranker=now.relevance.reranker) if calibration
                              else now.relevance)
        return _row(self.store.insert_thresholds(
            principal.tenant_id, theta_rel=theta_rel, tau=tau, calibration=cal.to_dict(),
            theta_scope=now.theta_scope if theta_scope is None else theta_scope,
            relevance=model.to_dict(), rationale=rationale.strip(),
            set_by=principal.key_id))
