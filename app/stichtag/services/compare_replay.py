"""Replay of a compare record (docs/audit.md, "Compared answers"): both referenced runs are
replayed as any run is, and the changes are recomputed from the recorded cited facts
and the history at the recorded pairs. Other records replay unchanged."""

from __future__ import annotations

from typing import Any

from stichtag.domain.errors import Invalid
from stichtag.ports import Clock, DocumentStore, RunStore
from stichtag.services.access import Principal
from stichtag.services.answer import AnswerService
from stichtag.services.compare import CompareService
from stichtag.services.evidence import EvidenceService
from stichtag.services.grounding import GroundingService
from stichtag.services.replay import ReplayService, Verdict


class ComparingReplay(ReplayService):
    """A ReplayService that also replays compare records."""

    def __init__(self, answers: AnswerService, runs: RunStore, clock: Clock, *,
                 compares: CompareService, documents: DocumentStore | None = None,
                 grounding: GroundingService | None = None,
                 evidence: EvidenceService | None = None) -> None:
        super().__init__(answers, runs, clock, documents=documents, grounding=grounding,
                         evidence=evidence)
        self.compares = compares

    def replay(self, principal: Principal, run_id: str) -> Verdict:
        """A compare record: both runs and the changes; anything else as before."""
        row = self._load(principal, run_id)
        if row.kind != "compare":
            return super().replay(principal, run_id)
        record: dict[str, Any] = row.record
        verdict = Verdict(run_id=run_id, kind="compare")
        for side in ("from", "to"):
            ref = record[side]["run_id"]
            try:
                part = super().replay(principal, ref)
            except Invalid:
                verdict.differ(f"{side}.run", ref, "not a replayable run")
                continue
            for d in part.differences:
                verdict.differ(f"{side}.{d['what']}", d["recorded"], d["replayed"])
            verdict.notes.extend(f"{side}: {n}" for n in part.notes)
            verdict.erased.extend(e for e in part.erased if e not in verdict.erased)
        if verdict.erased:
            return verdict
        # The referenced runs were recorded with the compare's key and clearance.
        who = Principal(tenant_id=principal.tenant_id, key_id=principal.key_id,
                        scopes=principal.scopes, clearance=int(record.get("clearance", 0)),
                        time_zone=principal.time_zone)
        again = [c.record() for c in self.compares.recomputed(who, record)]
        if again != record["changes"]:
            verdict.differ("changes", record["changes"], again)
        return verdict
