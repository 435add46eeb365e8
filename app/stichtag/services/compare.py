"""One question answered at two as-of pairs, with the cause of every change in the cited
facts taken from the bitemporal history (docs/audit.md, "Compared answers").

Both answers are ordinary gated, recorded runs; the compare record references them and
holds the per-document changes (ids, causes, times, never text). The rules live in
``stichtag.domain.compare``; the sentence diff of a changed document's two versions is the
one every surface uses (``ChangesService.compare``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import Interval
from stichtag.domain.compare import Change, Cited, Held, compare, summary
from stichtag.domain.errors import Gone
from stichtag.domain.records import AssertionRow
from stichtag.domain.segment import SEGMENTER_ID
from stichtag.domain.sentence_diff import SentenceDiff
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.ports import DocumentStore, Transactions
from stichtag.services.access import Principal
from stichtag.services.answer import AnswerService
from stichtag.services.answer_result import AnswerResult
from stichtag.services.changes import ChangesService
from stichtag.services.runlog import RunLog

MAX_SENTENCES = 20  # sentence changes listed per changed document (counts stay complete)


@dataclass(frozen=True, kw_only=True)
class Compared:
    """Both answers, the changes with their causes, and the compare run's id."""

    run_id: uuid.UUID
    first: AnswerResult
    second: AnswerResult
    changes: list[Change]
    diffs: dict[str, SentenceDiff | None]
    """The sentence diff of each changed document's two cited versions (None: erased)."""
    summary: str


def held(row: AssertionRow) -> Held:
    """An assertion row as the comparison reads it."""
    return Held(assertion_id=row.assertion_id, version_id=row.version_id,
                valid=Interval(start=row.valid_from, end=row.valid_to),
                tx=Interval(start=row.tx_from, end=row.tx_to), ended=row.ended,
                imported=row.provenance.get("kind") == "imported")


def cited_of(result: AnswerResult) -> dict[str, Cited]:
    """What an answer cites, per document: its version and spans."""
    spans: dict[str, tuple[str, set[tuple[int, int]]]] = {}
    for s in result.sentences:
        for c in s.citations:
            spans.setdefault(c.document, (c.version_id, set()))[1].add((c.start, c.end))
    return {d: Cited(version_id=v, spans=frozenset(p)) for d, (v, p) in spans.items()}


def _cited_record(cited: Mapping[str, Cited]) -> list[dict[str, Any]]:
    return [{"document": d, "version_id": c.version_id, "spans": sorted(map(list, c.spans))}
            for d, c in sorted(cited.items())]


def cited_from_record(entries: Sequence[Mapping[str, Any]]) -> dict[str, Cited]:
    """The cited facts of one side, as the compare record holds them."""
    return {e["document"]: Cited(version_id=e["version_id"],
                                 spans=frozenset((int(a), int(b)) for a, b in e["spans"]))
            for e in entries}


def _abstain_reason(first: AnswerResult, second: AnswerResult) -> str | None:
    return second.reason if second.status == "abstained" else first.reason


class CompareService:
    """Compared answers for one principal."""

    def __init__(self, answers: AnswerService, changes: ChangesService, store: DocumentStore,
                 runlog: RunLog, units: Transactions) -> None:
        self.answers = answers
        self.changes = changes
        self.store = store
        self.runlog = runlog
        self.units = units

    def compare(self, principal: Principal, question: str, *, first: AsOf, second: AsOf,
                generator: str = "extractive") -> Compared:
        """Answer at both pairs (two recorded runs), diff their cited facts with causes,
        and record the comparison referencing both runs."""
        principal.require("read")
        a = self.answers.answer(principal, question, valid_at=first.valid_at,
                                known_at=first.known_at, generator=generator)
        b = self.answers.answer(principal, question, valid_at=second.valid_at,
                                known_at=second.known_at, generator=generator)
        cited_a, cited_b = cited_of(a), cited_of(b)
        changes = self.changes_of(principal, cited_a, cited_b,
                                  AsOf(valid_at=a.valid_at, known_at=a.known_at),
                                  AsOf(valid_at=b.valid_at, known_at=b.known_at))
        diffs = {c.document: self._diff(principal, c) for c in changes if c.diffable}
        line = summary(a.status, b.status, _abstain_reason(a, b), changes)
        run_id = uuid.uuid4()
        record = {
            "kind": "compare", "run_id": str(run_id),
            "request": {"question": question, "generator": generator},
            "tenant": str(principal.tenant_id), "key_id": principal.key_id,
            "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
            "from": _side(a, cited_a), "to": _side(b, cited_b),
            "changes": [c.record() for c in changes], "summary": line}
        with self.units.unit(principal.tenant_id) as uow:
            self.runlog.append(uow, principal.tenant_id, run_id=run_id, kind="compare",
                               key_id=principal.key_id, record=record)
        return Compared(run_id=run_id, first=a, second=b, changes=changes, diffs=diffs,
                        summary=line)

    def changes_of(self, principal: Principal, cited_a: Mapping[str, Cited],
                   cited_b: Mapping[str, Cited], a: AsOf, b: AsOf) -> list[Change]:
        """The per-document changes, each document's history read within the clearance
        (an assertion above it is never a cause, nor named)."""
        history = {d: [held(r) for r in self.store.history(
            principal.tenant_id, key=d, clearance=principal.clearance)]
            for d in sorted(set(cited_a) | set(cited_b))}
        return compare(cited_a, cited_b, history, a, b)

    def recomputed(self, principal: Principal, record: Mapping[str, Any]) -> list[Change]:
        """The changes of a recorded comparison, recomputed from its recorded cited facts
        and pairs (the history as known at both known_at never changes)."""
        def pair(side: Mapping[str, Any]) -> AsOf:
            return AsOf(valid_at=parse_time(side["as_of"]["valid_at"], field="valid_at"),
                        known_at=parse_time(side["as_of"]["known_at"], field="known_at"))
        return self.changes_of(principal, cited_from_record(record["from"]["cited"]),
                               cited_from_record(record["to"]["cited"]),
                               pair(record["from"]), pair(record["to"]))

    def _diff(self, principal: Principal, change: Change) -> SentenceDiff | None:
        assert change.from_version is not None and change.to_version is not None
        try:
            return self.changes.compare(principal, change.from_version, change.to_version,
                                        max_sentences=MAX_SENTENCES)
        except Gone:  # an erased side has no sentences left to compare
            return None


def _side(result: AnswerResult, cited: Mapping[str, Cited]) -> dict[str, Any]:
    return {"run_id": str(result.run_id),
            "as_of": {"valid_at": format_time(result.valid_at),
                      "known_at": format_time(result.known_at)},
            "status": result.status, "reason": result.reason,
            "cited": _cited_record(cited)}
