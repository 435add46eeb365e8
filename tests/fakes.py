"""In-memory fakes of the ports (app/stichtag/ports/) for unit tests of the use cases.

They keep the semantics the use cases rely on — the bitemporal plan applied as one step,
the visibility rule of stichtag.domain.asof, clearance, first-writer-wins vectors, a gapless
log — and nothing else. Every real adapter is tested against PostgreSQL, tantivy and
ONNX in tests/integration; these fakes never stand in for those tests.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import numpy as np

from stichtag.domain.asof import AsOf, visible
from stichtag.domain.bitemporal import Current, Interval, Meta
from stichtag.domain.errors import Conflict, NotFound
from stichtag.domain.passages import passage_body
from stichtag.domain.prepared import SENTENCE_HASH_BYTES, PreparedVersion
from stichtag.domain.records import (
    AssertionRow,
    Erasure,
    IndexBacklog,
    IndexStatus,
    LogHead,
    RunRow,
    SentenceRow,
    ThresholdRow,
    VersionContent,
    VersionExcerpt,
    VersionRow,
    WriteResult,
)
from stichtag.domain.retrieval import Placement, PlacementKey
from stichtag.domain.salience import InForce
from stichtag.domain.sealing import SealedText, unseal
from stichtag.domain.txclock import next_tx, observe
from stichtag.ports import Planner, Progress, Vector

DIMS = 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told (``advance``)."""

    def __init__(self, now: datetime = T0) -> None:
        self.current = now

    def now(self) -> datetime:
        """The fixed current instant."""
        return self.current

    def advance(self, **delta: float) -> None:
        """Move the clock forward."""
        self.current += timedelta(**delta)


@dataclass
class _Assertion:
    assertion_id: int
    document: str
    version_id: str
    valid: Interval
    tx: Interval
    meta: Meta
    provenance: dict[str, Any]
    ended: str | None = None
    ended_reason: str | None = None

    def row(self) -> AssertionRow:
        return AssertionRow(
            assertion_id=self.assertion_id, document=self.document, version_id=self.version_id,
            valid_from=self.valid.start, valid_to=self.valid.end, tx_from=self.tx.start,
            tx_to=self.tx.end, title=self.meta.title, doc_class=self.meta.doc_class,
            confidentiality=self.meta.confidentiality, provenance=dict(self.provenance),
            ended=self.ended, ended_reason=self.ended_reason)


def content_of(version: PreparedVersion, created_at: datetime) -> VersionContent:
    """What the store's reassembly gives for a prepared version."""
    sentences: list[SentenceRow] = []
    cp = u16 = 0
    for block, path in zip(version.blocks, version.paths, strict=True):
        for i, (s, e, us, ue) in enumerate(zip(block.sent_starts, block.sent_ends,
                                               block.sent_u16_starts, block.sent_u16_ends,
                                               strict=True)):
            sentences.append(SentenceRow(
                ordinal=len(sentences), start=cp + s, end=cp + e, utf16_start=u16 + us,
                utf16_end=u16 + ue,
                hash=block.sent_hashes[i * SENTENCE_HASH_BYTES:(i + 1) * SENTENCE_HASH_BYTES],
                heading_path=path))
        cp += block.len_cp
        u16 += block.len_u16
    row = VersionRow(version_id=version.version_id, media_type=version.media_type,
                     segmenter_id=version.segmenter_id, len_cp=version.len_cp,
                     len_u16=version.len_u16, n_sentences=version.n_sentences,
                     created_at=created_at)
    return VersionContent(version=row, text=version.text, sentences=tuple(sentences))


class FakeStore:
    """Documents, passages, vectors, runs, thresholds and the log of every tenant.

    One object implements the store ports (DocumentStore, PassageStore, VectorIndex,
    IndexFeed reads, RunStore, ThresholdStore, Transactions), as the PostgreSQL adapters
    share one database.
    """

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.assertions: dict[UUID, list[_Assertion]] = {}
        self.versions: dict[UUID, dict[str, PreparedVersion]] = {}
        self.created: dict[tuple[UUID, str], datetime] = {}
        self.clocks: dict[UUID, datetime] = {}
        self.observed: dict[UUID, datetime] = {}
        self.outbox: dict[UUID, list[tuple[int, str, int]]] = {}
        self.passage_ids: dict[bytes, int] = {}
        self.passage_text: dict[int, str] = {}
        self.vectors_by: dict[tuple[UUID, int], tuple[str, Vector]] = {}
        self.runs_by: dict[UUID, list[RunRow]] = {}
        self.heads: dict[UUID, LogHead] = {}
        self.erased: dict[tuple[UUID, str], Erasure] = {}
        """Erasures a test sets; the fake has no erase path (the real one is tested in
        tests/integration/test_erasure.py)."""
        self.leaves: dict[UUID, list[bytes]] = {}
        self.thresholds: dict[UUID, list[ThresholdRow]] = {}
        self.units_opened = 0
        self._ids = iter(range(1, 10**9))

    # -- DocumentStore ---------------------------------------------------------------------

    def write(self, tenant_id: UUID, *, document_key: str, planner: Planner,
              version: PreparedVersion | None, tx_time: datetime | None,
              provenance: dict[str, Any], reason: str | None = None,
              create_document: bool = True, source: Any = None,
              bulk: bool = False) -> WriteResult:
        """Apply the plan at once, as the real store does in one transaction (originals
        are not kept here: no unit test reads them back; the fake index is always
        current, so ``bulk`` changes nothing)."""
        rows = self.assertions.setdefault(tenant_id, [])
        last = self.clocks.get(tenant_id)
        now = self.clock.now()
        tx = next_tx(last, self.observed.get(tenant_id), now, tx_time)
        if not create_document and not any(a.document == document_key for a in rows):
            raise NotFound("document")
        current = [a for a in rows if a.document == document_key and a.tx.end is None]
        plan = planner([Current(assertion_id=a.assertion_id, version_id=a.version_id,
                                valid=a.valid, meta=a.meta) for a in current])
        if plan.empty:
            return WriteResult(tx_time=tx, created_version=False, opened=(), closed=(),
                               asserted=None)
        created = False
        if version is not None:
            stored = self.versions.setdefault(tenant_id, {})
            created = version.version_id not in stored
            stored.setdefault(version.version_id, version)
            self.created.setdefault((tenant_id, version.version_id), tx)
            for p in version.passages:
                pid = self.passage_ids.setdefault(p.hash, len(self.passage_ids) + 1)
                self.passage_text[pid] = p.embed_text
        outbox = self.outbox.setdefault(tenant_id, [])
        by_id = {a.assertion_id: a for a in rows}
        for aid in plan.close:
            a = by_id[aid]
            a.tx = Interval(start=a.tx.start, end=tx)
            a.ended, a.ended_reason = plan.ending, reason
            outbox.append((len(outbox) + 1, "close", aid))
        opened: list[int] = []
        asserted = None
        for new in plan.open:
            aid = next(self._ids)
            prov = dict(provenance) if new.kind == "asserted" else {
                "kind": "carried", "carried_from": new.carried_from}
            a = _Assertion(assertion_id=aid, document=document_key, version_id=new.version_id,
                           valid=new.valid, tx=Interval(start=tx), meta=new.meta,
                           provenance=prov)
            rows.append(a)
            opened.append(aid)
            outbox.append((len(outbox) + 1, "open", aid))
            if new.kind == "asserted":
                asserted = a.row()
        self.clocks[tenant_id] = tx
        return WriteResult(tx_time=tx, created_version=created, opened=tuple(opened),
                           closed=plan.close, asserted=asserted)

    def _visible(self, tenant_id: UUID, as_of: AsOf, clearance: int) -> list[_Assertion]:
        return [a for a in self.assertions.get(tenant_id, [])
                if visible(tx=a.tx, valid=a.valid, at=as_of)
                and a.meta.confidentiality <= clearance]

    def assertion_asof(self, tenant_id: UUID, *, key: str, as_of: AsOf,
                       clearance: int) -> AssertionRow | None:
        """The visible assertion of a document."""
        found = [a for a in self._visible(tenant_id, as_of, clearance) if a.document == key]
        return found[0].row() if found else None

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int,
                 limit: int) -> list[AssertionRow]:
        """Every document's visible assertion, by key."""
        rows = sorted(self._visible(tenant_id, as_of, clearance),
                      key=lambda a: (a.document, a.assertion_id))
        return [a.row() for a in rows[:limit]]

    def history(self, tenant_id: UUID, *, key: str, clearance: int) -> list[AssertionRow]:
        """Every assertion of a document within the clearance."""
        rows = [a for a in self.assertions.get(tenant_id, [])
                if a.document == key and a.meta.confidentiality <= clearance]
        return [a.row() for a in sorted(rows, key=lambda a: (a.tx.start, a.valid.start,
                                                              a.assertion_id))]

    def changes_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                       key: str | None, clearance: int, cap: int
                       ) -> tuple[list[AssertionRow], set[str]]:
        """Assertions starting or ending in the window (not used by these unit tests)."""
        raise NotImplementedError("the changes use case is tested against PostgreSQL")

    def visible_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                         clearance: int) -> set[str]:
        """Versions with an assertion within the clearance."""
        return {a.version_id for a in self.assertions.get(tenant_id, [])
                if a.version_id in set(version_ids) and a.meta.confidentiality <= clearance}

    def readable_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                          clearance: int) -> set[str]:
        """Visible versions that are not erased."""
        return {v for v in self.visible_versions(tenant_id, version_ids, clearance=clearance)
                if (tenant_id, v) not in self.erased}

    def erasures(self, tenant_id: UUID, version_ids: Sequence[str], *,
                 clearance: int) -> dict[str, Erasure]:
        """The erasures of visible versions (set in ``erased`` by a test)."""
        visible = self.visible_versions(tenant_id, version_ids, clearance=clearance)
        return {v: self.erased[(tenant_id, v)] for v in visible
                if (tenant_id, v) in self.erased}

    def erasures_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                        key: str | None, clearance: int) -> list[Erasure]:
        """Erasures recorded in the window (document filter not modelled: all of them)."""
        return sorted((e for (t, _), e in self.erased.items() if t == tenant_id
                       and known_from < e.erased_at <= known_to), key=lambda e: e.erased_at)

    def version_row(self, tenant_id: UUID, *, version_id: str,
                    clearance: int) -> VersionRow | None:
        """A visible version's row."""
        content = self.version_content(tenant_id, version_id=version_id, clearance=clearance)
        return content.version if content else None

    def version_content(self, tenant_id: UUID, *, version_id: str,
                        clearance: int) -> VersionContent | None:
        """A visible version's text and sentences."""
        if not self.readable_versions(tenant_id, [version_id], clearance=clearance):
            return None
        version = self.versions[tenant_id][version_id]
        return content_of(version, self.created[(tenant_id, version_id)])

    def version_excerpts(self, tenant_id: UUID, windows: Sequence[tuple[str, int, int]], *,
                         clearance: int, also_check: Sequence[str] = ()
                         ) -> dict[str, VersionExcerpt] | None:
        """Exactly the windows' text (merged, clamped) and the sentences they touch:
        narrower than the store's whole blocks, so a cut outside the windows fails here."""
        ids = list(dict.fromkeys([*(w[0] for w in windows), *also_check]))
        if len(self.visible_versions(tenant_id, ids, clearance=clearance)) < len(ids):
            return None
        out: dict[str, VersionExcerpt] = {}
        for vid in dict.fromkeys(w[0] for w in windows):
            full = self.version_content(tenant_id, version_id=vid, clearance=clearance)
            assert full is not None
            spans: list[list[int]] = []
            for lo, hi in sorted((max(0, w[1]), min(w[2], len(full.text)))
                                 for w in windows if w[0] == vid):
                if spans and lo <= spans[-1][1]:
                    spans[-1][1] = max(spans[-1][1], hi)
                else:
                    spans.append([lo, hi])
            out[vid] = VersionExcerpt(
                version_id=vid, length=len(full.text),
                pieces=tuple((lo, full.text[lo:hi]) for lo, hi in spans),
                sentences=tuple(s for s in full.sentences
                                if any(s.start < hi and s.end > lo for lo, hi in spans)))
        return out

    def version_documents(self, tenant_id: UUID, *, version_id: str,
                          clearance: int) -> list[str]:
        """Documents a version is asserted for."""
        return sorted({a.document for a in self.assertions.get(tenant_id, [])
                       if a.version_id == version_id and a.meta.confidentiality <= clearance})

    def current_version(self, tenant_id: UUID, *, key: str, now: datetime,
                        clearance: int) -> str | None:
        """The version in force now as known now."""
        row = self.assertion_asof(tenant_id, key=key, as_of=AsOf(valid_at=now, known_at=now),
                                  clearance=clearance)
        return row.version_id if row else None

    # -- PassageStore and VectorIndex ------------------------------------------------------

    def visible_placements(self, tenant_id: UUID, as_of: AsOf,
                           clearance: int) -> list[Placement]:
        """Every placement visible at the as-of pair (what both fake indexes search)."""
        out = []
        for a in self._visible(tenant_id, as_of, clearance):
            version = self.versions[tenant_id][a.version_id]
            for p, (u16s, u16e) in zip(version.passages, version.passage_u16, strict=True):
                pid = self.passage_ids[p.hash]
                out.append(Placement(
                    document=a.document, version_id=a.version_id, start=p.start, end=p.end,
                    utf16_start=u16s, utf16_end=u16e,
                    quote=passage_body(p.embed_text, p.heading_path),
                    heading_path=p.heading_path, assertion_id=a.assertion_id,
                    passage_ordinal=p.ordinal, passage_id=pid, valid_from=a.valid.start,
                    valid_to=a.valid.end, doc_class=a.meta.doc_class, title=a.meta.title))
        return out

    def placements(self, tenant_id: UUID, keys: Sequence[PlacementKey], *, as_of: AsOf,
                   clearance: int) -> list[Placement]:
        """The visible placements among ``keys``."""
        wanted = set(keys)
        return [p for p in self.visible_placements(tenant_id, as_of, clearance)
                if p.key in wanted]

    def vectors(self, tenant_id: UUID, passage_ids: Sequence[int], *,
                model_hash: str) -> dict[int, Vector]:
        """Stored vectors of the model."""
        out = {}
        for pid in passage_ids:
            found = self.vectors_by.get((tenant_id, pid))
            if found is not None and found[0] == model_hash:
                out[pid] = found[1]
        return out

    def store_vectors(self, tenant_id: UUID, passage_ids: Sequence[int], vectors: Vector,
                      model_hash: str) -> None:
        """First writer wins per model."""
        for pid, vec in zip(passage_ids, vectors, strict=True):
            found = self.vectors_by.get((tenant_id, pid))
            if found is None or found[0] != model_hash:
                self.vectors_by[(tenant_id, pid)] = (model_hash, np.asarray(vec))

    def nearest(self, tenant_id: UUID, query: Vector, *, as_of: AsOf, clearance: int, k: int,
                model_hash: str, exact: bool = False,
                hnsw_from: int | None = None) -> list[tuple[PlacementKey, float]]:
        """Exact cosine over the visible, embedded placements."""
        scored = []
        for p in self.visible_placements(tenant_id, as_of, clearance):
            found = self.vectors_by.get((tenant_id, p.passage_id))
            if found is not None and found[0] == model_hash:
                scored.append((p.key, float(found[1] @ query)))
        return sorted(scored, key=lambda s: (-s[1], s[0]))[:k]

    def backlog(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> IndexBacklog:
        """Outbox head and visible passages without a vector of any model."""
        pids = {p.passage_id for p in self.visible_placements(tenant_id, as_of, clearance)}
        return IndexBacklog(outbox_head=len(self.outbox.get(tenant_id, [])),
                            unembedded=sum((tenant_id, pid) not in self.vectors_by
                                           for pid in pids))

    def pending(self, tenant_id: UUID, model_hash: str) -> list[tuple[int, str]]:
        """Passages of the tenant without a vector of the model."""
        ids = {self.passage_ids[p.hash] for v in self.versions.get(tenant_id, {}).values()
               for p in v.passages}
        return [(pid, self.passage_text[pid]) for pid in sorted(ids)
                if self.vectors_by.get((tenant_id, pid), ("",))[0] != model_hash]

    # -- RunStore, log writer and units of work ----------------------------------------------

    @contextmanager
    def unit(self, tenant_id: UUID) -> Iterator[FakeUnit]:
        """A unit of work: applied only when the block ends without an error."""
        self.units_opened += 1
        unit = FakeUnit(self, tenant_id)
        yield unit
        unit.commit()

    def run(self, tenant_id: UUID, run_id: UUID) -> RunRow | None:
        """One recorded run."""
        return next((r for r in self.runs_by.get(tenant_id, []) if r.run_id == run_id), None)

    def answer_runs(self, tenant_id: UUID, *, since: datetime) -> list[RunRow]:
        """Answer runs since ``since``, oldest first."""
        return [r for r in self.runs_by.get(tenant_id, [])
                if r.kind == "answer" and r.created_at >= since]

    def abstained_questions(self, tenant_id: UUID, *, since: datetime, limit: int,
                            reasons: Sequence[str]) -> list[RunRow]:
        """Abstained answer runs and recorded gaps (an empty list answer), newest first."""
        rows = [r for r in self.answer_runs(tenant_id, since=since)
                if (r.record["result"].get("reason") or r.record["result"].get("gap"))
                in reasons]
        return rows[::-1][:limit]

    def log_head(self, tenant_id: UUID) -> LogHead | None:
        """The head of the tenant's log."""
        return self.heads.get(tenant_id)

    def log_leaves(self, tenant_id: UUID, size: int) -> list[bytes]:
        """Leaf hashes up to ``size``."""
        return self.leaves.get(tenant_id, [])[:size]

    def log_records(self, tenant_id: UUID, size: int) -> list[dict[str, Any]]:
        """Records up to ``size``, as their leaves hash them."""
        return [record for record, _ in self.log_entries(tenant_id, size)]

    def log_entries(self, tenant_id: UUID, size: int
                    ) -> list[tuple[dict[str, Any], dict[str, dict[str, str]]]]:
        """(record as hashed, openings of its sealed texts) up to ``size``."""
        return [(r.sealed if r.sealed is not None else r.record, r.openings)
                for r in self.runs_by.get(tenant_id, [])][:size]

    def run_leaf(self, tenant_id: UUID, run_id: UUID) -> tuple[int, bytes] | None:
        """Position and leaf hash of a run (runs and leaves are appended together)."""
        rows = self.runs_by.get(tenant_id, [])
        seq = next((i for i, r in enumerate(rows) if r.run_id == run_id), None)
        return None if seq is None else (seq, self.leaves[tenant_id][seq])

    # -- ThresholdStore --------------------------------------------------------------------

    def current_thresholds(self, tenant_id: UUID) -> ThresholdRow | None:
        """The newest version."""
        rows = self.thresholds.get(tenant_id, [])
        return rows[-1] if rows else None

    def threshold_history(self, tenant_id: UUID) -> list[ThresholdRow]:
        """All versions."""
        return list(self.thresholds.get(tenant_id, []))

    def insert_thresholds(self, tenant_id: UUID, **values: Any) -> ThresholdRow:
        """The next version."""
        rows = self.thresholds.setdefault(tenant_id, [])
        row = ThresholdRow(version=len(rows) + 1, recorded_at=self.clock.now(), **values)
        rows.append(row)
        return row


class FakeUnit:
    """The writers of one fake unit of work; changes land on commit only."""

    def __init__(self, store: FakeStore, tenant_id: UUID) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self._head: LogHead | None = None
        self._rows: list[tuple[RunRow, bytes]] = []
        self.log = self
        self.review = self
        self.erasure = FakeErasureWriter(store, tenant_id)

    def observe(self, known_at: datetime) -> datetime:
        """Move the observation hand at once (the real one commits with its own unit)."""
        observed = self.store.observed
        observed[self.tenant_id] = observe(observed.get(self.tenant_id), known_at)
        return observed[self.tenant_id]

    def lock_head(self, empty_root: bytes) -> LogHead:
        """The current head (one writer at a time in these tests)."""
        return self.store.heads.get(self.tenant_id) or LogHead(
            size=0, root=empty_root, frontier=[], checkpoint="")

    def insert_leaf(self, *, run_id: UUID, kind: str, key_id: str, record: dict[str, Any],
                    seq: int, leaf: bytes, texts: Sequence[SealedText] = ()) -> None:
        """Queue a leaf with its sealed texts; the sequence must continue the log."""
        if seq != len(self.store.leaves.get(self.tenant_id, [])) + len(self._rows):
            raise Conflict("seq", "the log would get a gap")
        openings = {t.commitment.hex(): {"salt": t.salt.hex(), "text": t.text} for t in texts}
        self._rows.append((RunRow(run_id=run_id, kind=kind, key_id=key_id,
                                  created_at=self.store.clock.now(),
                                  record=unseal(record, openings), sealed=record,
                                  openings=openings), leaf))

    def set_head(self, head: LogHead) -> None:
        """Queue the new head."""
        self._head = head

    def insert_sample(self, **values: Any) -> None:
        """Review rows are not kept by this fake."""

    def insert_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Review rows are not kept by this fake."""

    def insert_verdict(self, **values: Any) -> datetime:
        """Review rows are not kept by this fake."""
        return self.store.clock.now()

    def commit(self) -> None:
        """Apply the queued rows."""
        for row, leaf in self._rows:
            self.store.runs_by.setdefault(self.tenant_id, []).append(row)
            self.store.leaves.setdefault(self.tenant_id, []).append(leaf)
        if self._head is not None:
            self.store.heads[self.tenant_id] = self._head


class FakeErasureWriter:
    """This fake has no erase path: every version is unknown to an erasure (the real one
    is tested in tests/integration/test_erasure.py)."""

    def __init__(self, store: FakeStore, tenant_id: UUID) -> None:
        self.store = store
        self.tenant_id = tenant_id

    def target(self, version_id: str, *, clearance: int) -> None:
        """Unknown, as the real writer answers for a version it cannot see."""
        del version_id, clearance

    def record(self, erasure: Erasure) -> None:
        """Never reached: no target is ever found."""
        raise NotFound(erasure.version_id)

    def blank(self, version_id: str) -> dict[str, int]:
        """Never reached: no target is ever found."""
        raise NotFound(version_id)

    def queue(self, assertion_ids: Sequence[int]) -> None:
        """Never reached: no target is ever found."""
        raise NotFound(str(list(assertion_ids)))

    def logged(self) -> list[dict[str, Any]]:
        """The erasure records of the tenant's fake log, oldest first."""
        return [row.record for row in self.store.runs_by.get(self.tenant_id, [])
                if row.kind == "erasure"]


_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return [w.casefold()[:6] for w in _WORD.findall(text)]  # a crude stemmer: 6-char prefixes


class FakeLexicalIndex:
    """Term-overlap scoring over the visible placements (the real one is tantivy/BM25)."""

    analyzer_id = "fake-prefix6"

    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.fresh_calls = 0

    def search(self, tenant_id: UUID, text: str, *, as_of: AsOf, clearance: int,
               k: int) -> list[tuple[PlacementKey, float]]:
        """Placements sharing terms with the query, by shared-term count."""
        terms = set(_tokens(text))
        scored = []
        for p in self.store.visible_placements(tenant_id, as_of, clearance):
            score = float(len(terms & set(_tokens(p.quote))))
            if score:
                scored.append((p.key, score))
        return sorted(scored, key=lambda s: (-s[1], s[0]))[:k]

    def fresh(self, tenant_id: UUID, *, at_least: int = 0) -> int:
        """Always current: the fake index reads the store directly."""
        self.fresh_calls += 1
        return len(self.store.outbox.get(tenant_id, []))

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> InForce:
        """Counted over the visible placements' texts in memory."""
        return InForce.from_texts(
            p.quote for p in self.store.visible_placements(tenant_id, as_of, clearance))


class FakeEmbedder:
    """Hashed bag-of-prefixes vectors, unit length: similar words, similar vectors."""

    model_hash = "fake-embedder-1"

    def _embed(self, text: str) -> Vector:
        vec = np.zeros(DIMS, dtype=np.float32)
        for token in _tokens(text):
            vec[int(hashlib.blake2b(token.encode(), digest_size=4).hexdigest(), 16) % DIMS] += 1
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_queries(self, texts: list[str]) -> Vector:
        """One row per query."""
        return np.stack([self._embed(t) for t in texts])

    def embed_passages(self, texts: list[str]) -> Vector:
        """One row per passage."""
        return np.stack([self._embed(t) for t in texts])


class FakeVectorReranker:
    """The cosine of the query and passage vectors (as the default reranker)."""

    model_hash = "fake-cosine-1"
    label = "fake cosine"

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        """Not used: this reranker scores from vectors."""
        raise AssertionError("score_vectors is the path for a vector reranker")

    def score_vectors(self, query: Vector, passages: Vector) -> Sequence[float]:
        """Cosine per passage row."""
        return [float(row @ query) for row in passages]


class FakeCrossEncoder:
    """A cross-encoder's logit from shared words: reads question and passage together."""

    label = "fake cross-encoder"

    def __init__(self, model_hash: str = "fake-cross-1") -> None:
        self.model_hash = model_hash
        self.calls = 0

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        """(shared words - 2), so a passage sharing nothing scores -2."""
        self.calls += 1
        asked = set(_tokens(query))
        return [float(len(asked & set(_tokens(p))) - 2) for p in passages]


class FakeSigner:
    """Signs with a keyed hash; enough for the log's own consistency checks."""

    name = "fake signer"

    def __init__(self, tag_key: str = "k1") -> None:
        self.secret = tag_key

    def _tag(self, body: str) -> str:
        return hashlib.sha256((self.secret + body).encode()).hexdigest()[:16]

    def sign(self, body: str) -> str:
        """The body with a tag line."""
        return f"{body}\n— fake {self._tag(body)}\n"

    def public_key_pem(self) -> str:
        """No real key."""
        return "FAKE KEY"

    def signed_by_us(self, note: str) -> bool:
        """Whether the tag line matches this secret."""
        body, _, tag = note.rpartition("\n— fake ")
        return tag.strip() == self._tag(body)


@dataclass
class FakeIndexer:
    """Index maintenance over the fake store (embeds pending passages)."""

    store: FakeStore
    embedder: FakeEmbedder
    notified: list[UUID] = field(default_factory=list)

    def catch_up(self, tenant_id: UUID, *, progress: Progress | None = None) -> IndexStatus:
        """Embed every pending passage."""
        pending = self.store.pending(tenant_id, self.embedder.model_hash)
        if progress is not None:
            progress("embeddings", len(pending), len(pending))
        if pending:
            self.store.store_vectors(tenant_id, [pid for pid, _ in pending],
                                     self.embedder.embed_passages([t for _, t in pending]),
                                     self.embedder.model_hash)
        return self.status(tenant_id)

    def status(self, tenant_id: UUID) -> IndexStatus:
        """Everything applied; pending embeddings counted."""
        seq = len(self.store.outbox.get(tenant_id, []))
        return IndexStatus(outbox_seq=seq, lexical_seq=seq, pending_embeddings=len(
            self.store.pending(tenant_id, self.embedder.model_hash)))

    def notify(self, tenant_id: UUID) -> None:
        """Remember the wake-up."""
        self.notified.append(tenant_id)

    def rebuild(self, tenant_id: UUID) -> int:
        """Nothing to rebuild: the fake's lexical index reads the store directly."""
        return self.status(tenant_id).lexical_seq

    def check(self, tenant_id: UUID) -> dict[str, Any]:
        """The real report's shape; the fake index never differs from its store."""
        seq = self.status(tenant_id).lexical_seq
        return {"expected": seq, "indexed": seq, "documents": seq, "missing": 0, "extra": 0,
                "differences": 0, "sample": []}


def new_tenant() -> UUID:
    """A fresh tenant id (the fake store needs no tenant row)."""
    return uuid.uuid4()


if TYPE_CHECKING:  # mypy holds each fake to the ports it stands in for (make typecheck)
    from stichtag import ports

    def _conforms(clock: FakeClock, store: FakeStore, unit: FakeUnit,
                  lexical: FakeLexicalIndex, embedder: FakeEmbedder,
                  reranker: FakeVectorReranker, signer: FakeSigner,
                  indexer: FakeIndexer) -> None:
        _clock: ports.Clock = clock
        _documents: ports.DocumentStore = store
        _passages: ports.PassageStore = store
        _vectors: ports.VectorIndex = store
        _runs: ports.RunStore = store
        _thresholds: ports.ThresholdStore = store
        _units: ports.Transactions = store  # see FakeStore.unit
        _unit: ports.UnitOfWork = unit
        _lexical: ports.LexicalIndex = lexical
        _embedder: ports.Embedder = embedder
        _reranker: ports.VectorReranker = reranker
        _signer: ports.Signer = signer
        _maintenance: ports.IndexMaintenance = indexer
