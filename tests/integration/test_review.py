"""Support review over real HTTP and real PostgreSQL: sampling is deterministic for a seed,
stays inside the tenant and the caller's clearance, verdicts are append-only (the database
refuses UPDATE and DELETE) and only superseded by logged verdicts, the log still verifies,
and the report counts match what the test recorded."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from stichtag.cli import main
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.errors import Conflict
from stichtag.services.access import Principal
from stichtag.training.data import label_pairs
from tests.conftest import Cluster, LiveServer, admin_url_for, make_tenant
from tests.integration.test_run_log import _verify

PUBLIC_QUESTIONS = [("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2022-06-01"),
                    ("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2025-05-01"),
                    ("Wie hoch ist die deklarierte Gesamtverzinsung?", "2024-03-15"),
                    # answers cite only the sentences that cover the question, so a fourth
                    # question keeps the sample above the four pairs the tests judge
                    ("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2023-06-01")]
SECRET_QUESTION = ("Wie hoch ist die Zinszusatzreserve?", "2024-06-30")
CONFIDENTIAL_DOC = "actuarial-note-confidential"


def _pairs(answer: dict[str, Any]) -> set[tuple[str, int, int]]:
    return {(answer["run_id"], s, c) for s, sent in enumerate(answer["sentences"])
            for c, _ in enumerate(sent["citations"])}


def _keys(sample: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(i["run_id"], i["sentence_index"], i["citation_index"]) for i in sample["items"]]


@pytest.fixture
def answered(live: LiveServer, tenant: Any, tmp_path: Path) -> dict[str, Any]:
    """Two demo documents, three answers by an internal-clearance key and one by a
    confidential-clearance key that cites the confidential note."""
    with (DEMO_DIR / "manifest.csv").open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle)
                if r["document"] in ("surplus-declaration", CONFIDENTIAL_DOC)]
    manifest = tmp_path / "manifest.csv"
    with manifest.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "file": str(DEMO_DIR / r["file"])} for r in rows)
    ingest_manifest(live.services, tenant, manifest, use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    low = live.key(tenant, scopes="read", clearance=1)
    high = live.key(tenant, scopes="read", clearance=2)
    answers: dict[str, list[dict[str, Any]]] = {"low": [], "high": []}
    for who, key, questions in (("low", low, PUBLIC_QUESTIONS), ("high", high, [SECRET_QUESTION])):
        with live.client(key) as http:
            for q, valid_at in questions:
                r = http.post("/v1/answer", json={"question": q, "valid_at": valid_at})
                assert r.status_code == 200, r.text
                assert r.json()["status"] in ("answered", "partial"), (q, r.json()["gates"])
                answers[who].append(r.json())
    assert any(c["document"] == CONFIDENTIAL_DOC for s in answers["high"][0]["sentences"]
               for c in s["citations"])
    return answers


def test_sampling_is_deterministic_and_bounded_by_tenant_and_clearance(
        live: LiveServer, tenant: Any, answered: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch, cluster: Cluster, database: str) -> None:
    low_pairs = set().union(*(_pairs(a) for a in answered["low"]))
    high_pairs = _pairs(answered["high"][0])
    auditor_low = live.key(tenant, scopes="audit", clearance=1)
    auditor_high = live.key(tenant, scopes="audit", clearance=2)
    body = {"seed": 7, "strata": ["document"], "n": 3}
    with live.client(auditor_low) as http:
        first = http.post("/v1/review/samples", json=body)
        assert first.status_code == 201, first.text
        again = http.post("/v1/review/samples", json=body).json()
        first = first.json()
        assert first["sample_id"] != again["sample_id"]
        assert _keys(first) == _keys(again) and _keys(first)  # same seed: same sample
        other_seed = http.post("/v1/review/samples", json={**body, "seed": 8}).json()
        assert other_seed["population"] == first["population"]
        everything = http.post("/v1/review/samples", json={"seed": 1, "n": 500}).json()
        # The population is exactly the internal key's pairs: the confidential run is out.
        assert set(_keys(everything)) == low_pairs
        assert everything["population"] == {"all": len(low_pairs)}
        assert sum(first["population"].values()) == len(low_pairs)
        assert all(i["citation"]["document"] != CONFIDENTIAL_DOC for i in everything["items"])
        shown = http.get(f"/v1/review/samples/{everything['sample_id']}").json()
        texts = {(a["run_id"], s): sent["text"] for a in answered["low"]
                 for s, sent in enumerate(a["sentences"])}
        for item in shown["items"]:
            cit = item["citation"]
            version = http.get(f"/v1/versions/{cit['version_id']}")
            assert version.status_code == 403  # an audit-only key reads no documents ...
            assert item["sentence"] == texts[(item["run_id"], item["sentence_index"])]
            assert cit["quote"] and cit["utf16_end"] > cit["utf16_start"]
            assert item["verdict"] is None and item["trace"]["evidence_id"]
    with live.client(live.key(tenant, scopes="read", clearance=1)) as reader:  # ... this one does
        for item in shown["items"]:
            cit = item["citation"]
            text = reader.get(f"/v1/versions/{cit['version_id']}").json()["text"]
            assert text[cit["start"]:cit["end"]] == cit["quote"]
        assert reader.post("/v1/review/samples", json=body).status_code == 403
    with live.client(auditor_high) as http:
        high = http.post("/v1/review/samples", json={"seed": 1, "n": 500}).json()
        assert set(_keys(high)) == low_pairs | high_pairs
        high_id = high["sample_id"]
    with live.client(auditor_low) as http:
        missing = http.get(f"/v1/review/samples/{uuid.uuid4()}")
        above = http.get(f"/v1/review/samples/{high_id}")
        assert missing.status_code == above.status_code == 404
        assert above.content == missing.content
        assert http.get(f"/v1/review/samples/{high_id}/report").content == missing.content
        assert http.get("/v1/review/samples/not-a-uuid").content == missing.content
        listed = {s["sample_id"] for s in http.get("/v1/review/samples").json()["samples"]}
        assert high_id not in listed and first["sample_id"] in listed
    # Another tenant: nothing to sample, and the sample ids of this one do not exist.
    other = make_tenant(live.services, "other")
    with live.client(live.key(other, scopes="audit", clearance=3)) as http:
        empty = http.post("/v1/review/samples", json={"seed": 1, "n": 500}).json()
        assert empty["items"] == [] and empty["population"] == {}
        assert http.get(f"/v1/review/samples/{high_id}").content == missing.content
        r = http.post("/v1/review/verdicts", json={"sample_id": high_id, "item": 1,
                                                   "verdict": "full"})
        assert r.content == missing.content
    _cli_review(live, monkeypatch)

    # Reclassify the versions the first answer cites (as a DBA would): a run made by an
    # internal key that cites them is now above an internal auditor's clearance and is
    # left out whole; a confidential auditor still samples it.
    raised = {c["version_id"] for s in answered["low"][0]["sentences"] for c in s["citations"]}
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as admin:
        admin.execute("SET session_replication_role = replica")  # past the tx-time guard
        admin.execute("UPDATE assertions SET confidentiality = 2 WHERE version_id = ANY(%s)",
                      (list(raised),))
    still = set().union(*(_pairs(a) for a in answered["low"] if not raised & {
        c["version_id"] for s in a["sentences"] for c in s["citations"]}))
    assert still < low_pairs
    with live.client(auditor_low) as http:
        after = http.post("/v1/review/samples", json={"seed": 1, "n": 500}).json()
        assert set(_keys(after)) == still
    with live.client(auditor_high) as http:
        after = http.post("/v1/review/samples", json={"seed": 1, "n": 500}).json()
        assert set(_keys(after)) == low_pairs | high_pairs


def _problem_field(r: Any) -> str:
    assert r.headers["content-type"].startswith("application/problem+json"), r.text
    return str(r.json()["errors"][0]["field"])


def test_verdicts_append_only_superseded_logged_and_reported(
        live: LiveServer, tenant: Any, answered: dict[str, Any], tmp_path: Path,
        cluster: Cluster, database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    auditor = live.key(tenant, scopes="audit", clearance=1)
    with live.client(auditor) as http:
        sample = http.post("/v1/review/samples", json={"seed": 3, "n": 500}).json()
        sid = sample["sample_id"]
        items = sample["items"]
        assert len(items) >= 3
        # Bad input names the field.
        bad = [({"seed": 1, "n": 0}, "n", 422), ({"seed": 1, "n": 501}, "n", 422),
               ({"seed": 1, "strata": ["colour"]}, "strata", 422),
               ({"seed": -1}, "seed", 422), ({"seed": 1, "run_from": "yesterday"}, "run_from", 422),
               ({"seed": 1, "reviewer": "x"}, "reviewer", 400)]
        for payload, field, status in bad:
            r = http.post("/v1/review/samples", json=payload)
            assert (r.status_code, _problem_field(r)) == (status, field), (payload, r.text)
        for payload, field, status in [
                ({"sample_id": sid, "item": 1, "verdict": "maybe"}, "verdict", 422),
                ({"sample_id": sid, "item": 999, "verdict": "full"}, "item", 422),
                ({"sample_id": sid, "item": 1, "verdict": "full", "note": "x" * 2001}, "note", 422),
                ({"sample_id": sid, "item": 1, "verdict": "full", "reviewer": "mallory"},
                 "reviewer", 400)]:
            r = http.post("/v1/review/verdicts", json=payload)
            assert (r.status_code, _problem_field(r)) == (status, field), (payload, r.text)

        def verdict(item: int, level: str, **extra: Any) -> dict[str, Any]:
            r = http.post("/v1/review/verdicts", json={"sample_id": sid, "item": item,
                                                       "verdict": level, **extra})
            assert r.status_code == 201, r.text
            return r.json()  # type: ignore[no-any-return]

        v1 = verdict(1, "none", note="Fundstelle nennt einen anderen Zeitraum")
        assert v1["reviewer"] == auditor.split("_")[1]
        # A second verdict must name the current one; then it supersedes it.
        r = http.post("/v1/review/verdicts", json={"sample_id": sid, "item": 1, "verdict": "full"})
        assert (r.status_code, _problem_field(r)) == (409, "supersedes")
        v2 = verdict(1, "full", supersedes=v1["verdict_id"])
        r = http.post("/v1/review/verdicts", json={"sample_id": sid, "item": 1,
                                                   "verdict": "partial",
                                                   "supersedes": v1["verdict_id"]})
        assert (r.status_code, _problem_field(r)) == (409, "supersedes")  # stale
        v3 = verdict(2, "contradicts", note="widerspricht")
        # The verdict's log record is readable as a run record, but it is no run to replay.
        rec = http.get(f"/v1/runs/{v1['verdict_id']}").json()["record"]
        assert (rec["kind"], rec["verdict"], rec["reviewer"]) == ("review_verdict", "none",
                                                                 v1["reviewer"])
        r = http.post(f"/v1/runs/{v1['verdict_id']}/replay")
        assert (r.status_code, _problem_field(r)) == (422, "run_id")
        verdict(3, "partial")
        shown = http.get(f"/v1/review/samples/{sid}").json()["items"]
        assert shown[0]["verdict"]["verdict_id"] == v2["verdict_id"]
        assert shown[0]["verdicts_recorded"] == 2

        report = http.get(f"/v1/review/samples/{sid}/report").json()
        overall = report["overall"]
        n = len(items)
        assert overall["verdicts"] == {"full": 1, "partial": 1, "none": 0, "contradicts": 1}
        assert overall["pairs"]["statement"] == "1 of 3 citation pairs fully supported"
        assert (overall["pairs_total"], overall["pairs_unreviewed"]) == (n, n - 3)
        assert overall["pairs"]["ci95"] == [0.0615, 0.7923]  # Wilson, 1 of 3
        # Sentences: expected from the items by the written rule.
        by_sentence: dict[tuple[str, int], list[str | None]] = {}
        levels = {1: "full", 2: "contradicts", 3: "partial"}
        for item in items:
            by_sentence.setdefault((item["run_id"], item["sentence_index"]), []).append(
                levels.get(item["item"]))
        reviewed = [v for v in by_sentence.values() if None not in v]
        supported = [v for v in reviewed if "full" in v and "contradicts" not in v]
        assert overall["sentences"]["reviewed"] == len(reviewed)
        assert overall["sentences"]["supported"] == len(supported)
        assert overall["sentences_unreviewed"] == len(by_sentence) - len(reviewed)
        [failure] = report["failures"]
        assert failure["item"] == 2 and failure["verdict"] == "contradicts"
        assert failure["run_id"] == items[1]["run_id"]
        assert failure["version_id"] == items[1]["citation"]["version_id"]
        assert failure["document"] == items[1]["citation"]["document"]
        assert failure["generator"] == "extractive" and failure["evidence_id"]
        assert failure["evidence_rank"] >= 1 and failure["passage_rank"] >= 1
        assert failure["verdict_id"] == v3["verdict_id"]

    # Two reviewers judge item 4 at once: one verdict is recorded, the other gets 409.
    assert len(items) >= 4
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def judge(level: str) -> None:
        with live.client(auditor) as http:
            barrier.wait()
            statuses.append(http.post("/v1/review/verdicts", json={
                "sample_id": sid, "item": 4, "verdict": level}).status_code)

    threads = [threading.Thread(target=judge, args=(lvl,)) for lvl in ("full", "none")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [201, 409]
    # Should a stale read slip past the check, the database's chain keys refuse the insert
    # and the log append rolls back with it.
    review = live.services.review
    real_load = review._load
    monkeypatch.setattr(review, "_load", lambda who, sample: (*real_load(who, sample)[:2], []))
    racer = Principal(tenant_id=tenant.tenant_id, key_id="racer", scopes=frozenset({"audit"}),
                      clearance=1)
    size = live.services.runlog.head(tenant.tenant_id)[0]
    with pytest.raises(Conflict) as exc:
        review.record_verdict(racer, sample_id=sid, item=1, verdict="partial")
    assert exc.value.field == "supersedes"
    assert live.services.runlog.head(tenant.tenant_id)[0] == size
    monkeypatch.undo()

    # Both verdicts on item 1 are in the run log, which still verifies.
    with live.client(live.key(tenant, scopes="audit", clearance=3)) as http:
        export = http.get("/v1/log/export").text
        key = http.get("/v1/log/checkpoint").json()["public_key"]
    records = [json.loads(line)["record"] for line in export.splitlines()[1:-1]]
    logged = [r for r in records if r["kind"] == "review_verdict" and r["item"] == 1]
    assert [(r["run_id"], r["verdict"], r["supersedes"]) for r in logged] == [
        (v1["verdict_id"], "none", None), (v2["verdict_id"], "full", v1["verdict_id"])]
    assert all("stk_" not in json.dumps(r) for r in records)
    assert sum(r["kind"] == "review_sample" for r in records) >= 1
    assert _verify(tmp_path, export, key)["ok"]

    # The database refuses edits: no privilege for the app role, a trigger for the owner.
    with psycopg.connect(database, autocommit=True) as app:
        for statement in ("UPDATE review_verdicts SET verdict = 'full'",
                          "DELETE FROM review_verdicts", "UPDATE review_items SET item = 9",
                          "DELETE FROM review_samples"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), app.transaction():
                app.execute("SELECT set_config('app.tenant_id', %s, true)",
                            (str(tenant.tenant_id),))
                app.execute(statement)
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as admin:
        for statement in ("UPDATE review_verdicts SET verdict = 'full'",
                          "DELETE FROM review_verdicts", "TRUNCATE review_verdicts CASCADE"):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
                admin.execute(statement)
        assert admin.execute("SELECT count(*) FROM review_verdicts").fetchone() == (5,)


def _cli_review(live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """stichtag review sample|show|verdict|report --json, as an operator runs them."""
    settings = live.services.settings
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("STICHTAG_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("STICHTAG_MODELS_DIR", str(settings.models_dir))

    def cli(*argv: str) -> Any:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["--json", *argv]) == 0
        return json.loads(buffer.getvalue())

    made = cli("review", "sample", "--tenant", "acme", "--seed", "5", "--strata",
               "generator,coverage,asof_year", "-n", "2")
    assert made["items"] >= 1 and all(k.startswith("generator=extractive | coverage")
                                      for k in made["population"])
    years = {k.rsplit("asof_year=", 1)[1] for k in made["population"]}
    assert years == {"2022", "2023", "2024", "2025"}  # the Stichtage the questions were asked at
    shown = cli("review", "show", "--tenant", "acme", made["sample_id"])
    first = shown["items"][0]
    assert first["citation"]["quote"] and first["sentence"]
    v = cli("review", "verdict", "--tenant", "acme", made["sample_id"], "1", "partial",
            "--note", "nur teilweise")
    assert v["reviewer"] == "cli" and v["verdict"] == "partial"
    report = cli("review", "report", "--tenant", "acme", made["sample_id"])
    assert report["overall"]["verdicts"]["partial"] == 1
    assert report["overall"]["pairs"]["statement"] == "0 of 1 citation pairs fully supported"
    # The verdicts become reranker training pairs the trainer reads (--labels).
    out = Path(live.services.settings.data_dir) / "labels.jsonl"
    exported = cli("review", "export-labels", "--tenant", "acme", made["sample_id"],
                   "--out", str(out))
    assert (exported["pairs"], exported["positives"]) == (1, 1)  # one verdict: partial
    [row] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["run_id"] == first["run_id"] and row["verdict"] == "partial"
    assert first["citation"]["quote"] in row["passage"] and row["label"] == 1
    assert row["question"] in {q for q, _ in PUBLIC_QUESTIONS}
    [pair] = label_pairs(out)
    assert (pair.question, pair.passage, pair.label) == (row["question"], row["passage"], 1)
