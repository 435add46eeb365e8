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
        0.018337049916783088
    ],
    "intercept": 2.2028991925316417,
    "means": [
        0.8499208195913446
    ],
    "scales": [
        0.007695105419211318
    ],
    "n": 201,
    "positives": 181
}
RATIONALE = (
    "fitted by eval/fit_crosslang.py on the English items of the law question set's f"
    "it half (230 answerable, 63 unanswerable; sha256 d8a6e164a3f8): CROSS_SCOPE 0.83"
    "7621, the lowest cosine refusing >= 95% of the off-corpus items; on the fit half"
    " with theta_rel 0.6996: 78.7% of answerable delivered, 68.3% of unanswerable ref"
    "used (96.6% of off-corpus)"
)
