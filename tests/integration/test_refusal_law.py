"""A fresh tenant refuses what its evidence does not carry, without any calibration.

The whole shared law corpus (DeckRV, VAG 2016, old VAG, VVG; every version and the
retraction, replayed with their historical transaction times) on a tenant that never set
a threshold — the built-in version 0 — and three question sets of eval/:
asof_de_insurance.jsonl (answerable and unanswerable as-of questions),
out_of_scope_de.jsonl (other areas of law, foreign jurisdictions, other industries) and
not_yet_in_force_de.jsonl (rules that entered the corpus only after the asked Stichtag).

Must hold: >= 95 % of unanswerable questions abstained, >= 90 % of answerable ones
delivered, every delivered answerable one cites the version in force at its as-of pair,
and an answerable question is partial only where a salient aspect really is absent from
the version in force (each gap is checked against that version's text).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.domain.aspect_support import support
from stichtag.domain.salience import Aspect, Part
from stichtag.services.access import Principal
from stichtag.services.eval_set import corpus_versions, parse_items
from stichtag.services.evaluate import EvalReport, evaluate
from stichtag.services.thresholds import DEFAULTS
from stichtag.store.embedded import APP_ROLE
from tests.conftest import REPO, TEMPLATE, Cluster, shared_path
from tests.corpus_cache import cloned_corpus, standard_inputs

SETS = ("asof_de_insurance.jsonl", "out_of_scope_de.jsonl", "not_yet_in_force_de.jsonl")


@pytest.fixture(scope="module")
def law(cluster: Cluster, models_dir: Path, embedder: Any, corpus_embedder: Any,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, Principal, Path]]:
    """One tenant with the whole law corpus, indexed and embedded: built once per machine
    and restored from the corpus cache after that (tests/corpus_cache.py)."""
    root = shared_path("corpus", "de-insurance-law")
    name = f"law_{os.getpid()}"
    url = cluster.database_url(name, role=APP_ROLE)

    def settings(data_dir: Path) -> Settings:
        return Settings(data_dir=data_dir, database_url=url, models_path=models_dir,
                        pool_min=1, pool_max=4)

    def build(data_dir: Path) -> dict[str, Any]:
        svc = bootstrap(settings(data_dir), run_migrations=False, embedder=corpus_embedder)
        try:
            svc.access.create_tenant("law")
            who = svc.access.operator("law")
            ingest_manifest(svc, who, root / "manifest.csv", use_tx_time=True)
            svc.indexer.catch_up(who.tenant_id)
        finally:
            svc.close()
        return {}

    clone = cloned_corpus(
        admin_url=cluster.admin_url, template=TEMPLATE, name="law-refusal", database=name,
        data_dir=tmp_path_factory.mktemp("law") / "data",
        inputs=standard_inputs(root, model_hash=embedder.model_hash,
                               build="manifest, tx times, caught up"),
        build=build, cacheable=not cluster.external)
    svc = bootstrap(settings(clone.data_dir), run_migrations=False, embedder=embedder)
    try:
        yield svc, svc.access.operator("law"), root
    finally:
        svc.close()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


@pytest.fixture(scope="module")
def reports(law: tuple[Services, Principal, Path]) -> dict[str, EvalReport]:
    svc, who, root = law
    assert svc.answers is not None
    assert svc.thresholds.current(who.tenant_id) == DEFAULTS  # never calibrated
    out = {}
    for name in SETS:
        rows = [json.loads(line) for line in
                (REPO / "eval" / name).read_text(encoding="utf-8").splitlines()]
        items = parse_items(rows, version_of_file=corpus_versions(root))
        out[name] = evaluate(svc.answers, who, items)
    _print_table(out)
    return out


def _print_table(reports: dict[str, EvalReport]) -> None:
    print("\nbuilt-in thresholds on the law corpus (fresh tenant)")
    print(f"{'set':<28} {'answerable delivered':>22} {'unanswerable abstained':>24}"
          "  reasons")
    for name, report in reports.items():
        pos = [r for r in report.items if r.answerable]
        neg = [r for r in report.items if not r.answerable]
        reasons = Counter(r.reason for r in report.items if r.status == "abstained")
        print(f"{name:<28} {sum(r.delivered for r in pos):>4}/{len(pos):<4} "
              f"{' ':>12} {sum(not r.delivered for r in neg):>4}/{len(neg):<4} {' ':>13}"
              f"  {dict(reasons)}")


def test_unanswerable_questions_are_abstained(reports: dict[str, EvalReport]) -> None:
    neg = [r for rep in reports.values() for r in rep.items if not r.answerable]
    assert len(neg) >= 8 + 30 + 15
    delivered = [(r.id, r.status, r.reason) for r in neg if r.delivered]
    assert len(delivered) <= 0.05 * len(neg), delivered
    # the refusals name their reason: outside the subject, or no grounds
    assert {r.reason for r in neg if not r.delivered} <= {"out_of_scope",
                                                          "insufficient_evidence"}
    oos = [r for r in reports["out_of_scope_de.jsonl"].items if not r.delivered]
    assert sum(r.reason == "out_of_scope" for r in oos) >= 0.8 * len(oos)


def test_answerable_questions_are_delivered_from_the_version_in_force(
        reports: dict[str, EvalReport]) -> None:
    pos = [r for rep in reports.values() for r in rep.items if r.answerable]
    assert len(pos) >= 29
    missed = [(r.id, r.status, r.reason) for r in pos if not r.delivered]
    assert len(missed) <= 0.10 * len(pos), missed
    wrong_version = [(r.id, r.cited_versions, r.gold_version_id) for r in pos
                     if r.delivered and not r.asof_correct]
    assert wrong_version == []


def test_partial_only_where_a_salient_aspect_is_really_absent(
        law: tuple[Services, Principal, Path], reports: dict[str, EvalReport]) -> None:
    svc, who, _ = law
    report = reports["asof_de_insurance.jsonl"]
    checked = 0
    for row in report.items:
        if not (row.answerable and row.status == "partial" and row.gold_version_id):
            continue
        assert row.gaps, row.id  # partial means named gaps, never an empty list
        recorded = svc.runs.get(who, row.run_id).record["salience"]["aspects"]
        aspects = [Aspect(surface=a["surface"], kind=a["kind"], stems=tuple(a["stems"]),
                          weight=a["weight"], start=0, parts=tuple(
                              Part(surface=p["surface"], stem=p["stem"], weight=p["weight"])
                              for p in a["parts"]))
                   for a in recorded if a["surface"] in row.gaps]
        assert [a.surface for a in aspects] == list(row.gaps)
        gold = svc.documents.version(who, row.gold_version_id).text
        assert support(aspects, [gold]).covered == (), (row.id, row.gaps)
        checked += 1
    print(f"\npartial answerable items checked against their gold version: {checked}")
