"""The committed schemas/openapi.json is the document a running server serves."""

from __future__ import annotations

import json
from pathlib import Path

from stichtag.api.published import first_difference
from tests.conftest import LiveServer

COMMITTED = Path(__file__).resolve().parents[2] / "schemas" / "openapi.json"


def test_the_served_openapi_document_is_the_committed_one(live: LiveServer) -> None:
    with live.client() as http:
        served = http.get("/schema/openapi.json").json()
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert first_difference(committed, served) is None, first_difference(committed, served)
