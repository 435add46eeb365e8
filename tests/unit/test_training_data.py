"""The reranker's training data never contains evaluation material
(app/stichtag/training/data.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from stichtag.training import data
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def shared() -> Path:
    """The shared/ directory (skips, naming the path, where it is missing)."""
    return shared_path("eval", "xquad").parents[1]


@pytest.fixture(scope="module")
def pairs(shared: Path) -> list[data.Pair]:
    """Every training pair."""
    return data.training_pairs(shared=shared)[0]


def test_xquad_held_out_articles_are_fixed(shared: Path) -> None:
    # the list documented in docs/models.md; a change here is a change of the split
    assert data.xquad_held_out(shared) == [
        "1973_oil_crisis", "Amazon_rainforest", "Ctenophora", "French_and_Indian_War",
        "Fresno,_California", "Jacksonville,_Florida", "Newcastle_upon_Tyne", "Prime_number",
        "Private_school", "Sky_(United_Kingdom)", "Victoria_(Australia)", "Warsaw",
    ]


def test_no_held_out_question_or_passage_is_trained_on(shared: Path,
                                                       pairs: list[data.Pair]) -> None:
    groups = {p.group for p in pairs}
    passages = {p.passage for p in pairs}
    for lang in ("de", "en"):
        for q in data.xquad_questions(lang, "held-out", shared):
            assert q.qid not in groups
            assert not passages & set(q.passages)
    for p in data.law_pairs("held-out", shared=shared):
        assert p.group not in groups
    held_law = {s.passages[0] for law in data.LAWS for s in data.law_sections(law, shared)
                if s.held_out}
    trained_law = {p.passage for p in pairs if p.source == "law"}
    assert not held_law & trained_law


def test_clapnq_uses_the_calibration_half_only(shared: Path, pairs: list[data.Pair]) -> None:
    questions = data.clapnq_questions(shared)
    test = [q for q in questions if q.half == 1]
    assert len(test) == 325  # the eval's test half: 157 answerable + 168 unanswerable
    for q in test:
        assert int(hashlib.sha256(q.qid.removeprefix("clapnq-").encode()).hexdigest(), 16) % 2
    test_ids = {q.qid for q in test}
    test_passages = {b for q in test for b in q.passages}
    clap = [p for p in pairs if p.source == "clapnq"]
    assert clap and not {p.group for p in clap} & test_ids
    assert not {p.passage for p in clap} & test_passages


def test_pairs_are_a_function_of_the_files(shared: Path, pairs: list[data.Pair]) -> None:
    again, sources = data.training_pairs(shared=shared)
    assert data.pairs_hash(again) == data.pairs_hash(pairs)
    assert {s.name for s in sources} == {"xquad-de-en-train", "clapnq-calibration-half",
                                         "de-insurance-law-train-sections"}
    assert all(len(h) == 64 for s in sources for h in s.files.values())
    assert sum(s.pairs for s in sources) == len(pairs)
    assert {p.label for p in pairs} == {0, 1}


def test_extra_labels(tmp_path: Path, shared: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [{"question": "Was ist versichert?", "passage": "Versichert ist der Hausrat.",
             "label": 1}, {"question": "Wer zahlt?", "passage": "Das Wetter war gut.",
                           "label": False}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    extra = data.label_pairs(path)
    assert [(p.label, p.source) for p in extra] == [(1, "labels"), (0, "labels")]
    pairs, sources = data.training_pairs(shared=shared, labels=path)
    assert pairs[-2:] == extra and sources[-1].pairs == 2
    path.write_text(json.dumps({**rows[0], "label": 0.5}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="label"):
        data.label_pairs(path)


class _WordRetriever:
    """A stand-in embedder for the mining logic: bag-of-words vectors over a fixed
    hashing space (the real e5 mining is what `train-reranker --retrieved` runs)."""

    model_hash = "words-v1"

    def _vec(self, text: str) -> list[float]:
        out = [0.0] * 64
        for word in text.lower().split():
            out[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        norm = sum(v * v for v in out) ** 0.5 or 1.0
        return [v / norm for v in out]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]


def test_retrieved_clapnq_pairs_stay_in_the_calibration_half(shared: Path) -> None:
    questions = data.clapnq_questions(shared)
    test_passages = {b for q in questions if q.half == 1 for b in q.passages}
    by_id = {q.qid: q for q in questions}
    mined = data.clapnq_retrieved_pairs(_WordRetriever(), k=5, shared=shared)
    assert mined and {p.source for p in mined} == {"clapnq-retrieved"}
    assert not {p.passage for p in mined} & test_passages
    assert all(by_id[p.group].half == 0 for p in mined)
    per_question: dict[str, int] = {}
    for p in mined:
        per_question[p.group] = per_question.get(p.group, 0) + 1
        q = by_id[p.group]
        gold = {b for b, pos in zip(q.passages, q.positive, strict=True) if pos}
        assert p.label == int(p.passage in gold)  # positive iff it holds a selected sentence
    assert set(per_question.values()) == {5}
    assert any(p.passage not in by_id[p.group].passages for p in mined)  # other documents


def test_repeat_and_retrieval_are_recorded_in_the_provenance(shared: Path,
                                                              pairs: list[data.Pair]) -> None:
    weighted, sources = data.training_pairs(shared=shared, retriever=_WordRetriever(),
                                            retrieved_k=3, clapnq_repeat=2)
    plain = [p for p in pairs if p.source == "clapnq"]
    clapnq = [p for p in weighted if p.source.startswith("clapnq")]
    assert len(clapnq) % 2 == 0 and len(clapnq) > 2 * len(plain)
    assert clapnq[: len(clapnq) // 2] == clapnq[len(clapnq) // 2:]
    (name,) = [s.name for s in sources if s.name.startswith("clapnq")]
    assert name == "clapnq-calibration-half+retrieved-top3-by-words-v1x2"
    assert data.pairs_hash(weighted) != data.pairs_hash(pairs)
    with pytest.raises(ValueError, match="clapnq_repeat"):
        data.training_pairs(shared=shared, clapnq_repeat=0)
