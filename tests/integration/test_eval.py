"""The evaluation harness end to end: DeckRV as-of questions from eval/asof_de_insurance.jsonl
and a CLAPnq slice through the real answer pipeline, then the report checked against its own
per-item rows, the store and the manifest."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stichtag.bootstrap import Services
from stichtag.cli.manifest import ingest_manifest
from stichtag.services.documents import IngestRequest
from stichtag.services.eval_metrics import ItemResult, sweep, totals
from stichtag.services.eval_plot import write_svg
from stichtag.services.eval_set import corpus_versions
from stichtag.services.evaluate import EvalReport, evaluate
from tests.conftest import REPO, make_tenant, shared_path

SET = REPO / "eval" / "asof_de_insurance.jsonl"
DECKRV_SLICE = ("hz-2013", "hz-2021-12-known-2025", "hz-2022", "hz-2022-known-2021", "hz-2025",
                "zill-2020", "un-hz-2010", "un-wm")


def _set() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line]


def _in_force(rows: list[dict[str, str]], doc: str, valid_at: str, known_at: str) -> str | None:
    """Independent as-of rule over the manifest (plain dates, so ISO strings compare)."""
    known = [r for r in rows if r["document"] == doc and r["tx_time"] <= known_at]
    retract = [r["valid_from"] for r in known if r["action"] == "retract"]
    if any(d <= valid_at for d in retract):
        return None
    starts = [r for r in known if r["action"] == "ingest" and r["valid_from"] <= valid_at]
    return max(starts, key=lambda r: r["valid_from"])["file"] if starts else None


def test_the_set_matches_the_manifest() -> None:
    """Gold is the version in force at valid_at as known at known_at, and holds gold_text."""
    root = shared_path("corpus", "de-insurance-law")
    with (root / "manifest.csv").open(encoding="utf-8") as handle:
        manifest = list(csv.DictReader(handle))
    items = _set()
    assert len(items) >= 30 and sum(not i["answerable"] for i in items) >= 6
    assert len({i["id"] for i in items}) == len(items)
    for item in items:
        gold = item.get("gold")
        if not item["answerable"]:
            assert gold is None
            continue
        expected = _in_force(manifest, gold["document"], item["valid_at"], item["known_at"])
        assert gold["version_file"] == expected, item["id"]
        assert gold["gold_text"] in (root / expected).read_text(encoding="utf-8"), item["id"]
    # the old VAG is gone once the retraction is known, and was there before
    assert _in_force(manifest, "vag_old", "2017-01-01", "2020-01-01") is None
    assert _in_force(manifest, "vag_old", "2017-01-01", "2019-01-01") is not None


def _rows_consistent(report: EvalReport) -> None:
    rows, t = report.items, report.totals
    n = len(rows)
    delivered = [r for r in rows if r.delivered]
    assert t["items"] == n == t["answerable"] + t["unanswerable"]
    assert t["delivered"] + t["abstained"] == n
    assert t["delivery_rate"] == pytest.approx(len(delivered) / n)
    by_reason = sum(v for v in t["abstention_rate_by_reason"].values())
    assert by_reason == pytest.approx(t["abstention_rate"])
    assert t["wrong"] == sum(r.wrong for r in rows) and all(r.delivered for r in rows if r.wrong)
    if delivered:
        assert t["wrong_answer_rate"] == pytest.approx(t["wrong"] / len(delivered))
        assert t["answer_sentences"] == sum(r.sentences for r in delivered) > 0
        assert t["citation_rate"] == pytest.approx(t["cited_sentences"] / t["answer_sentences"])
    for r in rows:
        assert r.delivered == (r.status in ("answered", "partial"))
        assert r.cited_sentences <= r.sentences and r.valid_citations <= r.citations
        assert r.delivered or (r.sentences == 0 and r.citations == 0)
        assert r.wrong == (r.delivered and (not r.answerable or not r.gold_hit))
    assert t["citation_validity"] in (None, 1.0)  # Zitattreue: every quote is text[start:end]
    assert t["citations"] == t["valid_citations"]
    assert t["latency_ms_p50"] <= t["latency_ms_p95"]


def test_deckrv_asof_and_clapnq_end_to_end(services: Services, tmp_path: Path) -> None:
    assert services.answers is not None
    root = shared_path("corpus", "de-insurance-law")
    # DeckRV rows only (fast): the slice asks nothing about the other documents.
    with (root / "manifest.csv").open(encoding="utf-8") as src, \
            (tmp_path / "deckrv.csv").open("w", encoding="utf-8", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames or [])
        writer.writeheader()
        for row in reader:
            if row["document"] == "deckrv":
                writer.writerow({**row, "file": str(root / row["file"])})
    law = make_tenant(services, "law")
    ingest_manifest(services, law, tmp_path / "deckrv.csv", use_tx_time=True)
    services.indexer.catch_up(law.tenant_id)
    # The offline content address equals what the server stored.
    of_file = corpus_versions(root)
    stored = {a.version_id for a in services.documents.history(law, "deckrv")}
    assert {of_file(f"deckrv/{p.name}") for p in (root / "deckrv").iterdir()} == stored

    items = [i for i in _set() if i["id"] in DECKRV_SLICE]
    assert len(items) == len(DECKRV_SLICE)
    report = evaluate(services.answers, law, items, version_of_file=of_file)
    _rows_consistent(report)
    asof = [r for r in report.items if r.answerable and r.delivered]
    assert asof, "no DeckRV as-of item was answered: nothing checked"
    for r in asof:  # as-of: every citation is the gold version, nothing else
        assert r.cited_versions == [r.gold_version_id], r.id
        assert r.citations_visible and r.asof_correct
    assert report.totals["asof_correctness"] == 1.0
    assert {r.id: r.gold_version_id for r in report.items}["hz-2022-known-2021"] == of_file(
        "deckrv/2021-04-30__kmein__57a17264.md")  # 0,25 % was not known yet

    clap = _clapnq_report(services, tmp_path)
    _rows_consistent(clap)
    assert clap.totals["answerable"] == 5 == clap.totals["unanswerable"]

    rows = report.items + clap.items
    table = sweep(rows, thetas=[0.0, 0.25, 0.5, 0.75, 0.9, 1.0], taus=[0.0, 0.5, 1.0])
    assert len(table) == 18
    for tau in (0.0, 0.5, 1.0):  # delivery never grows as θ_rel rises
        curve = [r["delivered"] for r in table if r["tau"] == tau]
        assert curve == sorted(curve, reverse=True)
    svg = write_svg(table, tmp_path / "sweep.svg")
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert sorted(re.findall(r'<polyline data-tau="([^"]+)"', text)) == ["0", "0.5", "1"]


def _clapnq_report(services: Services, tmp_path: Path) -> EvalReport:
    """Five answerable and five unanswerable CLAPnq items, just their passages ingested."""
    assert services.answers is not None
    base = shared_path("eval", "clapnq")
    picked = []
    for name in ("clapnq_dev_answerable.jsonl", "clapnq_dev_unanswerable.jsonl"):
        with (base / name).open(encoding="utf-8") as handle:
            picked += [json.loads(next(handle)) for _ in range(5)]
    qa = make_tenant(services, "clapnq")
    items = []
    for rec in picked:
        gold = None
        for k, passage in enumerate(rec["passages"]):
            doc = f"clapnq-{rec['id']}-{k}"
            result = services.documents.ingest(qa, doc, IngestRequest(
                text=f"# {passage['title']}\n\n{passage['text']}", media_type="text/markdown"))
            text = services.documents.version(qa, result.version_id).text
            chosen = [s for o in rec["output"] for s in o.get("selected_sentences", [])]
            if chosen and gold is None and chosen[0] in text:
                start = text.index(chosen[0])
                gold = {"document": doc, "version_id": result.version_id,
                        "span": [start, start + len(chosen[0])]}
        answerable = bool(rec["output"][0]["answer"])
        assert answerable == (gold is not None)
        items.append({"id": rec["id"], "question": rec["input"], "answerable": answerable,
                      "gold": gold})
    services.indexer.catch_up(qa.tenant_id)
    return evaluate(services.answers, qa, items)


def _row(**kw: Any) -> ItemResult:
    base: dict[str, Any] = {
        "id": "x", "question": "q", "valid_at": "", "known_at": "", "answerable": True,
        "status": "answered", "reason": None, "delivered": True, "gold_version_id": "v",
        "cited_versions": ["v"], "citations_visible": True, "cites_gold_version": True,
        "asof_correct": True, "gold_hit": True, "wrong": False, "sentences": 2,
        "cited_sentences": 2, "citations": 2, "valid_citations": 2, "coverage": 1.0,
        "relevance": 0.9, "other_gates_passed": True, "latency_ms": 10.0}
    return ItemResult(**{**base, **kw})


def test_totals_and_sweep_on_known_rows() -> None:
    """Hand-counted: the denominators are the ones the docs name."""
    rows = [
        _row(id="ok"),
        _row(id="miss", gold_hit=False, wrong=True, sentences=3, cited_sentences=2,
             coverage=2 / 3, relevance=0.6, latency_ms=30.0),
        _row(id="leak", answerable=False, gold_version_id=None, cites_gold_version=None,
             asof_correct=None, gold_hit=None, wrong=True, relevance=0.85, latency_ms=20.0),
        _row(id="abst", status="abstained", reason="insufficient_evidence", delivered=False,
             cited_versions=[], citations_visible=None, cites_gold_version=None,
             asof_correct=None, gold_hit=None, sentences=0, cited_sentences=0, citations=0,
             valid_citations=0, coverage=None, relevance=0.1, latency_ms=40.0),
    ]
    t = totals(rows)
    assert t["delivery_rate"] == 0.75 and t["wrong_answer_rate"] == pytest.approx(2 / 3)
    assert t["wrong_per_item"] == 0.5
    assert t["abstention_rate_by_reason"] == {"insufficient_evidence": 0.25}
    assert t["asof_correctness"] == 1.0 and t["asof_items"] == 2
    assert t["gold_hit_rate"] == 0.5  # ok hits, miss does not; leak is unanswerable
    assert t["citation_rate"] == pytest.approx(6 / 7)  # per sentence, not per item
    assert t["mean_coverage"] == pytest.approx((1 + 1 + 2 / 3) / 3)
    assert (t["latency_ms_p50"], t["latency_ms_p95"]) == (20.0, 40.0)
    table = {(r["theta_rel"], r["tau"]): r for r in sweep(rows, [0.0, 0.8, 0.95], [0.0, 1.0])}
    assert table[0.0, 0.0]["delivered"] == 3 and table[0.0, 0.0]["wrong"] == 2
    assert table[0.8, 0.0]["delivered"] == 2 and table[0.8, 0.0]["wrong_answer_rate"] == 0.5
    assert table[0.0, 1.0]["delivered"] == 2  # "miss" has coverage 2/3 < 1
    assert table[0.95, 0.0]["delivered"] == 0 and table[0.95, 0.0]["wrong_answer_rate"] == 0.0
