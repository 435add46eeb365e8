"""Ports of the derived indexes: the outbox feed and index maintenance (app/stichtag/index)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from stichtag.domain.records import (
    IndexStatus,
)
from stichtag.ports.common import Progress

# -- derived indexes -------------------------------------------------------------------------


class IndexFeed(Protocol):
    """What the outbox applier reads from the store (app/stichtag/index)."""

    def outbox_rows(self, tenant_id: UUID, after: int, limit: int) -> list[dict[str, Any]]:
        """Outbox rows after ``after`` in commit order."""
        ...

    def index_docs(self, tenant_id: UUID, assertion_ids: list[int], *,
                   part: int) -> Iterator[list[dict[str, Any]]]:
        """The index documents of the assertions, at most ``part`` per list, all read
        from one consistent state."""
        ...

    def outbox_head(self, tenant_id: UUID) -> int:
        """The newest outbox sequence (0 when empty)."""
        ...

    def outbox_positions(self, tenant_id: UUID) -> tuple[int, int]:
        """(head, awaited): the newest outbox sequence and the newest one a reader waits
        for (a bulk write's rows are not awaited)."""
        ...

    def indexable(self, tenant_id: UUID) -> Iterator[tuple[int, int, datetime | None]]:
        """Every (assertion, ordinal, tx_to) the lexical index should hold."""
        ...

    def pending_passages(self, tenant_id: UUID, *, model_hash: str, limit: int,
                         after: int = 0) -> list[tuple[int, str]]:
        """Passages still to embed with the model, oldest first, ids above ``after``:
        (id, text)."""
        ...

    def listen(self, should_stop: Callable[[], bool]) -> Iterator[UUID]:
        """Tenants whose outbox grew, as any process commits, until ``should_stop``; ends
        (or raises) when the connection is lost."""
        ...

    def embedding_owner(self, tenant_id: UUID, *,
                        wait: bool) -> AbstractContextManager[bool]:
        """Own the tenant's embedding work for the block (one owner per tenant across
        every process on the database); yields ``False`` when another process owns it
        and ``wait`` is false."""
        ...

    def pending_count(self, tenant_id: UUID, *, model_hash: str) -> int:
        """How many passages still lack a vector of the model."""
        ...


class IndexMaintenance(Protocol):
    """Operator work on a tenant's derived indexes (the CLI, tests, benchmarks)."""

    def catch_up(self, tenant_id: UUID, *, progress: Progress | None = None) -> IndexStatus:
        """Bring the lexical index and every embedding fully up to date; ``progress`` is
        told ``(stage, done, total)`` along the way."""
        ...

    def status(self, tenant_id: UUID) -> IndexStatus:
        """How far the derived indexes are behind PostgreSQL."""
        ...

    def rebuild(self, tenant_id: UUID) -> int:
        """Recreate the lexical index from PostgreSQL; the applied sequence."""
        ...

    def check(self, tenant_id: UUID) -> dict[str, Any]:
        """Compare the lexical index with PostgreSQL."""
        ...

    def notify(self, tenant_id: UUID) -> None:
        """Wake the background worker for a tenant (writes and pending embeddings)."""
        ...
