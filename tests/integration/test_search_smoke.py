"""Search over real HTTP with real tantivy, pgvector and the ONNX e5 model."""

from __future__ import annotations

from typing import Any

from tests.conftest import LiveServer

V1 = ("# § 2 – Höchstzinssatz\n\n(1) Der Höchstzinssatz für die Berechnung der "
      "Deckungsrückstellungen beträgt 0,9 Prozent.\n\n(2) Andere Regeln bleiben unberührt.\n")
V2 = V1.replace("0,9 Prozent", "0,25 Prozent")
OTHER = "# Kündigung\n\nDer Versicherungsnehmer kann den Vertrag jederzeit kündigen.\n"


def test_search_as_of_returns_the_version_in_force(live: LiveServer, tenant: Any) -> None:
    key = live.key(tenant)
    with live.client(key) as http:
        for key, text, valid_from in (("deckrv", V1, "2017-01-01"), ("deckrv", V2, "2022-01-01"),
                                      ("vvg", OTHER, "2010-01-01")):
            r = http.post(f"/v1/documents/{key}/versions",
                          json={"text": text, "valid_from": valid_from})
            assert r.status_code == 201, r.text
        live.services.indexer.catch_up(tenant.tenant_id)
        old = http.post("/v1/search", json={"query": "Höchstzinssatz Deckungsrückstellung",
                                            "valid_at": "2021-06-01"})
        assert old.status_code == 200, old.text
        top = old.json()["hits"][0]
        assert top["document"] == "deckrv" and "0,9 Prozent" in top["text"]
        assert top["scores"]["bm25"] is not None and top["scores"]["vector"] is not None
        version = http.get(f"/v1/versions/{top['version_id']}").json()
        assert version["text"][top["start"]:top["end"]] == top["text"]
        new = http.post("/v1/search", json={"query": "Höchstzinssatz Deckungsrückstellung",
                                            "valid_at": "2023-06-01"}).json()
        assert "0,25 Prozent" in new["hits"][0]["text"]
        assert all("0,9 Prozent" not in h["text"] for h in new["hits"])
        before = http.post("/v1/search",
                           json={"query": "Höchstzinssatz", "valid_at": "2016-01-01"}).json()
        assert all(h["document"] != "deckrv" for h in before["hits"])
