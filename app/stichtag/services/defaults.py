"""The built-in thresholds (version 0), which a fresh tenant answers with.

Written by ``eval/fit_defaults.py`` from public labelled data read in place; do not edit
by hand — rerun the script (docs/thresholds.md, "Built-in defaults").
"""

from __future__ import annotations

THETA_REL = 0.5910917480048777
TAU = 1.0
THETA_SCOPE = 0.5
RELEVANCE: dict[str, object] = {
    "id": "relevance-2",
    "method": "logistic",
    "features": [
        "rerank",
        "matched",
        "coverage",
        "numbers",
        "cross"
    ],
    "weights": [
        0.985892727577517,
        0.5079831348774236,
        0.6880773408746668,
        0.11125292747341804,
        0.7353324716845695
    ],
    "intercept": 0.4588677365592293,
    "means": [
        0.8758994526456253,
        1.4822439262717564,
        0.5903082084172084,
        0.9911550468262227,
        1.3368016558003484
    ],
    "scales": [
        0.032061975153213136,
        0.874776174605364,
        0.26527095066593326,
        0.09363076405290625,
        1.2477356086057718
    ],
    "n": 1922,
    "positives": 1447,
    "cross_encoder": "6dce2f54ea8b715da0308df155cd3c4abb2dde674dec2e8b01f6b02f7a14303f"
}
RATIONALE = (
    "Built-in default fitted by eval/fit_defaults.py on public data (clapnq 274, law 50, "
    "law-questions 1681, xquad-de 442, xquad-en 442 fitting items; CLAPnq Apache-2.0, "
    "XQuAD CC BY-SA 4.0, German federal law; sha256 law manifest d483d6cc463e, "
    "asof_de_insurance.jsonl 25a8a4c4656d, out_of_scope_de.jsonl 8878b2a407de, "
    "not_yet_in_force_de.jsonl ba7adf235337, law_questions/fit.jsonl d8a6e164a3f8, "
    "law_questions/test.jsonl 22118aada2dd, clapnq answerable 3eefef4a3d4e, clapnq "
    "unanswerable a04f4fd625a6, xquad.de 990b5d746746, xquad.en e4c57d1c9143). Relevance "
    "model (standardized weights rerank +0.986, matched +0.508, coverage +0.688, numbers "
    "+0.111, cross +0.735, intercept +0.459) fitted on the items passing the scope gate, "
    "sources weighted equally; theta_rel 0.5911: the lowest threshold refusing >= 95% of "
    "unanswerable fitting items with both gates (equal source weights); theta_scope 0.50: "
    "of the grid 0-0.6, the strictest whose weighted delivery of answerable fitting items "
    "(69.9%) is within 1% of the best (70.7%). tau 1.0. See docs/thresholds.md.")
