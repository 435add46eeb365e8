"""The grounding check for answers written elsewhere (docs/assistants.md, "What the check
guarantees"): an answer and its references, held to the gates of docs/architecture.md §7
and recorded as a ``check`` run.

Two ways to cite: markers ``[n]`` that name the evidence of an earlier evidence run of the
same tenant (``services/evidence.py``), or quotes with a location that must stand, character
for character, in the version in force at the as-of pair. What a key cannot read (another
tenant's version, one above its clearance) is ``quote_not_in_source``, exactly as a quote
that exists nowhere: the check never says more about a text than its key may see (§9).
"""

from __future__ import annotations

import bisect
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stichtag.domain import grounding as g
from stichtag.domain.answer import ABSTAINED
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Invalid, NotFound
from stichtag.domain.fundstelle import Citation, utf16_units
from stichtag.domain.provenance import Provenance
from stichtag.domain.records import AssertionRow, VersionContent
from stichtag.domain.segment import SEGMENTER_ID
from stichtag.domain.selectors import quote_context
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.domain.txclock import cap_known_at
from stichtag.ports import DocumentStore, RunStore, Transactions
from stichtag.services.access import Principal
from stichtag.services.citations import VersionCache
from stichtag.services.runlog import RunLog
from stichtag.services.thresholds import Thresholds, ThresholdService


@dataclass(frozen=True, kw_only=True)
class QuoteRef:
    """One quote-mode citation: the answer sentence it supports (index or text), the
    document, optionally the version and offsets, and the quote."""

    sentence: int | str
    document: str
    quote: str
    version_id: str | None = None
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """What ``POST /v1/answer/check`` returns."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    evidence_run: str | None
    outcome: g.CheckOutcome
    sentences: list[g.AnswerSentence]
    references: list[g.Reference]
    thresholds: Thresholds
    provenance: Provenance
    timings_ms: dict[str, float] = field(default_factory=dict)

    def citations_of(self, i: int) -> list[Citation]:
        """The resolved citations of sentence ``i``, once each, in the order written."""
        out: dict[tuple[str, int, int], Citation] = {}
        for r in self.references:
            if r.sentence == i and r.citation is not None:
                out.setdefault((r.citation.version_id, r.citation.start, r.citation.end),
                               r.citation)
        return list(out.values())


class GroundingService:
    """Checks answers written elsewhere, for one principal, and records each check."""

    def __init__(self, documents: DocumentStore, versions: VersionCache, *, runs: RunStore,
                 thresholds: ThresholdService, runlog: RunLog, units: Transactions) -> None:
        self.documents = documents
        self.versions = versions
        self.runs = runs
        self.thresholds = thresholds
        self.runlog = runlog
        self.units = units

    def check_markers(self, principal: Principal, *, run_id: str, answer: str,
                      record: bool = True, thresholds: Thresholds | None = None
                      ) -> CheckResult:
        """Markers ``[n]`` against the evidence of run ``run_id`` (an evidence run of this
        tenant, within the key's clearance; anything else is the same 404)."""
        principal.require("read")
        _check_answer(answer)
        started = time.perf_counter()
        row = self._evidence_run(principal, run_id)
        valid_at = parse_time(row["as_of"]["valid_at"], field="valid_at")
        known_at = parse_time(row["as_of"]["known_at"], field="known_at")
        thresholds = thresholds or self.thresholds.current(principal.tenant_id)
        entries = {int(e["n"]): e for e in row["evidence"]}
        contents = self.versions.get_many(principal, [e["version_id"]
                                                      for e in entries.values()])
        sentences = g.split_answer(answer)
        refs: list[g.Reference] = []
        for i, s in enumerate(sentences):
            for n in dict.fromkeys(s.markers):
                e = entries.get(n)
                if e is None:
                    refs.append(g.Reference(label=f"[{n}]", sentence=i, citation=None,
                                            failure=g.INVENTED_CITATION,
                                            detail="names no Fundstelle of evidence run "
                                                   f"{run_id}"))
                    continue
                content = contents[e["version_id"]]
                refs.append(g.Reference(label=f"[{n}]", sentence=i, citation=_cut(
                    content, e["document"], e["start"], e["end"],
                    valid_from=e["valid_from"], valid_to=e["valid_to"])))
        found = list(dict.fromkeys(e["document"] for e in entries.values()))
        return self._finish(principal, answer, sentences, refs, found=found,
                            thresholds=thresholds, valid_at=valid_at, known_at=known_at,
                            evidence_run=str(uuid.UUID(run_id)), request={
                                "mode": "markers", "run_id": str(uuid.UUID(run_id)),
                                "answer": answer},
                            started=started, record=record)

    def check_quotes(self, principal: Principal, *, answer: str, citations: Sequence[QuoteRef],
                     valid_at: datetime, known_at: datetime, record: bool = True,
                     thresholds: Thresholds | None = None) -> CheckResult:
        """Quotes against the versions in force at the as-of pair, re-anchored when their
        offsets are off, never matched fuzzily."""
        principal.require("read")
        _check_answer(answer)
        if len(citations) > g.MAX_CITATIONS:
            raise Invalid("citations", f"at most {g.MAX_CITATIONS}")
        known_at = cap_known_at(known_at, self.runlog.clock.now())  # §3.7
        if record:
            with self.units.unit(principal.tenant_id) as uow:
                self.runlog.observe(uow, known_at)
        started = time.perf_counter()
        thresholds = thresholds or self.thresholds.current(principal.tenant_id)
        sentences = g.split_answer(answer)
        as_of = AsOf(valid_at=valid_at, known_at=known_at)
        in_force: dict[str, AssertionRow | None] = {}
        refs: list[g.Reference] = []
        for k, c in enumerate(citations, start=1):
            label = f"citation {k}"
            i = g.sentence_for(sentences, c.sentence)
            if i is None:
                raise Invalid(f"citations[{k - 1}].sentence",
                              "names no sentence of the answer (an index from 0, or the "
                              "sentence's text)")
            if c.document not in in_force:
                in_force[c.document] = self.documents.assertion_asof(
                    principal.tenant_id, key=c.document, as_of=as_of,
                    clearance=principal.clearance)
            row = in_force[c.document]
            failure = self._visible(principal, c, row)
            if failure is not None:
                refs.append(g.Reference(label=label, sentence=i, citation=None,
                                        failure=failure[0], detail=failure[1]))
                continue
            assert row is not None
            content = self.versions.get(principal, row.version_id)
            place = g.locate(content.text, c.quote, c.start, c.end)
            if place is None:
                refs.append(g.Reference(
                    label=label, sentence=i, citation=None, failure=g.QUOTE_NOT_IN_SOURCE,
                    detail=f"the quote is not in document {c.document!r} as of the as-of "
                           "pair"))
                continue
            refs.append(g.Reference(label=label, sentence=i, reanchored=place[2],
                                    citation=_cut(content, c.document, place[0], place[1],
                                                  valid_from=format_time(row.valid_from) or "",
                                                  valid_to=format_time(row.valid_to))))
        found = list(dict.fromkeys(c.document for c in citations
                                   if in_force.get(c.document) is not None))
        return self._finish(principal, answer, sentences, refs, found=found,
                            thresholds=thresholds, valid_at=valid_at, known_at=known_at,
                            evidence_run=None, request={
                                "mode": "quotes", "answer": answer,
                                "citations": [quote_entry(c) for c in citations]},
                            started=started, record=record)

    def _visible(self, principal: Principal, c: QuoteRef,
                 row: AssertionRow | None) -> tuple[str, str] | None:
        """Why a quote's document or version cannot be cited at the as-of pair, or None.
        ``not_visible_at_as_of`` only for what the key can see at other times; anything
        it cannot see at all is ``quote_not_in_source`` (no existence oracle, §9)."""
        if row is not None and (c.version_id is None or c.version_id == row.version_id):
            return None
        known = self.documents.history(principal.tenant_id, key=c.document,
                                       clearance=principal.clearance)
        if c.version_id is None:
            if known:
                return (g.NOT_VISIBLE_AT_AS_OF,
                        f"document {c.document!r} has no version in force at the as-of pair")
        elif any(a.version_id == c.version_id for a in known):
            return (g.NOT_VISIBLE_AT_AS_OF,
                    f"version {c.version_id[:16]} is not the version of {c.document!r} in "
                    "force at the as-of pair")
        return (g.QUOTE_NOT_IN_SOURCE,
                f"the quote is not in document {c.document!r} as of the as-of pair")

    def _evidence_run(self, principal: Principal, run_id: str) -> dict[str, Any]:
        try:
            rid = uuid.UUID(run_id)
        except ValueError:
            raise NotFound("run") from None
        row = self.runs.run(principal.tenant_id, rid)
        if row is None or row.kind != "evidence" \
                or int(row.record.get("clearance", 0)) > principal.clearance:
            raise NotFound("run")
        return row.record

    def _finish(self, principal: Principal, answer: str, sentences: list[g.AnswerSentence],
                refs: list[g.Reference], *, found: list[str], thresholds: Thresholds,
                valid_at: datetime, known_at: datetime, evidence_run: str | None,
                request: dict[str, Any], started: float, record: bool) -> CheckResult:
        outcome = g.decide(sentences, refs, tau=thresholds.tau)
        delivered = outcome.status != ABSTAINED
        cited = list(dict.fromkeys(r.citation.document for r in refs
                                   if delivered and r.citation is not None))
        prov = Provenance(found=tuple(dict.fromkeys([*found, *cited])), cited=tuple(cited),
                          consulted=tuple(cited), opened=(), titles_only=(),
                          consulted_evidence=frozenset(
                              r.label for r in refs if delivered and r.citation is not None))
        result = CheckResult(run_id=uuid.uuid4(), valid_at=valid_at, known_at=known_at,
                             evidence_run=evidence_run, outcome=outcome, sentences=sentences,
                             references=refs, thresholds=thresholds, provenance=prov)
        result.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
        if record:
            with self.units.unit(principal.tenant_id) as uow:
                self.runlog.append(uow, principal.tenant_id, run_id=result.run_id,
                                   kind="check", key_id=principal.key_id,
                                   record=check_record(principal, request, result))
        return result


def _check_answer(answer: str) -> None:
    if not answer.strip():
        raise Invalid("answer", "must not be empty")
    if len(answer) > g.MAX_ANSWER_CHARS:
        raise Invalid("answer", f"at most {g.MAX_ANSWER_CHARS} characters")


def _cut(content: VersionContent, document: str, start: int, end: int, *, valid_from: str,
         valid_to: str | None) -> Citation:
    """The Fundstelle ``[start, end)`` of a version, cut from its text."""
    text = content.text
    at = bisect.bisect_right(content.sentences, start, key=lambda s: s.start) - 1
    heading = content.sentences[at].heading_path if at >= 0 else ()
    before = utf16_units(text[:start])
    prefix, suffix = quote_context(text, start, end)
    return Citation(document=document, version_id=content.version_id, start=start, end=end,
                    utf16_start=before, utf16_end=before + utf16_units(text[start:end]),
                    quote=text[start:end], heading_path=tuple(heading), prefix=prefix,
                    suffix=suffix, valid_from=valid_from, valid_to=valid_to)


def quote_entry(c: QuoteRef) -> dict[str, Any]:
    """A quote-mode citation as the run records it (replay checks it again)."""
    return {"sentence": c.sentence, "document": c.document, "version_id": c.version_id,
            "start": c.start, "end": c.end, "quote": c.quote}


def quote_refs(entries: Sequence[Mapping[str, Any]]) -> list[QuoteRef]:
    """The recorded quote-mode citations, back as requests."""
    return [QuoteRef(sentence=e["sentence"], document=e["document"], quote=e["quote"],
                     version_id=e.get("version_id"), start=e.get("start"), end=e.get("end"))
            for e in entries]


def check_record(principal: Principal, request: dict[str, Any],
                 result: CheckResult) -> dict[str, Any]:
    """The record of one check run: the request as sent, every reference as resolved,
    the gates and the verdict; replay checks the request again and compares."""
    o = result.outcome
    return {
        "kind": "check", "run_id": str(result.run_id), "request": request,
        "as_of": {"valid_at": format_time(result.valid_at),
                  "known_at": format_time(result.known_at)},
        "tenant": str(principal.tenant_id), "key_id": principal.key_id,
        "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
        "evidence_run": result.evidence_run,
        "thresholds": result.thresholds.record(),
        "references": [{"label": r.label, "sentence": r.sentence, "failure": r.failure,
                        "reanchored": r.reanchored,
                        "citation": None if r.citation is None else {
                            "document": r.citation.document,
                            "version_id": r.citation.version_id,
                            "start": r.citation.start, "end": r.citation.end}}
                       for r in result.references],
        "gates": [{"gate": d.gate, "passed": d.passed, "threshold": d.threshold,
                   "observed": d.observed, "detail": d.detail} for d in o.gates],
        "result": {"status": o.status, "reason": o.reason, "coverage": o.coverage,
                   "gaps": o.gaps,
                   "sentences": [{"text": s.text, "citations": [
                       {"version_id": c.version_id, "start": c.start, "end": c.end}
                       for c in result.citations_of(i)]}
                       for i, s in enumerate(result.sentences)]},
        "provenance": result.provenance.record(),
        "timings_ms": result.timings_ms,
    }
