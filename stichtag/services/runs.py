"""Reading recorded runs: scope audit, or the key that made the run."""

from __future__ import annotations

import uuid

from stichtag.domain.errors import NotFound
from stichtag.domain.records import RunRow
from stichtag.ports import RunStore
from stichtag.services.access import Principal


class RunService:
    """Recorded search, answer and review runs of the caller's tenant."""

    def __init__(self, runs: RunStore) -> None:
        self.runs = runs

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
