"""Index status controller: GET /v1/index/status (the caller's tenant only)."""

from __future__ import annotations

from litestar import Controller, get

from stichtag.api.deps import Svc, Who
from stichtag.api.schemas import IndexStatusResponse


class IndexController(Controller):
    """How far the caller's derived indexes are behind PostgreSQL."""

    path = "/v1/index"
    tags = ("retrieval",)

    @get("/status", operation_id="getIndexStatus", sync_to_thread=True)
    def status(self, svc: Svc, who: Who) -> IndexStatusResponse:
        """Outbox head, lexical position, embeddings pending, drain rate and time left."""
        r = svc.index_status.status(who)
        return IndexStatusResponse(
            outbox_seq=r.outbox_seq, lexical_seq=r.lexical_seq,
            lexical_pending=r.lexical_pending, pending_embeddings=r.pending_embeddings,
            complete=r.complete, embed_rate=r.embed_rate, eta_seconds=r.eta_seconds,
            model=r.model)
