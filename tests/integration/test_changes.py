"""The knowledge diff (GET /v1/changes, `stichtag changes`) against real PostgreSQL.

The law-corpus check replays the first manifest rows in order (imported transaction
times) and asks for the window between two manifest dates: the assertions that appeared
must be exactly the versions the manifest ingested in that window, by blake3 id.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stichtag.bootstrap import Services
from stichtag.cli import main
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.domain.text import normalize, version_id
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer, make_tenant, shared_path

# Rows 1-13 of the law manifest: 2012-08-02 .. 2019-07-18, three documents ingested on the
# window's last day, two vag_old versions in between and the vag_old retraction.
CORPUS_ROWS = 13
KNOWN_FROM, KNOWN_TO = "2012-08-03", "2019-06-10"

V1 = "# § 1 Zweck\n\n(1) Der Zins beträgt 0,9 %. Die Tafel DAV 2004 R gilt.\n"
V2 = "# § 1 Zweck\n\n(1) Der Zins beträgt 0,25 %. Die Tafel DAV 2004 R gilt.\n"
HIDDEN_NOTE = "Geheimer Vermerk Omikron. Nur für den Vorstand."
RAISED = "Geheime Fassung Ypsilon."


def _rows(manifest: Path) -> list[dict[str, str]]:
    with manifest.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_law_corpus_window_lists_exactly_the_versions_ingested_in_it(
        services: Services, tmp_path: Path) -> None:
    manifest = shared_path("corpus", "de-insurance-law", "manifest.csv")
    rows = _rows(manifest)[:CORPUS_ROWS]
    subset = tmp_path / "manifest.csv"
    with subset.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:  # absolute file paths: the corpus is read in place
            writer.writerow({**r, "file": str(manifest.parent / r["file"]) if r["file"] else ""})
    who = make_tenant(services, "law")
    stats = ingest_manifest(services, who, subset, use_tx_time=True)
    assert stats["rows"] == CORPUS_ROWS

    k_from, k_to = parse_time(KNOWN_FROM, field="f"), parse_time(KNOWN_TO, field="t")
    inside = [r for r in rows if k_from < parse_time(r["tx_time"], field="tx") <= k_to]
    expected = {(r["document"], version_id(normalize((manifest.parent / r["file"]).read_bytes())))
                for r in inside if r["action"] == "ingest"}
    assert len(expected) == 5 and {d for d, _ in expected} == {"deckrv", "vag_old", "vvg2008",
                                                              "vag2016"}
    started = time.monotonic()
    report = services.changes.changes(who, known_from=k_from, known_to=k_to, max_sentences=5)
    elapsed = time.monotonic() - started
    docs = {d.changes.document: d for d in report.documents}
    got = {(report.rows[a.assertion_id].document, a.version_id)
           for d in report.documents for a in d.changes.appeared
           if report.rows[a.assertion_id].provenance.get("kind") == "imported"}
    assert got == expected
    # Nothing outside the window: every appeared or ended assertion has its time inside.
    for d in report.documents:
        for a in d.changes.appeared:
            assert k_from < a.tx_from <= k_to
        for a in (*d.changes.ended, *d.changes.corrected):
            assert a.tx_to is not None and k_from < a.tx_to <= k_to
    # The retraction ended vag_old's assertion from 2016 on: a pair with nothing after it.
    retract = next(r for r in inside if r["action"] == "retract")
    assert any(a.ended == "retracted" for a in docs[retract["document"]].changes.ended)
    gone = [p for p in docs["vag_old"].pairs if p.pair.to_version is None]
    assert gone and gone[0].pair.ranges[0].start == parse_time(retract["valid_from"], field="v")
    # vag2016 is new in the window; the others were known on known_from.
    assert docs["vag2016"].changes.new_document and not docs["deckrv"].changes.new_document
    new_pair = next(p for p in docs["vag2016"].pairs)
    assert new_pair.pair.from_state == "new_document" and new_pair.diff is not None
    # A whole version added is counted, not listed.
    assert new_pair.diff.added > 1000 and new_pair.diff.changes == ()
    assert not new_pair.diff.truncated
    # A successor pair carries a real sentence diff with complete counts.
    deckrv = next(p for p in docs["deckrv"].pairs if p.pair.from_version and p.pair.to_version)
    assert deckrv.diff is not None and deckrv.diff.unchanged > 0
    assert 0 < len(deckrv.diff.changes) <= 5
    listed = deckrv.diff.added + deckrv.diff.removed + deckrv.diff.changed
    assert deckrv.diff.truncated == (listed > 5) and report.truncated >= deckrv.diff.truncated
    assert elapsed < 10, f"diff took {elapsed:.1f} s"

    # An empty window and the window just after: the 2019-07-18 version alone.
    empty = services.changes.changes(who, known_from=k_to, known_to=k_to)
    assert empty.documents == () and empty.counts["appeared"] == 0
    after = services.changes.changes(who, known_from=k_to,
                                     known_to=parse_time("2019-07-18", field="t"), diff=False)
    assert [(d.changes.document, [a.version_id for a in d.changes.appeared
                                  if a.assertion_id in after.rows
                                  and after.rows[a.assertion_id].provenance["kind"] == "imported"])
            for d in after.documents] == [("vag2016", [version_id(normalize(
                (manifest.parent / rows[12]["file"]).read_bytes()))])]
    assert all(p.diff is None for d in after.documents for p in d.pairs)


def _ingest(svc: Services, who: Principal, key: str, text: str, valid_from: str, *,
            level: str = "internal") -> None:
    svc.documents.ingest(who, key, IngestRequest(
        text=text, valid_from=parse_time(valid_from, field="v"), confidentiality=level))


def _marks(svc: Services, who: Principal) -> tuple[datetime, datetime]:
    """Ingest V1, then (after t1) V2, a secret document, a retraction and a correction."""
    _ingest(svc, who, "zins", V1, "2020-01-01")
    _ingest(svc, who, "stufe", "Eine öffentliche Fassung.", "2020-01-01", level="public")
    t1 = datetime.now(UTC)
    _ingest(svc, who, "stufe", RAISED, "2023-01-01", level="secret")  # raised to secret
    _ingest(svc, who, "zins", V2, "2022-01-01")
    _ingest(svc, who, "vermerk", HIDDEN_NOTE, "2021-01-01", level="secret")
    _ingest(svc, who, "notiz", "Eine interne Notiz.", "2021-01-01")
    svc.documents.retract(who, "zins", valid_from=parse_time("2024-01-01", field="v"),
                          reason="aufgehoben")
    [note] = [a for a in svc.documents.history(who, "notiz") if a.tx_to is None]
    svc.documents.correct(who, "notiz", assertion_id=note.assertion_id, reason="nie gültig")
    return t1, datetime.now(UTC)


def test_changes_over_http_with_clearance_tenancy_and_bad_input(
        live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = live.services
    who = make_tenant(svc, "delta")
    t1, t2 = _marks(svc, who)
    other = make_tenant(svc, "echo", time_zone="Europe/Berlin")
    _ingest(svc, other, "fremd", "Ein fremder Satz.", "2020-01-01")
    params = {"known_from": t1.isoformat(), "known_to": t2.isoformat()}
    with live.client(live.key(who, scopes="read", clearance=1)) as http:
        r = http.get("/v1/changes", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        docs = {d["document"]: d for d in body["documents"]}
        # The secret document is invisible to an internal key: not listed, not counted.
        assert set(docs) == {"notiz", "stufe", "zins"} and "Omikron" not in r.text
        assert body["counts"]["documents"] == 3
        for text in (HIDDEN_NOTE, RAISED):
            assert version_id(normalize(text)) not in r.text
        # A document raised to secret: the reader sees its public part end, nothing else.
        stufe = docs["stufe"]
        assert [a["provenance"]["kind"] for a in stufe["appeared"]] == ["carried"]
        assert [a["confidentiality"] for a in stufe["ended"]] == ["public"]
        assert [(p["to_version"], p["to_state"]) for p in stufe["pairs"]] == [
            (None, "not_in_force")]
        zins = docs["zins"]
        assert [a["ended"] for a in zins["ended"]] == ["superseded", "retracted"]
        assert [a["provenance"]["kind"] for a in zins["appeared"]] == [
            "carried", "asserted", "carried"]
        pairs = {(p["from_state"], p["to_state"]): p for p in zins["pairs"]}
        change = pairs[("version", "version")]
        [sentence] = change["diff"]["sentences"]
        assert sentence["op"] == "changed" and "0,9 %" in sentence["old"]["text"]
        assert "0,25 %" in sentence["new"]["text"] and change["diff"]["unchanged"] >= 1
        assert change["ranges"] == [{"valid_from": "2022-01-01T00:00:00Z", "valid_to": None}]
        assert pairs[("version", "not_in_force")]["ranges"][0]["valid_from"] == (
            "2024-01-01T00:00:00Z")
        notiz = docs["notiz"]
        assert notiz["new_document"] and len(notiz["corrected"]) == 1
        assert notiz["corrected"][0]["ended_reason"] == "nie gültig"
        assert body["window"]["rule"] == "known_from < t <= known_to"
        # A window into the future ends at the time of the request: its report cannot
        # grow with later writes.
        before = datetime.now(UTC)
        future = http.get("/v1/changes", params={**params, "known_to": "2999-01-01T00:00:00Z"})
        assert future.status_code == 200, future.text
        capped = datetime.fromisoformat(future.json()["window"]["known_to"])
        assert before <= capped <= datetime.now(UTC)
        assert future.json()["counts"] == body["counts"]  # t2 is after every write here
        # One document, and the whole tenant without diffs.
        one = http.get("/v1/changes", params={**params, "document": "zins"}).json()
        assert [d["document"] for d in one["documents"]] == ["zins"]
        lean = http.get("/v1/changes", params={**params, "diff": "false"}).json()
        assert all(p["diff"] is None for d in lean["documents"] for p in d["pairs"])
        # The limit cuts the lists, never the counts, and says so.
        cut = http.get("/v1/changes", params={**params, "limit": 2}).json()
        assert cut["truncated"] and cut["counts"] == body["counts"]
        assert sum(len(d["appeared"]) + len(d["ended"]) + len(d["corrected"])
                   for d in cut["documents"]) == 2
        # Beyond the per-response number of diffed pairs, pairs come without a diff.
        monkeypatch.setattr("stichtag.services.changes.MAX_DIFFS", 1)
        few = http.get("/v1/changes", params=params).json()
        assert [p["diff"] is not None for d in few["documents"] for p in d["pairs"]][:2] == [
            True, False]
        assert few["truncated"] and few["limits"]["max_diffs"] == 1
        monkeypatch.undo()
        # The secret document is a 404 exactly like one that never existed.
        assert http.get("/v1/changes", params={**params, "document": "vermerk"}).content == \
            http.get("/v1/changes", params={**params, "document": "nie-da"}).content

        # The history page's compare: any two readable versions, the same sentence rule.
        v1, v2 = change["from_version"], change["to_version"]
        r = http.get(f"/v1/versions/{v1}/diff", params={"to_version_id": v2})
        assert r.status_code == 200, r.text
        assert r.json()["diff"] == change["diff"]
        secret_id = version_id(normalize(HIDDEN_NOTE))
        assert http.get(f"/v1/versions/{v1}/diff", params={"to_version_id": secret_id}
                        ).content == http.get(f"/v1/versions/{v1}/diff", params={
                            "to_version_id": "b3:" + "0" * 64}).content
        assert http.get(f"/v1/versions/{v1}/diff", params={
            "to_version_id": v2, "max_sentences": -1}).status_code == 422

        def problem(query: dict[str, Any], status: int = 422) -> str:
            r = http.get("/v1/changes", params=query)
            assert r.status_code == status, r.text
            assert r.headers["content-type"].startswith("application/problem+json")
            return str(r.json()["errors"][0]["field"])

        assert problem({"known_from": t2.isoformat(), "known_to": t1.isoformat()}) == "known_to"
        assert problem({"known_from": "2024-13-01"}) == "known_from"
        assert problem({"known_from": "2024-01-01T10:00:00"}) == "known_from"  # no offset
        assert problem({"known_from": "2024-01-01", "known_to": "gestern"}) == "known_to"
        assert problem({"known_from": "2024-01-01", "limit": 0}) == "limit"
        assert problem({"known_from": "2024-01-01", "max_sentences": 999}) == "max_sentences"
        assert problem({"known_from": "2024-01-01", "document": "../x"}) == "key"
        assert problem({}, 400) == "known_from"
    # Secret clearance sees the secret document; the other tenant sees only its own.
    with live.client(live.key(who, scopes="read", clearance=3)) as http:
        assert "vermerk" in {d["document"] for d in http.get("/v1/changes", params=params
                                                              ).json()["documents"]}
    with live.client(live.key(other)) as http:
        body = http.get("/v1/changes", params={"known_from": "2000-01-01"}).json()
        assert [d["document"] for d in body["documents"]] == ["fremd"]
        # Plain dates are midnight in the tenant's zone, like every other time parameter.
        window = http.get("/v1/changes", params={"known_from": "2024-01-01",
                                                 "known_to": "2024-07-01"}).json()["window"]
        assert window["known_from"] == "2023-12-31T23:00:00Z"
        assert window["known_to"] == "2024-06-30T22:00:00Z"
        assert http.get("/v1/changes", params={**params, "document": "zins"}).status_code == 404
        assert http.get(f"/v1/versions/{v1}/diff", params={"to_version_id": v2}
                        ).status_code == 404
    with live.client() as anon:
        assert anon.get("/v1/changes", params=params).status_code == 401


def test_changes_cli(services: Services, settings: Settings,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    who = make_tenant(services, "foxtrot", time_zone="Europe/Berlin")
    t1, t2 = _marks(services, who)
    monkeypatch.setenv("STICHTAG_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(settings.data_dir))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--json", "changes", "--tenant", "foxtrot", "--known-from", t1.isoformat(),
                     "--known-to", t2.isoformat(), "--document", "zins"]) == 0
    data = json.loads(out.getvalue())
    assert [d["document"] for d in data["documents"]] == ["zins"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # --json also after the subcommand; Berlin dates
        assert main(["changes", "--tenant", "foxtrot", "--known-from", "2024-01-01",
                     "--known-to", "2024-01-02", "--json"]) == 0
    assert json.loads(out.getvalue())["window"]["known_from"] == "2023-12-31T23:00:00Z"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["changes", "--tenant", "foxtrot", "--known-from", t1.isoformat()]) == 0
    text = out.getvalue()
    assert "zins" in text and "vermerk" in text and "~ " in text and "0,25 %" in text
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["changes", "--tenant", "foxtrot", "--known-from", "2025-01-01",
                     "--known-to", "2024-01-01"]) == 1
    assert "known_to" in err.getvalue()


def test_changes_cli_json_is_the_api_response(live: LiveServer, settings: Settings,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI builds the public shape itself (it does not import the API): same JSON."""
    who = make_tenant(live.services, "golf", time_zone="Europe/Berlin")
    t1, t2 = _marks(live.services, who)
    monkeypatch.setenv("STICHTAG_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(settings.data_dir))
    for extra in ([], ["--no-diff"], ["--document", "zins", "--max-sentences", "1"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["changes", "--tenant", "golf", "--known-from", t1.isoformat(),
                         "--known-to", t2.isoformat(), *extra, "--json"]) == 0
        params: dict[str, Any] = {"known_from": t1.isoformat(), "known_to": t2.isoformat()}
        if "--no-diff" in extra:
            params["diff"] = "false"
        if "--document" in extra:
            params |= {"document": "zins", "max_sentences": 1}
        with live.client(live.key(who)) as http:
            r = http.get("/v1/changes", params=params)
        assert r.status_code == 200, r.text
        assert json.loads(out.getvalue()) == r.json(), extra
