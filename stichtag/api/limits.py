"""Back-pressure: per-key token buckets and per-tenant bounded queues for expensive work.

Two independent limits, both fail-closed:

- **Rate** (``TokenBuckets``): every authenticated request takes one token from the bucket
  of its *verified* key id. The bucket is charged only after the secret matched, so a
  flood of bad secrets that name someone else's key id never touches that key's bucket.
- **Concurrency** (``Admission``): the expensive operations (answer, search, ingest,
  replay) run only while holding a slot. A tenant holds at most ``tenant_slots`` and waits
  in a FIFO queue of at most ``tenant_queue`` for more; the node holds at most
  ``node_slots`` over all tenants. Freed slots go round-robin to the tenants that wait, so
  one tenant's backlog never delays another tenant's single request by more than one turn.
  Waiting happens on the event loop, never on a worker thread, so a queue costs no threads
  and no database connections.

Rejections carry an HTTP status: 429 when the caller's own key or tenant is over its
limit (the caller can fix it by slowing down), 503 when the node as a whole is saturated
(retry elsewhere or later). Both carry ``Retry-After`` in whole seconds, at least 1.

State is per process: with N app nodes behind a balancer a key's effective rate is up
to N times the configured one (docs/operations.md, "Rate limits and back-pressure").
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager

Clock = Callable[[], float]

# Operation ids whose work is CPU- or index-bound and therefore takes an admission slot.
BOUNDED_OPERATIONS = frozenset({"answer", "search", "ingestVersion", "replayRun",
                                "getVersionPage"})


class Throttled(Exception):  # reads as the HTTP outcome, like Unauthorized
    """A request refused by a limit: HTTP status, reason, whole seconds to wait, a detail."""

    def __init__(self, *, status: int, reason: str, retry_after: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after
        self.detail = detail


def whole_seconds(seconds: float) -> int:
    """A wait as a ``Retry-After`` value: rounded up, at least 1."""
    return max(1, math.ceil(seconds - 1e-9))


class TokenBuckets:
    """One token bucket per key: ``rate`` tokens per second, at most ``burst`` stored.

    A bucket that has refilled to ``burst`` is the same as no bucket, so idle keys are
    forgotten when the table grows; only verified key ids ever get an entry.
    """

    def __init__(self, rate: float, burst: int, *, clock: Clock = time.monotonic,
                 max_entries: int = 10_000) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._clock = clock
        self._max_entries = max_entries
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """False when the rate is 0 (the operator switched the limit off)."""
        return self.rate > 0

    def take(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when granted, else the seconds until one exists."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            tokens, at = self._state.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + max(0.0, now - at) * self.rate)
            if tokens >= 1.0:
                self._state[key] = (tokens - 1.0, now)
                granted = True
            else:
                self._state[key] = (tokens, now)
                granted = False
            if len(self._state) > self._max_entries:
                self._forget_full(now)
        return 0.0 if granted else (1.0 - tokens) / self.rate

    def wait(self, key: str) -> float:
        """Seconds until ``key`` has a whole token, without taking one (0.0 when it has)."""
        if not self.enabled:
            return 0.0
        tokens = self.tokens(key)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def tokens(self, key: str) -> float:
        """Tokens ``key`` holds now (for tests and diagnostics)."""
        now = self._clock()
        with self._lock:
            tokens, at = self._state.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + max(0.0, now - at) * self.rate)

    def _forget_full(self, now: float) -> None:
        full = [k for k, (tokens, at) in self._state.items()
                if tokens + (now - at) * self.rate >= self.burst]
        for k in full:
            del self._state[k]

    def __len__(self) -> int:
        return len(self._state)


class Admission:
    """Slots for expensive work: a per-tenant cap with a bounded queue, and a node cap.

    Used from the event loop only (all methods run on one thread), so no lock is needed;
    the waits are futures, which cost nothing while they wait.
    """

    def __init__(self, *, tenant_slots: int, tenant_queue: int, node_slots: int,
                 node_queue: int, wait_seconds: float, clock: Clock = time.monotonic) -> None:
        self.node_slots = max(1, node_slots)
        self.tenant_slots = max(1, min(tenant_slots, self.node_slots))
        self.tenant_queue = max(0, tenant_queue)
        self.node_queue = max(0, node_queue)
        self.wait_seconds = wait_seconds
        self._clock = clock
        self._running: dict[Hashable, int] = {}
        self._waiting: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()
        self._node_running = 0
        self._node_waiting = 0
        self._hold = 0.25  # moving average of how long a slot is held (seconds)

    # -- what the tests and /metrics may look at ---------------------------------------

    @property
    def running(self) -> int:
        """Slots held now, over all tenants."""
        return self._node_running

    @property
    def waiting(self) -> int:
        """Requests waiting now, over all tenants."""
        return self._node_waiting

    def running_for(self, tenant: Hashable) -> int:
        """Slots ``tenant`` holds now."""
        return self._running.get(tenant, 0)

    # -- the protocol ------------------------------------------------------------------

    @asynccontextmanager
    async def slot(self, tenant: Hashable) -> AsyncIterator[None]:
        """Hold one slot for ``tenant`` for the duration of the block, or raise Throttled."""
        await self.acquire(tenant)
        started = self._clock()
        try:
            yield
        finally:
            self.release(tenant, held=self._clock() - started)

    async def acquire(self, tenant: Hashable) -> None:
        """Take a slot now, or wait in the tenant's queue up to ``wait_seconds``."""
        if self._free(tenant) and not self._waiting.get(tenant):
            self._grant(tenant)
            return
        capped = self.running_for(tenant) >= self.tenant_slots
        if len(self._waiting.get(tenant, ())) >= self.tenant_queue:
            # A full queue behind the tenant's own cap is the tenant's backlog (429);
            # behind a saturated node it is the node's (503).
            raise self._refusal(tenant, "tenant_queue_full" if capped else "node_queue_full")
        if self._node_waiting >= self.node_queue:
            raise self._refusal(tenant, "node_queue_full")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(fut)
        self._node_waiting += 1
        try:
            await asyncio.wait({fut}, timeout=self.wait_seconds)
        except BaseException:  # the request was cancelled while it waited
            self._abandon(tenant, fut)
            raise
        if not fut.done():
            capped = self.running_for(tenant) >= self.tenant_slots
            self._abandon(tenant, fut)
            raise self._refusal(tenant, "tenant_queue_timeout" if capped else "node_busy")

    def release(self, tenant: Hashable, *, held: float = 0.0) -> None:
        """Give a slot back and hand freed slots to waiting tenants, round-robin."""
        left = self._running.get(tenant, 0) - 1
        if left > 0:
            self._running[tenant] = left
        else:
            self._running.pop(tenant, None)
        self._node_running = max(0, self._node_running - 1)
        if held > 0:
            self._hold = 0.8 * self._hold + 0.2 * held
        self._dispatch()

    def refusal_if_full(self, tenant: Hashable) -> Throttled | None:
        """The refusal ``acquire`` would raise at once for a full tenant queue, else None."""
        if (self.running_for(tenant) >= self.tenant_slots
                and len(self._waiting.get(tenant, ())) >= self.tenant_queue):
            return self._refusal(tenant, "tenant_queue_full")
        return None

    # -- inside ------------------------------------------------------------------------

    def _free(self, tenant: Hashable) -> bool:
        return (self._node_running < self.node_slots
                and self._running.get(tenant, 0) < self.tenant_slots)

    def _grant(self, tenant: Hashable) -> None:
        self._running[tenant] = self._running.get(tenant, 0) + 1
        self._node_running += 1

    def _dispatch(self) -> None:
        while self._node_running < self.node_slots and self._node_waiting:
            tenant = next((t for t in self._waiting
                           if self._running.get(t, 0) < self.tenant_slots), None)
            if tenant is None:
                return  # every waiting tenant is at its own cap
            queue = self._waiting[tenant]
            fut = queue.popleft()
            self._node_waiting -= 1
            if queue:
                self._waiting.move_to_end(tenant)  # served: to the back of the round
            else:
                del self._waiting[tenant]
            self._grant(tenant)
            fut.set_result(None)

    def _abandon(self, tenant: Hashable, fut: asyncio.Future[None]) -> None:
        if fut.done() and not fut.cancelled():
            self.release(tenant)  # granted just as the wait ended: give it back
            return
        fut.cancel()
        queue = self._waiting.get(tenant)
        if queue is not None and fut in queue:
            queue.remove(fut)
            self._node_waiting -= 1
            if not queue:
                del self._waiting[tenant]

    def _refusal(self, tenant: Hashable, reason: str) -> Throttled:
        ahead = len(self._waiting.get(tenant, ())) + 1
        if reason.startswith("tenant"):
            wait = self._hold * ahead / self.tenant_slots
            return Throttled(
                status=429, reason=reason, retry_after=whole_seconds(min(wait, 60.0)),
                detail=(f"This tenant already runs {self.tenant_slots} expensive requests "
                        f"(answer, search, ingest, replay) with {self.tenant_queue} waiting; "
                        "the limit is STICHTAG_RATE_TENANT_INFLIGHT / STICHTAG_RATE_TENANT_QUEUE."))
        wait = self._hold * (self._node_waiting + 1) / self.node_slots
        return Throttled(
            status=503, reason=reason, retry_after=whole_seconds(min(wait, 60.0)),
            detail=(f"This node is saturated: {self.node_slots} expensive requests run and "
                    f"{self._node_waiting} wait (STICHTAG_RATE_NODE_INFLIGHT / "
                    "STICHTAG_RATE_NODE_QUEUE)."))


class Limits:
    """The rate buckets and the admission slots of one server process.

    Refusing must stay cheap, or a flood of refused requests slows everyone down by
    itself. So a token verified in the last ``recent_seconds`` is remembered (by its
    sha256, with its key id and tenant), and a later request with the very same token is
    refused *before* the database lookup when its key has no token left or its tenant's
    queue is full. The memory only ever refuses earlier, never admits: anything else
    goes through full verification. A token with a wrong secret never matches it, so it
    cannot be used to lock a key out; a key revoked within those seconds is refused
    with 429 instead of 401, which refuses it all the same.
    """

    def __init__(self, buckets: TokenBuckets, admission: Admission, *,
                 recent_seconds: float = 5.0, recent_capacity: int = 10_000,
                 clock: Clock = time.monotonic) -> None:
        self.buckets = buckets
        self.admission = admission
        self._recent_seconds = recent_seconds
        self._recent_capacity = recent_capacity
        self._recent: OrderedDict[bytes, tuple[str, Hashable, float]] = OrderedDict()
        self._clock = clock

    def refuse_early(self, digest: bytes, *, bounded: bool) -> None:
        """Raise Throttled for a recently verified token whose key or tenant is over its limit."""
        seen = self._recent.get(digest)
        if seen is None:
            return
        key_id, tenant, at = seen
        if self._clock() - at > self._recent_seconds:
            del self._recent[digest]
            return
        wait = self.buckets.wait(key_id)
        if wait > 0:
            raise self._key_rate(wait)
        if bounded:
            refusal = self.admission.refusal_if_full(tenant)
            if refusal is not None:
                raise refusal

    def remember(self, digest: bytes, key_id: str, tenant: Hashable) -> None:
        """Note a token that just passed full verification."""
        self._recent[digest] = (key_id, tenant, self._clock())
        self._recent.move_to_end(digest)
        while len(self._recent) > self._recent_capacity:
            self._recent.popitem(last=False)

    def charge(self, key_id: str) -> None:
        """Take one token from a verified key's bucket, or raise Throttled (429)."""
        wait = self.buckets.take(key_id)
        if wait > 0:
            raise self._key_rate(wait)

    def _key_rate(self, wait: float) -> Throttled:
        return Throttled(
            status=429, reason="key_rate", retry_after=whole_seconds(wait),
            detail=(f"This API key exceeded its rate limit of {self.buckets.rate:g} requests "
                    f"per second (burst {self.buckets.burst}; STICHTAG_RATE_PER_SECOND / "
                    "STICHTAG_RATE_BURST)."))
