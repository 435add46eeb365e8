"""Answers compared across two as-of pairs (POST /v1/answer/compare; docs/api.md,
"Compare"; docs/audit.md, "Compared answers") against real PostgreSQL, tantivy and ONNX.

On the law corpus (DeckRV: seven dated versions, replayed with their transaction times)
three writes follow, each after a mark: t0, a backdated version (the 0,9 % text asserted
for 2017 on), t1, a retraction of the whole document, t2. Pinned known_at values make
each comparison independent of the later writes:

- valid dates 2013 and 2022, known t0: another version is in force (valid time);
- valid date 2018, known t0 and t1: the backdated version (transaction time, naming the
  assertions that ended and appeared);
- valid date 2013, known t1 and t2: answered then, abstained now, because of the
  retraction, which the summary names.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli import main
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.domain.asof import AsOf
from stichtag.domain.text import normalize, version_id
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from tests.conftest import TEMPLATE, Cluster, LiveServer, make_tenant, shared_path

QUESTION = ("Welcher Höchstzinssatz gilt nach § 2 DeckRV für die Berechnung der "
            "Deckungsrückstellungen bei Verträgen in Euro?")


@dataclass
class Law:
    svc: Services
    who: Principal
    versions: dict[str, str]
    """valid_from date of a manifest row -> its version id."""
    t0: datetime
    t1: datetime
    t2: datetime


def _at(valid: str, known: datetime) -> AsOf:
    return AsOf(valid_at=parse_time(valid, field="valid_at"), known_at=known)


@pytest.fixture(scope="module")
def law(cluster: Cluster, models_dir: Path, embedder: Any,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Law]:
    """DeckRV's versions from the law corpus, then a backdated version and a retraction."""
    manifest = shared_path("corpus", "de-insurance-law", "manifest.csv")
    with manifest.open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["document"] == "deckrv"]
    tmp = tmp_path_factory.mktemp("compare")
    subset = tmp / "manifest.csv"
    with subset.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:  # absolute paths: the corpus is read in place
            writer.writerow({**r, "file": str(manifest.parent / r["file"])})
    versions = {r["valid_from"]: version_id(normalize((manifest.parent / r["file"]).read_bytes()))
                for r in rows}
    name = f"compare_{os.getpid()}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    settings = Settings(data_dir=tmp / "data",
                        database_url=cluster.database_url(name, role=APP_ROLE),
                        models_path=models_dir, pool_min=1, pool_max=4)
    svc = bootstrap(settings, run_migrations=False, embedder=embedder)
    try:
        svc.access.create_tenant("law")
        who = svc.access.operator("law")
        ingest_manifest(svc, who, subset, use_tx_time=True)
        t0 = datetime.now(UTC)
        backdated = (manifest.parent / next(r["file"] for r in rows
                                            if r["valid_from"] == "2019-06-10")).read_bytes()
        svc.documents.ingest(who, "deckrv", IngestRequest(
            text=backdated, media_type="text/plain",
            valid_from=parse_time("2017-01-01", field="v")))
        t1 = datetime.now(UTC)
        svc.documents.retract(who, "deckrv", valid_from=parse_time("2012-01-01", field="v"),
                              reason="probe: withdrawn as a whole")
        t2 = datetime.now(UTC)
        svc.indexer.catch_up(who.tenant_id)
        yield Law(svc=svc, who=who, versions=versions, t0=t0, t1=t1, t2=t2)
    finally:
        svc.close()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def test_a_change_of_the_law_between_two_valid_dates_names_the_version(law: Law) -> None:
    assert law.svc.compare is not None
    done = law.svc.compare.compare(law.who, QUESTION, first=_at("2013-01-01", law.t0),
                                   second=_at("2022-06-01", law.t0))
    assert (done.first.status, done.second.status) == ("answered", "answered")
    [change] = [c for c in done.changes if c.document == "deckrv"]
    assert (change.kind, change.cause) == ("changed", "valid_time")
    assert change.from_version == law.versions["2012-08-03"]
    assert change.to_version == law.versions["2022-01-01"]
    assert change.law is not None and change.knowledge == ()
    assert change.law["to"]["version_id"] == law.versions["2022-01-01"]
    assert change.law["to"]["valid_from"].startswith("2022-01-01")
    assert change.law["from"]["valid_to"].startswith("2019-06-10")
    assert "in force since 2022-01-01" in change.explanation
    diff = done.diffs["deckrv"]  # the sentence diff of the two cited versions
    assert diff is not None and diff.changed + diff.added + diff.removed > 0
    assert len(diff.changes) <= 20 and diff.truncated == (
        diff.changed + diff.added + diff.removed > len(diff.changes))
    # and the facts themselves: 1,75 % then, 0,25 % now, each cut from its version
    quotes = [[c.quote for s in r.sentences for c in s.citations]
              for r in (done.first, done.second)]
    assert any("1,75" in q for q in quotes[0]) and any("0,25" in q for q in quotes[1])

    # The compare record references both runs; replaying it replays both.
    row = law.svc.store.runs.run(law.who.tenant_id, done.run_id)
    assert row is not None and row.kind == "compare"
    assert row.record["from"]["run_id"] == str(done.first.run_id)
    assert row.record["to"]["run_id"] == str(done.second.run_id)
    assert law.svc.replay is not None
    verdict = law.svc.replay.replay(law.who, str(done.run_id))
    assert (verdict.kind, verdict.status) == ("compare", "reproduced"), verdict.differences
    assert law.svc.replay.replay(law.who, str(done.first.run_id)).reproduced


def test_the_same_valid_date_known_on_two_dates_names_the_backdated_assertion(
        law: Law) -> None:
    assert law.svc.compare is not None
    done = law.svc.compare.compare(law.who, QUESTION, first=_at("2018-01-01", law.t0),
                                   second=_at("2018-01-01", law.t1))
    [change] = [c for c in done.changes if c.document == "deckrv"]
    assert (change.kind, change.cause) == ("changed", "transaction_time")
    assert (change.from_version, change.to_version) == (law.versions["2012-08-03"],
                                                        law.versions["2019-06-10"])
    assert change.law is None
    by_change = {k["change"]: k for k in change.knowledge}
    assert set(by_change) == {"superseded", "backdated"}
    ended, new = by_change["superseded"], by_change["backdated"]
    assert ended["version_id"] == law.versions["2012-08-03"]
    assert new["version_id"] == law.versions["2019-06-10"]
    assert new["valid_from"].startswith("2017-01-01")
    for k in (ended, new):  # the write between the two known dates
        assert law.t0 < parse_time(k["at"], field="at") <= law.t1
    history = {a.assertion_id: a for a in law.svc.store.documents.history(
        law.who.tenant_id, key="deckrv", clearance=3)}
    assert history[new["assertion_id"]].version_id == new["version_id"]
    assert history[ended["assertion_id"]].ended == "superseded"
    assert f"assertion {new['assertion_id']}" in change.explanation


def test_answered_then_refused_now_says_why(law: Law) -> None:
    assert law.svc.compare is not None
    done = law.svc.compare.compare(law.who, QUESTION, first=_at("2013-01-01", law.t1),
                                   second=_at("2013-01-01", law.t2))
    assert done.first.status == "answered" and done.second.status == "abstained"
    [change] = done.changes
    assert (change.kind, change.cause) == ("removed", "transaction_time")
    [retracted] = change.knowledge
    assert retracted["change"] == "retracted"
    assert law.t1 < parse_time(retracted["at"], field="at") <= law.t2
    assert done.summary.startswith(f"answered then, abstained now ({done.second.reason})")
    assert f"was retracted on {retracted['at']}" in done.summary


# -- over HTTP: client, CLI, clearance, tenancy ---------------------------------------------

ZINS = "# § 2 Höchstzinssatz\n\n"
V1 = f"{ZINS}(1) Der Höchstzinssatz Kappamarke beträgt 0,9 %. Die Tafel gilt weiter.\n"
V2 = f"{ZINS}(1) Der Höchstzinssatz Kappamarke beträgt 0,25 %. Die Tafel gilt weiter.\n"
SECRET = f"{ZINS}(1) Der Höchstzinssatz Kappamarke beträgt geheim Zeta 0,1 %.\n"
ASK = "Welcher Höchstzinssatz Kappamarke gilt?"


def _ingest(svc: Services, who: Principal, text: str, valid_from: str, level: str) -> None:
    svc.documents.ingest(who, "zins", IngestRequest(
        text=text, valid_from=parse_time(valid_from, field="v"), confidentiality=level))


def test_compare_over_http_client_and_cli_with_clearance_and_tenancy(
        live: LiveServer, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = live.services
    who = make_tenant(svc, "kappa")
    _ingest(svc, who, V1, "2020-01-01", "public")
    _ingest(svc, who, V2, "2022-01-01", "public")
    _ingest(svc, who, SECRET, "2024-01-01", "secret")
    svc.indexer.catch_up(who.tenant_id)
    secret_id = version_id(normalize(SECRET))
    body = {"question": ASK, "from": {"valid_at": "2021-01-01"}, "to": {"valid_at": "2023-01-01"}}
    with live.client(live.key(who, scopes="read,audit", clearance=0)) as http:
        r = http.post("/v1/answer/compare", json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        [change] = got["changes"]
        assert (change["kind"], change["cause"]) == ("changed", "valid_time")
        assert change["law"]["to"]["valid_from"] == "2022-01-01T00:00:00Z"
        [sentence] = change["diff"]["sentences"]
        assert "0,9 %" in sentence["old"]["text"] and "0,25 %" in sentence["new"]["text"]
        assert got["from"]["as_of"]["valid_at"] == "2021-01-01T00:00:00Z"
        # Above the clearance: the secret version in force from 2024 is never a cause,
        # never named, never quoted (the public one simply ends).
        r = http.post("/v1/answer/compare", json={**body, "to": {"valid_at": "2025-01-01"}})
        assert r.status_code == 200, r.text
        assert secret_id not in r.text and "Zeta" not in r.text
        assert r.json()["to"]["status"] == "abstained"
        [hidden] = r.json()["changes"]
        assert (hidden["kind"], hidden["cause"]) == ("removed", "valid_time")
        assert hidden["law"]["to"] is None
        run = http.get(f"/v1/runs/{r.json()['run_id']}")
        assert run.status_code == 200 and run.json()["kind"] == "compare"
        assert secret_id not in run.text and "Zeta" not in run.text
        replayed = http.post(f"/v1/runs/{r.json()['run_id']}/replay")
        assert replayed.status_code == 200 and replayed.json()["status"] == "reproduced", (
            replayed.text)
        # The pairs are checked like any as-of pair.
        bad = http.post("/v1/answer/compare", json={**body, "to": {"valid_at": "gestern"}})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "valid_at"
        assert http.post("/v1/answer/compare", json={"question": ASK}).status_code == 400
    # A full-clearance key sees the secret version as the cause.
    with live.client(live.key(who, clearance=3)) as http:
        r = http.post("/v1/answer/compare", json={**body, "to": {"valid_at": "2025-01-01"}})
        assert r.status_code == 200 and secret_id in r.text
    # Another tenant asking the same gets nothing of this one.
    other = make_tenant(svc, "lambda")
    with live.client(live.key(other)) as http:
        r = http.post("/v1/answer/compare", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["changes"] == [] and "beträgt" not in r.text
        for text in (V1, V2, SECRET):  # the question's own words may be echoed, no more
            assert version_id(normalize(text)) not in r.text
        assert r.json()["from"]["status"] == r.json()["to"]["status"] == "abstained"

    # The typed client and the CLI (remote and local) give the same comparison.
    from stichtag.client import Client

    token = live.key(who, clearance=0)
    with Client(live.base_url, key=token) as api:
        typed = api.compare(ASK, from_valid_at="2021-01-01", to_valid_at="2023-01-01")
    assert [(c.document, c.kind, c.cause) for c in typed.changes] == [
        ("zins", "changed", "valid_time")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--url", live.base_url, "--key", token, "--json", "ask", ASK,
                     "--compare", "2021-01-01", "2023-01-01"]) == 0
    remote = json.loads(out.getvalue())
    assert [(c["kind"], c["cause"]) for c in remote["changes"]] == [("changed", "valid_time")]
    monkeypatch.setenv("STICHTAG_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("STICHTAG_MODELS_DIR", str(settings.models_dir))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ask", "--tenant", "kappa", ASK, "--compare",
                     f"2021-01-01/{datetime.now(UTC).isoformat()}", "2023-01-01"]) == 0
    text = out.getvalue()
    assert "zins: changed, cause valid_time" in text and "compare run" in text

    # After an erasure of a cited version the comparison cannot be recomputed: its replay
    # says so, and its record (ids and times only) still reads as it was.
    first_run = typed.run_id
    svc.erasures.erase(who, version_id(normalize(V1)), reason="GDPR request 9")
    with live.client(live.key(who, scopes="read,audit", clearance=0)) as http:
        verdict = http.post(f"/v1/runs/{first_run}/replay").json()
        assert verdict["status"] == "erased" and verdict["kind"] == "compare"
        assert http.get(f"/v1/runs/{first_run}").json()["record"]["changes"][0]["cause"] == (
            "valid_time")
