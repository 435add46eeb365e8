"""Support review rules: seeded stratified sampling, the sentence rule, Wilson intervals and
the report counts on a hand-built fixture (expectations worked out by hand below)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from stichtag.domain.errors import Invalid
from stichtag.domain.review import (
    Item,
    Pair,
    VerdictRecord,
    coverage_band,
    current_verdicts,
    draw,
    pairs_of_run,
    parse_strata,
    report,
    sentence_supported,
    stratum_of,
    wilson,
)

T0 = datetime(2026, 3, 31, 23, 30, tzinfo=UTC)


def pair(run: str, s: int, c: int, *, doc: str = "vag", gen: str = "extractive",
         cov: float = 1.0, at: datetime = T0) -> Pair:
    return Pair(run_id=run, sentence=s, citation=c, document=doc, version_id="b3:" + "0" * 64,
                start=0, end=5, generator=gen, coverage=cov, run_at=at,
                trace={"evidence_id": f"E{c + 1}-abcd"})


def population() -> list[Pair]:
    out = []
    for r in range(12):
        for s in range(2):
            for c in range(1 + r % 2):
                out.append(pair(f"run-{r:02d}", s, c, doc="vag" if r % 3 else "deckrv",
                                gen="extractive" if r < 8 else "llm", cov=(r % 4) / 3,
                                at=T0 + timedelta(days=r)))
    return out


def test_same_seed_same_sample_in_any_row_order() -> None:
    pop = population()
    first = draw(pop, seed=42, strata=["document"], n=4)
    for trial in range(5):
        shuffled = pop[:]
        random.Random(trial).shuffle(shuffled)  # row order, not secrets
        assert draw(shuffled, seed=42, strata=["document"], n=4) == first
    other = draw(pop, seed=43, strata=["document"], n=4)
    assert [i.pair for i in other.items] != [i.pair for i in first.items]


def test_n_per_stratum_or_everything_when_smaller() -> None:
    pop = population()  # 36 pairs: deckrv runs 0,3,6,9 -> 4 runs, (2+4+2+4) = 12 pairs
    drawn = draw(pop, seed=1, strata=["document"], n=15)
    assert drawn.population == {"document=deckrv": 12, "document=vag": 24}
    counts = {k: sum(1 for i in drawn.items if i.stratum == k) for k in drawn.population}
    assert counts == {"document=deckrv": 12, "document=vag": 15}
    assert [i.item for i in drawn.items] == list(range(1, 28))
    whole = draw(pop, seed=1, strata=[], n=500)
    assert whole.population == {"all": 36} and len(whole.items) == 36
    # A grown population keeps the earlier pairs that still rank among the n smallest.
    small = draw(pop[:20], seed=9, strata=[], n=5)
    big = draw(pop, seed=9, strata=[], n=36)
    ranked = [i.pair for i in big.items]
    assert [i.pair for i in small.items] == [p for p in ranked if p in pop[:20]][:5]


def test_strata_labels_and_bands() -> None:
    p = replace(pair("r", 0, 0, doc="vag", gen="llm", cov=0.8, at=T0),
                valid_at="2022-06-01T00:00:00Z")
    assert stratum_of(p, ["document", "generator", "coverage", "run_month", "asof_year"]) == (
        "document=vag | generator=llm | coverage [0.8, 1) | run_month=2026-03 | asof_year=2022")
    assert [coverage_band(c) for c in (None, 0.0, 0.49, 0.5, 0.79, 0.8, 0.999, 1.0)] == [
        "coverage [0, 0.5)", "coverage [0, 0.5)", "coverage [0, 0.5)", "coverage [0.5, 0.8)",
        "coverage [0.5, 0.8)", "coverage [0.8, 1)", "coverage [0.8, 1)", "coverage=1"]
    # The month is the UTC month, whatever offset the time carries.
    berlin = datetime(2026, 4, 1, 1, 0, tzinfo=UTC) - timedelta(hours=2)
    assert stratum_of(pair("r", 0, 0, at=berlin), ["run_month"]) == "run_month=2026-03"
    with pytest.raises(Invalid) as exc:
        parse_strata(["document", "colour"])
    assert exc.value.field == "strata"
    with pytest.raises(Invalid):
        parse_strata(["document", "document"])
    for n in (0, 501):
        with pytest.raises(Invalid) as exc:
            draw([], seed=1, strata=[], n=n)
        assert exc.value.field == "n"


def test_pairs_of_run_trace_the_evidence() -> None:
    vid = "b3:" + "1" * 64
    record = {
        "kind": "answer", "request": {"question": "q", "generator": "extractive"},
        "as_of": {"valid_at": "2023-05-01T00:00:00Z", "known_at": "2026-01-01T00:00:00Z"},
        "candidates": [
            {"document": "a", "version_id": vid, "start": 0, "end": 50, "fused": 0.1,
             "rerank": 0.5, "calibrated": 0.4},
            {"document": "b", "version_id": vid, "start": 50, "end": 90, "fused": 0.2,
             "rerank": 0.9, "calibrated": 0.8},
        ],
        "evidence": [{"eid": "E1-ab12", "version_id": vid, "start": 50, "end": 60, "score": 0.7},
                     {"eid": "E2-ab12", "version_id": vid, "start": 10, "end": 20, "score": 0.3}],
        "result": {"status": "partial", "coverage": 0.5, "sentences": [
            {"text": "one", "citations": [{"version_id": vid, "start": 10, "end": 20}]},
            {"text": "two", "citations": []}]},
    }
    [p] = pairs_of_run("r1", T0, record)
    assert (p.sentence, p.citation, p.document, p.start, p.end, p.coverage, p.valid_at) == (
        0, 0, "a", 10, 20, 0.5, "2023-05-01T00:00:00Z")
    assert p.trace == {"evidence_id": "E2-ab12", "evidence_rank": 2, "evidence_score": 0.3,
                       "passage_rank": 2, "fused": 0.1, "rerank": 0.5, "calibrated": 0.4}
    record["result"]["status"] = "abstained"
    assert pairs_of_run("r1", T0, record) == []


def test_wilson_matches_published_values() -> None:
    assert wilson(17, 20) == (0.6396, 0.9476)
    assert wilson(0, 10) == (0.0, 0.2775)
    assert wilson(10, 10) == (0.7225, 1.0)
    assert wilson(0, 0) is None


def test_sentence_rule() -> None:
    assert sentence_supported(["full"]) is True
    assert sentence_supported(["full", "none"]) is True
    assert sentence_supported(["full", "contradicts"]) is False
    assert sentence_supported(["partial", "partial"]) is False
    assert sentence_supported(["full", None]) is None


def _v(vid: str, item: int, verdict: str, minute: int,
       supersedes: str | None = None) -> VerdictRecord:
    return VerdictRecord(verdict_id=vid, item=item, verdict=verdict, supersedes=supersedes,
                         created_at=T0 + timedelta(minutes=minute))


def test_report_counts_on_a_hand_built_fixture() -> None:
    # Stratum A: run r1 sentence 0 with citations 0 and 1 (items 1, 2); r1 sentence 1 (3);
    #            r2 sentence 0 (4).
    # Stratum B: r3 sentence 0 (5); r3 sentence 1 (6); r4 sentence 0 (7, never reviewed).
    layout = [("A", "r1", 0, 0), ("A", "r1", 0, 1), ("A", "r1", 1, 0), ("A", "r2", 0, 0),
              ("B", "r3", 0, 0), ("B", "r3", 1, 0), ("B", "r4", 0, 0)]
    items = [Item(item=n + 1, stratum=st, pair=pair(run, s, c))
             for n, (st, run, s, c) in enumerate(layout)]
    verdicts = [
        _v("v1", 1, "none", 1), _v("v2", 1, "full", 2, supersedes="v1"),  # item 1: full
        _v("v3", 2, "partial", 3),                                          # item 2: partial
        _v("v4", 3, "full", 4), _v("v5", 3, "contradicts", 5, supersedes="v4"),  # 3: contra
        _v("v6", 4, "full", 6),                                             # item 4: full
        _v("v7", 5, "none", 7),                                             # item 5: none
        _v("v8", 6, "partial", 8), _v("v9", 6, "full", 9, supersedes="v8"),  # 6: full
    ]
    assert {k: v.verdict_id for k, v in current_verdicts(reversed(verdicts)).items()} == {
        1: "v2", 2: "v3", 3: "v5", 4: "v6", 5: "v7", 6: "v9"}
    rep = report(items, verdicts)
    a, b = rep["strata"]
    # A: pairs full = items 1, 4 -> 2 of 4; sentences: (r1,0) = [full, partial] -> yes,
    #    (r1,1) = [contradicts] -> no, (r2,0) = [full] -> yes: 2 of 3.
    assert a["stratum"] == "A" and a["verdicts"] == {"full": 2, "partial": 1, "none": 0,
                                                      "contradicts": 1}
    assert a["pairs"]["statement"] == "2 of 4 citation pairs fully supported"
    assert a["sentences"]["statement"] == "2 of 3 sentences fully supported"
    assert a["pairs_unreviewed"] == 0 and a["sentences_unreviewed"] == 0
    # B: pairs full = item 6 -> 1 of 2 reviewed, 1 unreviewed; sentences (r3,0) none -> no,
    #    (r3,1) full -> yes, (r4,0) unreviewed: 1 of 2, 1 unreviewed.
    assert b["verdicts"] == {"full": 1, "partial": 0, "none": 1, "contradicts": 0}
    assert (b["pairs"]["supported"], b["pairs"]["reviewed"], b["pairs_unreviewed"]) == (1, 2, 1)
    assert (b["sentences"]["supported"], b["sentences"]["reviewed"],
            b["sentences_unreviewed"], b["sentences_total"]) == (1, 2, 1, 3)
    o = rep["overall"]
    assert o["pairs"]["statement"] == "3 of 6 citation pairs fully supported"
    assert o["sentences"]["statement"] == "3 of 5 sentences fully supported"
    assert (o["pairs_total"], o["pairs_unreviewed"], o["sentences_total"]) == (7, 1, 6)
    assert o["pairs"]["rate"] == 0.5 and o["pairs"]["ci95"] == list(wilson(3, 6))
    assert [(f["item"], f["verdict"], f["run_id"], f["evidence_id"]) for f in rep["failures"]] == [
        (3, "contradicts", "r1", "E1-abcd"), (5, "none", "r3", "E1-abcd")]
