"""Gate 1's inputs for a run's candidates: rerank scores, cross-encoder logits, the
assessment and the calibrated relevance, computed once for answers, evidence runs,
calibration and replay (docs/thresholds.md, "The combined relevance score").

Two models read the candidates. The reranker (by default the e5 cosine from stored
vectors) orders them; the cross-encoder (docs/models.md, "The student cross-encoder")
reads question and passage together and gives the ``cross`` feature. A relevance model
that reads ``cross`` is bound to the cross-encoder it was fitted on: a node serving none,
or another one, refuses with the reason and the command that recalibrates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from stichtag.domain.asof import AsOf
from stichtag.domain.passages import embed_text, section_of
from stichtag.domain.relevance import candidate_features
from stichtag.domain.retrieval import Hit
from stichtag.ports import PassageStore, Reranker, VectorReranker
from stichtag.services.access import Principal
from stichtag.services.assess import Assessment, assess
from stichtag.services.search import SearchService
from stichtag.services.thresholds import Thresholds


@dataclass(frozen=True, kw_only=True)
class Judged:
    """What gate 1 and the evidence order read for one run's candidates."""

    raw: list[float]
    cross: list[float] | None
    """Cross-encoder logits per candidate; None when the run reads no cross-encoder."""
    assessment: Assessment
    calibrated: list[float]
    best: float | None
    stale: str | None
    """Why the thresholds cannot gate these scores (then nothing is calibrated), or None."""


class Scorer:
    """Scores a run's candidates with the node's reranker and cross-encoder."""

    def __init__(self, search: SearchService, reranker: Reranker, passages: PassageStore,
                 cross: Reranker | None = None) -> None:
        self.search = search
        self.reranker = reranker
        self.passages = passages
        self.cross = cross

    def judge(self, principal: Principal, question: str, hits: Sequence[Hit], *,
              thresholds: Thresholds, valid_at: datetime, known_at: datetime,
              languages: bool = True, cross: bool = True,
              timings: dict[str, float] | None = None) -> Judged:
        """Rerank, cross-encode (``cross`` False: a replay of a run recorded without a
        cross-encoder), assess and calibrate."""
        t = time.perf_counter()
        raw = self.rerank(principal, question, hits)
        _tick(timings, "rerank", t)
        t = time.perf_counter()
        logits = self.cross_scores(question, hits) if cross else None
        _tick(timings, "cross", t)
        t = time.perf_counter()
        assessment = assess(self.search.lexical, principal, question, hits, raw,
                            as_of=AsOf(valid_at=valid_at, known_at=known_at),
                            languages=languages, cross=logits)
        model = thresholds.relevance
        stale = self.stale(thresholds, cross=logits is not None)
        if stale is not None or (model.missing(assessment.pooled) and assessment.pooled):
            calibrated, best = [0.0] * len(hits), None  # fail closed: the gate says why
        else:
            calibrated = [model.apply(candidate_features(c)) for c in assessment.candidates]
            best = model.apply(assessment.pooled) if assessment.pooled is not None else None
        _tick(timings, "assess", t)
        return Judged(raw=raw, cross=logits, assessment=assessment, calibrated=calibrated,
                      best=best, stale=stale)

    def stale(self, thresholds: Thresholds, *, cross: bool | None = None) -> str | None:
        """Why the thresholds cannot gate this node's scores, or None. A model fitted by
        calibration is bound to the reranker's model hash; an unbound one (the built-in
        defaults, versions older than the binding) to the default cosine, which scores
        from stored vectors, whatever its build's hash. A model reading ``cross`` is bound
        to its cross-encoder's hash (``cross`` False: this run reads none)."""
        model = thresholds.relevance
        fitted, serving = model.reranker, self.reranker.model_hash
        if not ((fitted is None and isinstance(self.reranker, VectorReranker))
                or fitted == serving):
            what = "the default cosine reranker" if fitted is None else f"reranker {fitted[:12]}"
            return (f"thresholds version {thresholds.version} were fitted for {what}, this "
                    f"node serves {serving[:12]}: recalibrate (stichtag calibrate) before "
                    "they gate answers")
        wanted = model.cross_encoder
        if wanted is None:
            return None
        has = self.cross.model_hash if self.cross is not None and cross is not False else None
        if has == wanted:
            return None
        serves = "no cross-encoder" if has is None else f"cross-encoder {has[:12]}"
        return (f"thresholds version {thresholds.version} read the cross-encoder "
                f"{wanted[:12]}, this run has {serves}: build it (stichtag models build) or "
                "recalibrate (stichtag calibrate) before they gate answers")

    def cross_scores(self, question: str, hits: Sequence[Hit]) -> list[float] | None:
        """The cross-encoder's logit per hit, or None when the node serves none."""
        if self.cross is None:
            return None
        if not hits:
            return []
        return [float(s) for s in self.cross.score(question, [h.text for h in hits])]

    def rerank(self, principal: Principal, question: str, hits: Sequence[Hit]) -> list[float]:
        """Raw rerank scores: a real cross-encoder reads the texts; the default cosine
        comes from stored passage vectors (the pair graph's score equals it)."""
        if not hits:
            return []
        if isinstance(self.reranker, VectorReranker):
            vectors = self.vectors(principal, hits)
            qvec = self.search.query_vector(question)  # embedded once, shared with retrieval
            return [float(s) for s in self.reranker.score_vectors(qvec, vectors)]
        return [float(s) for s in self.reranker.score(question, [h.text for h in hits])]

    def vectors(self, principal: Principal, hits: Sequence[Hit]) -> Any:
        """The hits' stored vectors; a passage found lexically but not embedded yet is
        embedded now, exactly as the indexer would, and stored (first writer wins) — the
        run and its replay then see the same vector even if the indexer raced us
        (int8 vectors depend on their batch-mates, so a recomputed one could differ)."""
        embedder = self.search.embedder
        assert embedder is not None
        model = embedder.model_hash
        ids = [h.passage_id for h in hits]
        stored = self.passages.vectors(principal.tenant_id, ids, model_hash=model)
        missing = [h for h in hits if h.passage_id not in stored]
        if missing:
            texts = [embed_text(section_of(h.heading_path), h.text) for h in missing]
            missing_ids = [h.passage_id for h in missing]
            self.passages.store_vectors(principal.tenant_id, missing_ids,
                                        embedder.embed_passages(texts), model)
            stored.update(self.passages.vectors(principal.tenant_id, missing_ids,
                                                model_hash=model))
        # a passage erased since it was found gets no vector: it scores nothing, and its
        # blank version yields no evidence (services/answer_draft.py, _readable)
        width = (len(next(iter(stored.values()))) if stored
                 else int(embedder.embed_queries([""]).shape[1]))
        blank = np.zeros(width, dtype=np.float32)
        return np.stack([np.asarray(stored[pid], dtype=np.float32) if pid in stored else blank
                         for pid in ids])


def _tick(timings: dict[str, float] | None, name: str, since: float) -> None:
    if timings is not None:
        timings[name] = round((time.perf_counter() - since) * 1000, 3)
