"""The combined relevance score of gate 1 (app/stichtag/domain/relevance.py)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from stichtag.domain.calibration import Calibration
from stichtag.domain.relevance import (
    FEATURES,
    LEXICAL_FEATURES,
    Candidate,
    RelevanceModel,
    features,
    fit_relevance,
)


def _rows(n: int = 300, seed: int = 3) -> tuple[list[dict[str, float]], list[bool]]:
    rng = random.Random(seed)  # test data, not secrets
    rows, labels = [], []
    for i in range(n):
        good = i % 2 == 0
        rows.append({"rerank": 0.82 + (0.04 if good else 0.0) + rng.gauss(0, 0.03),
                     "matched": rng.random() * 2 + (1.0 if good else 0.0),
                     "coverage": rng.random() * (1.0 if good else 0.5),
                     "numbers": 1.0})
        labels.append(good)
    return rows, labels


def test_features_are_max_pooled_over_candidates() -> None:
    pooled = features([Candidate(rerank=0.8, matched=0.4, coverage=0.5, numbers=0.0),
                       Candidate(rerank=0.7, matched=1.5, coverage=0.25, numbers=1.0)])
    assert pooled == {"rerank": 0.8, "matched": 1.5, "coverage": 0.5, "numbers": 1.0}
    assert features([]) is None


def test_the_fit_separates_and_every_feature_helps_or_is_neutral() -> None:
    rows, labels = _rows()
    model = fit_relevance(rows, labels)
    assert model.features == LEXICAL_FEATURES
    weights = dict(zip(model.features, model.weights, strict=True))
    assert weights["rerank"] > 0 and weights["matched"] > 0 and weights["coverage"] > 0
    assert weights["numbers"] == 0.0  # constant feature: scale 1, no gradient
    good = [model.apply(r) for r, y in zip(rows, labels, strict=True) if y]
    bad = [model.apply(r) for r, y in zip(rows, labels, strict=True) if not y]
    assert sum(good) / len(good) > 0.7
    assert sum(bad) / len(bad) < 0.3


def test_the_fit_does_not_depend_on_the_order_of_examples() -> None:
    rows, labels = _rows()
    order = list(range(len(rows)))
    random.Random(5).shuffle(order)
    a = fit_relevance(rows, labels)
    b = fit_relevance([rows[i] for i in order], [labels[i] for i in order])
    assert a == b  # bit-identical: exactly rounded sums


def test_sample_weights_shift_the_base_rate() -> None:
    rows, labels = _rows()
    even = fit_relevance(rows, labels)
    more_good = fit_relevance(rows, labels, weights=[3.0 if y else 1.0 for y in labels])
    assert more_good.intercept > even.intercept
    with pytest.raises(ValueError):
        fit_relevance(rows, labels, weights=[0.0] * len(rows))


def test_an_auditor_recomputes_the_score_from_the_record() -> None:
    rows, labels = _rows()
    model = RelevanceModel.from_dict(fit_relevance(rows, labels).to_dict())
    x = rows[7]
    z = model.intercept + sum(w * (x[f] - m) / s for f, w, m, s in zip(
        model.features, model.weights, model.means, model.scales, strict=True))
    assert model.apply(x) == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-12)


def test_identity_and_one_feature_calibration_keep_their_old_meaning() -> None:
    identity = RelevanceModel.identity()
    assert identity.apply({"rerank": 0.83, "matched": 99.0}) == 0.83
    assert identity.apply({"rerank": 1.7}) == 1.0
    cal = Calibration(a=60.0, b=-50.0, n=10, positives=5)
    model = RelevanceModel.from_calibration(cal)
    assert model.apply({"rerank": 0.85}) == pytest.approx(cal.apply(0.85), abs=1e-12)
    assert RelevanceModel.from_calibration(Calibration.identity()) == identity


@pytest.mark.parametrize("bad", [
    {"id": "relevance-0"},
    {"method": "magic"},
    {"features": ["rerank", "mood"]},
    {"weights": [1.0, 2.0]},
    {"scales": [0.0]},
    {"intercept": float("nan")},
])
def test_a_malformed_model_is_refused(bad: dict[str, object]) -> None:
    raw = {**RelevanceModel.identity().to_dict(), "method": "logistic", **bad}
    with pytest.raises(ValueError):
        RelevanceModel.from_dict(raw)


def test_nan_features_fail_closed() -> None:
    rows, labels = _rows()
    model = fit_relevance(rows, labels)
    with pytest.raises(ValueError):
        model.apply({**rows[0], "coverage": float("nan")})


def test_the_reranker_binding_round_trips_and_is_absent_when_unbound() -> None:
    unbound = RelevanceModel.identity()
    assert "reranker" not in unbound.to_dict()  # old records compare equal
    bound = replace(unbound, reranker="82e5" * 16)
    assert RelevanceModel.from_dict(bound.to_dict()) == bound
    with pytest.raises(ValueError, match="reranker"):
        RelevanceModel.from_dict({**bound.to_dict(), "reranker": 7})


def test_a_model_reading_the_cross_encoder_is_relevance_2_and_bound_to_it() -> None:
    rows, labels = _rows()
    rows = [{**r, "cross": 3.0 if y else -2.0} for r, y in zip(rows, labels, strict=True)]
    model = fit_relevance(rows, labels, names=FEATURES, cross_encoder="ce-hash-1")
    raw = model.to_dict()
    assert raw["id"] == "relevance-2" and raw["cross_encoder"] == "ce-hash-1"
    assert RelevanceModel.from_dict(raw) == model
    # the id and the features must agree, and the binding is required exactly with cross
    with pytest.raises(ValueError):
        RelevanceModel.from_dict({**raw, "id": "relevance-1"})
    with pytest.raises(ValueError):
        RelevanceModel.from_dict({k: v for k, v in raw.items() if k != "cross_encoder"})
    with pytest.raises(ValueError):
        fit_relevance(rows, labels, names=FEATURES)
    # a run without logits lacks the feature: callers see it before applying the model
    assert model.missing({k: v for k, v in rows[0].items() if k != "cross"}) == ["cross"]
    assert model.missing(rows[0]) == []
    lexical = fit_relevance(rows, labels)
    assert lexical.to_dict()["id"] == "relevance-1" and lexical.missing(None) == list(
        LEXICAL_FEATURES)


def test_pooling_keeps_cross_only_when_every_candidate_has_a_logit() -> None:
    with_logit = Candidate(rerank=0.8, matched=0.4, coverage=0.5, numbers=0.0, cross=1.5)
    without = Candidate(rerank=0.7, matched=1.5, coverage=0.25, numbers=1.0)
    assert features([with_logit, replace(without, cross=-3.0)])["cross"] == 1.5  # type: ignore[index]
    assert "cross" not in (features([with_logit, without]) or {})
