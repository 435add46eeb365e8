"""Schema-driven fuzzing of the whole OpenAPI surface against a real server on loopback.

schemathesis reads the served /schema/openapi.json and generates requests for every
operation, schema-valid ones (positive) and schema-breaking ones (negative). Each
response goes through four checks, one at a time so the table counts them separately:

- ``not_a_server_error``: no 5xx, ever;
- ``response_schema_conformance``: the body matches the documented schema of its status
  (the 4xx problem+json responses are documented by app/stichtag/api/openapi.py);
- ``negative_data_rejection``: schema-breaking input gets a 4xx;
- ``ignored_auth``: a 2xx with the key also happens without it / with a wrong one → fail.

The tenant holds real data first (two documents, two versions, a search, an answer), and
half of the positive cases use its real path parameters (document key, version id, run
id, a spare key id), so requests reach the service code instead of stopping at a 404.

Stateful link-following (``schema.as_state_machine()``) needs OpenAPI ``links``; Litestar
generates none and the interesting chain (ingest → version → cite) needs values from a
response body that the real-id seeding above already covers, so it is left out.

Quick in the suite (``STICHTAG_FUZZ_EXAMPLES``, default 3 per operation and mode):
every operation is still called with generated bodies and parameters in every mode, so a
new route that crashes on a malformed input is caught on every run; ``make fuzz`` (and
``make test-long``) runs 200 per operation and mode and prints the table (docs/testing.md,
"Long tests and their budgets").
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from tests.conftest import LiveServer
from tests.extract_docs import LawBlock, law_docx, law_html
from tests.originals import DOCX_TYPE, simple_pdf

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.core.failures import FailureGroup  # noqa: E402
from schemathesis.generation.modes import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    ignored_auth,
    negative_data_rejection,
    response_schema_conformance,
)
from schemathesis.transport.serialization import Binary  # noqa: E402

EXAMPLES = int(os.environ.get("STICHTAG_FUZZ_EXAMPLES", "3"))
CHECKS: list[Callable[..., Any]] = [not_a_server_error, response_schema_conformance,
                                    negative_data_rejection, ignored_auth]
# No operation is excluded: the ops routes (healthz, readyz, metrics) are fuzzed too, with
# `security: []` in the schema. The console routes are not in the OpenAPI document (they
# serve static files; see app/stichtag/api/console.py) and so are not reachable from here.
EXCLUDED: dict[str, str] = {}

LAW_V1 = ("# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt 0,9 %.\n"
          "(2) Er gilt für Verträge ab dem 1.1.2017.\n")
LAW_V2 = LAW_V1.replace("0,9 %", "0,25 %")
NOTE = "# Hinweis\n\nDie Deklaration nennt einen Höchstrechnungszins für Neugeschäft.\n"
PDF_LAW = simple_pdf(["Der Höchstzinssatz beträgt 0,9 %.", "Er gilt ab dem 1.1.2017."])
# Raw uploads: schemathesis sends PDF and DOCX bodies as bytes (the built-in binary
# serializer), and half of the realistic positive cases carry a real file of that type.
schemathesis.serializer.alias(["application/pdf", DOCX_TYPE], "application/octet-stream")
_BLOCKS = [LawBlock(heading=True, text="§ 2 Höchstzinssatz"),
           LawBlock(heading=False, text="(1) Der Höchstzinssatz beträgt 0,9 %.")]
REAL_FILE_CASES: set[int] = set()  # ids of cases whose body _realistic made a real file
REAL_FILES: dict[str, bytes] = {
    "application/pdf": PDF_LAW, "application/octet-stream": PDF_LAW,
    DOCX_TYPE: law_docx(_BLOCKS, table=False), "text/html": law_html(_BLOCKS),
}


@dataclass
class OpStats:
    """Per-operation counts: examples sent, failures by check, a few messages to show."""

    examples: int = 0
    statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[str] = field(default_factory=list)


def _seed(live: LiveServer, tenant: Any) -> tuple[str, dict[str, str]]:
    """Real data for the tenant; returns the fuzzing key and real path parameters."""
    token = live.key(tenant)
    spare = live.services.access.create_key(tenant.tenant_id, scopes=["read"], clearance=1)[0]
    with live.client(token) as http:
        first = http.post("/v1/documents/deckrv/versions",
                          json={"text": LAW_V1, "valid_from": "2017-01-01"})
        assert first.status_code == 201, first.text
        second = http.post("/v1/documents/deckrv/versions",
                           json={"text": LAW_V2, "valid_from": "2022-01-01"})
        assert second.status_code == 201, second.text
        assert http.post("/v1/documents/hinweis/versions", json={"text": NOTE}).status_code == 201
        # A PDF version (raw upload): the version-id routes (original, pages) reach a file.
        pdf = http.post("/v1/documents/deckrv-pdf/versions", content=PDF_LAW,
                        headers={"Content-Type": "application/pdf"})
        assert pdf.status_code == 201, pdf.text
        run = http.post("/v1/search", json={"query": "Höchstzinssatz", "k": 3})
        assert run.status_code == 200, run.text
        answer = http.post("/v1/answer", json={"question": "Wie hoch ist der Höchstzinssatz?"})
        assert answer.status_code == 200, answer.text
        sample = http.post("/v1/review/samples", json={"seed": 1, "n": 5})
        assert sample.status_code == 201, sample.text
    return token, {"key": "deckrv", "version_id": pdf.json()["version_id"], "page": "1",
                   "to_version_id": first.json()["version_id"],
                   "run_id": run.json()["run_id"], "key_id": spare.key_id,
                   "sample_id": sample.json()["sample_id"]}


# Schema-valid is not yet meaningful: free-form time strings and enum-like strings are
# almost never acceptable, so half of the positive cases get realistic values for the
# fields (body or query) that have them, and reach the bitemporal write paths.
_DATES = st.sampled_from(["2016-01-01", "2017-01-01", "2022-01-01", "2022-06-01T00:00:00+02:00",
                          "2030-01-01"])
_LEVELS = st.sampled_from(["public", "internal", "confidential", "secret"])
REALISTIC: dict[str, Any] = {
    "text": st.sampled_from([LAW_V1, LAW_V2, NOTE, "Nur ein Satz."]),
    "text_base64": st.none(), "tx_time": st.none(),
    "media_type": st.sampled_from(["text/markdown", "text/plain", "application/pdf",
                                   "text/html"]),
    "pixels": st.sampled_from([200, 640, 2400]),
    "confidentiality": _LEVELS, "clearance": _LEVELS,
    "doc_class": st.sampled_from(["document", "law", "note"]),
    "valid_from": _DATES, "valid_to": st.one_of(st.none(), _DATES), "valid_at": _DATES,
    "known_at": st.one_of(st.none(), _DATES), "since": _DATES,
    "expires_at": st.sampled_from([None, "2030-01-01"]),
    "scopes": st.lists(st.sampled_from(["read", "write", "audit", "admin"]), min_size=1,
                       unique=True),
    "query": st.sampled_from(["Höchstzinssatz", "Verträge 2017", "Deklaration"]),
    "question": st.sampled_from(["Wie hoch ist der Höchstzinssatz?", "Was gilt ab 2017?"]),
    "reason": st.sampled_from(["Falsch erfasst.", "Aufgehoben."]),
    "key": st.sampled_from(["deckrv", "hinweis", "neu-1", "neu.2"]),
    "known_from": _DATES, "known_to": st.one_of(st.none(), _DATES),
    "strata": st.lists(st.sampled_from(["document", "generator", "coverage", "run_month",
                                        "asof_year"]), unique=True, max_size=2),
    "n": st.integers(1, 50), "seed": st.integers(0, 2**31),
    "verdict": st.sampled_from(["full", "partial", "none", "contradicts"]),
    "item": st.integers(0, 3),
}
# Real ids of the seeded tenant that appear as body or query fields, not only in paths.
REAL_FIELDS = ("to_version_id", "sample_id")


def _realistic(case: Any, values: dict[str, Any]) -> Any:
    ingest = case.operation.label.endswith("/versions")
    for part in (case.body, case.query, case.path_parameters):
        if isinstance(part, dict):
            for name, value in values.items():
                if name in part or (name == "text" and ingest and part is case.body):
                    part[name] = value
    if ingest and case.media_type in REAL_FILES:
        # Schemathesis re-checks a replaced body against the schema and labels any binary
        # body it did not generate itself negative; these are real files, so the
        # negative-data check is skipped for them (REAL_FILE_CASES), the others still run.
        data = REAL_FILES[case.media_type]
        case.body = data.decode() if case.media_type == "text/html" else Binary(data)
        REAL_FILE_CASES.add(id(case))
    return case


def _strategy(op: Any, mode: GenerationMode, real: dict[str, str]) -> Any:
    base = op.as_strategy(generation_mode=mode)
    if mode is GenerationMode.NEGATIVE:
        return base
    names = [p.name for p in op.path_parameters]
    if names and all(n in real for n in names):
        base = st.one_of(base, op.as_strategy(generation_mode=mode,
                                              path_parameters={n: real[n] for n in names}))
    values = {**REALISTIC, **{name: st.just(real[name]) for name in REAL_FIELDS}}
    return st.one_of(base, st.builds(_realistic, base, st.fixed_dictionaries(values)))


def _fuzz(op: Any, mode: GenerationMode, real: dict[str, str], auth: dict[str, str],
          stats: OpStats) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=_strategy(op, mode, real))
    def run(case: Any) -> None:
        response = case.call(headers=auth, timeout=60)
        stats.examples += 1
        stats.statuses[response.status_code] += 1
        real_file = id(case) in REAL_FILE_CASES
        REAL_FILE_CASES.discard(id(case))
        for check in CHECKS:
            if real_file and check is negative_data_rejection:
                continue
            try:
                case.validate_response(response, checks=[check], headers=auth)
            except FailureGroup as group:
                stats.failures[check.__name__] += 1
                if len(stats.samples) < 3:
                    stats.samples.append(f"[{mode.value}] {check.__name__}: "
                                         f"{str(group)[:1500]}")

    with contextlib.suppress(Unsatisfiable):  # e.g. no negative data without parameters
        run()


def _table(rows: dict[str, OpStats], seconds: float) -> str:
    names = [c.__name__ for c in CHECKS]
    head = ["operation", "examples", *names, "statuses"]
    lines = [head]
    for label, s in sorted(rows.items()):
        statuses = " ".join(f"{k}:{v}" for k, v in sorted(s.statuses.items()))
        lines.append([label, str(s.examples), *(str(s.failures.get(n, 0)) for n in names),
                      statuses])
    total = sum(s.examples for s in rows.values())
    fails = [str(sum(s.failures.get(n, 0) for s in rows.values())) for n in names]
    lines.append(["TOTAL", str(total), *fails, f"{seconds:.0f} s"])
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     for row in lines)


def test_fuzz_every_operation(live: LiveServer, tenant: Any) -> None:
    token, real = _seed(live, tenant)
    auth = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_url(f"{live.base_url}/schema/openapi.json")
    # Negative mode would otherwise spend examples dropping the Authorization header; the
    # ignored_auth check probes missing and wrong keys on every 2xx instead.
    schema.config.generation.update(with_security_parameters=False)
    rows: dict[str, OpStats] = {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        op = result.ok()
        if op.label in EXCLUDED:
            continue
        stats = rows.setdefault(op.label, OpStats())
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(op, mode, real, auth, stats)
    seconds = time.monotonic() - started
    print(f"\nschema-driven fuzzing, {EXAMPLES} examples per operation and mode\n"
          + _table(rows, seconds))
    assert len(rows) >= 20, sorted(rows)
    with live.client() as http:
        assert http.get("/healthz").status_code == 200
    broken = {label: s.samples for label, s in rows.items() if s.failures}
    assert not broken, "\n\n".join(f"{k}:\n" + "\n".join(v) for k, v in broken.items())


# Regression tests for what the fuzzing found (each failed with a 500 before its fix).

NUL_CASES: list[tuple[str, str, str, dict[str, Any] | None, dict[str, str] | None, str]] = [
    ("version id in the path", "GET", "/v1/versions/b3%3A%00x", None, None, "version_id"),
    ("key id in the path", "POST", "/v1/keys/k%00/revoke", None, None, "key_id"),
    ("query parameter", "GET", "/v1/citations/resolve", None,
     {"version_id": "b3:\x00", "start": "0", "end": "1"}, "version_id"),
    ("ingest title", "POST", "/v1/documents/nul/versions",
     {"text": "# T\n\nEin Satz.\n", "title": "a\x00b"}, None, "title"),
    ("search query (recorded in jsonb)", "POST", "/v1/search", {"query": "Zins\x00"}, None,
     "query"),
    ("answer question", "POST", "/v1/answer", {"question": "Zins\x00?"}, None, "question"),
    ("key scopes list", "POST", "/v1/keys", {"scopes": ["read\x00"]}, None, "scopes[0]"),
    ("unknown field name", "POST", "/v1/search", {"query": "Zins", "a\x00": 1}, None, "a\x00"),
]


@pytest.mark.parametrize("case", NUL_CASES, ids=[c[0] for c in NUL_CASES])
def test_nul_in_any_field_is_422_naming_it(live: LiveServer, tenant: Any,
                                           case: tuple[Any, ...]) -> None:
    _, method, path, body, params, field = case
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.request(method, path, json=body, params=params)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["errors"] == [{"field": field, "reason": "NUL character is not allowed"}]
        assert http.get("/v1/documents/nul/history").status_code == 404
        assert http.get("/v1/log/checkpoint").json()["size"] == 0  # no run was recorded


def test_escaped_backslash_u0000_is_not_a_nul(live: LiveServer, tenant: Any) -> None:
    """The text ``\\u0000`` (backslash, u, zeros) is ordinary text, not a NUL."""
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.post("/v1/documents/esc/versions",
                      json={"text": "# T\n\nDer Code \\u0000 steht hier.\n"})
        assert r.status_code == 201, r.text


def test_schema_documents_problems_closed_bodies_and_open_ops(live: LiveServer) -> None:
    with live.client() as http:
        doc = http.get("/schema/openapi.json").json()
    ingest = doc["paths"]["/v1/documents/{key}/versions"]["post"]
    assert set(ingest["responses"]) >= {"200", "201", "400", "401", "403", "404", "409",
                                        "413", "422"}
    assert "application/problem+json" in ingest["responses"]["422"]["content"]
    assert doc["components"]["schemas"]["IngestBody"]["additionalProperties"] is False
    assert doc["paths"]["/healthz"]["get"]["security"] == []
    # Back-pressure (429) and an unavailable node (503) are documented with Retry-After.
    answer = doc["paths"]["/v1/answer"]["post"]["responses"]
    for code in ("429", "503"):
        assert "application/problem+json" in answer[code]["content"]
        assert answer[code]["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_the_checks_are_not_no_ops(live: LiveServer, tenant: Any) -> None:
    """Controls: with a schema that lies, ignored_auth and response_schema_conformance fail.

    ``/healthz`` really answers without a key; a schema that demands one must make
    ignored_auth fail. A Problem schema that requires a field nobody sends must make
    response_schema_conformance fail on a 404. Both pass against the served schema.
    """
    token = live.key(tenant)
    auth = {"Authorization": f"Bearer {token}"}
    with live.client() as http:
        raw = http.get("/schema/openapi.json").json()
    raw["paths"]["/healthz"]["get"]["security"] = [{"bearer": []}]
    raw["components"]["schemas"]["Problem"]["required"].append("never_sent")
    lying = schemathesis.openapi.from_dict(raw)
    served = schemathesis.openapi.from_url(f"{live.base_url}/schema/openapi.json")
    for schema, should_fail in ((served, False), (lying, True)):
        health = schema.find_operation_by_label("GET /healthz")
        version = schema.find_operation_by_label("GET /v1/versions/{version_id}")
        for op, check, params in ((health, ignored_auth, {}),
                                  (version, response_schema_conformance,
                                   {"version_id": "b3:" + "0" * 64})):
            case = op.Case(path_parameters=params)
            response = case.call(base_url=live.base_url, headers=auth)
            failed = False
            try:
                case.validate_response(response, checks=[check], headers=auth)
            except FailureGroup:
                failed = True
            assert failed is should_fail, (op.label, check.__name__, should_fail)
