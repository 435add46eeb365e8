"""The response hook of the integration suite (tests/schema_responses.py) passes responses
that follow their schemas and fails loudly, naming operation and schema, on any other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.schema_responses import ResponseSchemas, SchemaMismatch

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@pytest.fixture(scope="module")
def check() -> ResponseSchemas:
    return ResponseSchemas(SCHEMAS)


def _example(name: str) -> Any:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))["examples"][0]


def _response(method: str, path: str, status: int, body: Any, *,
              media: str = "application/json") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.Response(status, content=content, headers={"content-type": media},
                          request=httpx.Request(method, f"http://test{path}"))


def test_a_response_that_follows_its_schema_passes(check: ResponseSchemas) -> None:
    check.check(_response("POST", "/v1/answer", 200, _example("answer.schema.json")))
    check.check(_response("GET", "/v1/documents/policy%2Freturns/history", 200,
                          _example("history.schema.json")))
    check.check(_response("GET", "/v1/runs/abc", 404, _example("problem.schema.json"),
                          media="application/problem+json"))
    lines = "\n".join(json.dumps(x) for x in
                      json.loads((SCHEMAS / "export-line.schema.json").read_text())["examples"])
    check.check(_response("GET", "/v1/log/export", 200, lines.encode(),
                          media="application/x-ndjson"))
    check.check(_response("GET", "/v1/console", 200, b"<html>", media="text/html"))


def test_a_missing_field_names_the_operation_and_the_schema(check: ResponseSchemas) -> None:
    body = _example("answer.schema.json")
    del body["sources"][0]["citation"]["quote"]
    with pytest.raises(SchemaMismatch, match=r"POST /v1/answer \(answer\) → 200: body does "
                                             r"not match .*sources/0/citation"):
        check.check(_response("POST", "/v1/answer", 200, body))


def test_the_object_schema_is_checked_beside_the_openapi_document(
        check: ResponseSchemas) -> None:
    run = _example("run.schema.json")  # the document says only: record is an object
    with pytest.raises(SchemaMismatch, match=r"run.schema.json at /record"):
        check.check(_response("GET", "/v1/runs/x", 200, {**run, "record": {"kind": "search"}}))


def test_undocumented_status_media_type_and_bad_lines_fail(check: ResponseSchemas) -> None:
    with pytest.raises(SchemaMismatch, match="status not documented"):
        check.check(_response("GET", "/v1/keys", 418, {}))
    with pytest.raises(SchemaMismatch, match="media type 'text/plain' not documented"):
        check.check(_response("GET", "/v1/keys", 200, b"keys", media="text/plain"))
    with pytest.raises(SchemaMismatch, match="line 2: body does not match export-line"):
        check.check(_response("GET", "/v1/log/export", 200,
                              b'{"checkpoint": "x"}\n{"seq": "0"}\n',
                              media="application/x-ndjson"))
    with pytest.raises(SchemaMismatch, match=r"401: body does not match schemas/openapi\.json"):
        check.check(_response("GET", "/v1/keys", 401, {"title": "Unauthorized"},
                              media="application/problem+json"))
    # the document does not describe ``limit``; the published problem schema does
    problem = {**_example("problem.schema.json"), "limit": 5}
    with pytest.raises(SchemaMismatch, match=r"problem\.schema\.json at /limit"):
        check.check(_response("GET", "/v1/keys", 429, problem, media="application/problem+json"))
