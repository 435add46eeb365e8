"""Model-based test of docs/architecture.md §3: the real store against a tiny reference model.

The reference model is written differently on purpose: it keeps, per document, a list
of snapshots (transaction time -> valid-time segments) and answers a read by picking the
snapshot in force at ``known_at``. The store keeps bitemporal rows and answers with SQL
range predicates. Any disagreement is a bug in one of them.

Recorded runs (searches, some at a ``known_at`` after now) and admin imports with a
historical ``tx_time`` are steps too: the model keeps its own transaction clock (§3.6)
and predicts which imports are refused, and at the end of every example each recorded
run must still show what it showed when it was recorded — in the model and on replay.

Budget (docs/testing.md, "Long tests and their budgets"): ``make test`` runs 45 examples
of at most 50 steps (``STICHTAG_MODEL_EXAMPLES``, ``STICHTAG_MODEL_STEPS``); every rule —
ingest, backdated and corrected versions, retractions, historical imports, recorded runs
and their replay — is drawn in most examples, so each kind of step meets each other kind.
``make test-long`` runs 900 examples: longer histories per document and rarer
interleavings (an import refused after a run recorded in the future, say).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from stichtag.bootstrap import Services
from stichtag.domain.bitemporal import BitemporalError
from stichtag.domain.errors import Conflict, NotFound
from stichtag.domain.txclock import ObservedPast
from stichtag.services.access import SCOPES, Principal
from stichtag.services.documents import IngestRequest

EXAMPLES = int(os.environ.get("STICHTAG_MODEL_EXAMPLES", "45"))
STEPS = int(os.environ.get("STICHTAG_MODEL_STEPS", "50"))

BASE = datetime(2020, 1, 1, tzinfo=UTC)
DATES = [BASE + timedelta(days=91 * k) for k in range(10)]
DOCS = ["deckrv", "vag"]
TEXTS = [f"# § 2 – Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt {r} %.\n"
         for r in ("4,0", "3,25", "2,75", "2,25", "1,75", "1,25", "0,9", "0,25")]

Segment = tuple[datetime, datetime | None, str]


@dataclass
class Reference:
    """Snapshots of each document's valid-time segments over transaction time."""

    snapshots: dict[str, list[tuple[datetime, list[Segment]]]] = field(default_factory=dict)

    def now(self, doc: str) -> list[Segment]:
        history = self.snapshots.get(doc)
        return list(history[-1][1]) if history else []

    def commit(self, doc: str, tx: datetime, segments: list[Segment]) -> None:
        self.snapshots.setdefault(doc, []).append((tx, sorted(segments, key=lambda s: s[0])))

    @staticmethod
    def cut(segments: list[Segment], start: datetime, end: datetime | None) -> list[Segment]:
        """Remove ``[start, end)`` from every segment, keeping the pieces outside."""
        out: list[Segment] = []
        for s, e, v in segments:
            if (end is not None and s >= end) or (e is not None and e <= start):
                out.append((s, e, v))
                continue
            if s < start:
                out.append((s, start, v))
            if end is not None and (e is None or e > end):
                out.append((end, e, v))
        return out

    def ingest(self, doc: str, version: str, start: datetime, end: datetime | None
               ) -> tuple[datetime | None, bool]:
        """Returns the effective end and whether anything changes."""
        segments = self.now(doc)
        if end is None:
            later = [s for s, _, _ in segments if s > start]
            end = min(later) if later else None
        if (start, end, version) in segments:
            return end, False
        return end, True

    def read(self, doc: str, valid_at: datetime, known_at: datetime) -> str | None:
        chosen: list[Segment] = []
        for tx, segments in self.snapshots.get(doc, []):
            if tx <= known_at:
                chosen = segments
        for s, e, v in chosen:
            if s <= valid_at and (e is None or valid_at < e):
                return v
        return None


class BitemporalMachine(RuleBasedStateMachine):
    """Random ingest/backdate/future-date/retract/correct/re-ingest and reads."""

    svc: Services

    def __init__(self) -> None:
        super().__init__()
        row = self.svc.store.tenancy.create_tenant(uuid.uuid4(), f"m{uuid.uuid4().hex[:12]}", "UTC")
        self.who = Principal(tenant_id=row.tenant_id, key_id="model",
                             scopes=frozenset(SCOPES), clearance=3)
        self.model = Reference()
        self.tx_times: list[datetime] = []
        self.ids: dict[str, str] = {}
        self.last_write: datetime | None = None
        self.observed: datetime | None = None
        """The model's transaction clock: the latest write, the latest run's known_at."""
        self.runs: list[tuple[str, datetime, datetime, set[tuple[str, str]]]] = []
        """Recorded runs: id, valid_at, known_at and the (document, version) they saw."""

    def _moved(self, tx: datetime) -> None:
        self.tx_times.append(tx)
        assert self.last_write is None or tx >= self.last_write
        assert self.observed is None or tx > self.observed
        self.last_write = tx

    def _ingest(self, doc: str, text: str, start: datetime, end: datetime | None,
                tx_time: datetime | None = None) -> None:
        model_end, changes = self.model.ingest(doc, text, start, end)
        before = self.model.now(doc)
        result = self.svc.documents.ingest(self.who, doc, IngestRequest(
            text=text, valid_from=start, valid_to=end, doc_class="regulation",
            confidentiality="public", tx_time=tx_time))
        self.ids[text] = result.version_id
        assert (result.write.asserted is not None) == changes
        if changes:
            assert tx_time is None or result.write.tx_time == tx_time
            segments = [*Reference.cut(before, start, model_end), (start, model_end, text)]
            self.model.commit(doc, result.write.tx_time, segments)
            self._moved(result.write.tx_time)

    def _view(self, valid_at: datetime, known_at: datetime) -> set[tuple[str, str]]:
        """What the model says is in force at the pair, as (document, version id)."""
        found = {(doc, self.model.read(doc, valid_at, known_at)) for doc in DOCS}
        return {(doc, self.ids[text]) for doc, text in found if text is not None}

    @rule(doc=st.sampled_from(DOCS), text=st.sampled_from(TEXTS), start=st.sampled_from(DATES))
    def ingest_open(self, doc: str, text: str, start: datetime) -> None:
        """A version in force from ``start`` until the next known one (backdated or future)."""
        self._ingest(doc, text, start, None)

    @rule(doc=st.sampled_from(DOCS), text=st.sampled_from(TEXTS),
          start=st.sampled_from(DATES), span=st.integers(1, 4))
    def ingest_bounded(self, doc: str, text: str, start: datetime, span: int) -> None:
        """A version with an explicit ``valid_to``."""
        self._ingest(doc, text, start, start + timedelta(days=91 * span))

    @rule(doc=st.sampled_from(DOCS), data=st.data())
    def reingest_same(self, doc: str, data: st.DataObject) -> None:
        """Re-ingesting a currently known version for its own range is a no-op."""
        segments = self.model.now(doc)
        if not segments:
            return
        s, e, v = data.draw(st.sampled_from(segments))
        self._ingest(doc, v, s, e)

    @rule(doc=st.sampled_from(DOCS), start=st.sampled_from(DATES))
    def retract(self, doc: str, start: datetime) -> None:
        """End validity from ``start``; the model keeps what lies before."""
        segments = self.model.now(doc)
        hit = [seg for seg in segments if seg[1] is None or seg[1] > start]
        try:
            result = self.svc.documents.retract(self.who, doc, valid_from=start, reason="model")
        except (BitemporalError, NotFound):
            assert not hit
            return
        assert hit
        self.model.commit(doc, result.tx_time, Reference.cut(segments, start, None))
        self._moved(result.tx_time)

    @rule(doc=st.sampled_from(DOCS), data=st.data())
    def correct(self, doc: str, data: st.DataObject) -> None:
        """A currently known assertion was never true: it disappears without successor."""
        segments = self.model.now(doc)
        if not segments:
            return
        target = data.draw(st.sampled_from(segments))
        current = [a for a in self.svc.documents.history(self.who, doc)
                   if a.tx_to is None and a.valid_from == target[0]]
        assert len(current) == 1
        result = self.svc.documents.correct(self.who, doc, assertion_id=current[0].assertion_id,
                                            reason="model")
        self.model.commit(doc, result.tx_time, [s for s in segments if s != target])
        self._moved(result.tx_time)

    @rule(doc=st.sampled_from(DOCS), text=st.sampled_from(TEXTS), start=st.sampled_from(DATES),
          offset=st.sampled_from([-3_600_000_000, -1, 0, 1]))
    def admin_import(self, doc: str, text: str, start: datetime, offset: int) -> None:
        """An import with a historical tx_time: refused at or before what a run observed,
        and before the latest write (§3.6)."""
        clock = max((t for t in (self.last_write, self.observed) if t is not None),
                    default=None)
        if clock is None:  # a fresh tenant: any past is free
            self._ingest(doc, text, start, None, tx_time=BASE - timedelta(days=400))
            return
        tx_time = clock + timedelta(microseconds=offset)
        allowed = ((self.observed is None or tx_time > self.observed)
                   and (self.last_write is None or tx_time >= self.last_write))
        try:
            self._ingest(doc, text, start, None, tx_time=tx_time)
        except ObservedPast as refused:
            assert not allowed and refused.clock in (self.last_write, self.observed)
            return
        except Conflict as same_instant:  # this document changed at that very instant
            assert allowed and tx_time == self.last_write, same_instant
            return
        assert allowed

    @precondition(lambda self: bool(self.ids))
    @rule(valid=st.sampled_from(DATES), when=st.sampled_from(["now", "past", "future"]),
          data=st.data())
    def recorded_run(self, valid: datetime, when: str, data: st.DataObject) -> None:
        """A recorded search moves the clock to its known_at (a future one is read as now)."""
        now = self.svc.clock.now()
        known = {"now": now, "future": now + timedelta(days=30),
                 "past": data.draw(st.sampled_from(self.tx_times or [now]))}[when]
        result = self.svc.search.search(self.who, "Höchstzinssatz", valid_at=valid,
                                        known_at=known, k=10)
        assert result.known_at <= self.svc.clock.now()
        assert (result.known_at == known) == (when != "future")
        seen = {(h.document, h.version_id) for h in result.hits}
        assert seen == self._view(valid, result.known_at), (valid, result.known_at)
        self.runs.append((str(result.run_id), valid, result.known_at, seen))
        self.observed = max(result.known_at, self.observed or result.known_at)

    @precondition(lambda self: bool(self.tx_times))
    @rule(doc=st.sampled_from(DOCS), valid=st.sampled_from(DATES), shift=st.integers(-1, 40),
          data=st.data())
    def read(self, doc: str, valid: datetime, shift: int, data: st.DataObject) -> None:
        """A read at a random as-of pair agrees with the model (SQL range predicates)."""
        known = data.draw(st.sampled_from(self.tx_times)) + timedelta(microseconds=shift)
        valid_at = valid + timedelta(days=shift)
        expected = self.model.read(doc, valid_at, known)
        try:
            row, content = self.svc.documents.get(self.who, doc, valid_at=valid_at, known_at=known)
            got: str | None = content.text
            assert row.version_id == self.ids[content.text]
        except NotFound:
            got = None
        assert got == expected, (doc, valid_at, known)

    @invariant()
    def history_matches_at_every_transaction(self) -> None:
        """Every past view, rebuilt from history rows, equals the model's snapshot."""
        for doc in DOCS:
            try:
                rows = self.svc.documents.history(self.who, doc)
            except NotFound:
                assert doc not in self.model.snapshots
                continue
            snapshots = self.model.snapshots[doc]
            for (tx, segments), (later, _) in zip(snapshots, [*snapshots[1:], (None, [])],
                                                  strict=True):
                if later == tx:  # two imports at one instant: the view shows both
                    continue
                visible = sorted(
                    (r.valid_from, r.valid_to, r.version_id) for r in rows
                    if r.tx_from <= tx and (r.tx_to is None or tx < r.tx_to))
                assert visible == sorted((s, e, self.ids[v]) for s, e, v in segments)
                # Invariant 3: at most one version in force at any valid instant.
                for (_, e1, _), (s2, _, _) in pairwise(visible):
                    assert e1 is not None and e1 <= s2


    def teardown(self) -> None:
        """No recorded run's view ever changed: the model shows what the run saw, and
        replay recomputes the run's candidates from the store unchanged."""
        for run_id, valid_at, known_at, seen in self.runs:
            assert self._view(valid_at, known_at) == seen, (run_id, valid_at, known_at)
            assert self.svc.replay is not None
            verdict = self.svc.replay.replay(self.who, run_id)
            assert verdict.reproduced, verdict.differences


def test_store_agrees_with_reference_model(services: Services) -> None:
    """>= 2,000 steps by default (45 x 50); STICHTAG_MODEL_EXAMPLES raises it (make test-long)."""
    from hypothesis.stateful import run_state_machine_as_test

    BitemporalMachine.svc = services
    run_state_machine_as_test(BitemporalMachine, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        suppress_health_check=list(HealthCheck)))
