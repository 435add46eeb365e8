"""The sentence rule (stichtag.domain.sentence_rule) and the extractive generator's
answer-first choice when evidence was scored by meaning (docs/evaluation.md, "Choosing the
answer sentence")."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from stichtag.domain.answer import Evidence
from stichtag.domain.salience import InForce, salient_aspects
from stichtag.domain.sentence_rule import (
    DEFAULT_RULE,
    MEANING_RULE,
    OVERLAP_RULE,
    READ_AT_MOST,
    RULES,
    overlap_share,
    read_by_model,
    rule,
)
from stichtag.generators.extractive import ExtractiveGenerator
from stichtag.services.sentence_scores import (
    Candidate,
    SentenceScoring,
    differences,
    recorded_rule,
    score_candidates,
)

QUESTION = "To whom are benefits paid?"
PAID = "(1) Approved benefits are paid within 3 working days after the decision."
ACCOUNT = ("(2) Payments are made only to the account named in the claim form or to the "
           "account of the policyholder on record.")
HEADING = ("Claims Handbook", "6 Payment")


def ev(eid: str, quote: str, score: float, start: int, answers: float | None) -> Evidence:
    return Evidence(eid=eid, document="claims-handbook-en", version_id="b3:" + "2" * 64,
                    start=start, end=start + len(quote), utf16_start=start,
                    utf16_end=start + len(quote), quote=quote, heading_path=HEADING,
                    valid_from="2024-09-01", valid_to=None, doc_class="handbook",
                    score=score, answers=answers)


def test_the_overlap_rule_is_the_factor_runs_were_scored_with_before() -> None:
    old = rule(OVERLAP_RULE)
    assert not old.reads_meaning
    for overlap in (0.0, 0.25, 1 / 3, 1.0):
        assert old.factor(overlap, None) == 0.5 + 0.5 * overlap
        assert old.factor(overlap, 0.99) == 0.5 + 0.5 * overlap  # a cosine changes nothing


def test_the_meaning_rule_rises_with_the_cosine_and_stays_within_its_bounds() -> None:
    meaning = rule(MEANING_RULE)
    assert DEFAULT_RULE == MEANING_RULE and meaning.reads_meaning
    assert meaning.w_cosine > 0  # fitted: a closer sentence answers more often
    low, high = meaning.factor(0.5, 0.70), meaning.factor(0.5, 0.90)
    assert 0.5 < low < high < 1.0
    assert meaning.factor(0.5, None) == 0.5 == meaning.factor(0.5, math.nan)  # not read


def test_an_unknown_rule_is_an_error_not_a_default() -> None:
    with pytest.raises(ValueError, match="unknown sentence rule"):
        rule("meaning-0")
    assert set(RULES) == {OVERLAP_RULE, MEANING_RULE}


def test_overlap_counts_distinct_content_words_of_sentence_and_headings() -> None:
    assert overlap_share(QUESTION, PAID, ()) == 1.0  # "benefits", "paid"
    assert overlap_share(QUESTION, ACCOUNT, HEADING) == 0.0
    assert overlap_share("the of and", PAID, ()) == 0.0  # no content words


def test_the_model_reads_only_passages_that_could_still_come_first() -> None:
    assert read_by_model([0.8, 0.4, 0.39, math.nan]) == [True, True, False, False]
    assert read_by_model([math.nan]) == [False]
    assert read_by_model([]) == []


def test_answer_first_cites_the_sentence_that_answers_before_the_one_sharing_words() -> None:
    in_force = InForce.from_texts([PAID, ACCOUNT, "Claims Handbook 6 Payment"])
    aspects = salient_aspects(QUESTION, in_force)
    assert aspects
    by_meaning = [ev("E1", PAID, 0.70, 10, 0.80), ev("E2", ACCOUNT, 0.76, 90, 0.86)]
    draft = ExtractiveGenerator().generate(QUESTION, by_meaning, aspects)
    assert draft.sentences[0].evidence_ids == ["E2"]
    # the words it leaves out are filled in by covering, after it
    assert [s.evidence_ids for s in draft.sentences] == [["E2"], ["E1"]]
    # evidence scored by overlap alone (a run recorded before the rule): covering only
    by_words = [replace(e, answers=None) for e in by_meaning]
    assert [s.evidence_ids for s in
            ExtractiveGenerator().generate(QUESTION, by_words, aspects).sentences] == [["E1"]]


def test_replay_names_the_rule_and_every_cosine_that_moved() -> None:
    assert recorded_rule({"candidates": []}) == OVERLAP_RULE  # recorded before rules
    assert recorded_rule({"sentence_scores": {"rule": MEANING_RULE}}) == MEANING_RULE
    now = SentenceScoring(rule=rule(MEANING_RULE), model="m", cosines=[0.81, None, 0.5])
    same = {"rule": MEANING_RULE, "model": "m", "cosines": [0.8100004, None, 0.5]}
    assert differences(same, now) == []
    moved = {**same, "cosines": [0.82, None, None]}
    assert [d[0] for d in differences(moved, now)] == [
        "sentence_scores.cosines[0]", "sentence_scores.cosines[2]"]
    other = {**same, "model": "n"}
    assert differences(other, now)[0][0] == "sentence_scores.model"
    assert differences(None, now) == []


class CountingEmbedder:
    """Unit vectors along axis 0, counting what it was asked to embed."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_queries(self, texts: list[str]) -> Any:
        return np.eye(4, dtype=np.float32)[[0] * len(texts)]

    def embed_passages(self, texts: list[str]) -> Any:
        self.seen.extend(texts)
        return np.eye(4, dtype=np.float32)[[0] * len(texts)]


def test_the_model_reads_at_most_the_first_sentences_of_near_passages() -> None:
    cands = [Candidate(passage=p, quote=f"Satz {p}.{i}", heading_path=(), overlap=0.0)
             for p in range(3) for i in range(6)]
    emb = CountingEmbedder()
    scored = score_candidates(rule(MEANING_RULE), cands, [0.9, 0.8, 0.1], embedder=emb,
                              model="m", query_vector=np.eye(4, dtype=np.float32)[0])
    assert len(emb.seen) == READ_AT_MOST
    assert scored.cosines[:READ_AT_MOST] == [1.0] * READ_AT_MOST
    assert scored.cosines[READ_AT_MOST:] == [None] * (len(cands) - READ_AT_MOST)
    # no query vector (the gates refused): nothing is embedded, nothing is read
    none = score_candidates(rule(MEANING_RULE), cands, [0.9, 0.8, 0.1], embedder=emb,
                            model="m", query_vector=None)
    assert none.cosines == [None] * len(cands) and len(emb.seen) == READ_AT_MOST


def test_a_rule_that_reads_the_cross_encoder_needs_its_logit() -> None:
    from stichtag.domain.sentence_rule import SentenceRule

    reads = SentenceRule(rule_id="test-cross", w_cosine=1.0, w_cross=1.0)
    assert reads.reads_meaning and reads.reads_cross
    assert not SentenceRule(rule_id="test-cosine", w_cosine=1.0).reads_cross
    # a higher logit, a higher factor; no logit (not read), the floor: never a guess
    assert reads.factor(0.0, 0.5, 2.0) > reads.factor(0.0, 0.5, -2.0) > 0.5
    assert reads.factor(0.0, 0.5, None) == reads.factor(0.0, 0.5, float("nan")) == 0.5
