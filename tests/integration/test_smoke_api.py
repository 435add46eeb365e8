"""End-to-end smoke over real HTTP: ingest, read as of, history, version."""

from __future__ import annotations

from tests.conftest import LiveServer


def test_ingest_and_read_as_of(live: LiveServer, tenant) -> None:  # type: ignore[no-untyped-def]
    key = live.key(tenant)
    with live.client(key) as http:
        r1 = http.post("/v1/documents/deckrv/versions", json={
            "text": "# § 2 – Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt 0,9 %.\n",
            "valid_from": "2017-01-01"})
        assert r1.status_code == 201, r1.text
        r2 = http.post("/v1/documents/deckrv/versions", json={
            "text": "# § 2 – Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt 0,25 %.\n",
            "valid_from": "2022-01-01"})
        assert r2.status_code == 201, r2.text
        old = http.get("/v1/documents/deckrv", params={"valid_at": "2021-06-01"}).json()
        assert old["version_id"] == r1.json()["version_id"]
        assert "0,9 %" in old["text"]
        new = http.get("/v1/documents/deckrv", params={"valid_at": "2022-06-01"}).json()
        assert "0,25 %" in new["text"]
        hist = http.get("/v1/documents/deckrv/history").json()
        assert len(hist["assertions"]) == 3  # v1 open-ended closed, v1 carried, v2
        ver = http.get(f"/v1/versions/{r2.json()['version_id']}").json()
        s = ver["sentences"][-1]
        assert ver["text"][s["start"]:s["end"]] == "(1) Der Höchstzinssatz beträgt 0,25 %."
        assert s["heading_path"] == ["§ 2 – Höchstzinssatz", "(1)"]
