"""Calibration of reranker scores: logistic fit, ROC AUC, and threshold choice for a rate."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.calibration import (
    IDENTITY,
    Calibration,
    fit_logistic,
    roc_auc,
    threshold_for_rate,
)


def _synthetic(a: float, b: float, n: int, seed: int) -> tuple[list[float], list[bool]]:
    """Scores uniform in [0, 1], labels drawn from sigmoid(a * score + b)."""
    rng = random.Random(seed)
    scores = [rng.random() for _ in range(n)]
    labels = [rng.random() < 1.0 / (1.0 + math.exp(-(a * s + b))) for s in scores]
    return scores, labels


def test_fit_recovers_known_parameters() -> None:
    scores, labels = _synthetic(4.0, -2.0, 20_000, seed=7)
    fitted = fit_logistic(scores, labels)
    # standard error of the slope here is ~0.06; 0.25 is ~4 of them
    assert fitted.a == pytest.approx(4.0, abs=0.25)
    assert fitted.b == pytest.approx(-2.0, abs=0.15)
    assert (fitted.n, fitted.positives, fitted.method) == (20_000, sum(labels), "logistic")


def test_fit_recovers_parameters_on_logit_scale_scores() -> None:
    # cross-encoder logits live on a wider scale than cosines; standardization inside
    # the fit must make that irrelevant
    scores, labels = _synthetic(0.8, 0.5, 20_000, seed=11)
    wide = [10.0 * s - 5.0 for s in scores]  # same labels, score = 10 s - 5
    fitted = fit_logistic(wide, labels)
    # sigmoid(0.8 s + 0.5) = sigmoid(0.08 * wide + 0.9)
    assert fitted.a == pytest.approx(0.08, abs=0.01)
    assert fitted.b == pytest.approx(0.9, abs=0.06)


def test_fit_is_deterministic_and_order_independent() -> None:
    scores, labels = _synthetic(3.0, -1.0, 2_000, seed=3)
    first = fit_logistic(scores, labels)
    again = fit_logistic(list(scores), list(labels))
    order = list(range(len(scores)))
    random.Random(5).shuffle(order)
    shuffled = fit_logistic([scores[i] for i in order], [labels[i] for i in order])
    # bit-identical, not approximately equal: every sum is an exactly rounded fsum
    assert first == again == shuffled
    assert first.a.hex() == shuffled.a.hex()


def test_separable_examples_give_a_finite_steep_fit() -> None:
    scores = [0.1, 0.2, 0.3, 0.7, 0.8, 0.9]
    labels = [False, False, False, True, True, True]
    fitted = fit_logistic(scores, labels)
    assert math.isfinite(fitted.a) and fitted.a > 10
    assert all(fitted.apply(s) < 0.05 for s in scores[:3])
    assert all(fitted.apply(s) > 0.95 for s in scores[3:])
    # a weaker penalty lets the slope grow, but it stays finite (converges)
    weaker = fit_logistic(scores, labels, l2=1e-8)
    assert fitted.a < weaker.a < math.inf
    # the boundary sits in the gap between the classes
    assert -fitted.b / fitted.a == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize(
    ("labels", "counts"),
    [
        ([True, False, False, False], "got 1 relevant and 3 irrelevant"),
        ([True, True, True, False], "got 3 relevant and 1 irrelevant"),
        ([False, False, False, False], "got 0 relevant and 4 irrelevant"),
    ],
)
def test_fit_needs_two_examples_of_each_class(labels: list[bool], counts: str) -> None:
    with pytest.raises(ValueError, match="at least 2 relevant and 2 irrelevant") as info:
        fit_logistic([0.1, 0.2, 0.3, 0.4], labels)
    assert counts in str(info.value)


def test_fit_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="labels"):
        fit_logistic([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(ValueError, match="finite"):
        fit_logistic([0.1, math.nan, 0.3, 0.4], [True, True, False, False])
    with pytest.raises(ValueError, match="all scores are equal"):
        fit_logistic([0.5] * 4, [True, True, False, False])
    with pytest.raises(ValueError, match="l2"):
        fit_logistic([0.1, 0.2, 0.3, 0.4], [True, True, False, False], l2=0.0)


def test_fitted_calibration_is_monotone_in_the_score() -> None:
    fitted = fit_logistic(*_synthetic(5.0, -3.0, 3_000, seed=1))
    grid = [i / 100 for i in range(-100, 201)]
    values = [fitted.apply(s) for s in grid]
    assert fitted.a > 0
    assert all(x < y for x, y in itertools.pairwise(values))


def test_identity_clamps_the_raw_score() -> None:
    assert Calibration.identity() == IDENTITY
    assert IDENTITY.method == "identity"
    assert [IDENTITY.apply(s) for s in (-0.3, 0.0, 0.42, 1.0, 7.0)] == [0, 0, 0.42, 1, 1]


def test_apply_is_numerically_stable_at_the_extremes() -> None:
    steep = Calibration(a=1e3, b=0.0, n=10, positives=5)
    assert 0.0 < steep.apply(-1e6) < 1e-300
    assert steep.apply(1e6) == math.nextafter(1.0, 0.0)
    assert steep.apply(0.0) == 0.5
    with pytest.raises(ValueError, match="NaN"):
        steep.apply(math.nan)


def test_dict_round_trip_through_json_is_exact() -> None:
    fitted = fit_logistic(*_synthetic(2.0, 0.5, 500, seed=2))
    for calibration in (fitted, IDENTITY):
        restored = Calibration.from_dict(json.loads(json.dumps(calibration.to_dict())))
        assert restored == calibration


@pytest.mark.parametrize(
    "raw",
    [
        {"method": "logistic", "a": 1.0, "b": 0.0, "n": 4},
        {"method": "logistic", "a": 1.0, "b": 0.0, "n": 4, "positives": 2, "x": 1},
        {"method": "platt", "a": 1.0, "b": 0.0, "n": 4, "positives": 2},
        {"method": "logistic", "a": "1", "b": 0.0, "n": 4, "positives": 2},
        {"method": "logistic", "a": 1.0, "b": 0.0, "n": True, "positives": 2},
        {"method": "logistic", "a": 1.0, "b": 0.0, "n": 4, "positives": 5},
        {"method": "logistic", "a": math.inf, "b": 0.0, "n": 4, "positives": 2},
        {"method": "identity", "a": 2.0, "b": 0.0, "n": 0, "positives": 0},
    ],
)
def test_from_dict_refuses_malformed_records(raw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="calibration"):
        Calibration.from_dict(raw)


def _brute_force_auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    won = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return won / (len(pos) * len(neg))


def test_auc_matches_the_brute_force_pair_count() -> None:
    rng = random.Random(9)
    for _ in range(50):
        n = rng.randint(2, 60)
        # one decimal place makes ties frequent, which is where AUC code goes wrong
        scores = [round(rng.gauss(0, 1), 1) for _ in range(n)]
        labels = [rng.random() < 0.4 for _ in range(n)]
        labels[0], labels[1] = True, False
        assert roc_auc(scores, labels) == pytest.approx(_brute_force_auc(scores, labels), abs=1e-12)


def test_auc_known_values() -> None:
    assert roc_auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert roc_auc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert roc_auc([0.5, 0.5], [True, False]) == 0.5
    with pytest.raises(ValueError, match="at least one"):
        roc_auc([0.1, 0.2], [True, True])


# a hand-built table, sorted by score; the wrong rate at θ is negatives/delivered among
# the items with score >= θ:
#   score  label  delivered  wrong  rate
#   0.95   True        1       0    0
#   0.90   True        2       0    0
#   0.80   False       3       1    1/3
#   0.70   True        4       1    1/4
#   0.60   True  \
#   0.60   False  }    6       2    1/3   (tied: delivered together)
#   0.40   True        7       2    2/7
#   0.30   False       8       3    3/8
#   0.20   False       9       4    4/9
#   0.10   True       10       4    2/5
TABLE = [
    (0.95, True),
    (0.90, True),
    (0.80, False),
    (0.70, True),
    (0.60, False),
    (0.60, True),
    (0.40, True),
    (0.30, False),
    (0.20, False),
    (0.10, True),
]


@pytest.mark.parametrize(
    ("rate", "theta"),
    [
        (0.0, 0.90),  # only the top two are all right
        (0.25, 0.70),  # 1/4 at 0.70; every lower θ is above 1/4
        (2 / 7, 0.40),  # 2/7 at 0.40 is allowed exactly; 0.60's tie group gives 1/3
        (0.3, 0.40),
        (1 / 3, 0.40),  # 3/8 and 4/9 still exceed 1/3
        (0.375, 0.30),
        (0.4, 0.10),  # 2/5 over all ten
        (1.0, 0.10),
    ],
)
def test_threshold_on_a_hand_built_table(rate: float, theta: float) -> None:
    scores = [s for s, _ in TABLE]
    labels = [y for _, y in TABLE]
    assert threshold_for_rate(scores, labels, max_wrong_rate=rate) == theta
    # input order never matters, ties included
    assert threshold_for_rate(scores[::-1], labels[::-1], max_wrong_rate=rate) == theta


def test_threshold_inside_a_tie_group_is_never_chosen() -> None:
    # the tie at 0.60 holds one relevant and two irrelevant items. Split with the relevant
    # one first, the top five would have rate 1/5 <= 0.2 and give θ = 0.60; delivered
    # together the group means 2/6 and must be skipped
    scores = [0.9, 0.8, 0.7, 0.6, 0.6, 0.6, 0.5]
    labels = [True, True, True, True, False, False, False]
    assert threshold_for_rate(scores, labels, max_wrong_rate=0.2) == 0.7


def test_threshold_is_infinite_when_no_delivery_meets_the_rate() -> None:
    assert threshold_for_rate([0.9, 0.5], [False, True], max_wrong_rate=0.0) == math.inf
    with pytest.raises(ValueError, match="max_wrong_rate"):
        threshold_for_rate([0.9], [True], max_wrong_rate=1.5)
    with pytest.raises(ValueError, match="at least one"):
        threshold_for_rate([], [], max_wrong_rate=0.1)


def test_rate_given_as_a_decimal_accepts_the_exact_fraction() -> None:
    # 3 wrong of 20 is exactly 0.15; the float 0.15 is slightly below 3/20
    scores = [1.0 - i / 100 for i in range(20)]
    labels = [True] * 17 + [False] * 3
    assert threshold_for_rate(scores, labels, max_wrong_rate=0.15) == scores[-1]


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
slope = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)


@given(a=slope, b=finite, x=finite, y=finite)
def test_apply_is_monotone_when_the_slope_is_positive(
    a: float, b: float, x: float, y: float
) -> None:
    calibration = Calibration(a=a, b=b, n=10, positives=5)
    low, high = min(x, y), max(x, y)
    assert calibration.apply(low) <= calibration.apply(high)


@given(a=st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), b=finite, x=finite)
def test_apply_stays_strictly_inside_zero_one(a: float, b: float, x: float) -> None:
    value = Calibration(a=a, b=b, n=10, positives=5).apply(x)
    assert 0.0 < value < 1.0


@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=1, allow_nan=False), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.floats(min_value=0, max_value=1),
)
def test_threshold_meets_the_rate_and_no_lower_one_does(
    rows: list[tuple[float, bool]], rate: float
) -> None:
    scores = [s for s, _ in rows]
    labels = [y for _, y in rows]
    theta = threshold_for_rate(scores, labels, max_wrong_rate=rate)

    def wrong_rate(t: float) -> float:
        delivered = [y for s, y in rows if s >= t]
        return sum(1 for y in delivered if not y) / len(delivered)

    lower = sorted({s for s in scores if s < theta})
    assert all(wrong_rate(t) > rate for t in lower)
    if theta != math.inf:
        assert theta in scores
        assert wrong_rate(theta) <= rate
