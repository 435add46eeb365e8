"""What the question asks and what the candidates carry: salience, scope and the features
of gate 1, computed from the lexical index at the as-of pair and the reranked hits.

Pure functions of their inputs except one port call (``LexicalIndex.in_force``), so a
replay at the same as-of pair recomputes exactly the same assessment: the passages
visible at a past ``known_at`` never change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stichtag.domain.asof import AsOf
from stichtag.domain.aspect_support import Support, support, support_in_force
from stichtag.domain.crosslang import Crossing, crossing_of
from stichtag.domain.relevance import Candidate, features
from stichtag.domain.retrieval import Hit
from stichtag.domain.salience import (
    AMOUNT,
    NUMBER,
    PERCENTAGE,
    SALIENCE_ID,
    YEAR,
    Aspect,
    salient_aspects,
)
from stichtag.domain.scope import SCOPE_ID
from stichtag.ports import LexicalIndex
from stichtag.services.access import Principal

QUANTITY_KINDS = frozenset({NUMBER, PERCENTAGE, AMOUNT, YEAR})


@dataclass(frozen=True, kw_only=True)
class Assessment:
    """Salient aspects, their support in force, and each candidate's features."""

    aspects: list[Aspect]
    in_force_passages: int
    in_force: Support
    candidates: list[Candidate]
    pooled: dict[str, float] | None
    crossing: Crossing | None = None
    """Languages of question and candidates; None for a run recorded before the rule."""

    def record(self) -> dict[str, Any]:
        """What a run records of it (replay recomputes and compares)."""
        return {
            "id": SALIENCE_ID, "scope_id": SCOPE_ID, "in_force_passages": self.in_force_passages,
            "aspects": [{"surface": a.surface, "kind": a.kind, "weight": a.weight,
                         "stems": list(a.stems),
                         "parts": [{"surface": p.surface, "stem": p.stem, "weight": p.weight}
                                   for p in a.parts]} for a in self.aspects],
            "not_in_force": [a.surface for a in self.in_force.uncovered],
            "features": self.pooled,
            **({"languages": self.crossing.record()} if self.crossing is not None else {}),
        }


def hit_text(hit: Hit) -> str:
    """What a reader sees of a passage: its heading path and its text."""
    return " ".join((*hit.heading_path, hit.text))


def document_names(hits: Sequence[Hit]) -> list[str]:
    """The keys and titles of the documents among the hits (not salient in a question)."""
    names: list[str] = []
    for h in hits:
        names.append(h.document)
        if h.title:
            names.append(h.title)
    return list(dict.fromkeys(names))


def _numbers_share(aspects: Sequence[Aspect], covered: Sequence[Aspect]) -> float:
    wanted = [a for a in aspects if a.kind in QUANTITY_KINDS]
    if not wanted:
        return 1.0
    return sum(1 for a in covered if a.kind in QUANTITY_KINDS) / len(wanted)


def assess(lexical: LexicalIndex, principal: Principal, question: str, hits: Sequence[Hit],
           raw: Sequence[float], *, as_of: AsOf, languages: bool = True,
           cross: Sequence[float] | None = None) -> Assessment:
    """Salience at the as-of pair, the scope support, and the candidates' features; with
    ``languages``, the languages of question and candidates (``stichtag.domain.crosslang``;
    off only to replay a run recorded before that rule); ``cross``: the cross-encoder's
    logit per hit (the ``cross`` feature), None when the run reads none."""
    if cross is not None and len(cross) != len(hits):
        raise ValueError(f"{len(cross)} cross-encoder logits for {len(hits)} hits")
    in_force = lexical.in_force(principal.tenant_id, as_of=as_of,
                                clearance=principal.clearance)
    texts = [hit_text(h) for h in hits]
    aspects = salient_aspects(question, in_force, documents=document_names(hits))
    candidates = []
    for i, (text, score) in enumerate(zip(texts, raw, strict=True)):
        found = support(aspects, [text])
        share = found.share()
        candidates.append(Candidate(rerank=score, cross=None if cross is None else cross[i],
                                    matched=math.fsum(a.weight for a in found.covered),
                                    coverage=1.0 if share is None else share,
                                    numbers=_numbers_share(aspects, found.covered)))
    return Assessment(aspects=aspects, in_force_passages=in_force.passages,
                      in_force=support_in_force(aspects, in_force, texts),
                      candidates=candidates, pooled=features(candidates),
                      crossing=crossing_of(question, texts) if languages else None)
