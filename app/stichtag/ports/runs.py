"""Ports of runs, the log, signing, thresholds and review; the unit of work."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from stichtag.domain.records import (
    Erasure,
    ErasureTarget,
    LogHead,
    RunRow,
    ThresholdRow,
)
from stichtag.domain.sealing import SealedText

# -- runs, the log, thresholds, review --------------------------------------------------------


class LogWriter(Protocol):
    """The run-log rows of one transaction (the head row is locked until it ends)."""

    def observe(self, known_at: datetime) -> datetime:
        """Move the observation hand of the tenant's transaction clock to ``known_at``
        (never back), after any write of the tenant in flight has ended; returns the hand
        (docs/architecture.md §3.6)."""
        ...

    def lock_head(self, empty_root: bytes) -> LogHead:
        """The tenant's log head, created empty if missing, locked: appends serialize."""
        ...

    def insert_leaf(self, *, run_id: UUID, kind: str, key_id: str, record: dict[str, Any],
                    seq: int, leaf: bytes, texts: Sequence[SealedText] = ()) -> None:
        """Store a record as leaf ``seq`` and, outside it, the texts it seals."""
        ...

    def set_head(self, head: LogHead) -> None:
        """Advance the head after an append."""
        ...


class ReviewWriter(Protocol):
    """Append-only review rows of one transaction."""

    def insert_sample(self, **fields: Any) -> None:
        """Store a sample's header."""
        ...

    def insert_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Store a sample's items."""
        ...

    def insert_verdict(self, **fields: Any) -> datetime:
        """Store a verdict; its creation time. Conflict when the item was judged meanwhile."""
        ...


class ErasureWriter(Protocol):
    """The erasure of a version inside the transaction of its run-log record."""

    def target(self, version_id: str, *, clearance: int) -> ErasureTarget | None:
        """Lock the tenant's clock and read the version's assertions and documents; None
        when it is unknown or an assertion of it lies above the clearance."""
        ...

    def record(self, erasure: Erasure) -> None:
        """Store the erasure row (its log leaf is already in this transaction)."""
        ...

    def blank(self, version_id: str) -> dict[str, int]:
        """Blank the erased version's content and delete the sealed texts recorded runs
        took from it; counts of what was blanked now (zeros when re-applied and nothing
        came back)."""
        ...

    def queue(self, assertion_ids: Sequence[int]) -> None:
        """Tell the lexical index to drop the documents of these assertions."""
        ...

    def logged(self) -> list[dict[str, Any]]:
        """The erasure records of the tenant's run log, oldest first."""
        ...


class UnitOfWork(Protocol):
    """One transaction of one tenant for what must commit together."""

    @property
    def log(self) -> LogWriter:
        """The run-log rows of this transaction."""
        ...

    @property
    def review(self) -> ReviewWriter:
        """The review rows of this transaction."""
        ...

    @property
    def erasure(self) -> ErasureWriter:
        """The erasure rows of this transaction."""
        ...


class Transactions(Protocol):
    """Opens units of work."""

    def unit(self, tenant_id: UUID) -> AbstractContextManager[UnitOfWork]:
        """A unit of work: committed when the block ends, rolled back on an exception."""
        ...


class Signer(Protocol):
    """Signs log checkpoints with a key kept outside the database."""

    @property
    def name(self) -> str:
        """Where the key lives, for error messages (never the key)."""
        ...

    def sign(self, body: str) -> str:
        """The signed note of a checkpoint body."""
        ...

    def public_key_pem(self) -> str:
        """PEM of the verification key."""
        ...

    def signed_by_us(self, note: str) -> bool:
        """Whether this key (or a declared previous one) signed ``note``."""
        ...


class RunStore(Protocol):
    """Recorded runs and the stored log."""

    def run(self, tenant_id: UUID, run_id: UUID) -> RunRow | None:
        """One recorded run of the tenant."""
        ...

    def answer_runs(self, tenant_id: UUID, *, since: datetime) -> list[RunRow]:
        """Answer runs since ``since``, oldest first."""
        ...

    def abstained_questions(self, tenant_id: UUID, *, since: datetime, limit: int,
                            reasons: Sequence[str]) -> list[RunRow]:
        """Recent answer runs that abstained with one of ``reasons`` or recorded one of
        them as their gap (``result.gap``: a list answer that named nothing), newest
        first; each record's ``result.reason`` is the one that matched."""
        ...

    def log_head(self, tenant_id: UUID) -> LogHead | None:
        """The current head (None: nothing logged yet)."""
        ...

    def log_leaves(self, tenant_id: UUID, size: int) -> list[bytes]:
        """Leaf hashes in order, up to ``size``."""
        ...

    def log_records(self, tenant_id: UUID, size: int) -> list[dict[str, Any]]:
        """Records in order, up to ``size``, as the leaves hash them."""
        ...

    def log_entries(self, tenant_id: UUID, size: int
                    ) -> list[tuple[dict[str, Any], dict[str, dict[str, str]]]]:
        """(record as hashed, openings of its sealed texts still held), up to ``size``
        (for export)."""
        ...

    def run_leaf(self, tenant_id: UUID, run_id: UUID) -> tuple[int, bytes] | None:
        """The log position and leaf hash of one run (None: unknown to the tenant)."""
        ...


class ThresholdStore(Protocol):
    """Versioned gate thresholds of a tenant."""

    def current_thresholds(self, tenant_id: UUID) -> ThresholdRow | None:
        """The newest version (None: the built-in defaults apply)."""
        ...

    def threshold_history(self, tenant_id: UUID) -> list[ThresholdRow]:
        """Every recorded version, oldest first."""
        ...

    def insert_thresholds(self, tenant_id: UUID, **fields: Any) -> ThresholdRow:
        """Record the next version (numbers serialized per tenant)."""
        ...


class ReviewStore(Protocol):
    """Reads of support-review samples (writes go through a UnitOfWork)."""

    def population(self, tenant_id: UUID, *, clearance: int, run_from: datetime,
                   run_to: datetime) -> list[tuple[UUID, dict[str, Any], datetime]]:
        """Answer runs that may be sampled: (run id, record, created at)."""
        ...

    def samples(self, tenant_id: UUID, *, clearance: int) -> list[dict[str, Any]]:
        """Sample headers within the clearance, newest first."""
        ...

    def sample(self, tenant_id: UUID, sample_id: UUID, *, clearance: int
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(header, items, verdicts) of one sample within the clearance."""
        ...
