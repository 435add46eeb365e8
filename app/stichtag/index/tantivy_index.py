"""Bitemporal lexical search over one tenant's passages, backed by a tantivy directory.

The unit of the index is one (assertion, passage) pair. A document in the index carries
the passage text (German analyzer, BM25), its citation fields, and the assertion's valid
and transaction ranges and confidentiality as i64 fast fields. Visibility and clearance
are range queries evaluated by tantivy *inside* the top-k search, so a selective as-of
filter never returns fewer than k hits when k visible ones exist.

The index is derived from PostgreSQL: ``apply`` consumes one outbox batch and records its
sequence number in the same tantivy commit (see ``apply`` for why that is atomic).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import tantivy

from stichtag.domain.errors import IndexBusy
from stichtag.index import analyzer
from stichtag.index.fields import (
    INT_FIELDS,
    KEY,
    META_KEY,
    SEQ,
    STR_FIELDS,
    TEXT,
    IndexedPassage,
    LexicalHit,
    build_schema,
    check,
    key_of,
    passage_of,
)
from stichtag.index.ranges import INF_US, Extent, FieldRange, canonical, passing, visibility

MEMO_LIMIT = 100_000
"""Counts memoized for one index state before the memo starts over (a few MB)."""


class TenantIndex:
    """The lexical index of one tenant, in its own directory.

    Searches may run from several threads; ``apply``, ``clear`` and ``close`` serialize
    on a lock. The writer (and tantivy's directory lock) is taken on the first write, so
    a process that only searches can open an index another process writes to; it then
    sees new commits after tantivy's reload watcher picks them up (milliseconds).
    """

    def __init__(
        self, directory: Path, *, writer_heap_bytes: int = 64 * 2**20, threads: int = 1
    ) -> None:
        """Create the index in ``directory`` or open the one already there.

        Raises ``ValueError`` if an existing index has another schema (for instance an
        older ``ANALYZER_ID``): such an index must be cleared away and rebuilt.
        """
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._schema = build_schema()
        self._index = tantivy.Index(self._schema, path=str(directory), reuse=True)
        analyzer.register(self._index)
        self._analyzer = analyzer.GermanAnalyzer()
        self._heap = writer_heap_bytes
        self._threads = threads
        self._writer: tantivy.IndexWriter | None = None
        self._lock = threading.Lock()
        self._closed = False
        # Salience counts of the newest index state seen: (state, extent, memo).
        self._counts: tuple[tuple[int, int], Extent | None, dict[Any, Any]] | None = None

    # -- writing -----------------------------------------------------------------------

    def applied_seq(self) -> int:
        """The outbox sequence recorded by the last commit; 0 for a new or cleared index."""
        self._ensure_open()
        return self._seq_in(self._searcher())

    def apply(
        self,
        *,
        upserts: Sequence[IndexedPassage],
        close: Sequence[tuple[int, int]],
        seq: int,
        erase: Sequence[int] = (),
    ) -> None:
        """Apply one outbox batch in exactly one commit that also records ``seq``.

        ``erase`` lists assertions of erased versions (GDPR): every document of them is
        deleted, after the batch's upserts and closes, and nothing is re-added.

        ``close`` lists ``(assertion_id, tx_to_us)``: every indexed passage of that
        assertion is rewritten with that ``tx_to`` (tantivy has no in-place update, so it
        is deleted and re-added from its stored fields). An upsert for an assertion that
        is closed in the same batch gets the closing ``tx_to`` too. Upserts first delete
        their ``(assertion_id, passage_id)`` key, so applying a batch twice leaves one
        document per pair.

        Crash semantics: ``seq`` is stored in a marker document that is replaced in the
        same commit as the batch. A tantivy commit is atomic (segment files are synced,
        then ``meta.json`` is replaced atomically), so after any crash the directory holds
        either the whole batch with its ``seq`` or neither; there is no window in which
        the index and the recorded sequence disagree, and no partial batch is ever
        visible. The indexer resumes at ``applied_seq() + 1``; re-applying ``seq`` itself
        is harmless because the batch is idempotent.

        Raises ``ValueError`` for a ``seq`` below ``applied_seq()`` (a stale indexer) or
        an invalid passage; nothing is written then.
        """
        for passage in upserts:
            check(passage)
        closing = dict(close)
        with self._lock:
            self._ensure_open()
            writer = self._get_writer()
            # Holding the writer lock, read the newest commit: closes re-add stored
            # documents, and a stale reader could resurrect an older state.
            self._index.reload()
            current = self.applied_seq()
            if seq < current:
                raise ValueError(f"seq {seq} is below the applied sequence {current}")
            try:
                erasing = set(erase)
                self._write_batch(writer, [p for p in upserts if p.assertion_id not in erasing],
                                  {a: v for a, v in closing.items() if a not in erasing}, seq)
                for assertion_id in sorted(erasing):
                    writer.delete_documents_by_term("assertion_id", assertion_id)
                writer.commit()
            except BaseException:
                # Pending operations must not ride along with the next batch's commit.
                writer.rollback()
                raise
            self._index.reload()

    def _write_batch(
        self,
        writer: tantivy.IndexWriter,
        upserts: Sequence[IndexedPassage],
        closing: dict[int, int],
        seq: int,
    ) -> None:
        upsert_keys = {(p.assertion_id, p.passage_id) for p in upserts}
        searcher = self._searcher()
        for assertion_id, tx_to in closing.items():
            # Read the committed documents before deleting: the delete only affects
            # documents added before it, so the re-adds below survive it.
            existing = self._stored_passages(searcher, assertion_id)
            writer.delete_documents_by_term("assertion_id", assertion_id)
            for passage in existing:
                if (passage.assertion_id, passage.passage_id) not in upsert_keys:
                    writer.add_document(self._document(replace(passage, tx_to=tx_to)))
        for passage in upserts:
            tx_to = closing.get(passage.assertion_id, passage.tx_to)
            writer.delete_documents_by_term(KEY, key_of(passage))
            writer.add_document(self._document(replace(passage, tx_to=tx_to)))
        writer.delete_documents_by_term(KEY, META_KEY)
        writer.add_document(tantivy.Document.from_dict({KEY: META_KEY, SEQ: seq}, self._schema))

    def clear(self) -> None:
        """Delete every document, including the recorded sequence (it reads 0 afterwards).

        Used before a rebuild from PostgreSQL; the index stays usable.
        """
        with self._lock:
            self._ensure_open()
            writer = self._get_writer()
            writer.delete_all_documents()
            writer.commit()
            writer.garbage_collect_files()
            self._index.reload()
            self._counts = None  # the rebuild may reach the same sequence

    def close(self) -> None:
        """Wait for background merges, release the writer lock; later calls raise."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None

    def __enter__(self) -> Self:
        """Use the index as a context manager that closes it."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the index."""
        self.close()

    # -- reading -----------------------------------------------------------------------

    def search(
        self, query: str, *, valid_at: int, known_at: int, clearance: int, k: int
    ) -> list[LexicalHit]:
        """The top ``k`` visible passages for ``query`` by BM25 over their text.

        Visible at (valid_at, known_at) in index microseconds (``stichtag.index.ranges``) and
        ``confidentiality <= clearance``; the predicate runs inside tantivy, scored 0 so that
        ``bm25`` is the text score alone. Query text is never parsed as syntax: it is
        analyzed into terms that are OR-ed, so any string is accepted and one without
        searchable terms (punctuation, stop words) gives ``[]``.
        Hits are ordered by descending score, ties by (assertion_id, passage_id).
        """
        self._ensure_open()
        terms = self._analyzer.query_terms(query)
        if k <= 0 or not terms:
            return []
        searcher = self._searcher()
        # TopDocs allocates for its limit; a huge k must not cost more than the index.
        limit = min(k, max(searcher.num_docs, 1))
        text_queries = [
            (tantivy.Occur.Should, self._term(TEXT, term, index_option="freq")) for term in terms
        ]
        query_ = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.boolean_query(text_queries)),
                (tantivy.Occur.Must, self._visible(valid_at, known_at, clearance)),
            ]
        )
        hits = searcher.search(query_, limit=limit, count=False).hits
        addresses = [address for _, address in hits]
        assertion_ids = searcher.fast_field_values("assertion_id", addresses)
        passage_ids = searcher.fast_field_values("passage_id", addresses)
        result = [
            LexicalHit(assertion_id=int(a or 0), passage_id=int(p or 0), bm25=float(score))
            for (score, _), a, p in zip(hits, assertion_ids, passage_ids, strict=True)
        ]
        result.sort(key=lambda h: (-h.bm25, h.assertion_id, h.passage_id))
        return result

    def counter(self, *, valid_at: int, known_at: int, clearance: int) -> TermCounter:
        """Counts over the passages visible at (valid_at, known_at) within the clearance,
        on one searcher (one consistent index state).

        Counts are memoized per index state (applied sequence and live document count: the
        index is a deterministic projection of the outbox, so one sequence names one set of
        documents; ``clear`` forgets the memo, since a rebuild passes through the same
        sequences on the way back) at
        the canonical as-of point of that state (``ranges.canonical``): every current-time
        question between two commits shares the in-force total and each term's count,
        which at a million passages cost ~200 ms and ~30-90 ms to recount. The numbers are
        exactly those of a recount, so a replay at the same as-of pair gets them again.
        """
        self._ensure_open()
        searcher = self._searcher()
        state = (self._seq_in(searcher), searcher.num_docs)
        held = self._counts
        if held is None or held[0] != state or len(held[2]) > MEMO_LIMIT:
            extent = held[1] if held is not None and held[0] == state else self._extent(searcher)
            held = self._counts = (state, extent, {})
        return TermCounter(self, searcher, valid_at=valid_at, known_at=known_at,
                           clearance=clearance, extent=held[1], memo=held[2])

    def _extent(self, searcher: tantivy.Searcher) -> Extent | None:
        """Bounds of the times and levels ``searcher`` holds (``ranges.Extent``): five
        one-hit sorted searches, ~30 ms each at a million documents; None when empty."""
        def largest(field: str, query: tantivy.Query) -> int | None:
            hits = searcher.search(query, limit=1, count=False, order_by_field=field,
                                   order=tantivy.Order.Desc).hits
            return None if not hits or hits[0][0] is None else int(hits[0][0])

        def finite(field: str) -> tantivy.Query:  # open ends (INF_US) are not times
            return self._range(FieldRange(field=field, upper=INF_US - 1))

        every = tantivy.Query.all_query()
        tx_from, valid_from = largest("tx_from", every), largest("valid_from", every)
        level = largest("confidentiality", every)
        if tx_from is None or valid_from is None or level is None:
            return None
        ends = (largest("tx_to", finite("tx_to")), largest("valid_to", finite("valid_to")))
        return Extent(tx=max(tx_from, tx_from if ends[0] is None else ends[0]),
                      valid=max(valid_from, valid_from if ends[1] is None else ends[1]),
                      level=level)

    def _seq_in(self, searcher: tantivy.Searcher) -> int:
        hits = searcher.search(self._term(KEY, META_KEY), limit=1, count=False).hits
        if not hits:
            return 0
        value = searcher.fast_field_values(SEQ, [hits[0][1]])[0]
        return int(value) if value is not None else 0

    def doc_ids(self) -> set[tuple[int, int, int]]:
        """Every indexed ``(assertion_id, passage_id, tx_to)``, for the consistency check."""
        return {(a, p, t) for a, p, t in self._all_ids()}

    def doc_count(self) -> int:
        """Number of indexed passage documents; with ``doc_ids`` it reveals duplicates."""
        return len(self._all_ids())

    def _all_ids(self) -> list[tuple[int, int, int]]:
        self._ensure_open()
        searcher = self._searcher()
        if searcher.num_docs == 0:
            return []
        hits = searcher.search(tantivy.Query.all_query(), limit=searcher.num_docs, count=False)
        addresses = [address for _, address in hits.hits]
        columns = [
            searcher.fast_field_values(name, addresses)
            for name in ("assertion_id", "passage_id", "tx_to")
        ]
        # The marker document has none of these fields; it shows up as None.
        return [
            (int(a), int(p), int(t))
            for a, p, t in zip(*columns, strict=True)
            if a is not None and p is not None and t is not None
        ]

    # -- helpers -----------------------------------------------------------------------

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError("TenantIndex is closed")

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                self._writer = self._index.writer(heap_size=self._heap,
                                                  num_threads=self._threads)
            except ValueError as exc:
                if "LockBusy" in str(exc):
                    raise IndexBusy(f"{self.directory}: another process holds the index "
                                    "writer") from exc
                raise
        return self._writer

    def take_writer(self) -> None:
        """Hold the writer from now on; :class:`IndexBusy` while another process does."""
        with self._lock:
            self._ensure_open()
            self._get_writer()

    def refresh(self) -> None:
        """See what another process has committed since (``applied_seq`` reads it)."""
        with self._lock:
            self._ensure_open()
            self._index.reload()

    def _searcher(self) -> tantivy.Searcher:
        return self._index.searcher()

    def _term(self, field: str, value: Any, *, index_option: str = "basic") -> tantivy.Query:
        return tantivy.Query.term_query(self._schema, field, value, index_option=index_option)

    def _visible(self, valid_at: int, known_at: int, clearance: int) -> tantivy.Query:
        """Visibility and clearance as one filter scored 0."""
        return self._filter((*visibility(valid_at=valid_at, known_at=known_at),
                             FieldRange(field="confidentiality", upper=clearance)))

    def _filter(self, filters: Sequence[FieldRange]) -> tantivy.Query:
        """Range filters as one query scored 0 (they select, never rank)."""
        return tantivy.Query.const_score_query(
            tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, self._range(f)) for f in filters]
            ),
            0.0,
        )

    def _range(self, f: FieldRange) -> tantivy.Query:
        # FieldRange: lower exclusive (known_at < tx_to), upper inclusive (tx_from <= known_at).
        return tantivy.Query.range_query(
            self._schema,
            f.field,
            tantivy.FieldType.Integer,
            lower_bound=f.lower,
            upper_bound=f.upper,
            # The binding rejects an exclusive flag on an unbounded side.
            include_lower=f.lower is None,
            include_upper=True,
        )

    def _stored_passages(
        self, searcher: tantivy.Searcher, assertion_id: int
    ) -> list[IndexedPassage]:
        # doc_freq counts deleted documents too, so it is a safe upper bound for the limit.
        limit = searcher.doc_freq("assertion_id", assertion_id)
        if limit == 0:
            return []
        query_ = self._term("assertion_id", assertion_id)
        hits = searcher.search(query_, limit=limit, count=False).hits
        return [passage_of(searcher.doc(address)) for _, address in hits]

    def _document(self, passage: IndexedPassage) -> tantivy.Document:
        values: dict[str, Any] = {name: getattr(passage, name) for name in INT_FIELDS}
        values.update({name: getattr(passage, name) for name in STR_FIELDS})
        values[TEXT] = passage.text
        values[KEY] = key_of(passage)
        return tantivy.Document.from_dict(values, self._schema)


class TermCounter:
    """Document frequencies of index terms among visible passages (for question salience).

    ``df`` counts passages visible at the as-of pair; ``known`` says whether any passage
    known at ``known_at`` within the clearance (at any valid time) has the term, which is
    the vocabulary compounds are split over. The term dictionary's own doc_freq (all
    versions, all levels) is checked first: most candidate pieces of a compound are no
    word at all and cost one dictionary lookup; a word found there is confirmed by a
    filtered count, so nothing above the clearance decides a split.

    With the searcher's ``extent`` the as-of point becomes its canonical one and the
    filters lose the clauses every document passes; ``memo`` is shared by the counters
    of one index state (``TenantIndex.counter``).
    """

    def __init__(self, index: TenantIndex, searcher: tantivy.Searcher, *, valid_at: int,
                 known_at: int, clearance: int, extent: Extent | None = None,
                 memo: dict[Any, Any] | None = None) -> None:
        self._index = index
        self._searcher = searcher
        if extent is not None:
            valid_at, known_at, clearance = canonical(
                valid_at=valid_at, known_at=known_at, clearance=clearance, extent=extent)
        level = FieldRange(field="confidentiality", upper=clearance)
        visible: tuple[FieldRange, ...] = (*visibility(valid_at=valid_at, known_at=known_at),
                                           level)
        known: tuple[FieldRange, ...] = (FieldRange(field="tx_from", upper=known_at),
                                         FieldRange(field="tx_to", lower=known_at), level)
        if extent is not None:
            visible, known = passing(visible, extent), passing(known, extent)
        self._visible = index._filter(visible)
        self._known = index._filter(known)
        self._memo: dict[Any, Any] = {} if memo is None else memo
        self._at = (valid_at, known_at, clearance)
        self._known_at = (known_at, clearance)
        self.passages = self._memoized(("n", self._at), lambda: _count(searcher, self._visible))

    def _memoized(self, key: Any, compute: Any) -> Any:
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = compute()
        return found

    def _with(self, terms: Sequence[str], filter_: tantivy.Query) -> int:
        clauses = [(tantivy.Occur.Must, self._index._term(TEXT, t, index_option="basic"))
                   for t in terms]
        return _count(self._searcher, tantivy.Query.boolean_query(
            [*clauses, (tantivy.Occur.Must, filter_)]))

    def df(self, term: str) -> int:
        """Visible passages containing the index term."""
        return int(self._memoized(
            ("df", self._at, term),
            lambda: self._with([term], self._visible) if self.passages and self.known(term)
            else 0))

    def known(self, term: str) -> bool:
        """Whether a passage known at ``known_at`` within the clearance has the term."""
        return bool(self._memoized(
            ("known", self._known_at, term),
            lambda: self._searcher.doc_freq(TEXT, term) > 0
            and self._with([term], self._known) > 0))

    def co_df(self, terms: Sequence[str]) -> int:
        """Visible passages containing every one of the terms."""
        key = tuple(sorted(set(terms)))
        return int(self._memoized(
            ("co", self._at, key),
            lambda: self._with(key, self._visible) if key and all(self.df(t) for t in key)
            else 0))


def _count(searcher: tantivy.Searcher, query_: tantivy.Query) -> int:
    """How many documents match (TopDocs needs a limit of at least 1)."""
    result = searcher.search(query_, limit=1, count=True)
    return int(result.count)  # type: ignore[attr-defined]  # set when count=True; not in the stubs
