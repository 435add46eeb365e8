"""The documented error responses: every 4xx the API sends is problem+json, so say so.

Litestar documents only a 400 for handlers that validate input, and with its own
``{status_code, detail, extra}`` body, which is not what ``app/stichtag/api/errors.py`` sends.
Clients (and the schema-driven fuzzing in tests/integration/test_fuzz_api.py) check
responses against the OpenAPI document, so this module rewrites the generated document
once, in one place, after the routes are registered: each ``/v1`` operation lists the
problem+json responses it can give, and the unauthenticated operations (``ops``) carry
``security: []`` instead of inheriting the global bearer requirement they never enforce.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    RequestBody,
    Schema,
)
from litestar.openapi.spec.enums import OpenAPIType

from stichtag.api import schemas as api_schemas
from stichtag.api.errors import PROBLEM
from stichtag.api.uploads import UPLOAD_TYPES
from stichtag.domain.extraction import DOCX, HTML, PDF

_TITLES = {
    400: "The request is malformed: wrong type, unknown or missing field, bad parameter.",
    401: "No valid API key.",
    403: "The key lacks the scope this operation needs.",
    404: "No such resource (unknown, foreign and above-clearance ids look the same).",
    409: "The write conflicts with the stored state (e.g. tx_time not chronological).",
    413: "The request body exceeds STICHTAG_MAX_BODY_BYTES.",
    422: "A field has a well-formed but unacceptable value; `errors` names it.",
    429: "Back-pressure: this key's rate or this tenant's queue is exhausted (`limit` says "
         "which); retry after Retry-After seconds.",
    410: "The version's text was erased (GDPR); `erasure` carries the erasure record.",
    503: "The node is saturated or its database is unavailable; retry after Retry-After "
         "seconds, preferably on another node.",
}
# Every authenticated operation can refuse the key, the scope, the input or the id.
_COMMON = (400, 401, 403, 404, 422)
# ... and back-pressure or an unavailable database can refuse any of them
# (app/stichtag/api/limits.py).
_RETRY = (429, 503)
_WRITES = (409, 413)
# The operations that serve a version's text (or its file) answer 410 once it is erased.
_GONE = frozenset({"getVersion", "getVersionOriginal", "getVersionPage", "getDocumentAsOf",
                   "resolveCitation", "anchorQuote", "diffVersions", "getReceipt",
                   "getReceiptHtml"})


def _problem_schema() -> Schema:
    string = Schema(type=OpenAPIType.STRING)
    error = Schema(type=OpenAPIType.OBJECT, required=["field", "reason"],
                   properties={"field": string, "reason": string})
    return Schema(
        type=OpenAPIType.OBJECT, required=["type", "title", "status", "detail"],
        description="RFC 9457 problem details; `errors` names each offending field.",
        properties={"type": string, "title": string, "status": Schema(type=OpenAPIType.INTEGER),
                    "detail": string,
                    "errors": Schema(type=OpenAPIType.ARRAY, items=error),
                    "erasure": Reference(ref="#/components/schemas/ErasureRecordOut")})


def _operations(doc: OpenAPI) -> list[tuple[str, str, Operation]]:
    out: list[tuple[str, str, Operation]] = []
    for path, item in (doc.paths or {}).items():
        for method in ("get", "put", "post", "delete", "patch"):
            op = getattr(item, method, None)
            if isinstance(op, Operation):
                out.append((path, method, op))
    return out


def document_problems(doc: OpenAPI) -> OpenAPI:
    """Add the problem+json responses and the per-operation security to ``doc`` in place."""
    components = doc.components
    assert components is not None and not isinstance(components, list)
    schemas: dict[str, Any] = dict(components.schemas or {})
    schemas["Problem"] = _problem_schema()
    # The ingest handler reads its body itself (two forms): describe the JSON one.
    schemas["IngestBody"] = _struct_schema(api_schemas.IngestBody)
    components.schemas = schemas
    for name in _closed_bodies():
        body = schemas.get(name)
        if isinstance(body, Schema):
            # msgspec refuses unknown fields (400); the document must say so, or clients
            # and generators take extra properties for valid input.
            body.additional_properties = False
    ref = Reference(ref="#/components/schemas/Problem")
    retry_header: dict[str, OpenAPIHeader | Reference] = {"Retry-After": OpenAPIHeader(
        schema=Schema(type=OpenAPIType.INTEGER, minimum=1), required=True,
        description="Whole seconds to wait before retrying.")}
    for path, method, op in _operations(doc):
        if "ops" in (op.tags or []):
            op.security = []  # liveness, readiness and metrics answer without a key
            if op.operation_id == "metrics":  # 404 on this listener without the metrics key
                op.responses = {**(op.responses or {}), "404": OpenAPIResponse(
                    description="Not served on this listener: the operator's metrics "
                                "listener serves them (STICHTAG_METRICS_LISTEN), or send "
                                "STICHTAG_METRICS_KEY as the bearer.",
                    content={PROBLEM: OpenAPIMediaType(schema=ref)})}
            continue
        if not path.startswith("/v1/"):
            continue
        responses = dict(op.responses or {})
        codes = (_COMMON + _RETRY + (_WRITES if method == "post" else ())
                 + ((410,) if op.operation_id in _GONE else ()))
        for code in codes:
            responses[str(code)] = OpenAPIResponse(
                description=_TITLES[code], content={PROBLEM: OpenAPIMediaType(schema=ref)},
                headers=retry_header if code in _RETRY else None)
        op.responses = responses
    _idempotent_ingest(doc)
    _upload_forms(doc)
    return doc


def _closed_bodies() -> list[str]:
    """Names of the request Structs that forbid unknown fields."""
    return [name for name, obj in vars(api_schemas).items()
            if isinstance(obj, type) and issubclass(obj, msgspec.Struct)
            and obj.__struct_config__.forbid_unknown_fields]


def _idempotent_ingest(doc: OpenAPI) -> None:
    """Re-ingesting identical text for the same range asserts nothing new, erasing an
    erased version erases nothing: 200, same body."""
    repeats = {"ingestVersion": "Identical version already asserted for this range "
                                "(idempotent)",
               "eraseVersion": "The version was erased before: its first erasure, nothing "
                               "changed (idempotent)"}
    for _, _, op in _operations(doc):
        if op.operation_id in repeats and op.responses and "201" in op.responses:
            created = op.responses["201"]
            assert isinstance(created, OpenAPIResponse)
            op.responses["200"] = OpenAPIResponse(
                description=repeats[op.operation_id], content=created.content)


_TYPES = {str: OpenAPIType.STRING, int: OpenAPIType.INTEGER, float: OpenAPIType.NUMBER,
          bool: OpenAPIType.BOOLEAN}


def _struct_schema(struct: type[msgspec.Struct]) -> Schema:
    """The schema Litestar writes for a flat request Struct (scalar and optional scalar
    fields), for a body the handler decodes itself."""
    properties: dict[str, Schema | Reference] = {}
    required: list[str] = []
    for f in msgspec.structs.fields(struct):
        kind = _TYPES.get(f.type)
        if kind is not None:
            default = None if f.default is msgspec.NODEFAULT else f.default
            properties[f.name] = Schema(type=kind, default=default)
        else:
            inner = [t for t in getattr(f.type, "__args__", ()) if t is not type(None)]
            assert len(inner) == 1 and inner[0] in _TYPES, f"{struct.__name__}.{f.name}"
            properties[f.name] = Schema(one_of=[Schema(type=_TYPES[inner[0]]),
                                                Schema(type=OpenAPIType.NULL)])
        if f.required:
            required.append(f.name)
    return Schema(type=OpenAPIType.OBJECT, properties=properties, required=required,
                  title=struct.__name__)


def _binary() -> OpenAPIMediaType:
    # OpenAPI 3.1 describes arbitrary bytes by a media type without a schema: any byte
    # sequence is a valid body, and whether it is a readable PDF is the server's 422.
    return OpenAPIMediaType()


def _upload_forms(doc: OpenAPI) -> None:
    """Ingest takes JSON or the file itself; originals and pages are files, not JSON."""
    for _, _, op in _operations(doc):
        if op.operation_id == "ingestVersion":
            content: dict[str, OpenAPIMediaType] = {
                "application/json": OpenAPIMediaType(
                    schema=Reference(ref="#/components/schemas/IngestBody"))}
            for kind in UPLOAD_TYPES:
                content[kind] = _binary()
            op.request_body = RequestBody(content=content, required=True, description=(
                "JSON (IngestBody), or the document itself with its Content-Type (PDF, "
                "HTML, DOCX, markdown, plain text; application/octet-stream: sniffed "
                "from the bytes)."))
        elif op.operation_id in ("getVersionOriginal", "getVersionPage") and op.responses:
            ok = op.responses.get("200")
            if isinstance(ok, OpenAPIResponse):
                kinds = (PDF, HTML, DOCX) if op.operation_id == "getVersionOriginal" else (
                    "image/png",)
                ok.content = {k: _binary() for k in kinds}
