"""The relevance signal gate 1 compares: one calibrated score from several measured ones.

The raw reranker score alone (the default is the e5 cosine) does not separate answerable
from unanswerable questions well: topically close passages score high whether or not they
answer. So the gate reads four features of the run's candidates, each max-pooled over the
reranked passages, and a fitted logistic model turns them into P(answerable):

- ``rerank``: the best raw rerank score;
- ``matched``: the most salient weight one candidate (its heading path and text)
  supports — the sum, over the question's aspects it covers, of their rarity in force;
- ``coverage``: that weight as a share of the question's whole salient weight
  (``stichtag.domain.salience``);
- ``numbers``: the best share of the question's quantities and years that one candidate
  states (1.0 when the question has none);
- ``cross``: the best logit of the cross-encoder, the one model that reads question and
  passage together (docs/models.md, "The student cross-encoder"); present only when the
  node serves one. A model that reads it has the id ``relevance-2`` and is bound to that
  cross-encoder's hash: another cross-encoder's logits never meet it.

Not BM25 itself, although it carries the same idea: tantivy's BM25 statistics include
deleted documents until segments merge, so two nodes' replicas of one index give slightly
different scores for the same query, and a gate value near θ_rel could differ between
them. ``matched`` weighs terms by their document frequency among the passages visible at
the as-of pair, counted exactly, so every node and every replay computes the same value.

``p = sigmoid(b + sum(w_i * (x_i - mean_i) / scale_i))``: the means and scales are part of
the model, so an auditor recomputes a gate value from the recorded features with this
formula alone. ``RELEVANCE_ID`` (``RELEVANCE_CROSS_ID`` with ``cross``) names the feature
definitions; any change bumps it.
A model whose method is ``identity`` reads only ``rerank`` (clamped to [0, 1]): the
behaviour of an uncalibrated tenant before this module existed.

Fitting is deterministic: Newton's method with exactly rounded sums (``math.fsum``) and a
fixed elimination order, so the same examples in any order give the same coefficients.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from stichtag.domain.calibration import Calibration, sigmoid, softplus

RELEVANCE_ID = "relevance-1"
RELEVANCE_CROSS_ID = "relevance-2"  # the same features plus ``cross``
LEXICAL_FEATURES = ("rerank", "matched", "coverage", "numbers")
FEATURES = (*LEXICAL_FEATURES, "cross")
NO_LOGIT = -20.0  # the ``cross`` value of a question that retrieved nothing: least relevant
LOGISTIC, IDENTITY = "logistic", "identity"
_GRAD_TOL = 1e-10
_MAX_HALVINGS = 60
_ARMIJO = 1e-4


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """What gate 1 knows about one reranked candidate."""

    rerank: float
    matched: float
    coverage: float
    numbers: float
    cross: float | None = None
    """The cross-encoder's logit; None where the node serves none (or the run predates it)."""


def candidate_features(c: Candidate) -> dict[str, float]:
    """One candidate's features (what orders the evidence of a run)."""
    out = {"rerank": c.rerank, "matched": c.matched, "coverage": c.coverage,
           "numbers": c.numbers}
    if c.cross is not None:
        out["cross"] = c.cross
    return out


def features(candidates: Iterable[Candidate]) -> dict[str, float] | None:
    """The max-pooled features of a run's candidates; None when nothing was retrieved."""
    rows = [candidate_features(c) for c in candidates]
    if not rows:
        return None
    names = [n for n in FEATURES if all(n in r for r in rows)]
    return {name: max(r[name] for r in rows) for name in names}


@dataclass(frozen=True, kw_only=True, slots=True)
class RelevanceModel:
    """``p = sigmoid(intercept + sum(weights[i] * (x[i] - means[i]) / scales[i]))``."""

    method: str
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    n: int = 0
    positives: int = 0
    reranker: str | None = None
    """The model hash of the reranker whose scores ``rerank`` was fitted on (set by
    calibration); None: the default cosine's, whatever its build (the built-in model)."""
    cross_encoder: str | None = None
    """The model hash of the cross-encoder whose logits ``cross`` was fitted on; set
    exactly when the model reads ``cross``."""

    def __post_init__(self) -> None:
        """Refuse models a record could never legitimately hold."""
        if self.method not in (LOGISTIC, IDENTITY):
            raise ValueError(f"relevance method must be {LOGISTIC} or {IDENTITY}")
        sizes = {len(self.features), len(self.weights), len(self.means), len(self.scales)}
        if len(sizes) != 1:
            raise ValueError("features, weights, means and scales must have one length")
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown relevance features: {sorted(unknown)}")
        values = (*self.weights, self.intercept, *self.means, *self.scales)
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
            raise ValueError("relevance coefficients must be finite numbers")
        if any(s <= 0 for s in self.scales):
            raise ValueError("relevance scales must be positive")
        if self.method == IDENTITY and self.features != ("rerank",):
            raise ValueError("an identity relevance model reads the rerank score only")
        if ("cross" in self.features) != (self.cross_encoder is not None):
            raise ValueError("a relevance model reads cross exactly when it names the "
                             "cross-encoder it was fitted on")

    @property
    def model_id(self) -> str:
        """``relevance-2`` when the model reads the cross-encoder, else ``relevance-1``."""
        return RELEVANCE_CROSS_ID if "cross" in self.features else RELEVANCE_ID

    @classmethod
    def identity(cls) -> RelevanceModel:
        """The raw rerank score clamped to [0, 1] (no calibration)."""
        return cls(method=IDENTITY, features=("rerank",), weights=(1.0,), intercept=0.0,
                   means=(0.0,), scales=(1.0,))

    @classmethod
    def from_calibration(cls, calibration: Calibration) -> RelevanceModel:
        """A tenant's one-feature calibration of the rerank score, as a model."""
        if calibration.method == "identity":
            return cls.identity()
        return cls(method=LOGISTIC, features=("rerank",), weights=(calibration.a,),
                   intercept=calibration.b, means=(0.0,), scales=(1.0,), n=calibration.n,
                   positives=calibration.positives)

    def apply(self, values: Mapping[str, float]) -> float:
        """P(answerable) for max-pooled feature values; NaN input raises, and so does a
        missing feature (a ``relevance-2`` model on a run without cross-encoder logits:
        callers check ``missing`` first and fail closed)."""
        xs = [float(values[name]) for name in self.features]
        if any(math.isnan(x) for x in xs):
            raise ValueError("cannot score NaN features")
        if self.method == IDENTITY:
            return min(max(xs[0], 0.0), 1.0)
        z = self.intercept + math.fsum(
            w * (x - m) / s for w, x, m, s in zip(self.weights, xs, self.means, self.scales,
                                                   strict=True))
        return min(max(sigmoid(z), math.nextafter(0.0, 1.0)), math.nextafter(1.0, 0.0))

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (floats round-trip exactly)."""
        return {"id": self.model_id, "method": self.method, "features": list(self.features),
                "weights": list(self.weights), "intercept": self.intercept,
                "means": list(self.means), "scales": list(self.scales), "n": self.n,
                "positives": self.positives,
                # absent when unbound, so records written before the binding compare equal
                **({"reranker": self.reranker} if self.reranker is not None else {}),
                **({"cross_encoder": self.cross_encoder}
                   if self.cross_encoder is not None else {})}

    def missing(self, values: Mapping[str, float] | None) -> list[str]:
        """The features this model reads that ``values`` lacks."""
        return [n for n in self.features if values is None or n not in values]

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> RelevanceModel:
        """Inverse of ``to_dict``; raises ValueError on a malformed or foreign model."""
        if raw.get("id") not in (RELEVANCE_ID, RELEVANCE_CROSS_ID):
            raise ValueError(f"relevance model {raw.get('id')!r} is not {RELEVANCE_ID} "
                             f"or {RELEVANCE_CROSS_ID}")

        def floats(name: str) -> tuple[float, ...]:
            value = raw.get(name)
            if not isinstance(value, list):
                raise ValueError(f"relevance {name} must be a list")
            return tuple(float(v) for v in value)

        features_ = raw.get("features")
        if not isinstance(features_, list) or not all(isinstance(f, str) for f in features_):
            raise ValueError("relevance features must be a list of names")
        n, positives, intercept = raw.get("n", 0), raw.get("positives", 0), raw.get("intercept")
        if not isinstance(n, int) or not isinstance(positives, int):
            raise ValueError("relevance n and positives must be integers")
        if not isinstance(intercept, int | float):
            raise ValueError("relevance intercept must be a number")
        reranker = raw.get("reranker")
        if reranker is not None and not isinstance(reranker, str):
            raise ValueError("relevance reranker must be a model hash")
        cross = raw.get("cross_encoder")
        if cross is not None and not isinstance(cross, str):
            raise ValueError("relevance cross_encoder must be a model hash")
        model = cls(method=str(raw.get("method")), features=tuple(features_),
                    weights=floats("weights"), intercept=float(intercept),
                    means=floats("means"), scales=floats("scales"), n=n, positives=positives,
                    reranker=reranker, cross_encoder=cross)
        if model.model_id != raw.get("id"):
            raise ValueError(f"relevance model {raw.get('id')!r} with features "
                             f"{list(model.features)}")
        return model


def fit_relevance(rows: Sequence[Mapping[str, float]], labels: Sequence[bool], *,
                  names: Sequence[str] = LEXICAL_FEATURES, l2: float = 1e-2,
                  weights: Sequence[float] | None = None,
                  max_iter: int = 100, cross_encoder: str | None = None) -> RelevanceModel:
    """Fit the logistic model on labelled feature rows (True = answerable).

    Features are standardized (mean, population standard deviation; a constant feature
    gets scale 1 and, with the penalty, weight 0). L2 shrinks the weights, not the
    intercept. ``weights`` (positive, mean 1 recommended) weigh examples in the loss, e.g.
    to give several data sets equal say. ``cross_encoder`` names the model whose logits
    the ``cross`` column holds (required exactly when ``names`` has it). Raises ValueError
    for fewer than 2 examples of either class.
    """
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    sample = [1.0] * len(rows) if weights is None else [float(w) for w in weights]
    if len(sample) != len(rows) or any(not w > 0 for w in sample):
        raise ValueError("weights must be positive, one per row")
    positives = sum(1 for y in labels if y)
    if positives < 2 or len(labels) - positives < 2:
        raise ValueError("fitting needs at least 2 answerable and 2 unanswerable examples")
    cols = [[float(r[name]) for r in rows] for name in names]
    if any(not math.isfinite(v) for col in cols for v in col):
        raise ValueError("feature values must be finite")
    means = [math.fsum(col) / len(col) for col in cols]
    scales = []
    for col, mean in zip(cols, means, strict=True):
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in col) / len(col))
        scales.append(sd if sd > 1e-12 else 1.0)
    z = [[(v - m) / s for v, m, s in zip(vals, means, scales, strict=True)]
         for vals in zip(*cols, strict=True)]
    y = [1.0 if label else 0.0 for label in labels]
    coefficients, intercept = _newton(z, y, sample, l2=l2, max_iter=max_iter)
    return RelevanceModel(method=LOGISTIC, features=tuple(names), weights=tuple(coefficients),
                          intercept=intercept, means=tuple(means), scales=tuple(scales),
                          n=len(labels), positives=positives, cross_encoder=cross_encoder)


def _objective(z: list[list[float]], y: list[float], s: list[float], *, w: list[float],
               b: float, l2: float) -> float:
    def margin(row: list[float]) -> float:
        return b + math.fsum(wi * xi for wi, xi in zip(w, row, strict=True))

    loss = math.fsum(si * (softplus(margin(row)) - yi * margin(row))
                     for row, yi, si in zip(z, y, s, strict=True))
    return loss / math.fsum(s) + 0.5 * l2 * math.fsum(wi * wi for wi in w)


def _solve(a: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None for a singular system."""
    n = len(rhs)
    m = [[*row, v] for row, v in zip(a, rhs, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-14:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            m[r] = [x - f * p for x, p in zip(m[r], m[col], strict=True)]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (m[r][n] - math.fsum(m[r][c] * out[c] for c in range(r + 1, n))) / m[r][r]
    return out


def _newton(z: list[list[float]], y: list[float], s: list[float], *, l2: float,
            max_iter: int) -> tuple[list[float], float]:
    n, d = math.fsum(s), len(z[0])
    pos = math.fsum(si * yi for si, yi in zip(s, y, strict=True))
    w, b = [0.0] * d, math.log(pos / (n - pos))
    current = _objective(z, y, s, w=w, b=b, l2=l2)
    for _ in range(max_iter):
        p = [sigmoid(b + math.fsum(wi * xi for wi, xi in zip(w, row, strict=True)))
             for row in z]
        r = [si * (pi - yi) for pi, yi, si in zip(p, y, s, strict=True)]
        q = [si * pi * (1.0 - pi) for pi, si in zip(p, s, strict=True)]
        grad = [math.fsum(ri * row[j] for ri, row in zip(r, z, strict=True)) / n + l2 * w[j]
                for j in range(d)] + [math.fsum(r) / n]
        if max(abs(g) for g in grad) <= _GRAD_TOL:
            break
        ext = [[*row, 1.0] for row in z]
        hess = [[math.fsum(qi * e[i] * e[j] for qi, e in zip(q, ext, strict=True)) / n
                 + (l2 if i == j < d else 0.0) for j in range(d + 1)] for i in range(d + 1)]
        step = _solve(hess, [-g for g in grad]) or [-g for g in grad]
        slope = math.fsum(g * s for g, s in zip(grad, step, strict=True))
        t = 1.0
        for _ in range(_MAX_HALVINGS):
            cw = [wi + t * si for wi, si in zip(w, step[:d], strict=True)]
            cb = b + t * step[d]
            cand = _objective(z, y, s, w=cw, b=cb, l2=l2)
            if cand <= current + _ARMIJO * t * slope:
                break
            t *= 0.5
        else:
            break
        if (cw, cb) == (w, b):
            break
        w, b, current = cw, cb, cand
    else:
        raise ValueError(f"relevance model did not converge in {max_iter} Newton steps")
    return w, b
