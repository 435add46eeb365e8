"""The built-in thresholds (version 0), which a fresh tenant answers with.

Written by ``eval/fit_defaults.py`` from public labelled data read in place; do not edit
by hand — rerun the script (docs/thresholds.md, "Built-in defaults").
"""

from __future__ import annotations

THETA_REL = 0.6996391382503158
TAU = 1.0
THETA_SCOPE = 0.45
RELEVANCE: dict[str, object] = {
    "id": "relevance-1",
    "method": "logistic",
    "features": [
        "rerank",
        "matched",
        "coverage",
        "numbers"
    ],
    "weights": [
        1.380434011692488,
        0.6389214535984906,
        0.9361291472594285,
        0.10037931430084857
    ],
    "intercept": -0.07691060725754231,
    "means": [
        0.8594856875262522,
        1.7886718287243095,
        0.5691085554800305,
        0.9900482509047045
    ],
    "scales": [
        0.03330863683074838,
        1.0013378461063602,
        0.26261852826467397,
        0.09926082704289654
    ],
    "n": 3316,
    "positives": 1907
}
RATIONALE = (
    "Built-in default fitted by eval/fit_defaults.py on public data (clapnq 274, law 50, "
    "xquad-de 1792, xquad-en 1792 fitting items; CLAPnq Apache-2.0, XQuAD CC BY-SA 4.0, "
    "German federal law; sha256 law manifest d483d6cc463e, asof_de_insurance.jsonl "
    "25a8a4c4656d, out_of_scope_de.jsonl 8878b2a407de, not_yet_in_force_de.jsonl "
    "ba7adf235337, clapnq answerable 3eefef4a3d4e, clapnq unanswerable a04f4fd625a6, "
    "xquad.de 990b5d746746, xquad.en e4c57d1c9143). Relevance model (standardized weights "
    "rerank +1.380, matched +0.639, coverage +0.936, numbers +0.100, intercept -0.077) "
    "fitted on the items passing the scope gate, sources weighted equally; theta_rel "
    "0.6996: the lowest threshold refusing >= 95% of unanswerable fitting items with both "
    "gates (equal source weights); theta_scope 0.45: of the grid 0-0.6, the strictest "
    "whose weighted delivery of answerable fitting items (70.6%) is within 1% of the best "
    "(71.1%). tau 1.0. See docs/thresholds.md.")
