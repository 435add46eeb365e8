"""Documentation-gap report: recent questions that abstained for lack of evidence, because
nothing in force covers their subject or because sources contradict, and list questions
whose list named nothing, grouped by meaning — answers without
sources on a product question are gaps in the documentation, and a group of similar ones
is where to write next. Each group counts its reasons."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

from stichtag.domain.answer import CONTRADICTORY_SOURCES, INSUFFICIENT_EVIDENCE, OUT_OF_SCOPE
from stichtag.domain.listing import NOTHING_LISTED
from stichtag.ports import Clock, Embedder, RunStore
from stichtag.services.access import Principal

SIMILAR = 0.86  # e5 cosine above which two questions count as the same topic
# Runs that consulted no source for a reason the documentation can fix: nothing relevant
# in force, a subject nothing covers, sources that contradict each other, or a list
# question whose list named nothing. (A generator's integrity error or low coverage is
# not a documentation gap.) The sources gate abstains as insufficient_evidence.
GAP_REASONS = (INSUFFICIENT_EVIDENCE, OUT_OF_SCOPE, CONTRADICTORY_SOURCES, NOTHING_LISTED)


class GapService:
    """Groups of abstained questions for the caller's tenant."""

    def __init__(self, runs: RunStore, embedder: Embedder, clock: Clock) -> None:
        self.runs = runs
        self.embedder = embedder
        self.clock = clock

    def report(self, principal: Principal, *, since: datetime | None = None,
               limit: int = 500) -> list[dict[str, Any]]:
        """Groups of similar abstained questions, largest first (greedy, deterministic)."""
        principal.require("audit")
        since = since or self.clock.now() - timedelta(days=30)
        rows = [r for r in self.runs.abstained_questions(
                    principal.tenant_id, since=since, limit=limit, reasons=GAP_REASONS)
                if (r.record.get("clearance") or 0) <= principal.clearance]
        if not rows:
            return []
        questions = [str(r.record["request"]["question"]) for r in rows]
        vectors = np.stack([self.embedder.embed_queries([q])[0] for q in questions])
        groups: list[list[int]] = []
        centroids: list[np.ndarray] = []
        for i, vec in enumerate(vectors):
            scores = [float(c @ vec) / float(np.linalg.norm(c)) for c in centroids]
            best = max(range(len(scores)), key=scores.__getitem__, default=None)
            if best is not None and scores[best] >= SIMILAR:
                groups[best].append(i)
                centroids[best] = centroids[best] + vec
            else:
                groups.append([i])
                centroids.append(vec.copy())
        out = []
        for members in sorted(groups, key=lambda g: (-len(g), rows[g[0]].created_at)):
            reasons: dict[str, int] = {}
            for i in members:
                reason = str(rows[i].record["result"].get("reason"))
                reasons[reason] = reasons.get(reason, 0) + 1
            out.append({"count": len(members), "questions": [questions[i] for i in members][:10],
                        "runs": [str(rows[i].run_id) for i in members][:10],
                        "latest": rows[members[0]].created_at.isoformat(),
                        "reasons": dict(sorted(reasons.items()))})
        return out
