"""The fitted values of the cross-language scope rule (``stichtag.domain.crosslang``).

Written by ``eval/fit_crosslang.py`` on the fit half of eval/law_questions; do not edit by
hand — rerun the script (docs/evaluation.md, "Questions across languages").
"""

from __future__ import annotations

CROSS_SCOPE = 0.8
CROSS_RELEVANCE: dict[str, object] = {
    "id": "relevance-1", "method": "identity", "features": ["rerank"], "weights": [1.0],
    "intercept": 0.0, "means": [0.0], "scales": [1.0]}
RATIONALE = "placeholder before the first fit"
