"""Token-bucket arithmetic and admission slots, with an injected clock (no sleeping)."""

from __future__ import annotations

import asyncio

import pytest

from stichtag.api.limits import Admission, Limits, Throttled, TokenBuckets, whole_seconds
from stichtag.config import SettingsError, load_settings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_grants_burst_then_refuses_with_the_time_to_the_next_token() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=2.0, burst=3, clock=clock)
    assert [buckets.take("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("k") == pytest.approx(0.5)  # empty: one token per 0.5 s
    clock.now += 0.25
    assert buckets.take("k") == pytest.approx(0.25)  # half a token accrued, not enough
    clock.now += 0.25
    assert buckets.take("k") == 0.0  # a whole token now
    assert buckets.tokens("k") == pytest.approx(0.0)


def test_refill_is_capped_at_burst() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=10.0, burst=5, clock=clock)
    for _ in range(5):
        buckets.take("k")
    clock.now += 3600
    assert buckets.tokens("k") == pytest.approx(5.0)
    assert [buckets.take("k") for _ in range(6)][-1] == pytest.approx(0.1)


def test_keys_have_separate_buckets() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=1.0, burst=1, clock=clock)
    assert buckets.take("a") == 0.0
    assert buckets.take("a") > 0
    assert buckets.take("b") == 0.0


def test_a_clock_going_backwards_never_adds_tokens() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=1.0, burst=1, clock=clock)
    buckets.take("k")
    clock.now -= 100
    assert buckets.take("k") == pytest.approx(1.0)


def test_rate_zero_switches_the_limit_off() -> None:
    buckets = TokenBuckets(rate=0.0, burst=1, clock=FakeClock())
    assert not buckets.enabled
    assert all(buckets.take("k") == 0.0 for _ in range(1000))


def test_full_buckets_are_forgotten_when_the_table_grows() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=1.0, burst=2, clock=clock, max_entries=10)
    for i in range(10):
        buckets.take(f"k{i}")
    clock.now += 5  # every bucket is full again
    buckets.take("fresh")
    assert len(buckets) <= 2


@pytest.mark.parametrize(("wait", "header"), [(0.001, 1), (0.5, 1), (1.0, 1), (1.01, 2), (7.2, 8)])
def test_retry_after_is_whole_seconds_rounded_up_at_least_one(wait: float, header: int) -> None:
    assert whole_seconds(wait) == header


def test_limits_charge_raises_429_naming_the_limit() -> None:
    clock = FakeClock()
    limits = Limits(TokenBuckets(rate=0.5, burst=1, clock=clock),
                    Admission(tenant_slots=1, tenant_queue=0, node_slots=1, node_queue=0,
                              wait_seconds=1))
    limits.charge("k")
    with pytest.raises(Throttled) as caught:
        limits.charge("k")
    assert caught.value.status == 429
    assert caught.value.reason == "key_rate"
    assert caught.value.retry_after == 2  # 1 token at 0.5/s
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
    clock = FakeClock()
    limits = Limits(TokenBuckets(rate=1.0, burst=1, clock=clock),
                    _admission(tenant_slots=1, tenant_queue=0), recent_seconds=5, clock=clock)
    good, forged = b"digest of the real token", b"digest of a wrong secret"
    limits.refuse_early(good, bounded=True)  # never seen: goes on to verification
    limits.remember(good, "key1", "tenant1")
    limits.charge("key1")  # the only token
    with pytest.raises(Throttled) as caught:
        limits.refuse_early(good, bounded=False)
    assert (caught.value.status, caught.value.reason) == (429, "key_rate")
    limits.refuse_early(forged, bounded=True)  # a different token is not refused early
    clock.now += 1  # a token again: no early refusal, verification decides
    limits.refuse_early(good, bounded=False)
    clock.now += 10  # the memory is stale: forgotten, verification decides
    limits.charge("key1")
    limits.refuse_early(good, bounded=False)
    assert good not in limits._recent


def test_an_early_refusal_for_a_full_tenant_queue_is_the_same_429() -> None:
    async def run() -> None:
        clock = FakeClock()
        adm = _admission(tenant_slots=1, tenant_queue=0)
        limits = Limits(TokenBuckets(rate=100.0, burst=100, clock=clock), adm, clock=clock)
        limits.remember(b"t", "key1", "A")
        limits.refuse_early(b"t", bounded=True)
        await adm.acquire("A")
        limits.refuse_early(b"t", bounded=False)  # cheap operations take no slot
        with pytest.raises(Throttled) as caught:
            limits.refuse_early(b"t", bounded=True)
        assert (caught.value.status, caught.value.reason) == (429, "tenant_queue_full")

    asyncio.run(run())


# -- settings ---------------------------------------------------------------------------


def test_rate_settings_are_read_and_defaults_derive_the_node_slots() -> None:
    defaults = load_settings({})
    assert (defaults.rate_per_second, defaults.rate_burst) == (10.0, 50)
    assert (defaults.rate_tenant_inflight, defaults.node_inflight) == (3, 6)  # pool_max 8 - 2
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
