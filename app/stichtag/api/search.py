"""Search controller."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, as_of
from stichtag.api.schemas import SearchBody, SearchResponse


class SearchController(Controller):
    """Hybrid retrieval as of a Stichtag."""

    path = "/v1/search"
    tags = ("retrieval",)

    @post("/", operation_id="search", status_code=200, sync_to_thread=True)
    def search(self, data: JSONBody[SearchBody], svc: Svc, who: Who) -> SearchResponse:
        """Passages visible at (valid_at, known_at) within the key's clearance, best first."""
        at = as_of(svc, who, data.valid_at, data.known_at)
        result = svc.search.search(who, data.query, valid_at=at.valid_at, known_at=at.known_at,
                                   k=data.k, wait_for_index=data.wait_for_index)
        return SearchResponse(run_id=str(result.run_id), as_of=convert.as_of(at),
                              lexical_seq=result.lexical_seq,
                              hits=[convert.hit(h) for h in result.hits],
                              index=convert.index(result.index) if result.index else None)
