"""The tantivy adapter against real tantivy directories: German matching, as-of exactness,
selective filters, and crash/restart behaviour of the applied outbox sequence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stichtag.index.analyzer import ANALYZER_ID, GermanAnalyzer
from stichtag.index.fields import IndexedPassage, LexicalHit
from stichtag.index.ranges import INF_US
from stichtag.index.tantivy_index import TenantIndex

ROOT = Path(__file__).resolve().parents[2]
ANALYZER = GermanAnalyzer()


def passage(
    assertion_id: int,
    passage_id: int,
    text: str,
    *,
    valid: tuple[int, int] = (0, INF_US),
    tx: tuple[int, int] = (0, INF_US),
    confidentiality: int = 0,
) -> IndexedPassage:
    """A passage with defaults that make it visible from time 0 on, publicly."""
    return IndexedPassage(
        assertion_id=assertion_id,
        passage_id=passage_id,
        document="deckrv",
        version_id=f"b3:{assertion_id:064x}",
        start=passage_id * 1000,
        end=passage_id * 1000 + len(text),
        text=text,
        heading_path="DeckRV \u203a § 2 Höchstzinssatz",
        valid_from=valid[0],
        valid_to=valid[1],
        tx_from=tx[0],
        tx_to=tx[1],
        confidentiality=confidentiality,
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TenantIndex]:
    ix = TenantIndex(tmp_path / "tenant")
    yield ix
    ix.close()


def ids(hits: list[LexicalHit]) -> set[tuple[int, int]]:
    return {(h.assertion_id, h.passage_id) for h in hits}


# -- German matching -------------------------------------------------------------------


GERMAN = [
    passage(1, 0, "Der Höchstzinssatz für die Berechnung beträgt 0,25 Prozent."),
    passage(2, 0, "Die Deckungsrückstellungen sind nach § 341f HGB zu bilden."),
    passage(3, 0, "Maßnahmen der Aufsicht nach § 2 Abs. 1 Satz 2 VAG."),
    passage(4, 0, "Ein Zinssatz ohne Höchstgrenze."),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Höchstzinssatz", {(1, 0)}),
        ("Hoechstzinssatz", {(1, 0)}),  # digraph spelling (german2 stemmer)
        ("hochstzinssatz", {(1, 0)}),  # umlaut dropped
        ("HÖCHSTZINSSATZ", {(1, 0)}),
        ("Ho\u0308chstzinssatz", {(1, 0)}),  # decomposed umlaut, normalized to NFC
        ("Deckungsrückstellung", {(2, 0)}),  # singular finds plural
        ("Berechnungen", {(1, 0)}),  # plural finds singular
        ("Deckungsrueckstellung", {(2, 0)}),
        ("Massnahme", {(3, 0)}),  # ß == ss
        ("Zinssatz", {(4, 0)}),  # no decompounding: a compound is not found by its part
    ],
)
def test_german_matching(index: TenantIndex, query: str, expected: set[tuple[int, int]]) -> None:
    index.apply(upserts=GERMAN, close=[], seq=1)
    assert ids(index.search(query, valid_at=1, known_at=1, clearance=0, k=10)) == expected


@pytest.mark.parametrize(
    "query",
    ["§ 2 Abs. 1", '"§ 2 (1)"', "Abs.: (1) AND OR NOT -x +y", "title:foo*", "[1 TO 2]", "a\\b"],
)
def test_query_syntax_is_just_text(index: TenantIndex, query: str) -> None:
    index.apply(upserts=GERMAN, close=[], seq=1)
    hits = index.search(query, valid_at=1, known_at=1, clearance=0, k=10)
    # "2", "abs" and "1" are plain terms; the operators and brackets are separators.
    assert ids(hits) <= {(1, 0), (2, 0), (3, 0)}
    if "Abs" in query:
        assert (3, 0) in ids(hits)


@pytest.mark.parametrize("query", ["", "   ", "§§ () ,.;:", '"""', "der die und für"])
def test_query_without_terms_returns_nothing(index: TenantIndex, query: str) -> None:
    index.apply(upserts=GERMAN, close=[], seq=1)
    assert index.search(query, valid_at=1, known_at=1, clearance=3, k=10) == []


def test_analyzer_id_and_terms() -> None:
    assert ANALYZER_ID == "stichtag-de-v1"
    # One term for all inflections (two stemmer passes), stop words gone, order kept.
    assert ANALYZER.query_terms("Zins zinsen ZINSES der Kurs Kurse") == ["zin", "kur"]
    assert ANALYZER.terms("Café") == ["cafe"]


@pytest.fixture(scope="module")
def german_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantIndex]:
    ix = TenantIndex(tmp_path_factory.mktemp("german") / "tenant")
    ix.apply(upserts=GERMAN, close=[], seq=1)
    yield ix
    ix.close()


@given(st.text(max_size=60))
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_text_is_a_valid_query(german_index: TenantIndex, query: str) -> None:
    hits = german_index.search(query, valid_at=1, known_at=1, clearance=3, k=10)
    assert ids(hits) <= {(p.assertion_id, p.passage_id) for p in GERMAN}
    if not ANALYZER.query_terms(query):
        assert hits == []


# -- exactness against a brute-force model --------------------------------------------

VOCAB = [
    "Höchstzinssatz", "Hoechstzinssatz", "Zins", "Zinsen", "Deckungsrückstellung",
    "Deckungsrückstellungen", "Vertrag", "Verträge", "Prämie", "Maßnahme", "Massnahme",
    "der", "und", "§", "Abs.", "1", "2", "(1)",
]  # fmt: skip
GRID = [-INF_US, -7, 0, 3, 5, 9, 12, INF_US]
POINTS = sorted({min(max(g + d, -INF_US), INF_US) for g in GRID for d in (-1, 0, 1)})


@st.composite
def interval(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.lists(st.sampled_from(GRID), min_size=2, max_size=2, unique=True)))
    return lo, hi


@st.composite
def corpus(draw: st.DrawFn) -> tuple[list[IndexedPassage], list[IndexedPassage], dict[int, int]]:
    """First batch, second batch and the closes that come with the second batch."""
    first: list[IndexedPassage] = []
    second: list[IndexedPassage] = []
    for assertion_id in range(draw(st.integers(1, 14))):
        valid, tx = draw(interval()), draw(interval())
        level = draw(st.integers(0, 3))
        target = draw(st.sampled_from([first, first, second]))
        for passage_id in range(draw(st.integers(1, 3))):
            words = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8))
            text = " ".join(words)
            target.append(
                passage(assertion_id, passage_id, text, valid=valid, tx=tx, confidentiality=level)
            )
    open_ones = sorted({p.assertion_id for p in first if p.tx_to == INF_US})
    closes = {}
    for assertion_id in (
        draw(st.lists(st.sampled_from(open_ones), unique=True)) if open_ones else []
    ):
        tx_from = next(p.tx_from for p in first if p.assertion_id == assertion_id)
        closes[assertion_id] = draw(st.sampled_from([g for g in GRID if g > tx_from]))
    return first, second, closes


asof_query = st.tuples(
    st.lists(st.sampled_from([*VOCAB, "Zinssatz", "Police"]), min_size=1, max_size=3).map(" ".join),
    st.sampled_from(POINTS),
    st.sampled_from(POINTS),
    st.integers(0, 3),
    st.integers(1, 6),
)


def visible(p: IndexedPassage, valid_at: int, known_at: int, clearance: int) -> bool:
    return (
        p.tx_from <= known_at < p.tx_to
        and p.valid_from <= valid_at < p.valid_to
        and p.confidentiality <= clearance
    )


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantIndex]:
    ix = TenantIndex(tmp_path_factory.mktemp("exact") / "tenant")
    yield ix
    ix.close()


QUERIES_PER_EXAMPLE = 10
EXAMPLES = 35  # 350 random as-of queries


@given(corpus(), st.lists(asof_query, min_size=QUERIES_PER_EXAMPLE, max_size=QUERIES_PER_EXAMPLE))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_hits_equal_brute_force(
    shared_index: TenantIndex,
    data: tuple[list[IndexedPassage], list[IndexedPassage], dict[int, int]],
    queries: list[tuple[str, int, int, int, int]],
) -> None:
    first, second, closes = data
    ix = shared_index
    ix.clear()  # also exercises clear(): every example starts from an empty index
    ix.apply(upserts=first, close=[], seq=1)
    ix.apply(upserts=second, close=list(closes.items()), seq=2)
    model = [replace(p, tx_to=closes.get(p.assertion_id, p.tx_to)) for p in [*first, *second]]
    assert ix.doc_ids() == {(p.assertion_id, p.passage_id, p.tx_to) for p in model}
    assert ix.doc_count() == len(model)
    assert ix.applied_seq() == 2
    for text, valid_at, known_at, clearance, small_k in queries:
        query_terms = set(ANALYZER.query_terms(text))
        expected = {
            (p.assertion_id, p.passage_id)
            for p in model
            if visible(p, valid_at, known_at, clearance)
            and query_terms & set(ANALYZER.terms(p.text))
        }
        hits = ix.search(text, valid_at=valid_at, known_at=known_at, clearance=clearance, k=1000)
        assert len(hits) == len(ids(hits))
        assert ids(hits) == expected
        top = ix.search(text, valid_at=valid_at, known_at=known_at, clearance=clearance, k=small_k)
        assert len(top) == min(small_k, len(expected))
        # The k best are the k best of the full list (same scores), not any k visible ones.
        assert [h.bm25 for h in top] == [h.bm25 for h in hits[:small_k]]
        assert all(h.bm25 > 0 for h in hits)
        # Salience's counts, memoized per index state at its canonical as-of point, equal
        # a recount over the model at this very point.
        counter = ix.counter(valid_at=valid_at, known_at=known_at, clearance=clearance)
        shown = [p for p in model if visible(p, valid_at, known_at, clearance)]
        assert counter.passages == len(shown)
        for term in sorted(query_terms):
            assert counter.df(term) == sum(term in ANALYZER.terms(p.text) for p in shown)
            assert counter.known(term) == any(
                p.tx_from <= known_at < p.tx_to and p.confidentiality <= clearance
                and term in ANALYZER.terms(p.text) for p in model)
        assert counter.co_df(sorted(query_terms)) == (sum(
            query_terms <= set(ANALYZER.terms(p.text)) for p in shown) if query_terms else 0)


# -- selective filters -----------------------------------------------------------------


def test_k_visible_hits_despite_thousands_of_better_invisible_ones(index: TenantIndex) -> None:
    decoys = [
        # Short and repetitive: they would win BM25 if the filter ran after top-k.
        passage(10_000 + i, 0, "Zins Zins Zins", tx=(0, 100), confidentiality=i % 4)
        for i in range(2000)
    ] + [
        passage(20_000 + i, 0, "Zins Zins Zins", tx=(100, INF_US), confidentiality=3)
        for i in range(2000)
    ]
    wanted = [
        passage(
            i,
            0,
            "Ein langer Satz über Verträge, Prämien und auch einen Zins am Ende.",
            tx=(100, INF_US),
        )
        for i in range(5)
    ]
    index.apply(upserts=decoys + wanted, close=[], seq=1)
    now = index.search("Zins", valid_at=150, known_at=150, clearance=2, k=5)
    assert ids(now) == {(i, 0) for i in range(5)}
    past = index.search("Zins", valid_at=150, known_at=50, clearance=3, k=5)
    assert len(past) == 5
    assert min(h.bm25 for h in past) > max(h.bm25 for h in now)  # the decoys do outrank
    secret = index.search("Zins", valid_at=150, known_at=150, clearance=3, k=5)
    assert ids(secret).isdisjoint(ids(now))


# -- writes, idempotency, crash/restart ------------------------------------------------


def test_close_and_upsert_of_same_assertion_in_one_batch(index: TenantIndex) -> None:
    index.apply(upserts=[passage(1, 0, "Zins"), passage(1, 1, "Zins")], close=[], seq=1)
    index.apply(upserts=[passage(1, 1, "Zins neu"), passage(1, 2, "Zins")], close=[(1, 50)], seq=2)
    assert index.doc_ids() == {(1, 0, 50), (1, 1, 50), (1, 2, 50)}
    assert index.doc_count() == 3
    assert index.search("neu", valid_at=10, known_at=10, clearance=0, k=5) != []


def test_stale_seq_and_invalid_passage_are_rejected_without_writing(index: TenantIndex) -> None:
    index.apply(upserts=[passage(1, 0, "Zins")], close=[], seq=5)
    with pytest.raises(ValueError, match="below"):
        index.apply(upserts=[passage(2, 0, "Zins")], close=[], seq=4)
    bad = passage(3, 0, "Zins", confidentiality=4)
    with pytest.raises(ValueError, match="confidentiality"):
        index.apply(upserts=[passage(2, 0, "Zins"), bad], close=[], seq=6)
    index.apply(upserts=[], close=[], seq=6)
    assert index.doc_ids() == {(1, 0, INF_US)}
    assert index.applied_seq() == 6


def crash_batch(seq: int) -> tuple[list[IndexedPassage], list[tuple[int, int]]]:
    """Outbox batch ``seq`` of the crash tests (deterministic, also used by the child)."""
    upserts = [
        passage(seq * 1000 + i, j, f"Zins Vertrag batch{seq} Nummer {i}", tx=(seq * 10, INF_US))
        for i in range(100)
        for j in range(3)
    ]
    closes = [((seq - 1) * 1000 + i, seq * 10) for i in range(0, 100, 2)] if seq > 1 else []
    return upserts, closes


def crash_model(last_seq: int) -> set[tuple[int, int, int]]:
    state: dict[tuple[int, int], int] = {}
    for seq in range(1, last_seq + 1):
        upserts, closes = crash_batch(seq)
        for assertion_id, tx_to in closes:
            for key in [k for k in state if k[0] == assertion_id]:
                state[key] = tx_to
        state.update({(p.assertion_id, p.passage_id): p.tx_to for p in upserts})
    return {(a, p, t) for (a, p), t in state.items()}


def test_reopen_keeps_seq_and_reapply_is_idempotent(tmp_path: Path) -> None:
    directory = tmp_path / "tenant"
    with TenantIndex(directory) as ix:
        assert ix.applied_seq() == 0
        for seq in range(1, 5):
            upserts, closes = crash_batch(seq)
            ix.apply(upserts=upserts, close=closes, seq=seq)
    with TenantIndex(directory) as ix:
        assert ix.applied_seq() == 4
        assert ix.doc_ids() == crash_model(4)
        upserts, closes = crash_batch(4)
        ix.apply(upserts=upserts, close=closes, seq=4)  # as after a crash before the ack
        assert ix.doc_count() == len(crash_model(4))
        assert ix.doc_ids() == crash_model(4)
        ix.clear()
        assert (ix.applied_seq(), ix.doc_count()) == (0, 0)
        ix.apply(upserts=crash_batch(1)[0], close=[], seq=1)
        assert ix.doc_ids() == crash_model(1)


CHILD = """
import sys
from pathlib import Path
from stichtag.index.tantivy_index import TenantIndex
from tests.integration.test_tantivy_index import crash_batch
ix = TenantIndex(Path(sys.argv[1]))
seq = ix.applied_seq()
while True:
    seq += 1
    upserts, closes = crash_batch(seq)
    print("begin", seq, flush=True)
    ix.apply(upserts=upserts, close=closes, seq=seq)
    print("done", seq, flush=True)
"""


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.02])
def test_sigkilled_writer_leaves_a_consistent_index(tmp_path: Path, delay: float) -> None:
    directory = tmp_path / "tenant"
    for round_ in range(2):  # the second child resumes from what the first left
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # Fixed argv, no shell: the interpreter running the tests and a constant script.
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(directory)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        done, begun = 0, 0
        while begun < 3 * (round_ + 1):
            kind, number = child.stdout.readline().split()
            done, begun = (int(number), begun) if kind == "done" else (done, int(number))
        time.sleep(delay)  # vary where in the batch the kill lands; nothing is timed
        child.send_signal(signal.SIGKILL)
        child.wait()
        for line in child.stdout.read().splitlines():
            kind, number = line.split()
            done, begun = (int(number), begun) if kind == "done" else (done, int(number))
        child.stdout.close()
        with TenantIndex(directory) as ix:
            seq = ix.applied_seq()
            assert done <= seq <= begun
            assert ix.doc_ids() == crash_model(seq)  # all of batch `seq`, nothing after it
            assert ix.doc_count() == len(crash_model(seq))
    with TenantIndex(directory) as ix:  # the killed writer's lock is gone
        upserts, closes = crash_batch(ix.applied_seq() + 1)
        ix.apply(upserts=upserts, close=closes, seq=ix.applied_seq() + 1)
        assert ix.doc_ids() == crash_model(ix.applied_seq())
