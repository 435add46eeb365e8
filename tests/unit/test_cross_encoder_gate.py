"""Gate 1 with the cross-encoder's logit as a feature (docs/thresholds.md, "The combined
relevance score"), on the use cases wired with fakes: the model that reads ``cross`` is
bound to its cross-encoder, the logits are recorded, replay recomputes and compares them,
and a node without that cross-encoder refuses instead of guessing."""

from __future__ import annotations

from dataclasses import replace

from stichtag.domain.relevance import FEATURES, RelevanceModel
from stichtag.services.answer import AnswerService
from stichtag.services.replay import ReplayService
from tests.fakes import FakeCrossEncoder
from tests.unit.test_use_cases import QUESTION, World, day, load_two_versions, world

__all__ = ["world"]  # the fixture, imported for these tests

# reads only ``cross`` in effect: every other weight is 0, so theta on p decides on the logit
CROSS_ONLY = RelevanceModel(method="logistic", features=FEATURES,
                            weights=(0.0, 0.0, 0.0, 0.0, 1.0), intercept=0.0,
                            means=(0.0,) * 5, scales=(1.0,) * 5, cross_encoder="fake-cross-1")


def _with(w: World, cross: FakeCrossEncoder | None) -> AnswerService:
    a = w.answers
    return AnswerService(w.search, w.thresholds, a.versions, a.reranker, a.generators,
                         a.scorer.passages, a.runlog, a.units, cross=cross)


def test_an_answer_reads_the_cross_encoder_and_records_its_logits(world: World) -> None:
    load_two_versions(world)
    cross = FakeCrossEncoder()
    answers = _with(world, cross)
    world.thresholds.set(world.who, relevance=CROSS_ONLY, theta_rel=0.5, tau=1.0,
                         calibration=None, rationale="the logit decides")
    r = answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                       known_at=world.clock.now())
    assert r.status in ("answered", "partial"), r.failed
    assert cross.calls == 1  # one batch per answer
    run = world.store.run(world.who.tenant_id, r.run_id)
    assert run is not None
    record = run.record
    assert record["models"]["cross_encoder"] == "fake-cross-1"
    assert record["relevance"]["id"] == "relevance-2"
    assert all("cross" in c for c in record["candidates"])
    assert record["relevance"]["features"]["cross"] == max(
        c["cross"] for c in record["candidates"])
    verdict = ReplayService(answers, world.store, world.clock,
                            documents=world.store).replay(world.who, str(r.run_id))
    assert verdict.reproduced, verdict.differences


def test_a_question_the_cross_encoder_finds_unrelated_is_refused(world: World) -> None:
    load_two_versions(world)
    answers = _with(world, FakeCrossEncoder())
    world.thresholds.set(world.who, relevance=CROSS_ONLY, theta_rel=0.5, tau=1.0,
                         calibration=None, rationale="the logit decides")
    # in scope (the word is in force), but one shared word gives the fake a logit of -1
    r = answers.answer(world.who, "Höchstzinssatz?", valid_at=day("2022-06-01"),
                       known_at=world.clock.now())
    assert (r.status, r.reason) == ("abstained", "insufficient_evidence")
    assert r.failed is not None and r.failed.gate == "relevance"
    assert r.failed.observed is not None and r.failed.observed < 0.5


def test_without_the_cross_encoder_thresholds_that_read_it_refuse_and_say_why(
        world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=CROSS_ONLY, theta_rel=0.0, tau=1.0,
                         calibration=None, rationale="fitted with the cross-encoder")
    for answers in (world.answers, _with(world, FakeCrossEncoder("another-cross-2"))):
        r = answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                           known_at=world.clock.now())
        assert (r.status, r.reason) == ("abstained", "insufficient_evidence")
        assert r.failed is not None and r.failed.gate == "relevance"
        assert "models build" in r.failed.detail and "calibrate" in r.failed.detail
        assert [g.gate for g in r.gates] == ["scope", "relevance"]  # nothing generated


def test_replay_names_a_changed_cross_encoder_and_its_logits(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=replace(CROSS_ONLY), theta_rel=0.5, tau=1.0,
                         calibration=None, rationale="the logit decides")
    r = _with(world, FakeCrossEncoder()).answer(world.who, QUESTION,
                                                valid_at=day("2022-06-01"),
                                                known_at=world.clock.now())
    later = _with(world, _Shifted("fake-cross-1"))  # same name, other numbers
    verdict = ReplayService(later, world.store, world.clock,
                            documents=world.store).replay(world.who, str(r.run_id))
    assert not verdict.reproduced
    assert any(d["what"].endswith("].cross") for d in verdict.differences)


def test_a_run_recorded_without_a_cross_encoder_replays_without_one(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=RelevanceModel.identity(), theta_rel=0.1,
                         tau=1.0, calibration=None, rationale="before the cross-encoder")
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now())
    cross = FakeCrossEncoder()
    verdict = ReplayService(_with(world, cross), world.store, world.clock,
                            documents=world.store).replay(world.who, str(r.run_id))
    assert verdict.reproduced, verdict.differences
    assert cross.calls == 0  # the run named no cross-encoder, so replay reads none


class _Shifted(FakeCrossEncoder):
    def score(self, query: str, passages: list[str]) -> list[float]:  # type: ignore[override]
        return [s + 0.5 for s in super().score(query, passages)]
