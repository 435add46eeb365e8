"""Reading recorded runs: scope audit, or the key that made the run."""

from __future__ import annotations

import uuid
from dataclasses import replace

from stichtag.domain.errors import NotFound
from stichtag.domain.records import Erasure, RunRow
from stichtag.ports import DocumentStore, RunStore
from stichtag.services.access import Principal
from stichtag.services.erasure import redact, version_ids_of


class RunService:
    """Recorded search, answer and review runs of the caller's tenant."""

    def __init__(self, runs: RunStore, *, documents: DocumentStore | None = None) -> None:
        self.runs = runs
        self.documents = documents  # erasures of the versions a record took text from

    def get(self, principal: Principal, run_id: str) -> RunRow:
        """A run the caller may read: its own, or any with scope audit; never one recorded
        above the caller's clearance (all refusals are the same 404)."""
        try:
            rid = uuid.UUID(run_id)
        except ValueError:
            raise NotFound("run") from None
        row = self.runs.run(principal.tenant_id, rid)
        auditor = "audit" in principal.scopes or "admin" in principal.scopes
        if row is None or (not auditor and row.key_id != principal.key_id):
            raise NotFound("run")
        if row.record.get("clearance", 0) > principal.clearance:
            raise NotFound("run")
        return row

    def read(self, principal: Principal, run_id: str) -> tuple[RunRow, list[Erasure]]:
        """``get`` as a reader sees it: text taken from erased versions redacted, with the
        erasures that caused it (the stored record and its log leaf are unchanged)."""
        row = self.get(principal, run_id)
        if self.documents is None:
            return row, []
        found = self.documents.erasures(principal.tenant_id, version_ids_of(row.record),
                                        clearance=principal.clearance)
        if not found:
            return row, []
        record = redact(row.record, found)
        return replace(row, record=record), [e for _, e in sorted(found.items())]
