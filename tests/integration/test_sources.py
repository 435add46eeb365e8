"""Sources that tell the truth (docs/architecture.md §7), over real HTTP on the demo corpus: the
source
line names consulted documents only, list answers link without a source line, the
history question lists exactly the versions in force in its window (checked against the
store), replay reproduces the three sets, and clearance and tenancy hold for listings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.list_intent import asks_for_list
from stichtag.domain.listing import list_question
from tests.conftest import LiveServer, make_tenant

DEMO_QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
CONFIDENTIAL = "actuarial-note-confidential"


@pytest.fixture
def demo(live: LiveServer, tenant: Any) -> Iterator[tuple[LiveServer, str]]:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    yield live, live.key(tenant)


def _ask(http: Any, question: str, **as_of: str) -> dict[str, Any]:
    r = http.post("/v1/answer", json={"question": question, **as_of})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_the_demo_source_line_names_the_surplus_declaration_only(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        body = _ask(http, DEMO_QUESTION, valid_at="2022-06-01")
        assert body["status"] == "answered", body
        found = {s["citation"]["document"] for s in body["sources"]}
        consulted = {s["citation"]["document"] for s in body["sources"] if s["consulted"]}
        cited = {c["document"] for s in body["sentences"] for c in s["citations"]}
        assert "underwriting-guideline" in found  # retrieved, shown to the generator ...
        assert consulted == cited == {"surplus-declaration"}  # ... but never read
        assert body["source_line"] == ["surplus-declaration"]
        assert [(d["document"], d["cited"], d["consulted"]) for d in body["documents"]] == [
            ("surplus-declaration", True, True)]
        # only cited excerpts are consulted sentences
        assert all(s["consulted"] == s["cited"] for s in body["sources"])
        assert {g["gate"]: g["passed"] for g in body["gates"]}["sources"] is True
        record = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
        assert record["provenance"]["consulted"] == ["surplus-declaration"]
        assert "underwriting-guideline" in record["provenance"]["found"]
        assert "consulted" not in record["generator"]["draft"]  # nothing self-reported
        verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
        assert verdict["reproduced"], verdict


def test_a_list_question_links_documents_with_an_empty_source_line(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        body = _ask(http, "Welche Dokumente zum Thema Überschussbeteiligung gibt es?",
                    valid_at="2022-06-01")
        assert body["status"] == "answered" and body["reason"] is None
        assert body["sentences"] == [] and body["source_line"] == []
        assert body["listing"]["kind"] == "documents"
        listed = [i["document"] for i in body["listing"]["items"]]
        assert listed == ["surplus-declaration"]
        item = body["listing"]["items"][0]
        # the link is the version in force at valid_at
        doc = http.get("/v1/documents/surplus-declaration",
                       params={"valid_at": "2022-06-01"}).json()
        assert item["version_id"] == doc["version_id"]
        assert item["title"] == "Überschussdeklaration"
        assert [(d["document"], d["cited"], d["consulted"]) for d in body["documents"]] == [
            ("surplus-declaration", True, False)]
        record = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
        assert record["provenance"]["consulted"] == [] and record["result"]["gap"] is None
        verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
        assert verdict["reproduced"], verdict


def _in_window(assertions: list[dict[str, Any]], start: str, end: str) -> list[str]:
    """Written apart from the domain rule: known now (tx_to open) and valid range meeting
    [start, end) (RFC 3339 'Z' strings compare as times)."""
    return [a["version_id"] for a in sorted(assertions, key=lambda a: a["valid_from"])
            if a["tx_to"] is None and a["valid_from"] < end
            and (a["valid_to"] is None or a["valid_to"] > start)]


def test_a_history_question_lists_exactly_the_versions_in_force_in_the_window(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        for valid_from, rate in (("2015-01-01", "1,25"), ("2017-01-01", "0,90"),
                                 ("2019-07-01", "0,90"), ("2021-01-01", "0,25")):
            r = http.post("/v1/documents/deckrv/versions", json={
                "text": f"# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt "
                        f"{rate} Prozent (Fassung {valid_from}).\n",
                "valid_from": valid_from, "title": "Deckungsrückstellungsverordnung",
                "doc_class": "regulation", "confidentiality": "public"})
            assert r.status_code in (200, 201), r.text
        history = http.get("/v1/documents/deckrv/history").json()["assertions"]
        for question, start, end in (
                ("Welche Fassungen der DeckRV galten 2019?",
                 "2019-01-01T00:00:00Z", "2020-01-01T00:00:00Z"),
                ("Which versions of the DeckRV were in force in 2016 to 2017?",
                 "2016-01-01T00:00:00Z", "2018-01-01T00:00:00Z")):
            body = _ask(http, question)
            assert body["status"] == "answered" and body["source_line"] == [], body
            listed = [i["version_id"] for i in body["listing"]["items"]]
            assert listed == _in_window(history, start, end)
            assert len(listed) == 2  # not every version: exactly the window's
            assert body["listing"]["window"] == [start, end]
            assert all(not d["consulted"] for d in body["documents"])
            verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
            assert verdict["reproduced"], verdict
        # as known before the 2019 version was entered, 2019 had one version
        before = _ask(http, "Welche Fassungen der DeckRV galten 2019?",
                      known_at=history[0]["tx_from"])
        assert len(before["listing"]["items"]) == 1


def test_a_paraphrased_history_question_lists_the_versions_by_meaning(
        demo: tuple[LiveServer, str]) -> None:
    """No whole-question pattern matches these; the learned rule recognises them."""
    live, key = demo
    with live.client(key) as http:
        history = http.get("/v1/documents/underwriting-guideline/history").json()["assertions"]
        every = _in_window(history, "0001-01-01T00:00:00Z", "9999-01-01T00:00:00Z")
        assert len(every) == 4  # the demo guideline's editions
        for question in ("Welche Stände der Annahmerichtlinie sind vorhanden?",
                         "Show me the revision history of the underwriting guideline."):
            assert list_question(question) is None
            body = _ask(http, question)
            assert body["status"] == "answered" and body["sentences"] == [], body
            assert body["listing"]["kind"] == "versions" and body["source_line"] == []
            assert [i["version_id"] for i in body["listing"]["items"]] == every
            verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
            assert verdict["reproduced"], verdict
        # a content question about the same document is still answered from its text
        body = _ask(http, "Welche Fassung der Annahmerichtlinie verlangt ein ärztliches "
                          "Attest?")
        assert body["listing"] is None
        # taken by meaning but naming nothing the catalogue holds: a content question,
        # which abstains, not an empty list
        satzung = "Welche Stände der Satzung sind vorhanden?"
        assert asks_for_list(live.services.search.query_vector(satzung).tolist())
        body = _ask(http, satzung)
        assert body["listing"] is None and body["status"] == "abstained", body


def test_a_question_about_the_whole_collection_lists_the_documents_in_force(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    in_force = ["actuarial-note-confidential", "surplus-declaration",
                "underwriting-guideline"]  # the claims handbook was retracted in 2025
    with live.client(key) as http:
        for question in ("What documents do you have?", "Welche Dokumente kennst du?"):
            assert list_question(question) is None
            body = _ask(http, question, valid_at="2026-06-01")
            assert body["status"] == "answered" and body["source_line"] == [], body
            assert body["listing"]["kind"] == "documents"
            assert [i["document"] for i in body["listing"]["items"]] == in_force
        before = _ask(http, "What documents do you have?", valid_at="2022-06-01")
        assert [i["document"] for i in before["listing"]["items"]] == [
            "claims-handbook-en", "surplus-declaration", "underwriting-guideline"]
        verdict = http.post(f"/v1/runs/{before['run_id']}/replay").json()
        assert verdict["reproduced"], verdict
    public = live.key(live.services.access.operator("acme"), scopes="read", clearance=1)
    with live.client(public) as http:
        body = _ask(http, "What documents do you have?", valid_at="2026-06-01")
        assert [i["document"] for i in body["listing"]["items"]] == in_force[1:]
    with live.client(live.key(make_tenant(live.services, "other"))) as http:
        body = _ask(http, "What documents do you have?", valid_at="2026-06-01")
        assert body["listing"] is None and "surplus-declaration" not in str(body)


def test_listings_respect_clearance_and_tenancy(demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    question = "Welche Dokumente gibt es zur Zinszusatzreserve?"
    with live.client(key) as http:
        secret = _ask(http, question, valid_at="2023-06-01")
        assert CONFIDENTIAL in [i["document"] for i in secret["listing"]["items"]]
        history = _ask(http, "Welche Fassungen der Interne Aktuarsnotiz zur "
                             "Zinszusatzreserve gibt es?")
        assert [i["document"] for i in history["listing"]["items"]] == [CONFIDENTIAL] * 2
    public = live.key(live.services.access.operator("acme"), scopes="read,audit",
                      clearance=1)
    with live.client(public) as http:
        low = _ask(http, question, valid_at="2023-06-01")
        assert CONFIDENTIAL not in str(low)
        assert _ask(http, f"Welche Fassungen der {CONFIDENTIAL} gibt es?")["listing"][
            "items"] == []
    other = make_tenant(live.services, "other")
    with live.client(live.key(other)) as http:
        foreign = _ask(http, question, valid_at="2023-06-01")
        assert foreign["listing"]["items"] == [] and foreign["documents"] == []
        assert _ask(http, "Welche Fassungen der surplus-declaration gibt es?")["listing"][
            "items"] == []


def test_a_list_that_names_nothing_is_a_documentation_gap(
        demo: tuple[LiveServer, str]) -> None:
    live, key = demo
    with live.client(key) as http:
        empty = _ask(http, "Welche Dokumente zum Thema Raumfahrtversicherung gibt es?")
        assert empty["status"] == "answered" and empty["listing"]["items"] == []
        full = _ask(http, "Welche Dokumente zum Thema Überschussbeteiligung gibt es?",
                    valid_at="2022-06-01")
        assert full["listing"]["items"]
        refused = _ask(http, "Wer gewann die Fußball-WM 2014?")
        assert refused["status"] == "abstained" and refused["source_line"] == []
        groups = http.get("/v1/gaps").json()["groups"]
        runs = {run: reasons for g in groups for run in g["runs"] for reasons in [g["reasons"]]}
        assert empty["run_id"] in runs and "nothing_listed" in runs[empty["run_id"]]
        assert refused["run_id"] in runs
        assert full["run_id"] not in runs
