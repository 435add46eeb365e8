"""Score calibration for relevance gates: raw reranker score -> probability of "relevant".

A raw reranker score (a cross-encoder logit, or the e5 pair graph's cosine) has no fixed
meaning across models or tenants, so a gate never compares it directly. A tenant's
labelled examples (score, relevant?) fit a one-feature logistic model (Platt scaling):
``p = sigmoid(a * score + b)``. The threshold a gate uses is then picked on the
calibrated scores for a stated rate of wrong answers (``threshold_for_rate``).

Pure functions over floats; stdlib only. Determinism matters because a calibration is
part of what a run records and a replay must reproduce: every sum goes through
``math.fsum`` (exactly rounded, hence independent of summation order), so the same
examples in any order give bit-identical parameters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

LOGISTIC: Final = "logistic"
IDENTITY_METHOD: Final = "identity"
_METHODS = frozenset({LOGISTIC, IDENTITY_METHOD})
# calibrated probabilities stay strictly inside (0, 1): a gate or a log-odds report must
# never see a "certain" 0 or 1 that only float rounding produced
_LOWEST = math.nextafter(0.0, 1.0)
_HIGHEST = math.nextafter(1.0, 0.0)
_GRAD_TOL = 1e-12
_ARMIJO = 1e-4
_MAX_HALVINGS = 60


@dataclass(frozen=True)
class Calibration:
    """``p = sigmoid(a * score + b)``, fitted on ``n`` examples of which ``positives`` relevant.

    ``method == "identity"`` marks an uncalibrated tenant: ``apply`` then returns the raw
    score clamped to [0, 1], and ``a``/``b`` are fixed at 1 and 0 and unused.
    """

    a: float
    b: float
    n: int
    positives: int
    method: str = LOGISTIC

    def __post_init__(self) -> None:
        """Refuse values a stored or replayed calibration could never legitimately hold."""
        if self.method not in _METHODS:
            raise ValueError(f"calibration method must be one of {sorted(_METHODS)}")
        for name in ("a", "b"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"calibration {name} must be a number")
            if not math.isfinite(value):
                raise ValueError(f"calibration {name} must be finite, not {value}")
        for name in ("n", "positives"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"calibration {name} must be a non-negative integer")
        if self.positives > self.n:
            raise ValueError("calibration positives cannot exceed n")
        if self.method == IDENTITY_METHOD and (self.a, self.b) != (1.0, 0.0):
            raise ValueError("an identity calibration has a = 1 and b = 0")

    @classmethod
    def identity(cls) -> Calibration:
        """The calibration of a tenant without labelled examples (raw score clamped to [0, 1])."""
        return cls(a=1.0, b=0.0, n=0, positives=0, method=IDENTITY_METHOD)

    def apply(self, score: float) -> float:
        """The calibrated score; in (0, 1) for ``logistic``, in [0, 1] for ``identity``."""
        if math.isnan(score):
            raise ValueError("cannot calibrate NaN")
        if self.method == IDENTITY_METHOD:
            return min(max(float(score), 0.0), 1.0)
        z = self.a * score + self.b
        if math.isnan(z):  # only an infinite score with a == 0 gets here
            raise ValueError(f"calibration of {score} is undefined")
        return min(max(sigmoid(z), _LOWEST), _HIGHEST)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form; floats survive a JSON round trip exactly (shortest repr)."""
        return {
            "method": self.method,
            "a": float(self.a),
            "b": float(self.b),
            "n": self.n,
            "positives": self.positives,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> Calibration:
        """Inverse of ``to_dict``; raises ``ValueError`` on missing, extra or mistyped fields."""
        expected = {"method", "a", "b", "n", "positives"}
        if set(raw) != expected:
            raise ValueError(f"calibration fields must be {sorted(expected)}, got {sorted(raw)}")
        method, a, b, n, positives = (raw[k] for k in ("method", "a", "b", "n", "positives"))
        if not isinstance(method, str):
            raise ValueError("calibration method must be a string")
        for name, value in (("a", a), ("b", b)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"calibration {name} must be a number")
        for name, value in (("n", n), ("positives", positives)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"calibration {name} must be an integer")
        assert isinstance(a, int | float) and isinstance(b, int | float)  # narrowed above
        assert isinstance(n, int) and isinstance(positives, int)
        return cls(a=float(a), b=float(b), n=n, positives=positives, method=method)


IDENTITY: Final = Calibration.identity()
"""Same as ``Calibration.identity()``: raw score clamped to [0, 1], method ``identity``."""


def sigmoid(z: float) -> float:
    """The logistic function, without overflow (also used by stichtag.domain.relevance)."""
    # two branches so exp never overflows: exp of a non-positive number is at most 1
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def softplus(z: float) -> float:
    """``log(1 + exp(z))`` without overflow (the logistic loss of a negative example)."""
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def _check_examples(scores: Sequence[float], labels: Sequence[bool]) -> None:
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    if any(not math.isfinite(s) for s in scores):
        raise ValueError("scores must be finite numbers")


def fit_logistic(
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    l2: float = 1e-3,
    max_iter: int = 200,
) -> Calibration:
    """Fit ``sigmoid(a * score + b)`` to labelled examples by damped Newton's method.

    Minimizes the mean logistic loss plus ``l2 / 2 * alpha**2``, where ``alpha`` is the
    slope on *standardized* scores (so ``l2`` means the same for cosines in [0, 1] and
    logits in [-10, 10]). Only the slope is penalized: the intercept carries the base
    rate, and shrinking it would pull probabilities toward 0.5. The penalty keeps the
    slope finite on perfectly separable examples, where the unpenalized optimum is at
    infinity. Raises ``ValueError`` for fewer than 2 relevant or 2 irrelevant examples,
    for scores that are all equal, or if Newton's method does not converge.
    """
    _check_examples(scores, labels)
    if not (l2 > 0.0 and math.isfinite(l2)):
        raise ValueError("l2 must be a positive finite number (it bounds separable fits)")
    if max_iter < 1:
        raise ValueError("max_iter must be >= 1")
    n = len(scores)
    positives = sum(1 for y in labels if y)
    if positives < 2 or n - positives < 2:
        raise ValueError(
            f"calibration needs at least 2 relevant and 2 irrelevant examples, got "
            f"{positives} relevant and {n - positives} irrelevant"
        )
    mean = math.fsum(scores) / n
    spread = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / n)
    if spread == 0.0:
        raise ValueError("all scores are equal; they carry no signal to calibrate")
    z = [(s - mean) / spread for s in scores]
    y = [1.0 if label else 0.0 for label in labels]
    alpha, beta = _newton(z, y, l2=l2, max_iter=max_iter)
    # undo the standardization: alpha * (s - mean) / spread + beta = a * s + b
    a = alpha / spread
    b = beta - alpha * mean / spread
    return Calibration(a=a, b=b, n=n, positives=positives, method=LOGISTIC)


def _objective(z: list[float], y: list[float], alpha: float, beta: float, l2: float) -> float:
    # loss of one example: softplus(t) - y * t with t = alpha * z + beta
    loss = math.fsum(
        softplus(alpha * zi + beta) - yi * (alpha * zi + beta) for zi, yi in zip(z, y, strict=True)
    )
    return loss / len(z) + 0.5 * l2 * alpha * alpha


def _newton(z: list[float], y: list[float], *, l2: float, max_iter: int) -> tuple[float, float]:
    n = len(z)
    positives = math.fsum(y)
    # start at the best constant model: no slope, intercept = log-odds of the base rate
    alpha, beta = 0.0, math.log(positives / (n - positives))
    current = _objective(z, y, alpha, beta, l2)
    for _ in range(max_iter):
        p = [sigmoid(alpha * zi + beta) for zi in z]
        r = [pi - yi for pi, yi in zip(p, y, strict=True)]
        w = [pi * (1.0 - pi) for pi in p]
        g_a = math.fsum(ri * zi for ri, zi in zip(r, z, strict=True)) / n + l2 * alpha
        g_b = math.fsum(r) / n
        if max(abs(g_a), abs(g_b)) <= _GRAD_TOL:
            return alpha, beta
        h_aa = math.fsum(wi * zi * zi for wi, zi in zip(w, z, strict=True)) / n + l2
        h_ab = math.fsum(wi * zi for wi, zi in zip(w, z, strict=True)) / n
        h_bb = math.fsum(w) / n
        det = h_aa * h_bb - h_ab * h_ab
        if det > 0.0 and h_bb > 0.0:
            step_a = -(h_bb * g_a - h_ab * g_b) / det
            step_b = -(h_aa * g_b - h_ab * g_a) / det
        else:
            # saturated probabilities make the Hessian numerically singular: fall back to
            # a gradient step (the line search below still guarantees descent)
            step_a, step_b = -g_a, -g_b
        slope = g_a * step_a + g_b * step_b  # directional derivative, < 0 for descent
        t = 1.0
        for _ in range(_MAX_HALVINGS):
            cand_a, cand_b = alpha + t * step_a, beta + t * step_b
            cand = _objective(z, y, cand_a, cand_b, l2)
            if cand <= current + _ARMIJO * t * slope:
                break
            t *= 0.5
        else:
            # no representable step lowers the objective: we are at its numerical minimum
            return alpha, beta
        if (cand_a, cand_b) == (alpha, beta):
            return alpha, beta
        alpha, beta, current = cand_a, cand_b, cand
    raise ValueError(f"logistic calibration did not converge in {max_iter} Newton steps")


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve: P(score of a random relevant > random irrelevant).

    Ties count one half (the Mann-Whitney convention). Computed exactly in integers
    from one sort, so it equals the brute-force count over all pairs.
    """
    _check_examples(scores, labels)
    positives = sum(1 for y in labels if y)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise ValueError("ROC AUC needs at least one relevant and one irrelevant example")
    ranked = sorted(zip(scores, labels, strict=True), key=lambda item: item[0])
    twice_wins = 0  # 2 * (pairs won) + (pairs tied), to stay in integers
    negatives_below = 0
    i = 0
    while i < len(ranked):
        j = i
        pos_here = neg_here = 0
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            if ranked[j][1]:
                pos_here += 1
            else:
                neg_here += 1
            j += 1
        twice_wins += 2 * pos_here * negatives_below + pos_here * neg_here
        negatives_below += neg_here
        i = j
    return twice_wins / (2 * positives * negatives)


def threshold_for_rate(
    calibrated_scores: Sequence[float],
    labels: Sequence[bool],
    *,
    max_wrong_rate: float,
) -> float:
    """Smallest threshold θ whose delivered items hold at most ``max_wrong_rate`` negatives.

    An item is delivered (answered) when its score is ``>= θ``. The wrong rate is
    ``negatives delivered / items delivered``: the denominator is the number of items at
    or above θ, not the number of all items nor of all negatives. θ is always one of the
    observed scores, so items with equal scores are delivered together or not at all
    (ties never depend on input order). Smaller θ delivers more, so this is the θ that
    answers most while meeting the rate. If no θ meets it (e.g. the best-scored item is
    irrelevant and the rate is 0), returns ``math.inf``: abstain on everything.
    """
    _check_examples(calibrated_scores, labels)
    if not calibrated_scores:
        raise ValueError("threshold selection needs at least one example")
    if not 0.0 <= max_wrong_rate <= 1.0:
        raise ValueError("max_wrong_rate must be within [0, 1]")
    ranked = sorted(
        zip(calibrated_scores, labels, strict=True), key=lambda item: item[0], reverse=True
    )
    best = math.inf
    delivered = wrong = 0
    i = 0
    while i < len(ranked):
        value = ranked[i][0]
        while i < len(ranked) and ranked[i][0] == value:
            delivered += 1
            wrong += 0 if ranked[i][1] else 1
            i += 1
        # a float quotient of two ints is correctly rounded, so a rate given as 0.15
        # accepts exactly 3 wrong of 20 (an exact-fraction test against the binary
        # value of 0.15, which is slightly below 0.15, would not)
        if wrong / delivered <= max_wrong_rate:
            best = value
    return float(best)
