"""Rate refusals, early refusal and admission slots, with an injected clock (the bucket
arithmetic itself runs in PostgreSQL: tests/integration/test_rate_limits.py)."""

from __future__ import annotations

import asyncio
import os

import pytest

from stichtag.api.limits import Admission, Limits, Throttled, key_rate, whole_seconds
from stichtag.config import SettingsError, load_settings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_is_a_slot_interval_with_a_burst_tolerance_and_zero_switches_it_off() -> None:
    rate = key_rate(4.0, 3)
    assert rate is not None
    assert (rate.interval, rate.burst, rate.tolerance) == (0.25, 3, 0.5)
    assert key_rate(0.0, 50) is None


@pytest.mark.parametrize(("wait", "header"), [(0.001, 1), (0.5, 1), (1.0, 1), (1.01, 2), (7.2, 8)])
def test_retry_after_is_whole_seconds_rounded_up_at_least_one(wait: float, header: int) -> None:
    assert whole_seconds(wait) == header


def test_a_wait_from_the_store_is_a_429_naming_the_limit_and_is_remembered() -> None:
    clock = FakeClock()
    limits = Limits(key_rate(0.5, 1), _admission(), clock=clock)
    limits.settle("k", 0.0)  # admitted: nothing happens
    with pytest.raises(Throttled) as caught:
        limits.settle("k", 1.5)
    assert caught.value.status == 429
    assert caught.value.reason == "key_rate"
    assert caught.value.retry_after == 2
    assert "0.5 requests per second (burst 1" in caught.value.detail
    assert "STICHTAG_RATE_PER_SECOND" in caught.value.detail


# -- admission --------------------------------------------------------------------------


async def settle() -> None:
    """Let woken waiters run (asyncio.wait takes a few loop turns to return)."""
    for _ in range(10):
        await asyncio.sleep(0)


def _admission(**kw: float) -> Admission:
    args = {"tenant_slots": 1, "tenant_queue": 2, "node_slots": 2, "node_queue": 10,
            "wait_seconds": 5.0, **kw}
    return Admission(**args)  # type: ignore[arg-type]


def test_a_tenant_over_its_slots_and_queue_gets_429_while_another_is_admitted() -> None:
    async def run() -> None:
        adm = _admission()
        await adm.acquire("A")  # A's one slot
        waiters = [asyncio.create_task(adm.acquire("A")) for _ in range(2)]
        await settle()
        assert adm.waiting == 2
        with pytest.raises(Throttled) as caught:
            await adm.acquire("A")
        assert (caught.value.status, caught.value.reason) == (429, "tenant_queue_full")
        assert caught.value.retry_after >= 1
        await asyncio.wait_for(adm.acquire("B"), 0.1)  # B is not behind A's backlog
        assert adm.running == 2
        adm.release("B")
        adm.release("A")  # hands A's slot to its first waiter
        await settle()
        assert waiters[0].done() and not waiters[1].done()
        adm.release("A")
        await settle()
        assert waiters[1].done()
        adm.release("A")
        assert (adm.running, adm.waiting) == (0, 0)

    asyncio.run(run())


def test_freed_node_slots_go_round_robin_between_waiting_tenants() -> None:
    async def run() -> None:
        adm = _admission(tenant_slots=2, tenant_queue=10, node_slots=2)
        await adm.acquire("A")
        await adm.acquire("A")
        order: list[str] = []

        async def wait(tenant: str) -> None:
            await adm.acquire(tenant)
            order.append(tenant)

        tasks = [asyncio.create_task(wait("A")) for _ in range(3)]
        await settle()
        tasks.append(asyncio.create_task(wait("B")))  # queued after A's backlog
        await settle()
        for _ in range(2):
            adm.release(order[-1] if order else "A")
            await settle()
        assert order == ["A", "B"]  # B's one request did not wait behind all of A's
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(run())


def test_a_wait_that_times_out_is_refused_and_leaves_no_trace() -> None:
    async def run() -> None:
        adm = _admission(wait_seconds=0.01)
        await adm.acquire("A")
        with pytest.raises(Throttled) as caught:
            await adm.acquire("A")
        assert (caught.value.status, caught.value.reason) == (429, "tenant_queue_timeout")
        assert (adm.running, adm.waiting) == (1, 0)
        adm.release("A")
        assert adm.running == 0

    asyncio.run(run())


def test_node_saturation_is_a_503_not_the_tenants_fault() -> None:
    async def run() -> None:
        adm = _admission(tenant_slots=1, node_slots=1, node_queue=1, wait_seconds=0.01)
        await adm.acquire("A")
        with pytest.raises(Throttled) as caught:
            await adm.acquire("B")  # B has no slot in use: the node is full
        assert (caught.value.status, caught.value.reason) == (503, "node_busy")
        blocked = asyncio.create_task(adm.acquire("C"))
        await settle()
        with pytest.raises(Throttled) as caught:
            await adm.acquire("D")
        assert (caught.value.status, caught.value.reason) == (503, "node_queue_full")
        blocked.cancel()
        await asyncio.gather(blocked, return_exceptions=True)
        assert (adm.running, adm.waiting) == (1, 0)

    asyncio.run(run())


def test_a_cancelled_waiter_gives_back_a_slot_it_was_just_granted() -> None:
    async def run() -> None:
        adm = _admission(node_slots=1, tenant_slots=1)
        await adm.acquire("A")
        waiter = asyncio.create_task(adm.acquire("A"))
        await settle()
        adm.release("A")  # grants the slot to the waiter's future ...
        waiter.cancel()  # ... but the request goes away before it runs
        await asyncio.gather(waiter, return_exceptions=True)
        assert (adm.running, adm.waiting) == (0, 0)

    asyncio.run(run())


def test_the_slot_context_releases_on_error() -> None:
    async def run() -> None:
        adm = _admission()
        with pytest.raises(RuntimeError):
            async with adm.slot("A"):
                assert adm.running == 1
                raise RuntimeError
        assert adm.running == 0

    asyncio.run(run())


def test_a_recently_verified_token_over_its_limit_is_refused_before_verification() -> None:
    async def run() -> None:
        clock = FakeClock()
        limits = Limits(key_rate(1.0, 1), _admission(tenant_slots=1, tenant_queue=0),
                        recent_seconds=5, clock=clock)
        good, forged = b"digest of the real token", b"digest of a wrong secret"
        await limits.refuse_early(good, bounded=True)  # never seen: on to verification
        limits.remember(good, "key1", "tenant1")
        with pytest.raises(Throttled):
            limits.settle("key1", 1.0)  # the store said: the next token in 1 s
        with pytest.raises(Throttled) as caught:
            await limits.refuse_early(good, bounded=False)
        assert (caught.value.status, caught.value.reason) == (429, "key_rate")
        await limits.refuse_early(forged, bounded=True)  # another token is not refused early
        clock.now += 1  # the instant the store named: verification decides again
        await limits.refuse_early(good, bounded=False)
        clock.now += 10  # the memory is stale: forgotten, verification decides
        await limits.refuse_early(good, bounded=False)
        assert good not in limits._recent

    asyncio.run(run())


def test_an_early_refusal_for_a_full_tenant_queue_is_the_same_429() -> None:
    async def run() -> None:
        clock = FakeClock()
        adm = _admission(tenant_slots=1, tenant_queue=0)
        limits = Limits(key_rate(100.0, 100), adm, clock=clock)
        limits.remember(b"t", "key1", "A")
        await limits.refuse_early(b"t", bounded=True)
        await adm.acquire("A")
        await limits.refuse_early(b"t", bounded=False)  # cheap operations take no slot
        with pytest.raises(Throttled) as caught:
            await limits.refuse_early(b"t", bounded=True)
        assert (caught.value.status, caught.value.reason) == (429, "tenant_queue_full")

    asyncio.run(run())


def test_a_repeated_refusal_is_held_back_then_served_if_the_limit_has_room() -> None:
    """A client that ignores Retry-After waits on the event loop (no work), then is looked
    at again: refused while the limit is still full, let through once it has room."""
    async def run() -> None:
        adm = _admission(tenant_slots=1, tenant_queue=0)
        limits = Limits(key_rate(100.0, 100), adm, refusal_delay=0.05)
        limits.remember(b"t", "key1", "A")
        await adm.acquire("A")  # A's only slot is taken, its queue holds none
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(Throttled) as caught:
            await limits.refuse_early(b"t", bounded=True)
        assert caught.value.reason == "tenant_queue_full"
        assert loop.time() - started >= 0.05  # held back, not refused at once
        assert limits.delayed == 0

        held = asyncio.ensure_future(limits.refuse_early(b"t", bounded=True))
        await asyncio.sleep(0.01)
        assert limits.delayed == 1
        adm.release("A")  # room again while it is held
        await held  # no refusal: it goes on to verification and admission
        assert limits.delayed == 0

    asyncio.run(run())


def test_no_more_refusals_are_held_back_than_the_cap() -> None:
    async def run() -> None:
        adm = _admission(tenant_slots=1, tenant_queue=0)
        limits = Limits(key_rate(100.0, 100), adm, refusal_delay=30.0, max_delayed=2)
        limits.remember(b"t", "key1", "A")
        await adm.acquire("A")
        held = [asyncio.ensure_future(limits.refuse_early(b"t", bounded=True))
                for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(Throttled):  # the third is refused at once
            await asyncio.wait_for(limits.refuse_early(b"t", bounded=True), timeout=5)
        assert limits.delayed == 2
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
        assert limits.delayed == 0

    asyncio.run(run())


# -- settings ---------------------------------------------------------------------------


def test_rate_settings_are_read_and_defaults_derive_the_node_slots() -> None:
    defaults = load_settings({})
    assert (defaults.rate_per_second, defaults.rate_burst) == (10.0, 50)
    assert defaults.node_inflight == 6  # pool_max 8 - 2
    # half the cores, at least one, at most the node's slots
    assert defaults.tenant_inflight == max(1, min((os.cpu_count() or 2) // 2, 6))
    assert load_settings({"STICHTAG_RATE_TENANT_INFLIGHT": "3"}).tenant_inflight == 3
    tuned = load_settings({"STICHTAG_RATE_PER_SECOND": "2.5", "STICHTAG_RATE_BURST": "5",
                           "STICHTAG_RATE_NODE_INFLIGHT": "4",
                           "STICHTAG_RATE_QUEUE_TIMEOUT": "0.5"})
    assert (tuned.rate_per_second, tuned.rate_burst, tuned.node_inflight) == (2.5, 5, 4)
    assert tuned.rate_queue_timeout == 0.5
    assert load_settings({"STICHTAG_RATE_PER_SECOND": "0"}).rate_per_second == 0.0


@pytest.mark.parametrize("env", [
    {"STICHTAG_RATE_PER_SECOND": "fast"},
    {"STICHTAG_RATE_PER_SECOND": "-1"},
    {"STICHTAG_RATE_PER_SECOND": "nan"},
    {"STICHTAG_RATE_BURST": "0"},
    {"STICHTAG_RATE_TENANT_INFLIGHT": "7"},  # above the node's 6 slots
])
def test_unusable_rate_settings_are_refused_naming_the_variable(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="STICHTAG_RATE_"):
        load_settings(env)
