"""Bad input gets a 4xx problem+json naming the field and the reason, and nothing is written."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import LiveServer

GOOD: dict[str, Any] = {"text": "# T\n\n(1) Ein Satz.\n", "valid_from": "2022-01-01"}




CASES: list[tuple[str, dict[str, Any], int, str]] = [
    ("invalid utf-8",
     {**GOOD, "text": None, "text_base64": base64.b64encode(b"ok \xff\xfe").decode()},
     422, "text_base64"),
    ("empty text", {**GOOD, "text": "  \n"}, 422, "text"),
    ("valid_to before valid_from", {**GOOD, "valid_to": "2021-01-01"}, 422, "valid_to"),
    ("valid_to equals valid_from", {**GOOD, "valid_to": "2022-01-01"}, 422, "valid_to"),
    ("unparseable time", {**GOOD, "valid_from": "next tuesday"}, 422, "valid_from"),
    ("zone-less time", {**GOOD, "valid_from": "2022-01-01T00:00:00"}, 422, "valid_from"),
    ("unknown media type", {**GOOD, "media_type": "application/pdf"}, 422, "media_type"),
    ("unknown confidentiality", {**GOOD, "confidentiality": "top"}, 422, "confidentiality"),
    ("both text fields", {**GOOD, "text_base64": "aGk="}, 422, "text"),
    ("unknown field", {**GOOD, "colour": "red"}, 400, "colour"),
    ("wrong type", {**GOOD, "text": 42}, 400, "text"),
]


@pytest.mark.parametrize(("name", "body", "status", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_ingest_is_refused_and_writes_nothing(live: LiveServer, tenant: Any, name: str,
                                                  body: dict[str, Any], status: int,
                                                  field: str) -> None:
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.post("/v1/documents/doc/versions",
                      json={k: v for k, v in body.items() if v is not None})
        assert r.status_code == status, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        problem = r.json()
        assert problem["status"] == status
        assert any(field in e["field"] for e in problem["errors"]), problem
        assert all(e["reason"] for e in problem["errors"])
        assert http.get("/v1/documents/doc/history").status_code == 404


def test_body_over_the_limit_is_413(live: LiveServer, tenant: Any) -> None:
    key = live.key(tenant)
    limit = live.services.settings.max_body_bytes
    with live.client(key) as http:
        r = http.post("/v1/documents/big/versions",
                      json={"text": "a" * (limit + 10), "valid_from": "2022-01-01"})
        assert r.status_code == 413
        assert r.headers["content-type"].startswith("application/problem+json")
        assert http.get("/v1/documents/big/history").status_code == 404


def test_tx_time_needs_admin_and_chronological_order(live: LiveServer, tenant: Any) -> None:
    writer = live.key(tenant, scopes="read,write")
    admin = live.key(tenant)
    with live.client(writer) as http:
        r = http.post("/v1/documents/imp/versions", json={**GOOD, "tx_time": "2022-01-01"})
        assert r.status_code == 403
    with live.client(admin) as http:
        ok = http.post("/v1/documents/imp/versions", json={**GOOD, "tx_time": "2022-02-01"})
        assert ok.status_code == 201, ok.text
        assert ok.json()["assertion"]["provenance"]["kind"] == "imported"
        assert ok.json()["assertion"]["tx_from"] == "2022-02-01T00:00:00Z"
        older = http.post("/v1/documents/imp2/versions", json={**GOOD, "tx_time": "2022-01-15"})
        assert older.status_code == 409
        assert older.json()["errors"][0]["field"] == "tx_time"
        future = http.post("/v1/documents/imp3/versions", json={**GOOD, "tx_time": "2999-01-01"})
        assert future.status_code == 409
        assert http.get("/v1/documents/imp2/history").status_code == 404
        assert http.get("/v1/documents/imp3/history").status_code == 404


def test_unknown_document_and_version_are_404(live: LiveServer, tenant: Any) -> None:
    key = live.key(tenant)
    with live.client(key) as http:
        a = http.get("/v1/documents/nothing")
        b = http.get("/v1/documents/nothing/history")
        c = http.get("/v1/versions/b3:" + "0" * 64)
        assert a.status_code == b.status_code == c.status_code == 404
        assert a.content == b.content == c.content
        bad_time = http.get("/v1/documents/nothing", params={"valid_at": "yesterday"})
        assert bad_time.status_code == 422
        assert bad_time.json()["errors"][0]["field"] == "valid_at"


def test_offsets_survive_astral_combining_nfd_crlf_and_bom(live: LiveServer, tenant: Any) -> None:
    raw = ("\ufeff# Zeichen 𝔘\r\n\r\n(1) Die Rente für Mitglieder 𝔘𝔫𝔦 beträgt 1,75 %. "
           "Caf\u0065\u0301 zählt mit.\r(2) 😀 Emoji-Regel i. V. m. § 2 Abs. 1 gilt.\n")
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.post("/v1/documents/chars/versions",
                      json={"text_base64": base64.b64encode(raw.encode("utf-8")).decode()})
        assert r.status_code == 201, r.text
        version = http.get(f"/v1/versions/{r.json()['version_id']}").json()
    text = version["text"]
    assert "\r" not in text and not text.startswith("\ufeff") and "Café" in text
    u16 = text.encode("utf-16-le")
    assert version["utf16_length"] == len(u16) // 2
    quotes = []
    for s in version["sentences"]:
        quote = text[s["start"]:s["end"]]
        assert u16[2 * s["utf16_start"]:2 * s["utf16_end"]].decode("utf-16-le") == quote
        quotes.append(quote)
    assert "(2) 😀 Emoji-Regel i. V. m. § 2 Abs. 1 gilt." in quotes
    assert "(1) Die Rente für Mitglieder 𝔘𝔫𝔦 beträgt 1,75 %." in quotes
