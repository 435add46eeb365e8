"""The list rule on questions it was not fitted on (docs/semantics.md, "List questions by
meaning"), with the real e5 embedder: eval/list_intent/test.jsonl (hand-written templates
kept out of the fit) and the law questions' test half (content questions, every one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stichtag.domain.list_intent import asks_for_list, learned_list_question
from stichtag.domain.listing import VERSIONS, list_question

EVAL = Path(__file__).resolve().parents[2] / "eval"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_held_out_list_questions_are_recognised_and_content_questions_are_not(
        embedder: Any) -> None:
    written = _rows(EVAL / "list_intent" / "test.jsonl")
    law = [{"question": r["question"], "label": "content", "kind": None}
           for r in _rows(EVAL / "law_questions" / "test.jsonl")]
    rows = written + law
    vectors = embedder.embed_queries([r["question"] for r in rows])
    taken = [list_question(r["question"]) is not None or asks_for_list(v.tolist())
             for r, v in zip(rows, vectors, strict=True)]
    lists = [t for r, t in zip(rows, taken, strict=True) if r["label"] == "list"]
    content = [t for r, t in zip(rows, taken, strict=True) if r["label"] == "content"]
    assert len(lists) >= 100 and len(content) >= 1800  # the set's size
    assert sum(lists) / len(lists) >= 0.95, f"{sum(lists)}/{len(lists)} lists recognised"
    assert sum(content) / len(content) <= 0.02, f"{sum(content)}/{len(content)} taken"
    # a recognised question naming a subject lists what it asks for: versions or documents
    kinds = [(asked.kind == VERSIONS) == (r["kind"] == VERSIONS)
             for r, v in zip(written, vectors, strict=False) if r["label"] == "list"
             for asked in [learned_list_question(r["question"], v.tolist(),
                                                 embedder.model_hash)] if asked is not None]
    assert len(kinds) >= 90 and sum(kinds) / len(kinds) >= 0.95


def test_the_hard_content_questions_of_the_suite_stay_content(embedder: Any) -> None:
    questions = [
        "Welche Fassung der Vorschrift gilt am 1.1.2020 für die Zinszusatzreserve?",
        "Which list of risks must the insurer keep?",
        "Welche Fassung der DeckRV galt 2019?",
        "Welche Unterlagen zur Antragsprüfung sind einzureichen?",
        "Which documents must a claimant submit?",
        "Welcher Höchstrechnungszins gilt für Neugeschäft?",
    ]
    vectors = embedder.embed_queries(questions)
    assert [q for q, v in zip(questions, vectors, strict=True)
            if learned_list_question(q, v.tolist(), embedder.model_hash)] == []
