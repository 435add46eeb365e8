"""Search controller."""

from __future__ import annotations

from datetime import UTC, datetime

from litestar import Controller, post
from litestar.params import JSONBody

from app.api import convert
from app.api.deps import Svc, Who, tenant_zone
from app.api.schemas import AsOf, Scores, SearchBody, SearchHit, SearchResponse
from app.domain.timeutil import parse_time


class SearchController(Controller):
    """Hybrid retrieval as of a Stichtag."""

    path = "/v1/search"
    tags = ["retrieval"]

    @post("/", operation_id="search", status_code=200, sync_to_thread=True)
    def search(self, data: JSONBody[SearchBody], svc: Svc, who: Who) -> SearchResponse:
        """Passages visible at (valid_at, known_at) within the key's clearance, best first."""
        tz = tenant_zone(svc, who)
        now = datetime.now(UTC)
        valid_at = parse_time(data.valid_at, field="valid_at", tz=tz) if data.valid_at else now
        known_at = parse_time(data.known_at, field="known_at", tz=tz) if data.known_at else now
        result = svc.search.search(who, data.query, valid_at=valid_at, known_at=known_at, k=data.k)
        return SearchResponse(
            run_id=str(result.run_id),
            as_of=AsOf(valid_at=convert.iso(valid_at), known_at=convert.iso(known_at)),
            lexical_seq=result.lexical_seq,
            hits=[SearchHit(
                document=h.document, version_id=h.version_id, assertion_id=h.assertion_id,
                start=h.start, end=h.end, utf16_start=h.utf16_start, utf16_end=h.utf16_end,
                heading_path=h.heading_path, text=h.text, valid_from=convert.iso(h.valid_from),
                valid_to=convert.iso(h.valid_to) if h.valid_to else None,
                scores=Scores(bm25=h.bm25, vector=h.vector, fused=h.fused,
                              bm25_rank=h.bm25_rank, vector_rank=h.vector_rank))
                for h in result.hits])
