"""Per-tenant gate thresholds, versioned with a written rationale (docs/architecture.md §7).

Until a tenant calibrates, documented defaults apply (docs/thresholds.md explains them).
Every run records the version and values it used, so a later change never rewrites why
an old answer was given or withheld.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from app.domain.calibration import Calibration
from app.domain.errors import Invalid
from app.domain.records import ThresholdRow
from app.ports import ThresholdStore
from app.services.access import Principal

DEFAULT_THETA_REL = 0.80
DEFAULT_TAU = 1.0
DEFAULT_RATIONALE = (
    "Built-in default before any calibration: theta_rel 0.80 on the raw e5 cosine of the "
    "best passage (identity calibration), tau 1.0 (every answer sentence must carry a "
    "citation). See docs/thresholds.md.")


@dataclass(frozen=True, kw_only=True, slots=True)
class Thresholds:
    """The gate values a run uses, with their provenance."""

    version: int  # 0 = the built-in defaults
    theta_rel: float
    tau: float
    calibration: Calibration
    rationale: str
    set_by: str
    recorded_at: datetime | None

    def record(self) -> dict[str, Any]:
        """What goes into a run record."""
        return {"version": self.version, "theta_rel": self.theta_rel, "tau": self.tau,
                "calibration": self.calibration.to_dict(), "rationale": self.rationale}


DEFAULTS = Thresholds(version=0, theta_rel=DEFAULT_THETA_REL, tau=DEFAULT_TAU,
                      calibration=Calibration.identity(), rationale=DEFAULT_RATIONALE,
                      set_by="default", recorded_at=None)


def _row(r: ThresholdRow) -> Thresholds:
    return Thresholds(version=r.version, theta_rel=r.theta_rel, tau=r.tau,
                      calibration=Calibration.from_dict(r.calibration),
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
            calibration: Calibration | None, rationale: str) -> Thresholds:
        """Record a new version; the rationale is mandatory (an auditor will read it)."""
        principal.require("admin")
        for name, value in (("theta_rel", theta_rel), ("tau", tau)):
            if not 0.0 <= value <= 1.0:
                raise Invalid(name, "must be between 0 and 1")
        if len(rationale.strip()) < 10:
            raise Invalid("rationale", "explain the decision in at least a sentence")
        cal = calibration or self.current(principal.tenant_id).calibration
        return _row(self.store.insert_thresholds(
            principal.tenant_id, theta_rel=theta_rel, tau=tau, calibration=cal.to_dict(),
            rationale=rationale.strip(), set_by=principal.key_id))
