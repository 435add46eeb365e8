"""The leverage of τ on a tenant's own answers (docs/thresholds.md, "The leverage of
τ"): the coverage its recorded answers reached, read from its run log — check runs
(answers written elsewhere, docs/assistants.md) and answer runs of a language-model
generator; the extractive generator cites every sentence by construction and would only
flatten the picture — and the measured leverage beside the binomial model's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from stichtag.domain.leverage import LeverageReport, report
from stichtag.ports import RunStore
from stichtag.services.access import Principal
from stichtag.services.thresholds import ThresholdService


def samples_of(records: Iterable[dict[str, Any]]) -> Iterator[tuple[int, int]]:
    """(sentences, cited sentences) of each run that reached the coverage gate."""
    for r in records:
        result = r.get("result") or {}
        coverage = result.get("coverage")
        if not isinstance(coverage, int | float):
            continue  # never reached the coverage gate (a refusal, an invented reference)
        if r.get("kind") == "check":
            n = len(result.get("sentences") or [])
        elif r.get("kind") == "answer" and (r.get("request") or {}).get(
                "generator", "extractive") != "extractive":
            draft = (r.get("generator") or {}).get("draft") or {}
            n = len(draft.get("sentences") or [])
        else:
            continue
        if n:
            yield n, round(coverage * n)


class LeverageService:
    """Reads a tenant's run log for the leverage report."""

    def __init__(self, runs: RunStore, thresholds: ThresholdService) -> None:
        self.runs = runs
        self.thresholds = thresholds

    def report(self, principal: Principal) -> LeverageReport:
        """The report for the principal's tenant at its current τ (scope admin: it is what
        τ is set by, and setting τ is admin work)."""
        principal.require("admin")
        tenant = principal.tenant_id
        head = self.runs.log_head(tenant)
        records = self.runs.log_records(tenant, head.size) if head is not None else []
        return report(list(samples_of(records)), tau=self.thresholds.current(tenant).tau)
