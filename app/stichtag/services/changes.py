"""The knowledge diff use case: what changed in what we knew between two transaction times.

The rules live in ``stichtag.domain.changes`` (window, classification, version pairs) and
``stichtag.domain.sentence_diff``; this module reads the touched assertions within the key's
clearance, applies the bounds and loads the versions it diffs.

Bounds, so that a whole-tenant diff over a large history stays usable:

- ``limit`` assertion entries (appeared + ended + corrected) are listed, in document order
  and transaction-time order within a document; the rest is counted, not listed;
- at most ``MAX_DIFFS`` version pairs get a sentence diff, each listing at most
  ``max_sentences`` sentence changes (its counts are always complete); a pair with nothing
  on one side (a new document, a retraction, a correction) only counts the sentences of
  the one version: the whole version was added or removed, and listing it is no diff;
- a window that touches more than ``ROW_CAP`` assertions is refused (name a document or
  narrow the window) rather than half classified.

``truncated`` is true when any of these cut something.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from stichtag.domain.bitemporal import Interval
from stichtag.domain.changes import DocumentChanges, Stated, VersionPair, Window, classify
from stichtag.domain.errors import Gone, Invalid, NotFound
from stichtag.domain.records import AssertionRow, Erasure
from stichtag.domain.sentence_diff import DiffSentence, SentenceDiff, diff_sentences
from stichtag.domain.txclock import cap_known_at
from stichtag.ports import Clock, DocumentStore
from stichtag.services.access import Principal
from stichtag.services.citations import VersionCache
from stichtag.services.documents import check_key

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000
DEFAULT_MAX_SENTENCES = 20
MAX_SENTENCES = 200
MAX_DIFFS = 25
ROW_CAP = 10_000


@dataclass(frozen=True, kw_only=True)
class PairDiff:
    """A version pair and its sentence diff (None: not computed, see ``diff``/bounds)."""

    pair: VersionPair
    diff: SentenceDiff | None


@dataclass(frozen=True, kw_only=True)
class DocumentReport:
    """One document's listed changes; ``truncated`` when the limit cut its lists."""

    changes: DocumentChanges
    pairs: tuple[PairDiff, ...]
    truncated: bool


@dataclass(frozen=True, kw_only=True)
class ChangeReport:
    """The knowledge diff of a window, with complete counts and the bounds applied."""

    window: Window
    document: str | None
    documents: tuple[DocumentReport, ...]
    rows: dict[int, AssertionRow]
    counts: dict[str, int]
    truncated: bool
    limits: dict[str, int | bool]
    erasures: tuple[Erasure, ...] = ()
    """Versions erased in the window (GDPR): their assertions did not change, their text
    went; a pair with an erased side has no sentence diff."""


def _stated(row: AssertionRow) -> Stated:
    return Stated(assertion_id=row.assertion_id, document=row.document,
                  version_id=row.version_id,
                  valid=Interval(start=row.valid_from, end=row.valid_to),
                  tx_from=row.tx_from, tx_to=row.tx_to, ended=row.ended)


def _trim(doc: DocumentChanges, budget: int) -> tuple[DocumentChanges, bool]:
    """Cut a document's lists to ``budget`` entries; keep the pairs of listed assertions."""
    if doc.size <= budget:
        return doc, False
    appeared = doc.appeared[:budget]
    ended = doc.ended[:max(0, budget - len(appeared))]
    corrected = doc.corrected[:max(0, budget - len(appeared) - len(ended))]
    listed = {r.assertion_id for r in (*appeared, *ended, *corrected)}
    pairs = tuple(p for p in doc.pairs if listed.intersection(p.assertion_ids))
    return DocumentChanges(document=doc.document, new_document=doc.new_document,
                           appeared=appeared, ended=ended, corrected=corrected,
                           pairs=pairs), True


class ChangesService:
    """Knowledge diffs for one principal at a time."""

    def __init__(self, store: DocumentStore, versions: VersionCache, clock: Clock) -> None:
        self.store = store
        self.versions = versions
        self.clock = clock

    def changes(self, principal: Principal, *, known_from: datetime, known_to: datetime,
                document: str | None = None, diff: bool = True, limit: int = DEFAULT_LIMIT,
                max_sentences: int = DEFAULT_MAX_SENTENCES) -> ChangeReport:
        """Assertions that appeared, ended or were corrected in ``(known_from, known_to]``."""
        principal.require("read")
        if known_to < known_from:
            raise Invalid("known_to", "must not be earlier than known_from")
        # A window reaching into the future would grow with later writes: a report is of
        # what is known now, as for answers (§3.7). The response's window shows the cap.
        now = self.clock.now()
        known_from, known_to = cap_known_at(known_from, now), cap_known_at(known_to, now)
        if not 1 <= limit <= MAX_LIMIT:
            raise Invalid("limit", f"must be between 1 and {MAX_LIMIT}")
        if not 0 <= max_sentences <= MAX_SENTENCES:
            raise Invalid("max_sentences", f"must be between 0 and {MAX_SENTENCES}")
        if document is not None:
            check_key(document)
            if not self.store.history(principal.tenant_id, key=document,
                                      clearance=principal.clearance):
                raise NotFound("document")
        window = Window(known_from=known_from, known_to=known_to)
        rows, known = self.store.changes_window(
            principal.tenant_id, known_from=known_from, known_to=known_to, key=document,
            clearance=principal.clearance, cap=ROW_CAP + 1)
        if len(rows) > ROW_CAP:
            raise Invalid("known_from", f"the window touches more than {ROW_CAP} assertions; "
                                        "narrow it or name a document")
        docs = classify([_stated(r) for r in rows], window, known_before=frozenset(known))
        counts = {"documents": len(docs), "appeared": sum(len(d.appeared) for d in docs),
                  "ended": sum(len(d.ended) for d in docs),
                  "corrected": sum(len(d.corrected) for d in docs),
                  "pairs": sum(len(d.pairs) for d in docs)}
        budget, truncated = limit, False
        listed: list[tuple[DocumentChanges, bool]] = []
        for doc in docs:
            if budget <= 0:
                truncated = True
                break
            trimmed, cut = _trim(doc, budget)
            budget -= trimmed.size
            truncated = truncated or cut
            listed.append((trimmed, cut))
        reports, diffs_cut = self._diff(principal, listed, diff=diff, max_sentences=max_sentences)
        erasures = self.store.erasures_window(
            principal.tenant_id, known_from=known_from, known_to=known_to, key=document,
            clearance=principal.clearance)
        counts["erased"] = len(erasures)
        return ChangeReport(
            erasures=tuple(erasures),
            window=window, document=document, documents=reports,
            rows={r.assertion_id: r for r in rows}, counts=counts,
            truncated=truncated or diffs_cut or any(
                p.diff is not None and p.diff.truncated for d in reports for p in d.pairs),
            limits={"limit": limit, "max_sentences": max_sentences, "max_diffs": MAX_DIFFS,
                    "diff": diff})

    def compare(self, principal: Principal, from_version: str, to_version: str, *,
                max_sentences: int = MAX_SENTENCES) -> SentenceDiff:
        """The sentence diff of any two versions the key may read (history's compare)."""
        principal.require("read")
        if not 0 <= max_sentences <= MAX_SENTENCES:
            raise Invalid("max_sentences", f"must be between 0 and {MAX_SENTENCES}")
        loaded: dict[str, list[DiffSentence]] = {}
        old = self._sentences(principal, from_version, loaded)
        new = self._sentences(principal, to_version, loaded)
        return diff_sentences(old, new, max_changes=max_sentences)

    def _diff(self, principal: Principal, listed: list[tuple[DocumentChanges, bool]], *,
              diff: bool, max_sentences: int) -> tuple[tuple[DocumentReport, ...], bool]:
        """Sentence diffs for the first ``MAX_DIFFS`` pairs; True when some were skipped."""
        loaded: dict[str, list[DiffSentence]] = {}
        left = MAX_DIFFS if diff else 0
        skipped = False
        reports: list[DocumentReport] = []
        for doc, cut in listed:
            pairs: list[PairDiff] = []
            for pair in doc.pairs:
                result = None
                if left > 0:
                    left -= 1
                    try:
                        result = self._pair_diff(principal, pair, loaded, max_sentences)
                    except Gone:  # an erased side: its sentences are gone, no diff
                        result = None
                elif diff:
                    skipped = True
                pairs.append(PairDiff(pair=pair, diff=result))
            reports.append(DocumentReport(changes=doc, pairs=tuple(pairs), truncated=cut))
        return tuple(reports), skipped

    def _pair_diff(self, principal: Principal, pair: VersionPair,
                   loaded: dict[str, list[DiffSentence]], max_sentences: int) -> SentenceDiff:
        """The sentence diff of a pair; one-sided pairs only count (nothing to compare)."""
        if pair.from_version is None or pair.to_version is None:
            only = pair.to_version or pair.from_version
            assert only is not None
            row = self.store.version_row(principal.tenant_id, version_id=only,
                                         clearance=principal.clearance)
            if row is None:
                raise NotFound("version")
            n = row.n_sentences
            return SentenceDiff(added=n if pair.from_version is None else 0,
                                removed=n if pair.to_version is None else 0,
                                changed=0, unchanged=0, changes=(), truncated=False)
        old = self._sentences(principal, pair.from_version, loaded)
        new = self._sentences(principal, pair.to_version, loaded)
        return diff_sentences(old, new, max_changes=max_sentences)

    def _sentences(self, principal: Principal, version_id: str | None,
                   loaded: dict[str, list[DiffSentence]]) -> list[DiffSentence]:
        if version_id is None:
            return []
        if version_id not in loaded:
            content = self.versions.get(principal, version_id)
            loaded[version_id] = [DiffSentence(
                start=s.start, end=s.end, utf16_start=s.utf16_start, utf16_end=s.utf16_end,
                text=content.text[s.start:s.end], hash=s.hash, heading_path=s.heading_path)
                for s in content.sentences]
        return loaded[version_id]
