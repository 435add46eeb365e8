"""The use cases against in-memory fakes of their ports (tests/fakes.py): ingest, search,
answer and replay, without PostgreSQL, tantivy or ONNX. The same use cases run against the
real adapters in tests/integration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from stichtag.domain.answer import Draft, DraftSentence, Evidence
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Gone, Invalid, NotFound
from stichtag.domain.generation import Generation
from stichtag.domain.records import Erasure
from stichtag.domain.relevance import RelevanceModel
from stichtag.domain.salience import Aspect
from stichtag.domain.timeutil import format_time
from stichtag.domain.txclock import ObservedPast
from stichtag.generators.extractive import ExtractiveGenerator
from stichtag.services.access import SCOPES, Principal
from stichtag.services.answer import AnswerService
from stichtag.services.changes import ChangesService
from stichtag.services.citations import VersionCache
from stichtag.services.compare import CompareService
from stichtag.services.compare_replay import ComparingReplay
from stichtag.services.documents import DocumentService, IngestRequest
from stichtag.services.erasure import erasure_record
from stichtag.services.replay import ReplayService
from stichtag.services.runlog import RunLog
from stichtag.services.search import SearchService
from stichtag.services.thresholds import ThresholdService
from tests.fakes import (
    FakeClock,
    FakeEmbedder,
    FakeIndexer,
    FakeLexicalIndex,
    FakeSigner,
    FakeStore,
    FakeVectorReranker,
    new_tenant,
)

DECKRV_2021 = """# DeckRV

## § 2 Höchstzinssatz

(1) Der Höchstzinssatz für die Berechnung der Deckungsrückstellungen beträgt 0,9 Prozent.

## § 3 Zillmerung

(1) Der Zillmersatz darf 25 Promille der Summe der Prämien nicht übersteigen.
"""
DECKRV_2022 = DECKRV_2021.replace("0,9 Prozent", "0,25 Prozent")
QUESTION = "Wie hoch ist der Höchstzinssatz für die Deckungsrückstellungen?"


@dataclass
class World:
    """The use cases wired on fakes, as bootstrap wires them on adapters."""

    clock: FakeClock
    store: FakeStore
    lexical: FakeLexicalIndex
    indexer: FakeIndexer
    documents: DocumentService
    search: SearchService
    thresholds: ThresholdService
    answers: AnswerService
    replay: ReplayService
    who: Principal


@pytest.fixture
def world() -> World:
    clock = FakeClock()
    store = FakeStore(clock)
    embedder = FakeEmbedder()
    lexical = FakeLexicalIndex(store)
    indexer = FakeIndexer(store, embedder)
    runlog = RunLog(store, FakeSigner(), clock)
    search = SearchService(lexical, store, store, embedder, runlog, store)
    thresholds = ThresholdService(store)
    answers = AnswerService(search, thresholds, VersionCache(store), FakeVectorReranker(),
                            {"extractive": ExtractiveGenerator()}, store, runlog, store)
    who = Principal(tenant_id=new_tenant(), key_id="k1", scopes=frozenset(SCOPES),
                    clearance=3)
    return World(clock=clock, store=store, lexical=lexical, indexer=indexer,
                 documents=DocumentService(store, clock, on_write=indexer.notify),
                 search=search, thresholds=thresholds, answers=answers,
                 replay=ReplayService(answers, store, clock, documents=store), who=who)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


NOW = day("2026-01-01")
IDENTITY = RelevanceModel.identity()  # gate 1 on the raw (fake) cosine: the tests set theta


def load_two_versions(w: World) -> tuple[str, str]:
    first = w.documents.ingest(w.who, "deckrv", IngestRequest(
        text=DECKRV_2021, valid_from=day("2021-04-28"), doc_class="regulation"))
    w.clock.advance(days=1)
    second = w.documents.ingest(w.who, "deckrv", IngestRequest(
        text=DECKRV_2022, valid_from=day("2022-01-01"), doc_class="regulation"))
    w.clock.advance(days=1)
    w.indexer.catch_up(w.who.tenant_id)
    return first.version_id, second.version_id


# -- ingest ------------------------------------------------------------------------------


def test_ingest_asserts_a_version_and_a_repeat_is_idempotent(world: World) -> None:
    first = world.documents.ingest(world.who, "deckrv", IngestRequest(
        text=DECKRV_2021, valid_from=day("2021-04-28")))
    again = world.documents.ingest(world.who, "deckrv", IngestRequest(
        text=DECKRV_2021, valid_from=day("2021-04-28")))
    assert first.created and first.write.asserted is not None
    assert not again.created and again.write.asserted is None
    assert again.assertion is not None and again.assertion.assertion_id == \
        first.write.asserted.assertion_id
    assert world.indexer.notified == [world.who.tenant_id]  # the no-op woke nothing


def test_ingest_refuses_a_level_above_the_key_and_reads_follow_the_as_of_pair(
        world: World) -> None:
    reader = Principal(tenant_id=world.who.tenant_id, key_id="r", scopes=frozenset({"read",
                       "write"}), clearance=1)
    with pytest.raises(Invalid) as refused:
        world.documents.ingest(reader, "note", IngestRequest(text="Geheim.",
                                                             confidentiality="secret"))
    assert refused.value.field == "confidentiality"
    old, new = load_two_versions(world)
    _, content = world.documents.get(world.who, "deckrv", valid_at=day("2021-06-01"),
                                     known_at=world.clock.now())
    assert content.version.version_id == old and "0,9 Prozent" in content.text
    _, content = world.documents.get(world.who, "deckrv", valid_at=day("2022-06-01"),
                                     known_at=world.clock.now())
    assert content.version.version_id == new
    with pytest.raises(NotFound):  # nothing was in force yet
        world.documents.get(world.who, "deckrv", valid_at=day("2020-01-01"),
                            known_at=world.clock.now())


# -- search ------------------------------------------------------------------------------


def test_search_returns_only_passages_visible_at_the_as_of_pair_and_records_the_run(
        world: World) -> None:
    old, _ = load_two_versions(world)
    result = world.search.search(world.who, "Höchstzinssatz Deckungsrückstellungen",
                                 valid_at=day("2021-06-01"), known_at=world.clock.now())
    assert result.hits and {h.version_id for h in result.hits} == {old}
    assert world.lexical.fresh_calls == 1  # read-your-writes asked the index, once
    for hit in result.hits:
        assert hit.quote == DECKRV_2021[hit.start:hit.end]
    recorded = world.store.run(world.who.tenant_id, result.run_id)
    assert recorded is not None and recorded.kind == "search"
    assert [c["version_id"] for c in recorded.record["candidates"]] == \
        [h.version_id for h in result.hits]
    assert world.store.log_head(world.who.tenant_id).size == 1  # type: ignore[union-attr]


def test_search_validates_its_input(world: World) -> None:
    for text, k, field in (("  ", 10, "query"), ("Zins", 0, "k"), ("x" * 2001, 5, "query")):
        with pytest.raises(Invalid) as bad:
            world.search.search(world.who, text, valid_at=NOW, known_at=NOW, k=k)
        assert bad.value.field == field


# -- answer ------------------------------------------------------------------------------


def test_an_answer_cites_the_version_in_force_with_verbatim_quotes(world: World) -> None:
    old, new = load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.1, tau=1.0, calibration=None,
                         rationale="fake embedder scores are low; the test is about citations")
    for valid_at, version, value in (("2021-06-01", old, "0,9 Prozent"),
                                     ("2022-06-01", new, "0,25 Prozent")):
        r = world.answers.answer(world.who, QUESTION, valid_at=day(valid_at),
                                 known_at=world.clock.now())
        assert r.status in ("answered", "partial"), r.gates
        cited = [c for s in r.sentences for c in s.citations]
        assert cited and {c.version_id for c in cited} == {version}
        assert any(value in c.quote for c in cited)
        text = DECKRV_2021 if version == old else DECKRV_2022
        assert all(text[c.start:c.end] == c.quote for c in cited)
        assert world.store.run(world.who.tenant_id, r.run_id) is not None


def test_an_answer_abstains_before_generation_when_relevance_is_below_theta(
        world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.99, tau=1.0, calibration=None,
                         rationale="nothing this fake embedder scores passes this")
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now())
    assert r.status == "abstained" and r.reason == "insufficient_evidence"
    assert [g.gate for g in r.gates] == ["scope", "relevance"]  # no generator ran
    assert r.failed is not None and r.failed.threshold == 0.99 and r.next_step


def test_thresholds_fitted_on_another_reranker_abstain_until_recalibrated(
        world: World) -> None:
    load_two_versions(world)
    bound = replace(IDENTITY, reranker="cross-encoder-7")  # fitted on a cross-encoder
    world.thresholds.set(world.who, relevance=bound, theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="calibrated while the cross-encoder served")
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now())
    assert (r.status, r.reason) == ("abstained", "insufficient_evidence")
    assert r.failed is not None and r.failed.gate == "relevance"
    assert "cross-encod" in r.failed.detail and "recalibrate" in r.failed.detail
    assert [g.gate for g in r.gates] == ["scope", "relevance"]  # no generator ran
    serving = world.answers.reranker.model_hash
    world.thresholds.set(world.who, relevance=replace(IDENTITY, reranker=serving),
                         theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="recalibrated for the reranker that serves")
    again = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                                 known_at=world.clock.now())
    assert again.status in ("answered", "partial")


def test_a_question_outside_what_is_in_force_abstains_out_of_scope(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="relevance lets everything through: scope decides")
    r = world.answers.answer(world.who, "Wann verjährt ein Anspruch auf Arbeitslohn?",
                             valid_at=day("2022-06-01"), known_at=world.clock.now())
    assert (r.status, r.reason) == ("abstained", "out_of_scope")
    assert r.failed is not None and r.failed.gate == "scope"
    assert "Arbeitslohn" in r.failed.detail and "2022-06-01" in r.failed.detail
    assert [g.gate for g in r.gates] == ["scope", "relevance"]  # no generator ran


def test_partial_names_only_the_uncovered_salient_aspect(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.0, tau=1.0,
                         calibration=None, theta_scope=0.0,
                         rationale="let every question reach the generator: partial decides")
    r = world.answers.answer(
        world.who, "Wie hoch ist der Höchstzinssatz und welcher Zillmersatz gilt für "
        "Fondspolicen?", valid_at=day("2022-06-01"), known_at=world.clock.now())
    assert r.status == "partial", r.gates
    assert r.gaps == ["Fondspolicen"]  # in the question's own words, nothing else


class InventingGenerator:
    """A generator that cites evidence of some other run."""

    name = "inventing"
    deterministic = False

    def generate(self, question: str, evidence: Sequence[Evidence],
                 aspects: Sequence[Aspect] = ()) -> Draft:
        return Draft(sentences=[DraftSentence(text="Es gilt 5 %.", evidence_ids=["E9-zzzz"])],
                     gaps=[])

    def run(self, question: str, evidence: Sequence[Evidence],
            aspects: Sequence[Aspect] = ()) -> Generation:
        return Generation(draft=self.generate(question, evidence))


def test_an_invented_marker_rejects_the_whole_answer(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="let every question reach the generator")
    world.answers.generators["inventing"] = InventingGenerator()
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now(), generator="inventing")
    assert r.status == "abstained" and r.reason == "integrity_error" and not r.sentences


def test_an_unknown_generator_and_an_empty_question_are_refused(world: World) -> None:
    with pytest.raises(Invalid) as bad:
        world.answers.answer(world.who, QUESTION, valid_at=NOW, known_at=NOW, generator="gpt")
    assert bad.value.field == "generator"
    with pytest.raises(Invalid):
        world.answers.answer(world.who, " ", valid_at=NOW, known_at=NOW)


# -- replay ------------------------------------------------------------------------------


def test_replay_reproduces_a_recorded_answer_and_names_a_changed_threshold(
        world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.1, tau=1.0, calibration=None,
                         rationale="fake embedder scores are low; the test is about replay")
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now())
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert verdict.reproduced, verdict.differences
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.99, tau=1.0, calibration=None,
                         rationale="a stricter gate, so the old answer would now abstain")
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert not verdict.reproduced
    assert {d["what"] for d in verdict.differences} >= {"thresholds.theta_rel", "gates",
                                                         "result.status"}


def test_replay_of_a_run_whose_version_was_erased_is_its_own_verdict(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.1, tau=1.0, calibration=None,
                         rationale="fake embedder scores are low; the test is about replay")
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now())
    cited = r.sentences[0].citations[0].version_id
    erasure = Erasure(version_id=cited, run_id=uuid4(), seq=7, key_id="k", reason="ticket 1",
                      erased_at=world.clock.now())
    world.store.erased[(world.who.tenant_id, cited)] = erasure
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert verdict.status == "erased" and not verdict.reproduced
    assert verdict.differences == [] and verdict.erased == [erasure_record(erasure)]
    with pytest.raises(Gone):
        world.documents.version(world.who, cited)


def test_replay_verifies_a_recorded_llm_draft_without_the_generator(world: World) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="let every question reach the generator")
    world.answers.generators["inventing"] = InventingGenerator()
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now(), generator="inventing")
    del world.answers.generators["inventing"]  # the node that replays does not have it
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert verdict.reproduced, verdict.differences  # the recorded draft is re-verified


class CitingGenerator:
    """An LLM stand-in (replay verifies its draft) that cites the best evidence sentence."""

    name = "citing"
    deterministic = False

    def generate(self, question: str, evidence: Sequence[Evidence],
                 aspects: Sequence[Aspect] = ()) -> Draft:
        return Draft(sentences=[DraftSentence(text=evidence[0].quote,
                                              evidence_ids=[evidence[0].eid])], gaps=[])

    def run(self, question: str, evidence: Sequence[Evidence],
            aspects: Sequence[Aspect] = ()) -> Generation:
        return Generation(draft=self.generate(question, evidence, aspects))


@pytest.mark.parametrize("generator", ["extractive", "citing"])
def test_replay_recomputes_the_three_sets_and_reads_records_from_before_them(
        world: World, generator: str) -> None:
    load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.0, tau=1.0, calibration=None,
                         rationale="let every question reach the generator")
    world.answers.generators["citing"] = CitingGenerator()
    r = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                             known_at=world.clock.now(), generator=generator)
    assert r.status != "abstained" and r.provenance.consulted
    record = world.store.run(world.who.tenant_id, r.run_id).record  # type: ignore[union-attr]
    assert record["provenance"]["consulted"] == list(r.provenance.consulted)
    assert world.replay.replay(world.who, str(r.run_id)).reproduced
    # a recorded set that does not follow from the record is a difference
    record["provenance"]["consulted"] = ["somewhere-else"]
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert [d["what"] for d in verdict.differences] == ["provenance.consulted"]
    # a record from before provenance sets (docs/architecture.md §7): no sets, no sources gate, a
    # self-reported list
    del record["provenance"]
    record["gates"] = [g for g in record["gates"] if g["gate"] != "sources"]
    if record["generator"]["draft"] is not None:
        record["generator"]["draft"]["consulted"] = ["E99-zzzz"]
    record["generator"].pop("tools", None)
    verdict = world.replay.replay(world.who, str(r.run_id))
    assert verdict.reproduced, verdict.differences
    assert any("predates derived sources" in n for n in verdict.notes)


def test_replay_hides_runs_recorded_above_the_callers_clearance(world: World) -> None:
    load_two_versions(world)
    r = world.answers.answer(world.who, QUESTION, valid_at=NOW, known_at=world.clock.now())
    low = Principal(tenant_id=world.who.tenant_id, key_id="a", scopes=frozenset({"audit"}),
                    clearance=0)
    with pytest.raises(NotFound):
        world.replay.replay(low, str(r.run_id))
    other = Principal(tenant_id=UUID(int=7), key_id="a", scopes=frozenset(SCOPES),
                      clearance=3)
    with pytest.raises(NotFound):
        world.replay.replay(other, str(r.run_id))


# -- the tenant's transaction clock (docs/architecture.md §3.6, §3.7) ---------------------


def test_a_recorded_run_closes_its_past_to_imports_and_replay_still_reproduces(
        world: World) -> None:
    """The auditor's case (docs/semantics.md, "Transaction time"): imports with historical tx_time,
    a run at known_at
    now, then an import into 2021. Refused (409 in the API), and the run still replays."""
    world.clock.advance(days=2000)  # the fake clock now lies well after the imports
    first = world.documents.ingest(world.who, "deckrv", IngestRequest(
        text=DECKRV_2021, valid_from=day("2021-04-28"), tx_time=day("2021-04-01"),
        doc_class="regulation"))
    world.indexer.catch_up(world.who.tenant_id)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.1, tau=1.0, calibration=None,
                         rationale="fake embedder scores are low; the test is about the clock")
    run = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                               known_at=world.clock.now())
    assert run.status != "abstained" and run.evidence[0].version_id == first.version_id
    with pytest.raises(ObservedPast) as refused:
        world.documents.ingest(world.who, "deckrv", IngestRequest(
            text=DECKRV_2022, valid_from=day("2022-01-01"), tx_time=day("2021-12-15"),
            doc_class="regulation"))
    assert refused.value.clock == world.clock.now()
    assert "transaction clock" in str(refused.value)
    assert world.replay.replay(world.who, str(run.run_id)).reproduced
    world.clock.advance(seconds=1)  # strictly after the clock: accepted
    world.documents.ingest(world.who, "deckrv", IngestRequest(
        text=DECKRV_2022, valid_from=day("2022-01-01"), tx_time=world.clock.now(),
        doc_class="regulation"))


def test_a_known_at_after_now_is_read_as_now(world: World) -> None:
    load_two_versions(world)
    future = world.clock.now().replace(year=2099)
    result = world.search.search(world.who, "Höchstzinssatz", valid_at=day("2022-06-01"),
                                 known_at=future)
    assert result.known_at == world.clock.now()
    recorded = world.store.run(world.who.tenant_id, result.run_id)
    assert recorded is not None
    assert recorded.record["as_of"]["known_at"] == format_time(world.clock.now())
    answer = world.answers.answer(world.who, QUESTION, valid_at=day("2022-06-01"),
                                  known_at=future)
    assert answer.known_at == world.clock.now()
    assert world.store.observed[world.who.tenant_id] == world.clock.now()


# -- compare -----------------------------------------------------------------------------


def test_compare_names_the_law_change_and_its_replay_replays_both_runs(world: World) -> None:
    old, new = load_two_versions(world)
    world.thresholds.set(world.who, relevance=IDENTITY, theta_rel=0.1, tau=1.0, calibration=None,
                         rationale="fake embedder scores are low; the test is about causes")
    store, clock = world.store, world.clock
    changes = ChangesService(store, VersionCache(store), clock)
    runlog = RunLog(store, FakeSigner(), clock)
    compares = CompareService(world.answers, changes, store, runlog, store)
    now = clock.now()
    done = compares.compare(world.who, QUESTION,
                            first=AsOf(valid_at=day("2021-06-01"), known_at=now),
                            second=AsOf(valid_at=day("2022-06-01"), known_at=now))
    [change] = done.changes
    assert (change.kind, change.cause, change.from_version, change.to_version) == (
        "changed", "valid_time", old, new)
    assert change.law is not None and change.law["to"]["valid_from"].startswith("2022-01-01")
    assert done.diffs["deckrv"] is not None and done.diffs["deckrv"].changed >= 1
    row = store.run(world.who.tenant_id, done.run_id)
    assert row is not None and row.kind == "compare"
    assert {row.record["from"]["run_id"], row.record["to"]["run_id"]} == {
        str(done.first.run_id), str(done.second.run_id)}
    replay = ComparingReplay(world.answers, store, clock, compares=compares, documents=store)
    verdict = replay.replay(world.who, str(done.run_id))
    assert (verdict.kind, verdict.status) == ("compare", "reproduced"), verdict.differences
    # a recorded cause that the history does not give is a difference
    row.record["changes"][0]["cause"] = "transaction_time"
    assert [d["what"] for d in replay.replay(world.who, str(done.run_id)).differences] == [
        "changes"]
