"""Support review use cases (scope audit): draw a sample, show it, record verdicts, report.

Samples and verdicts are tenant rows under forced row-level security. A sample is visible
only to keys whose clearance reaches the sampler's (otherwise: the same 404 as a missing
one), and its population never holds a run that cites a version above that clearance.
Every sample and every verdict is a leaf of the tenant's run log, appended in the same
transaction as the row it describes.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stichtag.domain import review as rules
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.errors import Conflict, Gone, Invalid, NotFound
from stichtag.domain.passages import embed_text, section_of
from stichtag.domain.records import VersionContent
from stichtag.domain.review import Item, Pair, VerdictRecord
from stichtag.domain.timeutil import format_time
from stichtag.ports import DocumentStore, ReviewStore, RunStore, Transactions
from stichtag.services.access import Principal
from stichtag.services.citations import VersionCache
from stichtag.services.erasure import REDACTED
from stichtag.services.runlog import RunLog

EARLIEST = datetime.fromisoformat("0001-01-02T00:00:00+00:00")
LATEST = datetime.fromisoformat("9999-12-30T00:00:00+00:00")
MAX_SEED = 2**63 - 1


@dataclass(frozen=True, kw_only=True)
class Sample:
    """A stored sample with its items (sentence text, citation with quote, verdict)."""

    sample_id: str
    created_by: str
    created_at: datetime
    seed: int
    strata: list[str]
    n_per_stratum: int
    filters: dict[str, Any]
    clearance: int
    population: dict[str, int]
    items: list[dict[str, Any]]


def _sample_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except (ValueError, AttributeError, TypeError):
        raise NotFound("sample") from None


class ReviewService:
    """Sampled support review of answer sentences against their Fundstellen."""

    def __init__(self, store: ReviewStore, documents: DocumentStore, runlog: RunLog,
                 units: Transactions, versions: VersionCache, *, runs: RunStore) -> None:
        self.store = store
        self.runs = runs
        self.documents = documents
        self.runlog = runlog
        self.units = units
        self.versions = versions

    # -- sampling ----------------------------------------------------------------------

    def population(self, principal: Principal, *, run_from: datetime | None,
                   run_to: datetime | None) -> list[Pair]:
        """The sentence-citation pairs the caller may review (tenant and clearance)."""
        rows = self.store.population(principal.tenant_id, clearance=principal.clearance,
                                     run_from=run_from or EARLIEST, run_to=run_to or LATEST)
        pairs_by_run = [rules.pairs_of_run(str(run_id), created_at, record)
                        for run_id, record, created_at in rows]
        cited = sorted({p.version_id for pairs in pairs_by_run for p in pairs})
        visible = self.documents.readable_versions(principal.tenant_id, cited,
                                                   clearance=principal.clearance)
        # A run that cites anything above the clearance, or an erased version (nothing left
        # to judge the sentence against), is left out whole.
        return [p for pairs in pairs_by_run if all(p.version_id in visible for p in pairs)
                for p in pairs]

    def create_sample(self, principal: Principal, *, seed: int, strata: list[str], n: int,
                      run_from: datetime | None = None,
                      run_to: datetime | None = None) -> Sample:
        """Draw and store a sample; it is logged as a ``review_sample`` record."""
        principal.require("audit")
        if not 0 <= seed <= MAX_SEED:
            raise Invalid("seed", f"must be between 0 and {MAX_SEED}")
        spec = rules.parse_strata(strata)
        rules.check_n(n)
        if run_from and run_to and run_from >= run_to:
            raise Invalid("run_to", "must be after run_from")
        drawn = rules.draw(self.population(principal, run_from=run_from, run_to=run_to),
                           seed=seed, strata=spec, n=n)
        sample_id = uuid.uuid4()
        filters = {"run_from": format_time(run_from), "run_to": format_time(run_to)}
        keys = [[i.item, i.stratum, i.pair.run_id, i.pair.sentence, i.pair.citation,
                 i.pair.version_id, i.pair.start, i.pair.end] for i in drawn.items]
        record = {"kind": "review_sample", "run_id": str(sample_id),
                  "tenant": str(principal.tenant_id), "key_id": principal.key_id,
                  "clearance": principal.clearance, "seed": seed, "strata": list(spec),
                  "n_per_stratum": n, "filters": filters, "population": drawn.population,
                  "items": len(drawn.items),
                  "items_sha256": hashlib.sha256(canonicalize(keys)).hexdigest()}
        with self.units.unit(principal.tenant_id) as uow:
            self.runlog.append(uow, principal.tenant_id, run_id=sample_id,
                               kind="review_sample", key_id=principal.key_id, record=record)
            uow.review.insert_sample(
                sample_id=sample_id, created_by=principal.key_id, seed=seed,
                strata=list(spec), n=n, filters=filters, clearance=principal.clearance,
                population=drawn.population)
            uow.review.insert_items([{
                "sample_id": sample_id, "item": i.item, "stratum": i.stratum,
                "run_id": uuid.UUID(i.pair.run_id), "sentence": i.pair.sentence,
                "citation": i.pair.citation, "document": i.pair.document,
                "version_id": i.pair.version_id, "start": i.pair.start, "end": i.pair.end,
                "generator": i.pair.generator, "trace": dict(i.pair.trace),
            } for i in drawn.items])
        return self.sample(principal, str(sample_id))

    def samples(self, principal: Principal) -> list[dict[str, Any]]:
        """The tenant's samples within the caller's clearance, newest first."""
        principal.require("audit")
        return self.store.samples(principal.tenant_id, clearance=principal.clearance)

    # -- reading -----------------------------------------------------------------------

    def _load(self, principal: Principal, sample_id: str
              ) -> tuple[dict[str, Any], list[dict[str, Any]], list[VerdictRecord]]:
        principal.require("audit")
        found = self.store.sample(principal.tenant_id, _sample_id(sample_id),
                                  clearance=principal.clearance)
        if found is None:
            raise NotFound("sample")
        head, items, rows = found
        verdicts = [VerdictRecord(verdict_id=str(v["verdict_id"]), item=v["item"],
                                  verdict=v["verdict"], note=v["note"], reviewer=v["reviewer"],
                                  supersedes=str(v["supersedes"]) if v["supersedes"] else None,
                                  created_at=v["created_at"]) for v in rows]
        return head, items, verdicts

    @staticmethod
    def _items(rows: list[dict[str, Any]]) -> list[Item]:
        return [Item(item=r["item"], stratum=r["stratum"], pair=Pair(
            run_id=str(r["run_id"]), sentence=r["sentence"], citation=r["citation"],
            document=r["document"], version_id=r["version_id"], start=r["start_cp"],
            end=r["end_cp"], generator=r["generator"], coverage=r["coverage"],
            run_at=r["run_at"], valid_at=r["valid_at"] or "", trace=r["trace"])) for r in rows]

    def sample(self, principal: Principal, sample_id: str) -> Sample:
        """A sample with each item's sentence, citation (quote cut from the version) and
        current verdict."""
        head, rows, verdicts = self._load(principal, sample_id)
        current = rules.current_verdicts(verdicts)
        counts: dict[int, int] = {}
        for v in verdicts:
            counts[v.item] = counts.get(v.item, 0) + 1
        contents: dict[str, VersionContent] = {}
        erased = set(self.documents.erasures(
            principal.tenant_id, sorted({r["version_id"] for r in rows}),
            clearance=principal.clearance))
        items = []
        for r in rows:
            entry: dict[str, Any] = {
                "item": r["item"], "stratum": r["stratum"], "run_id": str(r["run_id"]),
                "sentence_index": r["sentence"], "citation_index": r["citation"],
                "sentence": (r["sentence_text"] or "") if r["version_id"] not in erased
                else REDACTED, "generator": r["generator"],
                "run_at": format_time(r["run_at"]), "trace": r["trace"],
                "citation": self._citation(principal, r, contents),
                "verdict": _verdict_out(current.get(r["item"])),
                "verdicts_recorded": counts.get(r["item"], 0)}
            items.append(entry)
        return Sample(sample_id=str(head["sample_id"]), created_by=head["created_by"],
                      created_at=head["created_at"], seed=head["seed"],
                      strata=list(head["strata"]), n_per_stratum=head["n_per_stratum"],
                      filters=head["filters"], clearance=head["clearance"],
                      population=head["population"], items=items)

    def _citation(self, principal: Principal, r: dict[str, Any],
                  contents: dict[str, VersionContent]) -> dict[str, Any]:
        """The cited sentence cut from the stored version (never from the run record)."""
        out: dict[str, Any] = {"document": r["document"], "version_id": r["version_id"],
                               "start": r["start_cp"], "end": r["end_cp"]}
        content = contents.get(r["version_id"])
        if content is None:  # once per version and request (each get checks clearance)
            try:
                content = contents[r["version_id"]] = self.versions.get(principal,
                                                                        r["version_id"])
            except Gone:  # erased after the sample was drawn: nothing to quote
                out.update(quote=REDACTED, utf16_start=None, utf16_end=None, heading_path=[])
                return out
        sent = next((s for s in content.sentences if s.start == r["start_cp"]), None)
        out.update(quote=content.text[r["start_cp"]:r["end_cp"]],
                   utf16_start=sent.utf16_start if sent else None,
                   utf16_end=sent.utf16_end if sent and sent.end == r["end_cp"] else None,
                   heading_path=list(sent.heading_path) if sent else [])
        return out

    def export_labels(self, principal: Principal, sample_id: str) -> list[dict[str, Any]]:
        """Reranker training pairs from a sample's current verdicts: the run's question
        against the cited sentence with its section's headings (as passages are
        embedded); ``full``/``partial`` are positive, ``none``/``contradicts`` negative,
        unreviewed items are left out. For ``stichtag models train-reranker --labels``."""
        head, rows, verdicts = self._load(principal, sample_id)
        current = rules.current_verdicts(verdicts)
        contents: dict[str, VersionContent] = {}
        questions: dict[str, str] = {}
        out = []
        for r in rows:
            verdict = current.get(r["item"])
            if verdict is None:
                continue
            run_id = str(r["run_id"])
            if run_id not in questions:
                run = self.runs.run(principal.tenant_id, uuid.UUID(run_id))
                if run is None:  # a sample's runs are in the same tenant's log
                    raise NotFound("run")
                questions[run_id] = str(run.record["request"]["question"])
            cited = self._citation(principal, r, contents)
            if cited["quote"] == REDACTED:  # erased: no training pair from its text
                continue
            out.append({
                "question": questions[run_id],
                "passage": embed_text(section_of(tuple(cited["heading_path"])),
                                      cited["quote"]),
                "label": int(verdict.verdict in rules.SUPPORTING),
                "verdict": verdict.verdict, "sample_id": str(head["sample_id"]),
                "item": r["item"], "run_id": run_id, "version_id": r["version_id"],
                "start": r["start_cp"], "end": r["end_cp"]})
        return out

    def report(self, principal: Principal, sample_id: str) -> dict[str, Any]:
        """Support rates per stratum and overall, verdict counts, failed pairs."""
        head, rows, verdicts = self._load(principal, sample_id)
        out = rules.report(self._items(rows), verdicts)
        texts = {r["item"]: r["sentence_text"] or "" for r in rows}
        for f in out["failures"]:
            f["sentence_text"] = texts.get(f["item"], "")
        out["sample_id"] = str(head["sample_id"])
        return out

    # -- verdicts ----------------------------------------------------------------------

    def record_verdict(self, principal: Principal, *, sample_id: str, item: int, verdict: str,
                       note: str | None = None, supersedes: str | None = None
                       ) -> dict[str, Any]:
        """Append a verdict by the calling key and log it in the same transaction.

        The first verdict of an item names no predecessor; a later one must name the
        item's current verdict in ``supersedes`` (otherwise 409: someone else judged it
        meanwhile, or the id is wrong).
        """
        rules.check_verdict(verdict, note)
        head, rows, verdicts = self._load(principal, sample_id)
        row = next((r for r in rows if r["item"] == item), None)
        if row is None:
            raise Invalid("item", f"no item {item} in this sample")
        now = rules.current_verdicts(verdicts).get(item)
        if now is None and supersedes is not None:
            raise Conflict("supersedes", f"item {item} has no verdict to supersede")
        if now is not None and supersedes != now.verdict_id:
            raise Conflict("supersedes", f"item {item} already has the verdict "
                                         f"{now.verdict_id}; name it to supersede it")
        verdict_id = uuid.uuid4()
        record = {"kind": "review_verdict", "run_id": str(verdict_id),
                  "tenant": str(principal.tenant_id), "key_id": principal.key_id,
                  "clearance": head["clearance"], "sample_id": str(head["sample_id"]),
                  "item": item, "verdict": verdict, "note": note, "reviewer": principal.key_id,
                  "supersedes": supersedes,
                  "reviewed": {"run_id": str(row["run_id"]), "sentence": row["sentence"],
                               "citation": row["citation"], "document": row["document"],
                               "version_id": row["version_id"], "start": row["start_cp"],
                               "end": row["end_cp"]}}
        with self.units.unit(principal.tenant_id) as uow:  # Conflict rolls the leaf back too
            seq, _ = self.runlog.append(uow, principal.tenant_id, run_id=verdict_id,
                                        kind="review_verdict", key_id=principal.key_id,
                                        record=record)
            created = uow.review.insert_verdict(
                verdict_id=verdict_id, sample_id=head["sample_id"], item=item,
                verdict=verdict, note=note, reviewer=principal.key_id,
                supersedes=uuid.UUID(supersedes) if supersedes else None)
        return {"verdict_id": str(verdict_id), "sample_id": str(head["sample_id"]),
                "item": item, "verdict": verdict, "note": note, "reviewer": principal.key_id,
                "supersedes": supersedes, "created_at": format_time(created), "seq": seq}


def _verdict_out(v: VerdictRecord | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {"verdict_id": v.verdict_id, "verdict": v.verdict, "note": v.note,
            "reviewer": v.reviewer, "supersedes": v.supersedes,
            "created_at": format_time(v.created_at)}
