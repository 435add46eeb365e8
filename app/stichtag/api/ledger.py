"""Admission counts shared by the server processes of one node, and the worker slots.

The concurrency limits of ``stichtag.api.limits.Admission`` are a node's: its slots stand
for the node's cores and database connections, the per-tenant cap for a tenant's fair
share of them. With several server processes on the node (``stichtag serve --workers N``)
the counts must be the node's, not each process's, or N processes admit N times as much.
So they live in shared memory: a small file under ``$STICHTAG_DATA_DIR/run``, mapped by
every process, one row per worker slot. A process changes only its own row and reads all
of them, under an ``flock`` of the file held for microseconds.

Why shared memory and not PostgreSQL: admission is decided for every expensive request
and again whenever a slot frees, and its counts are a property of this machine, not of
the cluster (another node has its own cores). The per-key *rate* is the opposite (one
limit for the key wherever it calls), so it lives in PostgreSQL (0013_key_rates.sql).

Worker slots: each process claims the lowest free slot ``k`` by an exclusive ``flock`` of
``run/worker-k.lock``, held until it exits (the kernel frees it when the process dies).
The slot numbers the process's row here and its tantivy replica (``index`` for slot 0,
``index-k`` after), so a restarted worker gets a free slot back with its replica warm and
a dead worker's counts are cleared by whoever claims its slot next, or sooner, when a
full node looks for rows whose process is gone.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol
from uuid import UUID

import numpy as np

MAX_WORKERS = 32
"""Worker slots per node (rows of the shared table)."""
ENTRIES = 256
"""Distinct tenants one process may count at once (running or waiting); a process never
holds more than its node's slots plus queue, far below this."""
_ENTRY = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("running", "<i4"), ("waiting", "<i4")])
_ROW = np.dtype([("pid", "<i8"), ("entries", _ENTRY, (ENTRIES,))])


class LedgerFull(RuntimeError):
    """A process counts more distinct tenants than its row holds (refused as busy)."""


class Ledger(Protocol):
    """Running and waiting counts for admission: this process's changes, the node's sums."""

    def take(self, tenant: Hashable, *, node_slots: int, tenant_slots: int) -> str | None:
        """Count one running slot for ``tenant`` if the node and the tenant have one free:
        None when taken, else ``"node"`` or ``"tenant"`` (which cap is reached)."""
        ...

    def give(self, tenant: Hashable) -> None:
        """Count one running slot of ``tenant`` less."""
        ...

    def wait(self, tenant: Hashable, delta: int) -> None:
        """Count ``delta`` waiting requests of ``tenant`` more (or less)."""
        ...

    def running(self, tenant: Hashable | None = None) -> int:
        """Running slots of ``tenant``, or of the node."""
        ...

    def waiting(self, tenant: Hashable | None = None) -> int:
        """Waiting requests of ``tenant``, or of the node."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other processes change the counts too (then waiters must look again)."""
        ...


class LocalLedger:
    """The counts of one process alone (unit tests, an app without a data directory)."""

    shared = False

    def __init__(self) -> None:
        self._running: dict[Hashable, int] = {}
        self._waiting: dict[Hashable, int] = {}

    def take(self, tenant: Hashable, *, node_slots: int, tenant_slots: int) -> str | None:
        if sum(self._running.values()) >= node_slots:
            return "node"
        if self._running.get(tenant, 0) >= tenant_slots:
            return "tenant"
        self._running[tenant] = self._running.get(tenant, 0) + 1
        return None

    def give(self, tenant: Hashable) -> None:
        _add(self._running, tenant, -1)

    def wait(self, tenant: Hashable, delta: int) -> None:
        _add(self._waiting, tenant, delta)

    def running(self, tenant: Hashable | None = None) -> int:
        return (sum(self._running.values()) if tenant is None
                else self._running.get(tenant, 0))

    def waiting(self, tenant: Hashable | None = None) -> int:
        return (sum(self._waiting.values()) if tenant is None
                else self._waiting.get(tenant, 0))


def _add(counts: dict[Hashable, int], tenant: Hashable, delta: int) -> None:
    left = counts.get(tenant, 0) + delta
    if left > 0:
        counts[tenant] = left
    else:
        counts.pop(tenant, None)


class SharedLedger:
    """The node's counts in a shared, file-backed table; this process writes row ``slot``."""

    shared = True

    def __init__(self, path: Path, slot: int) -> None:
        if not 0 <= slot < MAX_WORKERS:
            raise ValueError(f"worker slot {slot} outside 0..{MAX_WORKERS - 1}")
        path.parent.mkdir(parents=True, exist_ok=True)
        size = _ROW.itemsize * MAX_WORKERS
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        with self._locked():
            if os.fstat(self._fd).st_size < size:
                os.ftruncate(self._fd, size)  # new pages read as zeros: no rows in use
        self._map = mmap.mmap(self._fd, size)
        self._rows = np.ndarray((MAX_WORKERS,), dtype=_ROW, buffer=self._map)
        self.slot = slot
        with self._locked():
            self._rows[slot] = np.zeros((), dtype=_ROW)  # a dead predecessor's counts go
            self._rows[slot]["pid"] = os.getpid()

    # -- the protocol ------------------------------------------------------------------

    def take(self, tenant: Hashable, *, node_slots: int, tenant_slots: int) -> str | None:
        hi, lo = _key(tenant)
        with self._locked():
            full = self._full(hi, lo, node_slots=node_slots, tenant_slots=tenant_slots)
            if full is not None and self._clear_dead():
                full = self._full(hi, lo, node_slots=node_slots, tenant_slots=tenant_slots)
            if full is not None:
                return full
            self._own_entry(hi, lo)["running"] += 1
            return None

    def give(self, tenant: Hashable) -> None:
        self._change(tenant, "running", -1)

    def wait(self, tenant: Hashable, delta: int) -> None:
        self._change(tenant, "waiting", delta)

    def running(self, tenant: Hashable | None = None) -> int:
        return self._sum("running", tenant)

    def waiting(self, tenant: Hashable | None = None) -> int:
        return self._sum("waiting", tenant)

    def close(self) -> None:
        """Clear this process's row and unmap the table."""
        with self._locked():
            self._rows[self.slot] = np.zeros((), dtype=_ROW)
        del self._rows
        self._map.close()
        os.close(self._fd)

    # -- inside ------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _full(self, hi: int, lo: int, *, node_slots: int, tenant_slots: int) -> str | None:
        entries = self._rows["entries"]
        if int(entries["running"].sum()) >= node_slots:
            return "node"
        mine = (entries["hi"] == hi) & (entries["lo"] == lo)
        if int(entries["running"][mine].sum()) >= tenant_slots:
            return "tenant"
        return None

    def _clear_dead(self) -> bool:
        """Zero the rows of processes that are gone; True if any was."""
        cleared = False
        for slot in range(MAX_WORKERS):
            pid = int(self._rows[slot]["pid"])
            if slot == self.slot or pid == 0:
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                self._rows[slot] = np.zeros((), dtype=_ROW)
                cleared = True
            except PermissionError:
                continue  # alive, another user's
        return cleared

    def _own_entry(self, hi: int, lo: int) -> np.void:
        row = self._rows[self.slot]["entries"]
        found = np.flatnonzero((row["hi"] == hi) & (row["lo"] == lo))
        if found.size:
            return row[int(found[0])]  # type: ignore[no-any-return]
        free = np.flatnonzero((row["running"] == 0) & (row["waiting"] == 0))
        if not free.size:
            raise LedgerFull(f"this process counts {ENTRIES} tenants at once")
        entry = row[int(free[0])]
        entry["hi"], entry["lo"] = hi, lo
        return entry  # type: ignore[no-any-return]

    def _change(self, tenant: Hashable, field: str, delta: int) -> None:
        hi, lo = _key(tenant)
        with self._locked():
            entry = self._own_entry(hi, lo)
            entry[field] = max(0, int(entry[field]) + delta)

    def _sum(self, field: str, tenant: Hashable | None) -> int:
        entries = self._rows["entries"]
        with self._locked():
            if tenant is None:
                return int(entries[field].sum())
            hi, lo = _key(tenant)
            return int(entries[field][(entries["hi"] == hi) & (entries["lo"] == lo)].sum())


def _key(tenant: Hashable) -> tuple[int, int]:
    """A tenant as two 64-bit words: a UUID's own bits, else a hash (unit tests' names)."""
    value = tenant.int if isinstance(tenant, UUID) else int.from_bytes(_digest(repr(tenant)))
    return value >> 64, value & (2**64 - 1)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


class WorkerSlot:
    """This process's slot on the node, held by an ``flock`` until :meth:`release` or exit."""

    def __init__(self, number: int, handle: IO[bytes]) -> None:
        self.number = number
        self._handle = handle

    def index_dir(self, data_dir: Path) -> Path:
        """This slot's tantivy replicas: ``index`` for slot 0 (what the CLI writes too),
        ``index-<k>`` for the others."""
        return data_dir / ("index" if self.number == 0 else f"index-{self.number}")

    def release(self) -> None:
        """Give the slot up (the lock goes with the file)."""
        self._handle.close()


def claim_slot(run_dir: Path) -> WorkerSlot:
    """The lowest free worker slot of the node, or RuntimeError when all are taken."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for number in range(MAX_WORKERS):
        handle = (run_dir / f"worker-{number}.lock").open("ab")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return WorkerSlot(number, handle)
    raise RuntimeError(f"all {MAX_WORKERS} worker slots in {run_dir} are taken")
