"""The fitted values of the cross-language scope rule (``stichtag.domain.crosslang``).

Written by ``eval/fit_crosslang.py`` on the fit half of eval/law_questions; do not edit by
hand — rerun the script (docs/evaluation.md, "Questions across languages").
"""

from __future__ import annotations

CROSS_SCOPE = 0.837621
CROSS_RELEVANCE: dict[str, object] = {
    "id": "relevance-1",
    "method": "logistic",
    "features": [
        "rerank"
    ],
    "weights": [
        0.002068758078186204
    ],
    "intercept": 2.254059785062188,
    "means": [
        0.8499346856141957
    ],
    "scales": [
        0.007711813993173563
    ],
    "n": 200,
    "positives": 181
}
RATIONALE = (
    "fitted by eval/fit_crosslang.py on the English items of the law question set's f"
    "it half (230 answerable, 50 unanswerable; sha256 8302ac32db0b): CROSS_SCOPE 0.83"
    "7621, the lowest cosine refusing >= 95% of the off-corpus items; on the fit half"
    " with theta_rel 0.6996: 78.7% of answerable delivered, 62.0% of unanswerable ref"
    "used (100.0% of off-corpus)"
)
