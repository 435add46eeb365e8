"""The leverage of τ (app/stichtag/domain/leverage.py): the independent-binomial curve and
its window, and what over-dispersed runs measure instead (docs/thresholds.md, "The
leverage of τ")."""

from __future__ import annotations

import random

import pytest

from stichtag.domain import leverage as lv


def test_the_binomial_window_for_ten_sentences_at_tau_08() -> None:
    assert lv.needed(10, 0.8) == 8
    assert lv.leverage_binomial(10, 0.8, 7 / 9) == pytest.approx(3.06, abs=0.01)
    found = lv.window(10, 0.8, above=2.0)
    assert found is not None
    assert found[0] == pytest.approx(0.635, abs=0.002)
    assert found[1] == pytest.approx(0.886, abs=0.002)


def test_the_slope_is_the_derivative_of_delivery() -> None:
    h = 1e-6
    up, down = lv.delivery_binomial(10, 0.8, 0.7 + h), lv.delivery_binomial(10, 0.8, 0.7 - h)
    slope = (up - down) / (2 * h)
    assert lv.leverage_binomial(10, 0.8, 0.7) == pytest.approx(slope, rel=1e-5)
    assert lv.delivery_beta_binomial(10, 0.8, 0.7, 0.0) == lv.delivery_binomial(10, 0.8, 0.7)


def test_too_few_runs_are_said_not_extrapolated() -> None:
    out = lv.report([(10, 9)] * (lv.MIN_RUNS - 1), tau=0.8)
    assert not out.enough and out.leverage_measured is None and "at least" in out.note


def test_independent_runs_measure_the_binomial_leverage() -> None:
    rng = random.Random(7)
    runs = [(10, sum(rng.random() < 7 / 9 for _ in range(10))) for _ in range(2000)]
    out = lv.report(runs, tau=0.8)
    assert out.enough and out.rho is not None and out.rho < 0.02
    assert out.leverage_measured == pytest.approx(out.leverage_binomial, rel=0.1)


def test_over_dispersed_runs_measure_a_flatter_curve() -> None:
    rng = random.Random(11)
    runs = []
    for _ in range(2000):  # each answer draws its own presence: most cite all, some little
        p = 0.97 if rng.random() < 0.78 else 0.25
        runs.append((10, sum(rng.random() < p for _ in range(10))))
    out = lv.report(runs, tau=0.8)
    assert out.rho is not None and out.rho > 0.2
    assert out.leverage_measured is not None and out.leverage_binomial is not None
    assert out.leverage_measured < out.leverage_binomial / 2
    row = next(r for r in out.delivery if r.tau == 0.8)
    # the beta-binomial reproduces what was observed; the binomial does not
    assert abs(row.beta_binomial - row.observed) < abs(row.binomial - row.observed)
