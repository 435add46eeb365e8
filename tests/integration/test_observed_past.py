"""No write into an observed past, and no answer about a future state of knowledge
(docs/architecture.md §3.6, §3.7; docs/semantics.md, "Transaction time"), through the HTTP API.

The auditor's case of the issue: admin-import four DeckRV versions with their historical
tx_time, answer three questions, then import the next version with its historical
tx_time. It used to be accepted and the first run's replay then said "not reproduced".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import LiveServer

RATES = ("4,0", "3,25", "2,75", "2,25", "1,75", "0,9")
IMPORTS = [  # (valid_from, tx_time): each version entered shortly before it came into force
    ("2000-07-01", "2000-06-01"), ("2004-01-01", "2003-12-01"), ("2007-01-01", "2006-12-01"),
    ("2012-01-01", "2011-12-01")]
NEXT = ("2015-01-01", "2014-12-01")  # the fifth version, historical like the others
QUESTIONS = [("Wie hoch ist der Höchstzinssatz?", "2021-05-01"),
             ("Welcher Höchstzinssatz gilt für die Deckungsrückstellung?", "2010-06-01"),
             ("Höchstzinssatz", "2016-03-01")]


def _text(rate: str) -> str:
    return (f"# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz für die Berechnung "
            f"der Deckungsrückstellungen beträgt {rate} Prozent.\n")


def _import(http: Any, version: int, valid_from: str, tx_time: str) -> Any:
    return http.post("/v1/documents/deckrv/versions", json={
        "text": _text(RATES[version]), "valid_from": valid_from, "tx_time": tx_time,
        "doc_class": "regulation", "confidentiality": "public"})


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_an_import_into_a_past_a_run_observed_is_refused_with_the_clock(
        live: LiveServer, tenant: Any) -> None:
    with live.client(live.key(tenant)) as http:
        for n, (valid_from, tx_time) in enumerate(IMPORTS):
            assert _import(http, n, valid_from, tx_time).status_code == 201
        live.services.indexer.catch_up(tenant.tenant_id)
        runs = []
        for question, valid_at in QUESTIONS:
            body = http.post("/v1/answer", json={"question": question, "valid_at": valid_at})
            assert body.status_code == 200, body.text
            runs.append(body.json())
        observed = max(_at(r["as_of"]["known_at"]) for r in runs)

        refused = _import(http, 4, *NEXT)
        assert refused.status_code == 409, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        problem = refused.json()
        assert problem["errors"] == [{"field": "tx_time", "reason": problem["errors"][0]["reason"]}]
        assert "transaction clock" in problem["detail"]
        assert _at(problem["tenant_clock"]) >= observed  # the clock a run moved forward
        assert problem["tenant_clock"] in problem["detail"]
        # A retraction with a historical tx_time is an import too.
        retract = http.post("/v1/documents/deckrv/retract", json={
            "valid_from": "2013-01-01", "reason": "test", "tx_time": "2014-06-01"})
        assert retract.status_code == 409 and "tenant_clock" in retract.json()
        # At the clock itself is "at or before": refused as well.
        assert _import(http, 4, NEXT[0], problem["tenant_clock"]).status_code == 409

        # Nothing was written: every run still replays.
        for run in runs:
            verdict = http.post(f"/v1/runs/{run['run_id']}/replay").json()
            assert verdict["reproduced"], verdict
        history = http.get("/v1/documents/deckrv/history").json()
        assert len(history["assertions"]) == len(IMPORTS) * 2 - 1

        # Strictly after the clock (and not after now) an import is accepted.
        later = (_at(problem["tenant_clock"]) + timedelta(microseconds=1)).isoformat()
        assert _import(http, 4, NEXT[0], later).status_code == 201


def test_a_known_at_after_now_is_read_as_now_and_the_as_of_says_so(
        live: LiveServer, tenant: Any) -> None:
    future = "2099-01-01"
    with live.client(live.key(tenant)) as http:
        assert _import(http, 0, *IMPORTS[0]).status_code == 201
        live.services.indexer.catch_up(tenant.tenant_id)
        before = datetime.now(UTC)
        reads = {
            "search": http.post("/v1/search", json={"query": "Höchstzinssatz",
                                                    "known_at": future}),
            "answer": http.post("/v1/answer", json={"question": "Wie hoch ist der "
                                                    "Höchstzinssatz?", "known_at": future}),
            "document": http.get("/v1/documents/deckrv", params={"known_at": future}),
        }
        after = datetime.now(UTC)
        for name, response in reads.items():
            assert response.status_code == 200, (name, response.text)
            as_of = response.json()["as_of"]
            assert as_of["known_at_requested"] == "2099-01-01T00:00:00Z", name
            assert before <= _at(as_of["known_at"]) <= after, (name, as_of)
        for name in ("search", "answer"):
            run = http.get(f"/v1/runs/{reads[name].json()['run_id']}").json()["record"]
            assert before <= _at(run["as_of"]["known_at"]) <= after  # recorded as now
        # A known_at in the past is what was asked for, and says nothing more.
        past = http.get("/v1/documents/deckrv", params={"known_at": "2001-01-01"}).json()
        assert past["as_of"]["known_at"] == "2001-01-01T00:00:00Z"
        assert past["as_of"]["known_at_requested"] is None
        # The future-dated run moved the clock to now, not to 2099: imports still work.
        now = datetime.now(UTC).isoformat()
        assert _import(http, 1, "2004-01-01", now).status_code == 201
