"""The node's shared admission counts and worker slots (app/stichtag/api/ledger.py).

Two ``Admission`` objects on one shared file stand for two server processes; the last
tests use real child processes, because only they show that the counts and the locks
live in the file and the kernel, not in one interpreter.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import pytest

from stichtag.api.ledger import LocalLedger, SharedLedger, claim_slot
from stichtag.api.limits import Admission, Throttled


def _admission(ledger: SharedLedger | LocalLedger, **kw: float) -> Admission:
    args = {"tenant_slots": 2, "tenant_queue": 1, "node_slots": 3, "node_queue": 10,
            "wait_seconds": 5.0, "poll_seconds": 0.002, **kw}
    return Admission(ledger=ledger, **args)  # type: ignore[arg-type]


def test_a_tenant_cap_holds_over_two_processes_rows(tmp_path: Path) -> None:
    async def run() -> None:
        a = _admission(SharedLedger(tmp_path / "adm", 0))
        b = _admission(SharedLedger(tmp_path / "adm", 1))
        tenant, other = uuid4(), uuid4()
        await a.acquire(tenant)
        await b.acquire(tenant)  # the tenant's 2 slots, one in each process
        assert a.running_for(tenant) == b.running_for(tenant) == 2
        waiting = asyncio.ensure_future(a.acquire(tenant))  # queued: the cap is node-wide
        await asyncio.sleep(0.01)
        assert not waiting.done()
        assert b.ledger.waiting(tenant) == 1  # the other process sees the queue too
        with pytest.raises(Throttled) as caught:  # queue of 1 is full, counted node-wide
            await b.acquire(tenant)
        assert (caught.value.status, caught.value.reason) == (429, "tenant_queue_full")
        await b.acquire(other)  # the node's third slot goes to another tenant
        assert a.running == 3
        b.release(tenant)  # freed in process b: process a's waiter finds it by looking
        await asyncio.wait_for(waiting, timeout=5)
        assert a.running_for(tenant) == 2
        assert a.ledger.waiting() == 0

    asyncio.run(run())


def test_node_saturation_over_processes_is_a_503(tmp_path: Path) -> None:
    async def run() -> None:
        a = _admission(SharedLedger(tmp_path / "adm", 0), node_slots=2, tenant_slots=1,
                       node_queue=0)
        b = _admission(SharedLedger(tmp_path / "adm", 1), node_slots=2, tenant_slots=1,
                       node_queue=0)
        await a.acquire("t1")
        await b.acquire("t2")
        with pytest.raises(Throttled) as caught:
            await a.acquire("t3")
        assert (caught.value.status, caught.value.reason) == (503, "node_queue_full")

    asyncio.run(run())


def test_a_claimed_slot_starts_with_a_clean_row(tmp_path: Path) -> None:
    first = SharedLedger(tmp_path / "adm", 4)
    first.take("t", node_slots=10, tenant_slots=10)
    first.wait("t", 3)
    assert (first.running(), first.waiting()) == (1, 3)
    # A process that died holding them; the next owner of slot 4 clears its row.
    successor = SharedLedger(tmp_path / "adm", 4)
    assert (successor.running(), successor.waiting()) == (0, 0)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    """A child interpreter running ``code`` (a real process: its own locks and mapping)."""
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True)


HOLD_AND_DIE = """
import os, sys
from pathlib import Path
from stichtag.api.ledger import SharedLedger
ledger = SharedLedger(Path(sys.argv[1]), 1)
assert ledger.take("A", node_slots=2, tenant_slots=2) is None
assert ledger.take("A", node_slots=2, tenant_slots=2) is None
os._exit(0)  # dies holding both slots, no cleanup
"""


def test_a_dead_processs_slots_are_freed_when_the_node_looks_full(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", HOLD_AND_DIE, str(tmp_path / "adm")], check=True,
                   timeout=60)
    mine = SharedLedger(tmp_path / "adm", 0)
    assert mine.running() == 2  # still counted: nobody has looked yet
    assert mine.take("B", node_slots=2, tenant_slots=2) is None  # full: dead rows cleared
    assert mine.running() == 1


CLAIM = """
import sys
from pathlib import Path
from stichtag.api.ledger import claim_slot
slot = claim_slot(Path(sys.argv[1]))
print(slot.number, flush=True)
sys.stdin.readline()  # hold the slot until told
"""


def test_worker_slots_are_exclusive_between_processes_and_freed_by_exit(tmp_path: Path) -> None:
    children = []
    numbers = []
    for _ in range(2):  # one after the other: each has its slot before the next looks
        child = _python(CLAIM, str(tmp_path))
        assert child.stdout is not None
        numbers.append(int(child.stdout.readline()))
        children.append(child)
    assert numbers == [0, 1]
    mine = claim_slot(tmp_path)
    assert mine.number == 2
    assert mine.index_dir(tmp_path) == tmp_path / "index-2"
    for child in children:
        child.communicate("\n", timeout=60)
    again = claim_slot(tmp_path)  # the children exited: their locks went with them
    assert again.number == 0
    assert again.index_dir(tmp_path) == tmp_path / "index"
    mine.release()
    again.release()
