"""The leverage of τ, measured on a tenant's own answers (docs/thresholds.md, "The leverage
of τ").

An answer of ``n`` sentences is delivered when at least ``k = ⌈τ·n⌉`` of them carry a
Fundstelle. If every sentence were cited independently with probability ``p`` (the
independent-binomial model), delivery would be ``P(X ≥ k)``, X ~ Bin(n, p), and its slope
``dD/dp = n·C(n-1, k-1)·p^(k-1)·(1-p)^(n-k)`` says how many points of delivery one point
of citation presence buys: for n = 10 and τ = 0.8 more than two between p 0.635 and
0.886, about three at p = 7/9. Real answers are over-dispersed — a model that cites
tends to cite every sentence, one that does not, few — so the measured curve is flatter;
the over-dispersion ``ρ`` (beta-binomial, by moments) is what explains the difference.
Too few runs are said, never extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_RUNS = 30
"""Below this many runs that reached the coverage gate the report says so and stops."""
TAUS = tuple(round(0.5 + 0.05 * i, 2) for i in range(11))
_STEP = 1e-4


def needed(n: int, tau: float) -> int:
    """Sentences that must be cited for coverage ≥ τ (the gate compares the ratio)."""
    return max(0, math.ceil(tau * n - 1e-9))


def delivery_binomial(n: int, tau: float, p: float) -> float:
    """P(X ≥ k), X ~ Bin(n, p)."""
    k = needed(n, tau)
    return sum(math.comb(n, x) * p ** x * (1 - p) ** (n - x) for x in range(k, n + 1))


def leverage_binomial(n: int, tau: float, p: float) -> float:
    """dD/dp of :func:`delivery_binomial`: points of delivery per point of presence."""
    k = needed(n, tau)
    if k == 0:
        return 0.0
    return n * math.comb(n - 1, k - 1) * p ** (k - 1) * (1 - p) ** (n - k)


def window(n: int, tau: float, above: float = 2.0) -> tuple[float, float] | None:
    """The range of p where the binomial leverage exceeds ``above`` (None: nowhere)."""
    inside = [i / 10_000 for i in range(1, 10_000)
              if leverage_binomial(n, tau, i / 10_000) > above]
    return (inside[0], inside[-1]) if inside else None


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def delivery_beta_binomial(n: int, tau: float, p: float, rho: float) -> float:
    """P(X ≥ k) when the presence itself varies between answers: X ~ BetaBin(n, α, β)
    with mean p and intra-answer correlation ρ (ρ = 0: the binomial)."""
    if rho <= 0 or p <= 0 or p >= 1:
        return delivery_binomial(n, tau, p)
    scale = 1 / rho - 1
    a, b = p * scale, (1 - p) * scale
    k = needed(n, tau)
    return sum(math.exp(math.log(math.comb(n, x)) + _log_beta(x + a, n - x + b)
                        - _log_beta(a, b)) for x in range(k, n + 1))


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryRow:
    """Delivery at one τ: observed share of runs, and what each model predicts."""

    tau: float
    observed: float
    binomial: float
    beta_binomial: float


@dataclass(frozen=True, kw_only=True, slots=True)
class LeverageReport:
    """The measured leverage of τ next to the independent-binomial one."""

    runs: int
    enough: bool
    note: str
    tau: float
    sentences: int | None = None
    """The typical answer length n (median), for the binomial window."""
    presence: float | None = None
    """Citation presence p: cited sentences / all sentences over the runs."""
    coverage: tuple[float, ...] = ()
    """Each run's coverage, sorted: the distribution."""
    rho: float | None = None
    leverage_binomial: float | None = None
    leverage_measured: float | None = None
    window: tuple[float, float] | None = None
    delivery: tuple[DeliveryRow, ...] = ()


def report(samples: Sequence[tuple[int, int]], *, tau: float) -> LeverageReport:
    """The report from (sentences, cited) per run that reached the coverage gate."""
    runs = [(n, c) for n, c in samples if n > 0 and 0 <= c <= n]
    if len(runs) < MIN_RUNS:
        return LeverageReport(runs=len(runs), enough=False, tau=tau, note=(
            f"{len(runs)} run(s) reached the coverage gate; at least {MIN_RUNS} are needed "
            "to measure the leverage of tau (nothing is extrapolated)"))
    total = sum(n for n, _ in runs)
    p = sum(c for _, c in runs) / total
    spread = sum((c - n * p) ** 2 for n, c in runs) - sum(n * p * (1 - p) for n, _ in runs)
    pairs = sum(n * (n - 1) for n, _ in runs)
    rho = min(0.99, max(0.0, spread / (p * (1 - p) * pairs))) if 0 < p < 1 and pairs else 0.0
    lengths = sorted(n for n, _ in runs)
    n_typ = lengths[len(lengths) // 2]

    def mean_delivery(t: float, q: float, r: float) -> float:
        return sum(delivery_beta_binomial(n, t, q, r) for n, _ in runs) / len(runs)

    lo, hi = max(0.0, p - _STEP), min(1.0, p + _STEP)
    measured = (mean_delivery(tau, hi, rho) - mean_delivery(tau, lo, rho)) / (hi - lo)
    binomial = (mean_delivery(tau, hi, 0.0) - mean_delivery(tau, lo, 0.0)) / (hi - lo)
    rows = tuple(DeliveryRow(tau=t, observed=sum(1 for n, c in runs if c / n >= t) / len(runs),
                             binomial=mean_delivery(t, p, 0.0),
                             beta_binomial=mean_delivery(t, p, rho)) for t in TAUS)
    return LeverageReport(
        runs=len(runs), enough=True, tau=tau, sentences=n_typ, presence=p,
        coverage=tuple(sorted(c / n for n, c in runs)), rho=rho,
        leverage_binomial=binomial, leverage_measured=measured,
        window=window(n_typ, tau), delivery=rows,
        note=(f"over-dispersion rho {rho:.3f}: answers cite all or little more often than "
              "independent sentences would, which flattens the delivery curve"
              if rho > 0 else "no over-dispersion: the binomial model fits"))


QUANTILES = {"p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9}


def coverage_quantiles(values: Sequence[float]) -> dict[str, float] | None:
    """Quantiles of the sorted coverages (the nearest rank below), None without runs."""
    if not values:
        return None
    return {k: values[min(len(values) - 1, int(q * len(values)))] for k, q in QUANTILES.items()}
