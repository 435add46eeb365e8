"""Replay of evidence and check runs (docs/architecture.md §8): an evidence run's gates and
evidence are recomputed from its recorded candidates; a check run is checked again from
its recorded request at its recorded as-of pair. Every difference is named."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from stichtag.domain.retrieval import Hit
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.evidence import EvidenceService, evidence_entry
from stichtag.services.grounding import GroundingService, check_record, quote_refs
from stichtag.services.thresholds import Thresholds


class Differ(Protocol):
    """The verdict a replay fills in (``services/replay.py``)."""

    def differ(self, what: str, recorded: Any, replayed: Any) -> None:
        """Name one difference."""
        ...


def replay_evidence(evidence: EvidenceService, who: Principal, record: dict[str, Any],
                    hits: Sequence[Hit], *, thresholds: Thresholds, run_id: str,
                    valid_at: datetime, known_at: datetime, verdict: Differ) -> None:
    """The gates and the numbered evidence, recomputed from the recorded candidates."""
    gated = evidence.gate(who, record["request"]["question"], hits, thresholds=thresholds,
                          run_id=uuid.UUID(run_id), valid_at=valid_at, known_at=known_at)
    recorded = record["result"]
    if recorded.get("status") != gated.status or recorded.get("reason") != gated.reason:
        verdict.differ("result.status", [recorded.get("status"), recorded.get("reason")],
                       [gated.status, gated.reason])
    for i, (gate, now) in enumerate(zip(record["gates"], gated.gates, strict=False)):
        if gate["passed"] != now.passed:
            verdict.differ(f"gates[{i}].{gate['gate']}", gate["passed"], now.passed)
    replayed = [_place(evidence_entry(n, e)) for n, e in enumerate(gated.evidence, start=1)]
    if [_place(e) for e in record["evidence"]] != replayed:
        verdict.differ("evidence", [_place(e) for e in record["evidence"]], replayed)


def _place(entry: dict[str, Any]) -> list[Any]:
    return [entry["n"], entry["document"], entry["version_id"], entry["start"], entry["end"]]


def replay_check(grounding: GroundingService, who: Principal, record: dict[str, Any], *,
                 thresholds: Thresholds, verdict: Differ) -> None:
    """The check again, from the recorded request, not recorded a second time."""
    request = record["request"]
    who = replace(who, scopes=who.scopes | {"read"})  # an audit key replays what it reads
    if request["mode"] == "markers":
        again = grounding.check_markers(who, run_id=request["run_id"],
                                        answer=request["answer"], record=False,
                                        thresholds=thresholds)
    else:
        again = grounding.check_quotes(
            who, answer=request["answer"], citations=quote_refs(request["citations"]),
            valid_at=parse_time(record["as_of"]["valid_at"], field="valid_at"),
            known_at=parse_time(record["as_of"]["known_at"], field="known_at"),
            record=False, thresholds=thresholds)
    now = check_record(who, request, again)
    for key in ("status", "reason", "coverage", "gaps", "sentences"):
        if record["result"].get(key) != now["result"][key]:
            verdict.differ(f"result.{key}", record["result"].get(key), now["result"][key])
    if record["references"] != now["references"]:
        verdict.differ("references", record["references"], now["references"])
    for key in ("found", "cited", "consulted"):
        if record["provenance"].get(key) != now["provenance"][key]:
            verdict.differ(f"provenance.{key}", record["provenance"].get(key),
                           now["provenance"][key])
