"""Back-pressure: per-key token buckets and per-tenant bounded queues for expensive work.

Two independent limits, both fail-closed:

- **Rate** (``KeyRate``, charged in PostgreSQL): every authenticated request takes one
  token from the bucket of its *verified* key id. The bucket is charged only after the
  secret matched, so a flood of bad secrets that name someone else's key id never
  touches that key's bucket.
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

Where the state lives: the key's bucket in PostgreSQL (one limit however many processes
and nodes serve the key), the admission counts in the node's shared memory
(app/stichtag/api/ledger.py; a node's slots are its own). docs/operations.md, "Rate limits
and back-pressure", says why.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager

from stichtag.api.ledger import Ledger, LedgerFull, LocalLedger
from stichtag.domain.records import KeyRate

Clock = Callable[[], float]

# Operation ids whose work is CPU- or index-bound and therefore takes an admission slot.
BOUNDED_OPERATIONS = frozenset({"answer", "search", "ingestVersion", "replayRun",
                                "getVersionPage", "compareAnswers"})


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


class Admission:
    """Slots for expensive work: a per-tenant cap with a bounded queue, and a node cap.

    The counts are kept in a :class:`~stichtag.api.ledger.Ledger`: this process's own by
    default, the node's when the server attaches a shared one (several worker processes;
    app/stichtag/api/ledger.py). The waiting futures are always this process's: it hands a
    freed slot to its own waiters round-robin, and while it has waiters and the ledger is
    shared it looks again every ``poll_seconds`` for slots other processes freed.

    Used from the event loop only (all methods run on one thread), so no lock is needed;
    the waits are futures, which cost nothing while they wait.
    """

    def __init__(self, *, tenant_slots: int, tenant_queue: int, node_slots: int,
                 node_queue: int, wait_seconds: float, clock: Clock = time.monotonic,
                 ledger: Ledger | None = None, poll_seconds: float = 0.005) -> None:
        self.node_slots = max(1, node_slots)
        self.tenant_slots = max(1, min(tenant_slots, self.node_slots))
        self.tenant_queue = max(0, tenant_queue)
        self.node_queue = max(0, node_queue)
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        self._clock = clock
        self.ledger: Ledger = ledger if ledger is not None else LocalLedger()
        self._waiting: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()
        self._poller: asyncio.Task[None] | None = None
        self._hold = 0.25  # moving average of how long a slot is held (seconds)

    def attach(self, ledger: Ledger) -> None:
        """Count in ``ledger`` from now on (the server's lifespan, before any request)."""
        if self.ledger.running() or self._waiting:
            raise RuntimeError("admission already counts requests")
        self.ledger = ledger

    # -- what the tests and /metrics may look at ---------------------------------------

    @property
    def running(self) -> int:
        """Slots held now, over all tenants (of the node when the ledger is shared)."""
        return self.ledger.running()

    @property
    def waiting(self) -> int:
        """Requests waiting now, over all tenants (of the node when the ledger is shared)."""
        return self.ledger.waiting()

    def running_for(self, tenant: Hashable) -> int:
        """Slots ``tenant`` holds now."""
        return self.ledger.running(tenant)

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
        full: str | None = "queued"
        if not self._waiting.get(tenant):
            full = self._take(tenant)
            if full is None:
                return
        capped = full == "tenant" or self.running_for(tenant) >= self.tenant_slots
        if self.ledger.waiting(tenant) >= self.tenant_queue:
            # A full queue behind the tenant's own cap is the tenant's backlog (429);
            # behind a saturated node it is the node's (503).
            raise self._refusal(tenant, "tenant_queue_full" if capped else "node_queue_full")
        if self.ledger.waiting() >= self.node_queue:
            raise self._refusal(tenant, "node_queue_full")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(fut)
        self.ledger.wait(tenant, +1)
        self._watch()
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
        self.ledger.give(tenant)
        if held > 0:
            self._hold = 0.8 * self._hold + 0.2 * held
        self._dispatch()

    def refusal_if_full(self, tenant: Hashable) -> Throttled | None:
        """The refusal ``acquire`` would raise at once for a full tenant queue, else None."""
        if (self.running_for(tenant) >= self.tenant_slots
                and self.ledger.waiting(tenant) >= self.tenant_queue):
            return self._refusal(tenant, "tenant_queue_full")
        return None

    # -- inside ------------------------------------------------------------------------

    def _take(self, tenant: Hashable) -> str | None:
        try:
            return self.ledger.take(tenant, node_slots=self.node_slots,
                                    tenant_slots=self.tenant_slots)
        except LedgerFull:
            return "node"

    def _dispatch(self) -> None:
        blocked: set[Hashable] = set()  # tenants at their own cap in this round
        while self._waiting:
            tenant = next((t for t in self._waiting if t not in blocked), None)
            if tenant is None:
                return  # every waiting tenant is at its own cap
            full = self._take(tenant)
            if full == "node":
                return
            if full == "tenant":
                blocked.add(tenant)
                continue
            queue = self._waiting[tenant]
            fut = queue.popleft()
            self.ledger.wait(tenant, -1)
            if queue:
                self._waiting.move_to_end(tenant)  # served: to the back of the round
            else:
                del self._waiting[tenant]
            fut.set_result(None)

    def _watch(self) -> None:
        """With a shared ledger, look for slots freed elsewhere while anyone waits here."""
        if not self.ledger.shared or (self._poller is not None and not self._poller.done()):
            return
        self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.poll_seconds)
            self._dispatch()

    def _abandon(self, tenant: Hashable, fut: asyncio.Future[None]) -> None:
        if fut.done() and not fut.cancelled():
            self.release(tenant)  # granted just as the wait ended: give it back
            return
        fut.cancel()
        queue = self._waiting.get(tenant)
        if queue is not None and fut in queue:
            queue.remove(fut)
            self.ledger.wait(tenant, -1)
            if not queue:
                del self._waiting[tenant]

    def _refusal(self, tenant: Hashable, reason: str) -> Throttled:
        if reason.startswith("tenant"):
            ahead = self.ledger.waiting(tenant) + 1
            wait = self._hold * ahead / self.tenant_slots
            return Throttled(
                status=429, reason=reason, retry_after=whole_seconds(min(wait, 60.0)),
                detail=(f"This tenant already runs {self.tenant_slots} expensive requests "
                        f"(answer, search, ingest, replay) with {self.tenant_queue} waiting; "
                        "the limit is STICHTAG_RATE_TENANT_INFLIGHT / STICHTAG_RATE_TENANT_QUEUE."))
        node_waiting = self.ledger.waiting()
        wait = self._hold * (node_waiting + 1) / self.node_slots
        return Throttled(
            status=503, reason=reason, retry_after=whole_seconds(min(wait, 60.0)),
            detail=(f"This node is saturated: {self.node_slots} expensive requests run and "
                    f"{node_waiting} wait (STICHTAG_RATE_NODE_INFLIGHT / "
                    "STICHTAG_RATE_NODE_QUEUE)."))


class Limits:
    """The per-key rate and the admission slots, as one server process applies them.

    The rate is charged in PostgreSQL while the key is read (``AccessService.admit``), so
    it holds across processes and nodes; this object turns the store's answer into a
    refusal and remembers it. Refusing must stay cheap, or a flood of refused requests
    slows everyone down by itself. So a token verified in the last ``recent_seconds`` is
    remembered (by its sha256, with its key id and tenant), and a later request with the
    very same token is refused *before* the database lookup while its key is known to
    have no token left (until the instant the store named, which no other process can
    bring forward: they only take tokens) or its tenant's queue is full. The memory only
    ever refuses earlier, never admits: anything else goes through full verification. A
    token with a wrong secret never matches it, so it cannot be used to lock a key out;
    a key revoked within those seconds is refused with 429 instead of 401, which refuses
    it all the same.

    Such a repeated refusal is a client that ignores ``Retry-After``. Its request is held
    back ``refusal_delay`` seconds (at most its ``Retry-After``, at most ``max_delayed``
    requests at once in this process) and then looked at again: served as any other when
    the limit has room, else refused. Waiting costs the server nothing, and it keeps a
    tight retry loop from taking the cores that everyone's requests need (as nginx's
    ``limit_req`` delays excess requests).
    """

    def __init__(self, rate: KeyRate | None, admission: Admission, *,
                 recent_seconds: float = 5.0, recent_capacity: int = 10_000,
                 refusal_delay: float = 0.0, max_delayed: int = 1024,
                 clock: Clock = time.monotonic) -> None:
        self.rate = rate
        """The per-key rate (None = off), charged by the store."""
        self.admission = admission
        self._recent_seconds = recent_seconds
        self._recent_capacity = recent_capacity
        self._recent: OrderedDict[bytes, tuple[str, Hashable, float]] = OrderedDict()
        self._blocked: dict[str, float] = {}  # key id -> clock time its next token exists
        self.refusal_delay = refusal_delay
        self._max_delayed = max_delayed
        self.delayed = 0
        """Refusals being held back now."""
        self._clock = clock

    async def refuse_early(self, digest: bytes, *, bounded: bool) -> None:
        """Raise Throttled for a recently verified token whose key or tenant is over its
        limit, after holding the refusal back (``refusal_delay``)."""
        refusal = self.early_refusal(digest, bounded=bounded)
        if refusal is None:
            return
        delay = min(self.refusal_delay, refusal.retry_after)
        if delay > 0 and self.delayed < self._max_delayed:
            self.delayed += 1
            try:
                await asyncio.sleep(delay)
            finally:
                self.delayed -= 1
            refusal = self.early_refusal(digest, bounded=bounded)
            if refusal is None:
                return  # the limit has room again: verify and serve it as any other
        raise refusal

    def early_refusal(self, digest: bytes, *, bounded: bool) -> Throttled | None:
        """The refusal of a recently verified token over its limit, or None."""
        seen = self._recent.get(digest)
        if seen is None:
            return None
        key_id, tenant, at = seen
        now = self._clock()
        if now - at > self._recent_seconds:
            del self._recent[digest]
            return None
        until = self._blocked.get(key_id)
        if until is not None:
            if until > now:
                return self._key_rate(until - now)
            del self._blocked[key_id]
        if bounded:
            return self.admission.refusal_if_full(tenant)
        return None

    def remember(self, digest: bytes, key_id: str, tenant: Hashable) -> None:
        """Note a token that just passed full verification."""
        self._recent[digest] = (key_id, tenant, self._clock())
        self._recent.move_to_end(digest)
        while len(self._recent) > self._recent_capacity:
            self._recent.popitem(last=False)

    def settle(self, key_id: str, wait: float) -> None:
        """Apply the store's answer for a verified key: raise Throttled (429) when it has
        to wait, and remember until when."""
        if wait <= 0:
            return
        self._blocked[key_id] = self._clock() + wait
        if len(self._blocked) > self._recent_capacity:
            now = self._clock()
            self._blocked = {k: u for k, u in self._blocked.items() if u > now}
        raise self._key_rate(wait)

    def _key_rate(self, wait: float) -> Throttled:
        rate = self.rate
        per_second = 1.0 / rate.interval if rate is not None else 0.0
        burst = rate.burst if rate is not None else 0
        return Throttled(
            status=429, reason="key_rate", retry_after=whole_seconds(wait),
            detail=(f"This API key exceeded its rate limit of {per_second:g} requests "
                    f"per second (burst {burst}; STICHTAG_RATE_PER_SECOND / "
                    "STICHTAG_RATE_BURST)."))


def key_rate(per_second: float, burst: int) -> KeyRate | None:
    """The rate the store charges, or None when the operator switched it off (0)."""
    return KeyRate(interval=1.0 / per_second, burst=max(1, burst)) if per_second > 0 else None
