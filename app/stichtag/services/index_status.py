"""The caller's index status: how far its derived indexes are behind PostgreSQL, how fast
the embedding backlog drains and when it should be gone (GET /v1/index/status,
``stichtag index status``; docs/api.md, "Index status")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from stichtag.domain.backlog import DrainRate, eta_seconds
from stichtag.domain.records import IndexStatus
from stichtag.services.access import Principal


class IndexProgress(Protocol):
    """The index room as the status reads it (``stichtag.index.applier.Indexer``)."""

    def status(self, tenant_id: UUID) -> IndexStatus:
        """Outbox head, this process's applied lexical sequence, embeddings pending."""
        ...


@dataclass(frozen=True, kw_only=True)
class IndexReport:
    """One tenant's index status as this process sees it."""

    outbox_seq: int
    lexical_seq: int
    lexical_pending: int
    pending_embeddings: int
    complete: bool
    embed_rate: float | None
    """Passages embedded per second over the last two minutes of looks (None: unknown)."""
    eta_seconds: float | None
    model: str | None


class IndexStatusService:
    """Index status for the caller's tenant only (read scope)."""

    def __init__(self, progress: IndexProgress, model: str | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.progress = progress
        self.model = model
        self.clock = clock
        self._rates: dict[UUID, DrainRate] = {}
        self._lock = threading.Lock()

    def status(self, principal: Principal) -> IndexReport:
        """Where the caller's tenant's indexes stand (each look also samples the rate)."""
        principal.require("read")
        status = self.progress.status(principal.tenant_id)
        return self._report(principal.tenant_id, status)

    def observe(self, tenant_id: UUID, status: IndexStatus) -> IndexReport:
        """A report from a status read elsewhere (the worker, for the metrics)."""
        return self._report(tenant_id, status)

    def _report(self, tenant_id: UUID, status: IndexStatus) -> IndexReport:
        with self._lock:
            rate = self._rates.setdefault(tenant_id, DrainRate()).observe(
                self.clock(), status.pending_embeddings)
        lexical = max(0, status.outbox_seq - status.lexical_seq)
        return IndexReport(
            outbox_seq=status.outbox_seq, lexical_seq=status.lexical_seq,
            lexical_pending=lexical, pending_embeddings=status.pending_embeddings,
            complete=lexical == 0 and status.pending_embeddings == 0,
            embed_rate=None if rate is None else round(rate, 2),
            eta_seconds=eta_seconds(status.pending_embeddings, rate), model=self.model)
