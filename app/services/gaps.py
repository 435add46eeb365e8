"""Documentation-gap report: recent questions that abstained with insufficient_evidence,
grouped by meaning — answers without sources on a product question are gaps in the
documentation, and a group of similar ones is where to write next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from app.services.access import Principal
from app.services.indexer import Embedder
from app.store.pg import PgStore
from app.store.sqlfiles import query

SIMILAR = 0.86  # e5 cosine above which two questions count as the same topic


def gap_report(store: PgStore, embedder: Embedder, principal: Principal, *,
               since: datetime | None = None, limit: int = 500) -> list[dict[str, Any]]:
    """Groups of similar abstained questions, largest first (greedy, deterministic)."""
    principal.require("audit")
    since = since or datetime.now(UTC) - timedelta(days=30)
    with store.tx(principal.tenant_id) as conn:
        rows = conn.execute(query("abstained_questions"),
                            {"since": since, "limit": limit}).fetchall()
    rows = [r for r in rows if (r[3] or 0) <= principal.clearance]
    if not rows:
        return []
    vectors = np.stack([embedder.embed_queries([r[2]])[0] for r in rows])
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
    for members in sorted(groups, key=lambda g: (-len(g), rows[g[0]][1])):
        out.append({"count": len(members), "questions": [rows[i][2] for i in members][:10],
                    "runs": [str(rows[i][0]) for i in members][:10],
                    "latest": rows[members[0]][1].isoformat()})
    return out
