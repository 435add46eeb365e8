"""Replay of recorded runs and retroactive-impact reports (docs/audit.md).

Replay recomputes a run at its recorded as-of pair *from the recorded candidates*: their
visibility is re-checked (immutable for a past known_at), rerank scores are recomputed
(equal within 1e-6 for the same model), then every gate, the extractive output and the
citations. An LLM draft is taken from the record and verified, never regenerated.

Why not re-run retrieval and compare: BM25 statistics (idf, document counts) belong to the
whole tenant index, including versions ingested after the run that are invisible at its
as-of pair, so a faithful replay could rank differently for reasons that change nothing
the run relied on. A fresh retrieval is still made and any candidate it would add is
reported as a *note* (drift), not as a difference.

Replay uses today's thresholds and models, because the auditor's question is "would it
answer the same today from the same state?": a changed threshold or model is reported as
a difference, next to the recorded values.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from stichtag.domain.answer import SOURCES, Draft, DraftSentence, Evidence
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Invalid, NotFound
from stichtag.domain.generation import Generation, ToolResult
from stichtag.domain.records import RunRow
from stichtag.domain.retrieval import Hit
from stichtag.domain.salience import Aspect
from stichtag.domain.timeutil import parse_time
from stichtag.ports import Clock, DocumentStore, Generator, RunStore
from stichtag.services.access import Principal
from stichtag.services.answer import AnswerService
from stichtag.services.answer_result import AnswerResult, Decided
from stichtag.services.erasure import erasure_record, version_ids_of
from stichtag.services.evidence import EvidenceService
from stichtag.services.grounding import GroundingService
from stichtag.services.grounding_replay import replay_check, replay_evidence
from stichtag.services.search import Scores
from stichtag.services.sentence_scores import differences, recorded_rule
from stichtag.services.thresholds import Thresholds, built_in_as_recorded

TOLERANCE = 1e-6


@dataclass(kw_only=True)
class Verdict:
    """The outcome of a replay: reproduced only with zero differences."""

    run_id: str
    kind: str
    differences: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    erased: list[dict[str, Any]] = field(default_factory=list)
    """The erasures of versions the run relied on: it cannot be recomputed (their text
    is gone), which is neither a reproduction nor a mismatch."""

    @property
    def reproduced(self) -> bool:
        """True iff nothing differs and nothing the run relied on was erased."""
        return not self.differences and not self.erased

    @property
    def status(self) -> str:
        """``reproduced``, ``differs``, or ``erased`` (a distinct verdict)."""
        if self.erased:
            return "erased"
        return "differs" if self.differences else "reproduced"

    def differ(self, what: str, recorded: Any, replayed: Any) -> None:
        """Name one difference."""
        self.differences.append({"what": what, "recorded": recorded, "replayed": replayed})


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TOLERANCE


def _citations(result: AnswerResult) -> list[list[Any]]:
    return [[s.text, [[c.version_id, c.start, c.end] for c in s.citations]]
            for s in result.sentences]


def _recorded_citations(record: dict[str, Any]) -> list[list[Any]]:
    return [[s["text"], [[c["version_id"], c["start"], c["end"]] for c in s["citations"]]]
            for s in record["result"]["sentences"]]


def _same(a: Any, b: Any) -> bool:
    """Equal, with floats compared within the replay tolerance (recursively)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and _close(
            float(a), float(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _compare_salience(verdict: Verdict, recorded: dict[str, Any] | None,
                      replayed: dict[str, Any]) -> None:
    """Salience, scope support and the relevance features, recomputed from the index at
    the run's as-of pair (a run recorded before they existed has nothing to compare)."""
    if recorded is None:
        verdict.notes.append("the run predates question salience; its gates were compared")
        return
    keys = ("id", "scope_id", "in_force_passages", "aspects", "not_in_force", "features")
    for key in (*keys, *(("languages",) if "languages" in recorded else ())):
        if not _same(recorded.get(key), replayed.get(key)):
            verdict.differ(f"salience.{key}", recorded.get(key), replayed.get(key))


class RecordedGenerator:
    """Stands in for a generator that is not configured on this node: replay verifies the
    recorded draft and never asks a generator to write one."""

    deterministic = False

    def __init__(self, name: str) -> None:
        self.name = name

    def generate(self, question: str, evidence: Sequence[Evidence],
                 aspects: Sequence[Aspect] = ()) -> Draft:
        """Never called: a replay passes the recorded draft."""
        raise RuntimeError(f"generator {self.name!r} is not configured on this node")

    def run(self, question: str, evidence: Sequence[Evidence],
            aspects: Sequence[Aspect] = ()) -> Generation:
        """Never called: a replay passes the recorded draft."""
        raise RuntimeError(f"generator {self.name!r} is not configured on this node")


def _recorded_draft(record: dict[str, Any]) -> Draft:
    """The recorded draft; a "consulted" list of older records (the model's own account
    of what it read) is ignored, as the run itself now ignores it."""
    saved = record["generator"].get("draft")
    if not saved:
        return Draft(sentences=[], gaps=[])
    return Draft(sentences=[DraftSentence(text=s["text"], evidence_ids=list(s["evidence"]))
                            for s in saved["sentences"]],
                 gaps=list(saved["gaps"]))


class ReplayService:
    """Replays and impact reports for one tenant's recorded runs."""

    def __init__(self, answers: AnswerService, runs: RunStore, clock: Clock, *,
                 documents: DocumentStore | None = None,
                 grounding: GroundingService | None = None,
                 evidence: EvidenceService | None = None) -> None:
        self.grounding = grounding  # check runs (docs/assistants.md)
        self.evidence = evidence  # evidence runs
        self.documents = documents  # erasures of the versions a run relied on
        self.answers = answers
        self.runs = runs
        self.clock = clock
        self.search = answers.search

    def _load(self, principal: Principal, run_id: str) -> RunRow:
        principal.require("audit")
        try:
            rid = uuid.UUID(run_id)
        except ValueError:
            raise NotFound("run") from None
        row = self.runs.run(principal.tenant_id, rid)
        if row is None or row.record.get("clearance", 0) > principal.clearance:
            raise NotFound("run")
        return row

    def generator(self, name: str) -> tuple[Generator, bool]:
        """The registered generator of a run and whether replay regenerates its draft
        (deterministic generators) or verifies the recorded one (LLMs)."""
        found = self.answers.generators.get(name)
        if found is None:
            return RecordedGenerator(name), False
        return found, bool(getattr(found, "deterministic", False))

    def replay(self, principal: Principal, run_id: str) -> Verdict:
        """Recompute a run at its recorded as-of pair and name every difference."""
        row = self._load(principal, run_id)
        if row.kind not in ("search", "answer", "evidence", "check"):  # review records too
            raise Invalid("run_id", f"a {row.kind} record is not a run to replay")
        record: dict[str, Any] = row.record
        verdict = Verdict(run_id=run_id, kind=row.kind)
        valid_at = parse_time(record["as_of"]["valid_at"], field="valid_at")
        known_at = parse_time(record["as_of"]["known_at"], field="known_at")
        # The run is replayed with the recorded key's clearance, never more.
        who = Principal(tenant_id=principal.tenant_id, key_id=principal.key_id,
                        scopes=principal.scopes, clearance=int(record.get("clearance", 0)),
                        time_zone=principal.time_zone)
        if self._erased(who, record, verdict):
            return verdict
        if row.kind == "check" and self.grounding is not None:  # the request, checked again
            now = self.answers.thresholds.current(principal.tenant_id)
            replay_check(self.grounding, who, record, verdict=verdict,
                         thresholds=replace(now, tau=float(record["thresholds"]["tau"])))
            return verdict
        if "listing" in record:  # a list answer: recomputed from the catalogue
            self._listing(who, record, valid_at, known_at, verdict)
            return verdict
        hits = self._recorded_hits(who, record, valid_at, known_at, verdict)
        self._drift(who, record, valid_at, known_at, verdict)
        if row.kind == "evidence" and self.evidence is not None:
            replay_evidence(self.evidence, who, record, hits,
                            thresholds=self._compare_setup(principal, record, verdict),
                            run_id=run_id, valid_at=valid_at, known_at=known_at,
                            verdict=verdict)
        if row.kind != "answer":
            return verdict
        thresholds = self._compare_setup(principal, record, verdict)
        generator, regenerate = self.generator(record["request"]["generator"])
        # An LLM output is verified, not regenerated; its tool calls are run again.
        draft = None if regenerate else _recorded_draft(record)
        tools = [] if regenerate else self._recorded_tools(
            who, record, verdict, valid_at=valid_at, known_at=known_at)
        decided = self.answers.decide(
            who, record["request"]["question"], hits, thresholds=thresholds,
            generator=generator, run_id=uuid.UUID(run_id), valid_at=valid_at,
            known_at=known_at, recorded_draft=draft, recorded_tools=tools,
            # a run recorded before the cross-language rule replays without it
            languages="languages" in (record.get("salience") or {}),
            sentence_rule=recorded_rule(record),
            # a run recorded before the cross-encoder replays without one
            cross="cross_encoder" in record.get("models", {}))
        _compare_candidates(record["candidates"], decided, verdict)
        for what, was, now in differences(record.get("sentence_scores"),
                                          decided.sentence_scores):
            verdict.differ(what, was, now)
        _compare_result(record, decided.result, verdict)
        self._sources(who, record, decided.result, verdict)
        return verdict

    def _erased(self, who: Principal, record: dict[str, Any], verdict: Verdict) -> bool:
        """Whether a version the run relied on was erased: the verdict is then
        ``erased`` with the erasure records, and nothing is recomputed (the run's record
        and its log leaf are unchanged, so the log still verifies)."""
        if self.documents is None:
            return False
        found = self.documents.erasures(who.tenant_id, version_ids_of(record),
                                        clearance=who.clearance)
        verdict.erased = [erasure_record(e) for _, e in sorted(found.items())]
        if verdict.erased:
            verdict.notes.append(f"{len(found)} version(s) the run relied on were erased "
                                 "(GDPR); the run cannot be recomputed, its record stands")
        return bool(verdict.erased)

    def _listing(self, who: Principal, record: dict[str, Any], valid_at: datetime,
                 known_at: datetime, verdict: Verdict) -> None:
        """A list answer's items and sets, recomputed at the recorded as-of pair; the
        catalogue as known at a past known_at never changes, so any difference counts."""
        listings = self.answers.listings
        asked = (listings.recognise(who, record["request"]["question"], valid_at=valid_at,
                                    known_at=known_at) if listings else None)
        generator, _ = self.generator(record["request"]["generator"])
        if asked is None:
            verdict.differ("listing", record["listing"], None)
            return
        result = self.answers.listed(
            who, asked, thresholds=self.answers.thresholds.current(who.tenant_id),
            generator=generator, run_id=uuid.UUID(verdict.run_id), valid_at=valid_at,
            known_at=known_at)
        assert result.listing is not None
        if record["listing"] != result.listing.record():
            verdict.differ("listing", record["listing"], result.listing.record())
        _compare_provenance(verdict, record.get("provenance"), result.provenance.record())

    def _recorded_tools(self, who: Principal, record: dict[str, Any], verdict: Verdict, *,
                        valid_at: datetime, known_at: datetime) -> list[ToolResult]:
        """The run's tool calls, run again in their order at the recorded as-of pair and
        clearance (the versions they read are immutable): a result that differs from the
        record is a difference; the replayed results feed the gates."""
        saved = record["generator"].get("tools") or []
        if not saved:
            return []
        first = len(record["evidence"]) - sum(len(t["evidence"]) for t in saved) + 1
        library = self.answers.library(who, uuid.UUID(verdict.run_id), valid_at=valid_at,
                                       known_at=known_at, first=first)
        out = []
        for i, t in enumerate(saved):
            again = library.call(t["call_id"], t["name"], t["arguments"])
            if again.record() != t:
                verdict.differ(f"generator.tools[{i}]", t, again.record())
            out.append(again)
        return out

    def _compare_setup(self, principal: Principal, record: dict[str, Any],
                       verdict: Verdict) -> Thresholds:
        """Models and thresholds now against the recorded ones; the current thresholds."""
        models = record.get("models", {})
        embedding = self.search.embedder.model_hash if self.search.embedder else None
        if models.get("embedding") != embedding:
            verdict.differ("models.embedding", models.get("embedding"), embedding)
        if models.get("reranker") != self.answers.reranker.model_hash:
            verdict.differ("models.reranker", models.get("reranker"),
                           self.answers.reranker.model_hash)
        cross = self.answers.cross.model_hash if self.answers.cross is not None else None
        if "cross_encoder" in models and models["cross_encoder"] != cross:
            verdict.differ("models.cross_encoder", models["cross_encoder"], cross)
        thresholds = self.answers.thresholds.current(principal.tenant_id)
        older = built_in_as_recorded(record["thresholds"])
        if older is not None and thresholds.version == 0:
            verdict.notes.append("the built-in thresholds were refitted since this run "
                                 "(docs/thresholds.md); it is replayed with the ones it "
                                 "recorded")
            return older
        now = thresholds.record()
        for key in ("version", "theta_rel", "tau", "calibration", "theta_scope", "relevance"):
            if key not in record["thresholds"] and key in ("theta_scope", "relevance"):
                continue  # recorded before the scope gate existed; the gates still compare
            if record["thresholds"].get(key) != now[key]:
                verdict.differ(f"thresholds.{key}", record["thresholds"].get(key), now[key])
        return thresholds

    def _sources(self, who: Principal, record: dict[str, Any], result: AnswerResult,
                 verdict: Verdict) -> None:
        """The extraction a run relied on (original, extractor, libraries per version) is
        immutable: a recorded entry that differs from the store is a difference; a
        version that gained an original since the run (the same text uploaded as a PDF)
        is only a note."""
        if self.answers.sources is None:
            return
        now = self.answers.sources.run_record(
            who, [e.version_id for e in result.evidence]).get("sources", {})
        recorded = record.get("sources", {})
        for vid, entry in recorded.items():
            if now.get(vid) != entry:
                verdict.differ(f"sources.{vid}", entry, now.get(vid))
        gained = sorted(set(now) - set(recorded))
        if gained:
            verdict.notes.append(f"{len(gained)} cited version(s) gained an original after "
                                 "the run (the same text uploaded as a file)")

    def _recorded_hits(self, who: Principal, record: dict[str, Any], valid_at: datetime,
                       known_at: datetime, verdict: Verdict) -> list[Hit]:
        keys = [(c["assertion_id"], c["passage"]) for c in record["candidates"]]
        scores = {(c["assertion_id"], c["passage"]): c for c in record["candidates"]}
        hits = self.search.hits(who, keys, as_of=AsOf(valid_at=valid_at, known_at=known_at),
                                scores=Scores(
            bm25={k: v["bm25"] for k, v in scores.items() if v["bm25"] is not None},
            vector={k: v["vector"] for k, v in scores.items() if v["vector"] is not None},
            fused={k: v["fused"] for k, v in scores.items()}, bm25_rank={}, vector_rank={}))
        found = {(h.assertion_id, h.passage_ordinal) for h in hits}
        for i, key in enumerate(keys):
            if key not in found:
                verdict.differ(f"candidates[{i}]", "visible at the as-of pair", "not visible")
        return hits

    def _drift(self, who: Principal, record: dict[str, Any], valid_at: datetime,
               known_at: datetime, verdict: Verdict) -> None:
        text = record["request"].get("question") or record["request"].get("query", "")
        k = len(record["candidates"]) or 1
        fresh, _, _ = self.search.retrieve(who, text, valid_at=valid_at, known_at=known_at, k=k)
        recorded = {(c["assertion_id"], c["passage"]) for c in record["candidates"]}
        new = [h for h in fresh if (h.assertion_id, h.passage_ordinal) not in recorded]
        if new:
            verdict.notes.append(
                f"a fresh retrieval today would rank {len(new)} other passage(s) into the top "
                f"{k} (corpus statistics changed since the run); the replay used the recorded "
                "candidates")

    def impact(self, principal: Principal, *,
               since: datetime | None = None) -> list[dict[str, Any]]:
        """Recorded answer runs whose answer would now differ at their Stichtag (valid_at)
        given what is known today, with the differing citations."""
        principal.require("audit")
        since = since or datetime(1970, 1, 1, tzinfo=UTC)
        now = self.clock.now()
        out: list[dict[str, Any]] = []
        for row in self.runs.answer_runs(principal.tenant_id, since=since):
            run_id, record = row.run_id, row.record
            if record.get("clearance", 0) > principal.clearance:
                continue
            who = Principal(tenant_id=principal.tenant_id, key_id=principal.key_id,
                            scopes=principal.scopes, clearance=int(record.get("clearance", 0)),
                            time_zone=principal.time_zone)
            if not self.generator(record["request"]["generator"])[1]:
                continue  # an LLM answer is not regenerated; replay verifies it instead
            valid_at = parse_time(record["as_of"]["valid_at"], field="valid_at")
            today = self.answers.answer(who, record["request"]["question"], valid_at=valid_at,
                                        known_at=now, record=False)
            before = {tuple(c) for s in _recorded_citations(record) for c in s[1]}
            after = {tuple(c) for s in _citations(today) for c in s[1]}
            if before != after or record["result"]["status"] != today.status:
                out.append({"run_id": str(run_id), "as_of": record["as_of"],
                            "question": record["request"]["question"],
                            "status": [record["result"]["status"], today.status],
                            "citations_removed": sorted(before - after),
                            "citations_added": sorted(after - before)})
        return out


def _compare_result(record: dict[str, Any], result: AnswerResult, verdict: Verdict) -> None:
    """Gate decisions, status, reason, coverage and citations against the record."""
    replayed_gates = [(g.gate, g.passed, g.threshold, g.observed) for g in result.gates]
    recorded_gates = [(g["gate"], g["passed"], g["threshold"], g["observed"])
                      for g in record["gates"]]
    if "provenance" not in record:  # recorded before the sources gate existed
        replayed_gates = [g for g in replayed_gates if g[0] != SOURCES]
    if len(replayed_gates) != len(recorded_gates) or any(
            a[0] != b[0] or a[1] != b[1] or not _close(a[2], b[2]) or not _close(a[3], b[3])
            for a, b in zip(recorded_gates, replayed_gates, strict=False)):
        verdict.differ("gates", recorded_gates, replayed_gates)
    for key, value in (("status", result.status), ("reason", result.reason)):
        if record["result"][key] != value:
            verdict.differ(f"result.{key}", record["result"][key], value)
    if not _close(record["result"]["coverage"], result.coverage):
        verdict.differ("result.coverage", record["result"]["coverage"], result.coverage)
    if _recorded_citations(record) != _citations(result):
        verdict.differ("result.sentences", _recorded_citations(record), _citations(result))
    if record["result"].get("gaps", []) != result.gaps:
        verdict.differ("result.gaps", record["result"].get("gaps"), result.gaps)
    _compare_salience(verdict, record.get("salience"), result.assessment.record())
    _compare_provenance(verdict, record.get("provenance"), result.provenance.record())


def _compare_provenance(verdict: Verdict, recorded: dict[str, Any] | None,
                        replayed: dict[str, Any]) -> None:
    """Found, cited and consulted, recomputed from the recorded candidates and draft."""
    if recorded is None:
        verdict.notes.append("the run predates derived sources (found, cited, consulted); "
                             "they were recomputed, not compared")
        return
    for key, value in replayed.items():
        if recorded.get(key) != value:
            verdict.differ(f"provenance.{key}", recorded.get(key), value)


def _compare_candidates(recorded: list[dict[str, Any]], decided: Decided,
                        verdict: Verdict) -> None:
    """Rerank scores, cross-encoder logits and calibrated values, candidate by candidate."""
    if len(recorded) != len(decided.raw):
        return  # the hits themselves differ; that is reported where they are read
    for i, (cand, raw, cal) in enumerate(zip(recorded, decided.raw, decided.calibrated,
                                             strict=True)):
        if not _close(cand["rerank"], raw):
            verdict.differ(f"candidates[{i}].rerank", cand["rerank"], raw)
        if not _close(cand["calibrated"], cal):
            verdict.differ(f"candidates[{i}].calibrated", cand["calibrated"], cal)
        logit = decided.cross[i] if decided.cross is not None else None
        if "cross" in cand and (logit is None or not _close(cand["cross"], logit)):
            verdict.differ(f"candidates[{i}].cross", cand["cross"], logit)
