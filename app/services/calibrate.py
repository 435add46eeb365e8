"""Fit a tenant's rerank calibration and propose gate thresholds on a labelled set.

The set is JSON Lines: ``{"question": ..., "answerable": true|false, "valid_at": ...,
"known_at": ...}`` (times optional). For each item the best raw rerank score is computed
exactly as gate 1 sees it; a logistic calibration maps it to P(answerable); θ_rel is the
smallest calibrated threshold whose delivered share of unanswerable questions stays at or
below the target wrong-answer rate. Deterministic for a fixed set, corpus and model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.domain.calibration import Calibration, fit_logistic, roc_auc, threshold_for_rate
from app.domain.errors import Invalid
from app.domain.timeutil import parse_time
from app.services.access import Principal
from app.services.answer import AnswerService


@dataclass(frozen=True, kw_only=True)
class CalibrationReport:
    """What a calibration found and the rationale it would record."""

    dataset_sha256: str
    items: int
    positives: int
    auc: float
    calibration: Calibration
    theta_rel: float
    tau: float
    target_wrong_rate: float
    delivery_rate: float
    wrong_rate: float
    rationale: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"dataset_sha256": self.dataset_sha256, "items": self.items,
                "positives": self.positives, "auc": self.auc,
                "calibration": self.calibration.to_dict(), "theta_rel": self.theta_rel,
                "tau": self.tau, "target_wrong_rate": self.target_wrong_rate,
                "delivery_rate": self.delivery_rate, "wrong_rate": self.wrong_rate,
                "rationale": self.rationale}


def load_labelled(path: Path) -> list[dict[str, Any]]:
    """Read and check the labelled set."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {number}", f"not JSON: {exc.msg}") from exc
        if (not isinstance(item.get("question"), str)
                or not isinstance(item.get("answerable"), bool)):
            raise Invalid(f"line {number}", "needs question (string) and answerable (bool)")
        items.append(item)
    return items


def calibrate(answers: AnswerService, principal: Principal, path: Path, *,
              target_wrong_rate: float, tau: float, time_zone: str = "UTC") -> CalibrationReport:
    """Score every item, fit the calibration, choose θ_rel for the target rate."""
    if not 0.0 <= target_wrong_rate < 1.0:
        raise Invalid("target_wrong_rate", "must be in [0, 1)")
    items = load_labelled(path)
    now = datetime.now(UTC)
    scores: list[float] = []
    labels: list[bool] = []
    for item in items:
        valid_at = (parse_time(item["valid_at"], field="valid_at", tz=time_zone)
                    if item.get("valid_at") else now)
        known_at = (parse_time(item["known_at"], field="known_at", tz=time_zone)
                    if item.get("known_at") else now)
        best, _ = answers.relevance(principal, item["question"], valid_at=valid_at,
                                    known_at=known_at)
        scores.append(-1.0 if best is None else best)  # nothing retrieved: least relevant
        labels.append(item["answerable"])
    cal = fit_logistic(scores, labels)
    calibrated = [cal.apply(s) for s in scores]
    theta = threshold_for_rate(calibrated, labels, max_wrong_rate=target_wrong_rate)
    delivered = [lab for c, lab in zip(calibrated, labels, strict=True) if c >= theta]
    delivery = len(delivered) / len(labels)
    wrong = (sum(not lab for lab in delivered) / len(delivered)) if delivered else 0.0
    theta_out = min(theta, 1.0)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    auc = roc_auc(scores, labels)
    rationale = (
        f"Calibrated on {path.name} (sha256 {digest[:16]}…, {len(items)} questions, "
        f"{sum(labels)} answerable): logistic a={cal.a:.4f} b={cal.b:.4f}, ROC AUC {auc:.3f}. "
        f"theta_rel {theta_out:.4f} is the lowest threshold keeping the delivered share of "
        f"unanswerable questions <= {target_wrong_rate:.2%}; achieved: delivery {delivery:.2%}, "
        f"wrong among delivered {wrong:.2%}. tau {tau}.")
    return CalibrationReport(
        dataset_sha256=digest, items=len(items), positives=sum(labels), auc=auc,
        calibration=cal, theta_rel=theta_out, tau=tau, target_wrong_rate=target_wrong_rate,
        delivery_rate=delivery, wrong_rate=wrong, rationale=rationale)
