"""The extractive answer cites the sentence that answers, by meaning, on the demo corpus,
with the real int8 e5 embedder; the record names the sentence rule and model, and replay
recomputes the cosines and names any that moved (docs/evaluation.md, "Choosing the answer
sentence"; docs/architecture.md §8)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from stichtag.bootstrap import Services
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.sentence_rule import MEANING_RULE, OVERLAP_RULE
from stichtag.services.access import Principal
from stichtag.services.answer import PASSAGES

VALID = datetime(2025, 1, 1, tzinfo=UTC)
KNOWN = datetime(2026, 11, 30, tzinfo=UTC)

# "Who" questions about the claims handbook: the sentence that answers, and a sentence
# elsewhere that shares the question's words but not its answer (cited by word overlap).
ANSWERS = [
    ("Who must approve a claim above EUR 100,000 before the decision is communicated?",
     "by a senior claims handler", "Approved benefits are paid"),
]
FRAUD = ("Who receives reports of fraud indicators?", "Special Investigations Unit",
         "count as received on the day of upload")
# Answered as before: the answering sentence already came first. (The fraud question's
# word-overlap neighbour dropped out of the evidence once gate 1 read the cross-encoder.)
ALSO = [
    FRAUD[:2],
    ("Who carries out the mandatory second review?", "by a senior claims handler"),
    ("Who must the claims handler inform if the decision deadline cannot be met?",
     "informs the claimant in writing"),
]


@pytest.fixture
def demo(services: Services, tenant: Principal) -> Iterator[tuple[Services, Principal]]:
    ingest_manifest(services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    services.indexer.catch_up(tenant.tenant_id)
    yield services, tenant


def _ask(svc: Services, who: Principal, question: str) -> Any:
    assert svc.answers is not None
    return svc.answers.answer(who, question, valid_at=VALID, known_at=KNOWN)


@pytest.mark.parametrize(("question", "answer", "neighbour"), ANSWERS)
def test_the_answer_cites_what_answers_first_where_overlap_cited_the_neighbour(
        demo: tuple[Services, Principal], question: str, answer: str,
        neighbour: str) -> None:
    svc, who = demo
    result = _ask(svc, who, question)
    assert result.status in ("answered", "partial"), (result.reason, result.gates)
    assert answer in result.sentences[0].text, [s.text for s in result.sentences]
    # the rule that served before cites the neighbour: this is about the rule
    old = _ask_with(svc, who, question, OVERLAP_RULE)
    assert any(neighbour in s.text for s in old.result.sentences)
    assert old.sentence_scores is not None
    assert all(c is None for c in old.sentence_scores.cosines)


@pytest.mark.parametrize(("question", "answer", "neighbour"), [
    FRAUD,
    pytest.param(*ANSWERS[0], marks=pytest.mark.xfail(strict=True, reason=(
        "covering the question's words still adds a sentence that shares a verb with it; "
        "restricting the filling sentences to those scored near the answer dropped an "
        "aspect the law question set needs (docs/evaluation.md, \"Choosing the answer "
        "sentence\")"))),
])
def test_no_neighbour_is_cited_beside_the_answer(
        demo: tuple[Services, Principal], question: str, answer: str,
        neighbour: str) -> None:
    svc, who = demo
    texts = [s.text for s in _ask(svc, who, question).sentences]
    assert answer in texts[0] and not any(neighbour in t for t in texts), texts


@pytest.mark.parametrize(("question", "answer"), ALSO)
def test_the_first_cited_sentence_is_the_one_that_answers(
        demo: tuple[Services, Principal], question: str, answer: str) -> None:
    svc, who = demo
    result = _ask(svc, who, question)
    assert result.status in ("answered", "partial"), (result.reason, result.gates)
    assert answer in result.sentences[0].text, [s.text for s in result.sentences]


@pytest.mark.xfail(strict=True, reason="the e5 cosine prefers the sentence sharing the words "
                   "(0.875 vs 0.834); a sentence rule reading the cross-encoder's logit is "
                   "not fitted yet (docs/evaluation.md, \"Choosing the answer sentence\")")
def test_to_whom_benefits_are_paid(demo: tuple[Services, Principal]) -> None:
    svc, who = demo
    result = _ask(svc, who, "To whom are benefits paid?")
    assert "only to the account named" in result.sentences[0].text


def _ask_with(svc: Services, who: Principal, question: str, rule_id: str) -> Any:
    """The pipeline after retrieval with another sentence rule (what replay does)."""
    assert svc.answers is not None
    hits, _, _ = svc.answers.search.retrieve(who, question, valid_at=VALID, known_at=KNOWN,
                                             k=PASSAGES)
    thresholds = svc.answers.thresholds.current(who.tenant_id)
    return svc.answers.decide(who, question, hits, thresholds=thresholds,
                              generator=svc.answers.generators["extractive"],
                              run_id=uuid.uuid4(), valid_at=VALID, known_at=KNOWN,
                              sentence_rule=rule_id)


def test_the_record_names_rule_and_model_and_replay_recomputes_the_cosines(
        demo: tuple[Services, Principal]) -> None:
    svc, who = demo
    assert svc.answers is not None and svc.replay is not None
    embedder = svc.answers.search.embedder
    assert embedder is not None
    result = _ask(svc, who, ANSWERS[0][0])
    record = svc.runs.get(who, str(result.run_id)).record
    scored = record["sentence_scores"]
    assert scored["rule"] == MEANING_RULE and scored["model"] == embedder.model_hash
    assert len(scored["cosines"]) == len(record["evidence"])
    read = [c for c in scored["cosines"] if c is not None]
    assert read and all(-1.0 <= c <= 1.0 for c in read)
    assert svc.replay.replay(who, str(result.run_id)).reproduced

    class Shifted:  # the same model hash, other sentence vectors: what replay must catch
        model_hash = embedder.model_hash
        dims = embedder.dims

        def embed_queries(self, texts: list[str]) -> Any:
            return embedder.embed_queries(texts)

        def embed_passages(self, texts: list[str]) -> Any:
            vectors = np.asarray(embedder.embed_passages(texts))
            return np.roll(vectors, 1, axis=1)

    svc.answers.search.embedder = Shifted()  # type: ignore[assignment]
    try:
        verdict = svc.replay.replay(who, str(result.run_id))
    finally:
        svc.answers.search.embedder = embedder
    whats = {d["what"] for d in verdict.differences}
    assert not verdict.reproduced
    assert any(w.startswith("sentence_scores.cosines[") for w in whats), whats


def test_a_refused_run_embeds_no_sentence(demo: tuple[Services, Principal]) -> None:
    """Nothing is cited after a refusal, so no sentence is read (the law tail,
    docs/benchmarks.md, "Answer stages on the law corpus")."""
    svc, who = demo
    assert svc.replay is not None
    result = _ask(svc, who, "Wer gewann die Fußball-Weltmeisterschaft 2014?")
    assert result.status == "abstained" and result.evidence
    record = svc.runs.get(who, str(result.run_id)).record
    assert record["sentence_scores"]["rule"] == MEANING_RULE
    assert record["sentence_scores"]["cosines"] == [None] * len(record["evidence"])
    assert svc.replay.replay(who, str(result.run_id)).reproduced
