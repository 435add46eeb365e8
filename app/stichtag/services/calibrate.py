"""Fit a tenant's gate thresholds on a labelled set: the scope threshold, the relevance
model and θ_rel (docs/thresholds.md, "Calibrating").

The set is JSON Lines: ``{"question": ..., "answerable": true|false, "valid_at": ...,
"known_at": ...}`` (times optional). Each item is assessed exactly as the gates see it
(salience and scope support at its as-of pair, the features of its candidates). Then:

for each θ_scope of ``SCOPE_GRID`` the relevance model (``stichtag.domain.relevance``) is
fitted on the items that pass the scope gate, and θ_rel is the smallest model score whose
delivered share of unanswerable questions stays at or below the target wrong-answer rate;
the strictest θ_scope whose delivery is within ``SCOPE_SLACK`` of the best wins (a
refusal that names the missing subject says more than one that names a score).

Deterministic for a fixed set, corpus and model. The one-feature rerank calibration is
fitted too (it orders evidence for tenants on older threshold versions and is reported).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stichtag.domain.calibration import Calibration, fit_logistic, roc_auc, threshold_for_rate
from stichtag.domain.errors import Invalid
from stichtag.domain.relevance import (
    FEATURES,
    LEXICAL_FEATURES,
    NO_LOGIT,
    RelevanceModel,
    fit_relevance,
)
from stichtag.domain.scope import scope_share as domain_scope_share
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.answer import AnswerService
from stichtag.services.assess import Assessment

SCOPE_GRID = tuple(round(0.05 * i, 2) for i in range(13))
"""Scope thresholds tried (0 to 0.6): above that, in-scope questions with one unfamiliar
word start to fail (docs/salience.md)."""
SCOPE_SLACK = 0.01


@dataclass(frozen=True, kw_only=True)
class CalibrationReport:
    """What a calibration found and the rationale it would record."""

    dataset_sha256: str
    items: int
    positives: int
    auc: float
    auc_rerank: float
    calibration: Calibration
    relevance: RelevanceModel
    theta_rel: float
    theta_scope: float
    tau: float
    target_wrong_rate: float
    delivery_rate: float
    wrong_rate: float
    rationale: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"dataset_sha256": self.dataset_sha256, "items": self.items,
                "positives": self.positives, "auc": self.auc, "auc_rerank": self.auc_rerank,
                "calibration": self.calibration.to_dict(),
                "relevance": self.relevance.to_dict(), "theta_rel": self.theta_rel,
                "theta_scope": self.theta_scope, "tau": self.tau,
                "target_wrong_rate": self.target_wrong_rate,
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


def scope_share(assessment: Assessment) -> float:
    """The scope gate's observed value for an assessment (1.0 without lexical aspects)."""
    share = domain_scope_share(assessment.in_force)
    return 1.0 if share is None else share


@dataclass(frozen=True, kw_only=True)
class _Choice:
    theta_scope: float
    theta_rel: float
    model: RelevanceModel
    probability: list[float]
    delivery: float


def _choose(feats: list[dict[str, float]], shares: list[float], labels: list[bool],
            target_wrong_rate: float, cross_encoder: str | None = None) -> _Choice:
    """The grid search of the module docstring; with ``cross_encoder`` the model also
    reads that cross-encoder's logits (``cross``) and is bound to it."""
    names = FEATURES if cross_encoder is not None else LEXICAL_FEATURES
    options = []
    for theta_scope in SCOPE_GRID:
        passing = [i for i, share in enumerate(shares) if share >= theta_scope]
        if sum(1 for i in passing if not labels[i]) < 2 or sum(labels[i] for i in passing) < 2:
            continue  # the scope gate alone refuses (nearly) every unanswerable item
        model = fit_relevance([feats[i] for i in passing], [labels[i] for i in passing],
                              names=names, cross_encoder=cross_encoder)
        probability = [model.apply(f) if share >= theta_scope else 0.0
                       for f, share in zip(feats, shares, strict=True)]
        theta = threshold_for_rate(probability, labels, max_wrong_rate=target_wrong_rate)
        delivered = sum(1 for p, y in zip(probability, labels, strict=True) if y and p >= theta)
        options.append(_Choice(theta_scope=theta_scope, theta_rel=theta, model=model,
                               probability=probability, delivery=delivered / sum(labels)))
    if not options:
        raise Invalid("file", "cannot fit the relevance model: fitting needs at least 2 "
                              "answerable and 2 unanswerable questions that reach gate 1")
    top = max(o.delivery for o in options)
    return max((o for o in options if o.delivery >= top - SCOPE_SLACK),
               key=lambda o: o.theta_scope)


def calibrate(answers: AnswerService, principal: Principal, path: Path, *,
              target_wrong_rate: float, tau: float, time_zone: str = "UTC") -> CalibrationReport:
    """Assess every item, choose θ_scope, fit the relevance model, choose θ_rel."""
    if not 0.0 <= target_wrong_rate < 1.0:
        raise Invalid("target_wrong_rate", "must be in [0, 1)")
    items = load_labelled(path)
    now = datetime.now(UTC)
    rows: list[Assessment] = []
    labels: list[bool] = []
    for item in items:
        valid_at = (parse_time(item["valid_at"], field="valid_at", tz=time_zone)
                    if item.get("valid_at") else now)
        known_at = (parse_time(item["known_at"], field="known_at", tz=time_zone)
                    if item.get("known_at") else now)
        assessment, _ = answers.relevance(principal, item["question"], valid_at=valid_at,
                                          known_at=known_at)
        rows.append(assessment)
        labels.append(item["answerable"])
    # nothing retrieved: the least relevant features there are
    empty = {"rerank": -1.0, "matched": 0.0, "coverage": 0.0, "numbers": 0.0,
             "cross": NO_LOGIT}
    feats = [a.pooled or empty for a in rows]
    scores = [f["rerank"] for f in feats]
    shares = [scope_share(a) for a in rows]
    cal = fit_logistic(scores, labels)
    # the node's cross-encoder becomes a feature, and the model is bound to it
    cross = answers.cross.model_hash if answers.cross is not None else None
    choice = _choose(feats, shares, labels, target_wrong_rate, cross)
    # bound to the reranker that scored the items: another one's scores never meet it
    model = replace(choice.model, reranker=answers.reranker.model_hash)
    theta_scope, theta, probability = choice.theta_scope, choice.theta_rel, choice.probability
    passing = [i for i, share in enumerate(shares) if share >= theta_scope]
    delivered = [lab for c, lab in zip(probability, labels, strict=True) if c >= theta]
    delivery = len(delivered) / len(labels)
    wrong = (sum(not lab for lab in delivered) / len(delivered)) if delivered else 0.0
    theta_out = min(theta, 1.0)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    auc = roc_auc(probability, labels)
    auc_rerank = roc_auc(scores, labels)
    weights = ", ".join(f"{n} {w:+.3f}" for n, w in zip(model.features, model.weights,
                                                         strict=True))
    rationale = (
        f"Calibrated on {path.name} (sha256 {digest[:16]}…, {len(items)} questions, "
        f"{sum(labels)} answerable). theta_scope {theta_scope:.2f}: the strictest of 0-0.6 "
        f"within {SCOPE_SLACK:.0%} of the best delivery. Relevance model on the "
        f"{len(passing)} questions passing it: standardized weights {weights}, intercept "
        f"{model.intercept:+.3f}; ROC AUC {auc:.3f} (rerank score alone {auc_rerank:.3f}). "
        f"theta_rel {theta_out:.4f} is the lowest threshold keeping the delivered share of "
        f"unanswerable questions <= {target_wrong_rate:.2%}; achieved: delivery {delivery:.2%}, "
        f"wrong among delivered {wrong:.2%}. tau {tau}.")
    return CalibrationReport(
        dataset_sha256=digest, items=len(items), positives=sum(labels), auc=auc,
        auc_rerank=auc_rerank, calibration=cal, relevance=model, theta_rel=theta_out,
        theta_scope=theta_scope, tau=tau, target_wrong_rate=target_wrong_rate,
        delivery_rate=delivery, wrong_rate=wrong, rationale=rationale)
