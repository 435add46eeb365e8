"""Cross-tenant probe over every operation of the published OpenAPI document.

Tenant A ingests documents over HTTP (several versions, a retraction, a secret one).
For every operation in ``/schema/openapi.json`` the probe fills path, query and body
parameters with A's real ids and calls it with a key of tenant B (every scope, secret
clearance); a twin tenant C in the same state makes the same call with ids that never
existed. Nothing of A may appear in B's answers, and B's answer must be the same as C's:
byte for byte for refusals, and equal up to B's own fresh ids and times for successes.

Routes are discovered, not listed: an operation the probe cannot exercise fails the test,
so a later route is covered (or noticed) automatically. The only table here says how to
build request bodies.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer, make_tenant
from tests.extract_docs import LawBlock, law_docx
from tests.originals import DOCX_TYPE, simple_pdf

# -- how to build bodies (the one explicit table) ----------------------------------------

PROBE_TEXT = "# Prüfung\n\n(1) Ein neutraler Satz für die Sonde.\n"
# Fields a body needs to be plausible beyond what the schema marks required, per schema.
BODY_FIELDS: dict[str, dict[str, Any]] = {
    "IngestBody": {"text": PROBE_TEXT, "valid_from": "2023-01-01", "confidentiality": "internal"},
    "RetractBody": {"valid_from": "2023-06-01", "reason": "probe"},
    "CorrectBody": {"reason": "probe"},
    "KeyBody": {"scopes": ["read"], "clearance": "internal", "label": "probe"},
    "ThresholdBody": {"theta_rel": 0.5, "tau": 1.0, "rationale": "probe threshold change"},
    "SampleBody": {"seed": 7, "strata": ["document"], "n": 5},
    "VerdictBody": {"verdict": "full", "note": "probe"},
    "AnchorBody": {"selector": [{"type": "TextQuoteSelector", "exact": "neutraler Satz"}]},
    # markers of A's evidence run (BODY_IDS); a quote check is probed in
    # tests/integration/test_grounding_api.py
    "CheckBody": {"answer": "Die Sonde stützt diesen Satz [1]."},
    # two Stichtage around A's version change of 2022 (and its retraction of 2023)
    "CompareBody": {"from": {"valid_at": "2021-06-01"}, "to": {"valid_at": "2023-06-01"}},
}
# Optional body fields that take one of A's ids (schema -> field -> kind of id in Ids).
BODY_IDS: dict[str, dict[str, str]] = {
    "AnchorBody": {"source": "version_id"},  # the selector alone, in A's version
    "CheckBody": {"run_id": "uuid"},  # A's evidence run among A's ids
}
DATE = "2023-06-01"
# Query parameters whose value is not an id of A (name -> value).
QUERY_VALUES: dict[str, Any] = {
    "known_from": "2000-01-01", "known_to": "2100-01-01",  # GET /v1/changes: every change
    "limit": 50, "max_sentences": 5,
    "page": 1, "pixels": 600,  # GET /v1/versions/{id}/pages/{page}
    # the fields of a raw upload (POST /v1/documents/{key}/versions with the file as body)
    "title": "Probe", "doc_class": "document", "confidentiality": "internal",
    "source": "probe", "valid_to": None, "tx_time": None,  # None: not sent
}
# Raw request bodies by content type, for operations that take a file as their body
# (probe material, never A's: a content address computed from them is nobody's secret).
RAW_BODIES: dict[str, bytes] = {
    "application/pdf": simple_pdf(["Ein neutraler Satz im PDF der Sonde."]),
    "application/octet-stream": simple_pdf(["Ein neutraler Satz, am Inhalt erkannt."]),
    "text/html": b"<!doctype html><html><body><main><h1>Sonde</h1>"
                 b"<p>Ein neutraler Satz einer Seite.</p></main></body></html>",
    DOCX_TYPE: law_docx([LawBlock(heading=True, text="Sonde"),
                         LawBlock(heading=False, text="Ein neutraler Satz im DOCX.")],
                        table=False),
    "text/markdown": PROBE_TEXT.encode(),
    "text/plain": b"Ein neutraler Satz als Text.",
}
MAX_VARIANTS = 6  # A's values tried per operation (cycling through each kind of id)

# -- tenant A's material -----------------------------------------------------------------

ZINS = "# § 2 Höchstzinssatz\n\n"
A_DOCS: dict[str, list[tuple[str, str, str]]] = {
    # key: [(valid_from, confidentiality, text)]
    "a-zinsverordnung": [
        ("2020-01-01", "public", f"{ZINS}(1) Alphamarke Zins eins beträgt 0,9 %.\n"),
        ("2022-01-01", "public", f"{ZINS}(1) Alphamarke Zins zwei beträgt 0,25 %.\n"),
        ("2024-01-01", "internal", f"{ZINS}(1) Alphamarke Zins drei beträgt 1 %.\n"),
    ],
    "a-vermerk": [
        ("2021-03-01", "confidential", "Alphamarke Vermerk Quorum. Bitte vertraulich behandeln."),
        ("2022-03-01", "confidential", "Alphamarke Vermerk Quintett. Neue Fassung."),
    ],
    "a-geheim": [
        ("2019-05-01", "secret", "Alphamarke Geheimsache Xylophon. Nur für den Vorstand."),
    ],
}
A_RETRACT = ("a-vermerk", "2023-01-01")
# A's PDF (raw upload): its original, layout and page images are A's too.
A_PDF = ("a-original", simple_pdf(["Alphamarke Originalseite Ypsilon.", "Zweite Seite."]))
SNIPPETS = ["Alphamarke", "Quorum", "Quintett", "Xylophon", "Zins zwei", "Vorstand", "Ypsilon"]
# Questions about A's collection (list answers from the catalogue and the history, #21):
# tried first wherever a question goes, so B's list of A's versions or topic is probed.
# The last two are recognised by meaning (docs/semantics.md, "List questions by meaning"):
# a version history without a pattern, and the whole collection.
LIST_QUESTIONS = ["Welche Fassungen der a-zinsverordnung gibt es?",
                  "Welche Dokumente gibt es zum Thema Alphamarke?",
                  "Show me the revision history of the a-zinsverordnung.",
                  "What documents do you have?"]


@dataclass
class Ids:
    """Values to substitute, per parameter kind; A's real ones or never-existing ones."""

    key: list[str]
    version_id: list[str]
    key_id: list[str]
    assertion_id: list[int]
    text: list[str]
    uuid: list[str]
    original_id: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    """For parameters of unknown meaning: every string id of this flavour."""

    def __post_init__(self) -> None:
        self.strings = [*self.key, *self.version_id, *self.key_id, *self.uuid, *self.text,
                        *self.original_id]


def never_ids(a: Ids) -> Ids:
    """Ids of the same shapes as A's that exist nowhere (search texts excepted)."""
    return Ids(
        key=[f"nx-{secrets.token_hex(6)}" for _ in a.key],
        version_id=[f"b3:{secrets.token_hex(32)}" for _ in a.version_id],
        key_id=[secrets.token_hex(8) for _ in a.key_id],
        assertion_id=[9_000_000_000 + secrets.randbelow(10**9) for _ in a.assertion_id],
        # Search texts stay the same: B asking for A's words must fare exactly like C,
        # which never held them.
        text=list(a.text),
        uuid=[str(uuid.uuid4()) for _ in a.uuid],
        original_id=[f"b3:{secrets.token_hex(32)}" for _ in a.original_id])


# -- building a call from the OpenAPI document ---------------------------------------------


class Unbuildable(Exception):
    """The probe does not know how to build this part of a request."""


@dataclass
class Call:
    method: str
    url: str
    params: dict[str, Any]
    body: Any
    used_ids: bool
    content_type: str = "application/json"
    """Anything else: ``body`` is raw bytes sent with this Content-Type."""


@dataclass
class Builder:
    spec: dict[str, Any]
    ids: Ids
    variant: int
    used_ids: bool = False
    span: int = 1
    """How many variants the id lists used so far offer (the longest one)."""

    def resolve(self, schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        name = None
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.spec["components"]["schemas"][name]
        return name, schema

    def pick(self, values: list[Any]) -> Any:
        if not values:
            raise Unbuildable("no value of this kind")
        self.used_ids = True
        self.span = max(self.span, len(values))
        return values[self.variant % len(values)]

    def value(self, name: str, schema: dict[str, Any]) -> Any:
        """A value for a parameter or field called ``name``."""
        ref_name, schema = self.resolve(schema)
        types = self.types(schema)
        lname = name.lower()
        if lname in QUERY_VALUES:
            return QUERY_VALUES[lname]
        if lname == "key" or lname.endswith("document"):
            return self.pick(self.ids.key)
        if lname.endswith("version_id"):  # version_id, to_version_id
            return self.pick(self.ids.version_id)
        if lname == "key_id":
            return self.pick(self.ids.key_id)
        if lname == "assertion_id":
            return self.pick(self.ids.assertion_id)
        if lname.endswith("_at") or lname in ("valid_from", "valid_to", "since"):
            return DATE
        if "object" in types:
            return self.body(ref_name, schema)
        if "array" in types:
            item = schema.get("items", {})
            return [self.value(name, item)]
        if "boolean" in types:
            return True
        if "integer" in types or "number" in types:
            return self.pick(self.ids.assertion_id)
        if "string" in types:
            if schema.get("enum"):
                return schema["enum"][0]
            if schema.get("format") == "uuid":
                return self.pick(self.ids.uuid)
            if lname in ("query", "question", "q", "text"):
                return self.pick(self.ids.text)
            return self.pick(self.ids.strings)
        raise Unbuildable(f"parameter {name!r} of schema {schema}")

    @staticmethod
    def types(schema: dict[str, Any]) -> set[str]:
        found: set[str] = set()
        raw = schema.get("type")
        if isinstance(raw, str):
            found.add(raw)
        elif isinstance(raw, list):
            found.update(raw)
        for alt in schema.get("oneOf", []) + schema.get("anyOf", []):
            found.update(Builder.types(alt))
        if not found and "properties" in schema:
            found.add("object")
        return found - {"null"}

    def body(self, ref_name: str | None, schema: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = dict(BODY_FIELDS.get(ref_name or "", {}))
        for fname, kind in BODY_IDS.get(ref_name or "", {}).items():
            out[fname] = self.pick(getattr(self.ids, kind))
        props = schema.get("properties", {})
        for fname in schema.get("required", []):
            if fname not in out:
                out[fname] = self.value(fname, props.get(fname, {}))
        return out

    def call(self, path: str, method: str, op: dict[str, Any],
             form: str = "application/json") -> Call:
        url, params = path, {}
        content = op.get("requestBody", {}).get("content", {})
        carried: set[str] = set()  # fields the JSON body carries are not sent twice
        if form == "application/json" and "application/json" in content:
            _, body_schema = self.resolve(content["application/json"].get("schema", {}))
            carried = set(body_schema.get("properties", {}))
        for param in op.get("parameters", []):
            if param["in"] == "query" and (param["name"] in carried or (
                    param["name"] in QUERY_VALUES and QUERY_VALUES[param["name"]] is None)):
                continue
            value = self.value(param["name"], param.get("schema", {}))
            if param["in"] == "path":
                url = url.replace("{" + param["name"] + "}", str(value))
            elif param["in"] == "query":
                params[param["name"]] = json.dumps(value) if isinstance(value, bool) else value
            elif param["in"] == "header" and not param.get("required"):
                continue
            else:
                raise Unbuildable(f"parameter in {param['in']}")
        if "{" in url:
            raise Unbuildable(f"unfilled path parameter in {url}")
        body: Any = None
        if "requestBody" in op:
            if form != "application/json":
                return Call(method.upper(), url, params, RAW_BODIES[form], self.used_ids,
                            content_type=form)
            if "application/json" not in content:
                raise Unbuildable(f"request body of type {list(content)}")
            ref_name, schema = self.resolve(content["application/json"].get("schema", {}))
            body = self.body(ref_name, schema)
        return Call(method.upper(), url, params, body, self.used_ids)


def forms(op: dict[str, Any]) -> list[str]:
    """The body forms to probe: JSON, and every raw content type the operation takes."""
    content = op.get("requestBody", {}).get("content", {})
    raw = [kind for kind in content if kind != "application/json"]
    unknown = [kind for kind in raw if kind not in RAW_BODIES]
    if unknown:
        raise Unbuildable(f"no raw body for {unknown}")
    return ["application/json", *raw] if "application/json" in content or not raw else raw


# -- comparing answers ---------------------------------------------------------------------

_MASKS = [
    (re.compile(r"stk_[a-z0-9]{16}_[A-Za-z0-9_-]{43}"), "<token>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<key_id>"),
    # Checkpoint signatures cover the tenant-specific origin line.
    (re.compile(r"— (\S+) [A-Za-z0-9+/]+=*"), "— <signer> <signature>"),
    # Evidence ids carry a random per-run tag (so an id from another run is detectable).
    (re.compile(r"\bE\d+-[0-9a-f]{4}\b"), "<evidence_id>"),
]


def _mask(value: Any, parent: str = "") -> Any:
    """Blank what differs between two equal tenants by nature: fresh ids, keys, times."""
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, parent) for v in value]
    # Row ids and sequence numbers come from database-wide counters, so two tenants in the
    # same state see different numbers (an activity signal across tenants, see the report).
    if isinstance(value, int) and not isinstance(value, bool) and (
            parent.endswith(("_id", "_seq")) or parent in ("closed", "opened", "seq")):
        return "<n>"
    if isinstance(value, str):
        for pattern, mark in _MASKS:
            value = pattern.sub(mark, value)
    return value


def masked(resp: httpx.Response, substituted: list[str]) -> Any:
    text = resp.text
    # Placeholders by position, so the same parameter gets the same mark in both answers.
    for i, s in sorted(enumerate(substituted), key=lambda p: -len(p[1])):
        text = text.replace(s, f"<param{i}>")
    try:
        return _mask(json.loads(text))
    except ValueError:
        return _mask(text)


def _ints(value: Any, parent: str = "") -> Iterator[int]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _ints(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _ints(v, parent)
    elif isinstance(value, int) and not isinstance(value, bool) and (
            parent.endswith("_id") or parent in ("closed", "opened")):
        yield value


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def leaks(resp: httpx.Response, twin: httpx.Response, secrets_of_a: list[str],
          a_assertions: set[int], request_text: str) -> list[str]:
    """A's strings in the answer that the request did not itself contain; A's row ids.

    Ids are numbered per tenant (migration 0010), so B's own rows carry the same small
    numbers as A's: an id is A's only when B shows it and the twin C, which made the same
    calls without A's data, does not."""
    found = [s for s in secrets_of_a if s in resp.text and s not in request_text]
    own = set(_ints(_json(twin)))
    found += [f"assertion id {n}" for n in _ints(_json(resp)) if n in a_assertions
              and n not in own and str(n) not in request_text]
    return found


# -- fixtures ----------------------------------------------------------------------------


@dataclass
class TenantA:
    who: Principal
    token: str
    read_token: str
    ids: Ids
    secrets: list[str]
    assertions: set[int]
    histories: dict[str, Any]


def _history(http: httpx.Client) -> dict[str, Any]:
    return {key: http.get(f"/v1/documents/{key}/history").json()
            for key in [*A_DOCS, A_PDF[0]]}


@pytest.fixture
def tenant_a(live: LiveServer) -> TenantA:
    who = make_tenant(live.services, "alpha")
    token = live.key(who)
    read_token = live.key(who, scopes="read", clearance=1)
    versions: list[str] = []
    with live.client(token) as http:
        for key, rows in A_DOCS.items():
            for valid_from, level, text in rows:
                r = http.post(f"/v1/documents/{key}/versions", json={
                    "text": text, "valid_from": valid_from, "confidentiality": level,
                    "media_type": "text/markdown" if text.startswith("#") else "text/plain"})
                assert r.status_code == 201, r.text
                versions.append(r.json()["version_id"])
        doc, valid_from = A_RETRACT
        r = http.post(f"/v1/documents/{doc}/retract", json={"valid_from": valid_from,
                                                             "reason": "Alphamarke widerrufen"})
        assert r.status_code == 200, r.text
        pdf_key, pdf = A_PDF
        r = http.post(f"/v1/documents/{pdf_key}/versions", content=pdf, params={
            "valid_from": "2022-01-01"}, headers={"Content-Type": "application/pdf"})
        assert r.status_code == 201, r.text
        versions.append(r.json()["version_id"])
        original_ids = [r.json()["assertion"]["provenance"]["original_id"]]
        assert http.get(f"/v1/versions/{versions[-1]}/original").content == pdf
        assert http.get(f"/v1/versions/{versions[-1]}/pages/1").status_code == 200
        histories = _history(http)
        # The ids really exist for A: the probe below is not a probe of nothing.
        for key in A_DOCS:
            assert http.get(f"/v1/documents/{key}", params={"valid_at": "2022-06-01"}
                            ).status_code in (200, 404)
            assert histories[key]["assertions"], key
        for version_id in versions:
            assert http.get(f"/v1/versions/{version_id}").status_code == 200
        key_ids = [k["key_id"] for k in http.get("/v1/keys").json()["keys"]]
        # A review sample of A's, so review routes are probed with a real foreign id.
        r = http.post("/v1/review/samples", json={"seed": 1})
        assert r.status_code == 201, r.text
        sample_id = r.json()["sample_id"]
        assert http.get(f"/v1/review/samples/{sample_id}").status_code == 200
        # An evidence run of A's, so the check is probed with a real foreign run id.
        r = http.post("/v1/answer/evidence", json={"question": "Was gilt für Alphamarke?"})
        assert r.status_code == 200, r.text
        evidence_run = r.json()["run_id"]
    _catch_up(live, who)
    assertions = {a["assertion_id"] for h in histories.values() for a in h["assertions"]}
    ids = Ids(key=[*A_DOCS, A_PDF[0]], version_id=versions, key_id=key_ids,
              assertion_id=sorted(assertions), text=[*LIST_QUESTIONS, *SNIPPETS],
              uuid=[str(who.tenant_id), sample_id, evidence_run], original_id=original_ids)
    secret_strings = [str(who.tenant_id), sample_id, evidence_run, "alpha", token,
                      token.split("_", 2)[2],
                      read_token, read_token.split("_", 2)[2], *ids.key, *ids.version_id,
                      *(v.removeprefix("b3:") for v in ids.version_id), *ids.key_id, *SNIPPETS,
                      *original_ids, *(o.removeprefix("b3:") for o in original_ids),
                      "widerrufen"]
    return TenantA(who=who, token=token, read_token=read_token, ids=ids, secrets=secret_strings,
                   assertions=assertions, histories=histories)


def _twin(live: LiveServer, tag: str) -> str:
    """A fresh tenant with one document of its own; returns an all-powerful key."""
    who = make_tenant(live.services, f"{tag}{secrets.token_hex(5)}")
    live.services.documents.ingest(who, "own-doc", IngestRequest(
        text="# Eigen\n\n(1) Ein eigener Satz.\n", valid_from=None, confidentiality="public"))
    _catch_up(live, who)
    return live.key(who, scopes="read,write,audit,admin", clearance=3)


def _catch_up(live: LiveServer, who: Principal) -> None:
    """Bring derived indexes (if the build has them) up to date: equal twins, findable A."""
    indexer = getattr(live.services, "indexer", None)
    if indexer is not None:
        indexer.catch_up(who.tenant_id)


def _send(http: httpx.Client, call: Call) -> httpx.Response:
    if call.content_type != "application/json":
        return http.request(call.method, call.url, params=call.params, content=call.body,
                            headers={"Content-Type": call.content_type})
    return http.request(call.method, call.url, params=call.params,
                        json=call.body if call.body is not None else None)


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    methods = ("get", "put", "post", "delete", "patch", "head", "options")
    return [(path, method, op) for path, item in spec["paths"].items()
            for method, op in item.items() if method in methods]


# -- the probe -----------------------------------------------------------------------------


def test_every_operation_is_blind_to_another_tenant(live: LiveServer, tenant_a: TenantA) -> None:
    with live.client() as anon:
        r = anon.get("/schema/openapi.json")
        assert r.status_code == 200
        spec = r.json()
    operations = _operations(spec)
    assert len(operations) >= 10, "the OpenAPI document lost its operations"
    never = never_ids(tenant_a.ids)
    exercised: set[tuple[str, str]] = set()
    shared: tuple[str, str] | None = None
    problems: list[str] = []
    for path, method, op in operations:
        label = f"{method.upper()} {path}"
        try:
            op_forms = forms(op)
        except Unbuildable as exc:
            problems.append(f"{label}: cannot build a request ({exc})")
            continue
        # Variants cycle through A's ids; each raw body form is one more variant.
        variant, variants = 0, 1
        while variant < variants:
            form = op_forms[variant] if variant < len(op_forms) else op_forms[0]
            try:
                a_builder = Builder(spec, tenant_a.ids, variant)
                a_call = a_builder.call(path, method, op, form)
                n_call = Builder(spec, never, variant).call(path, method, op, form)
            except Unbuildable as exc:
                problems.append(f"{label}: cannot build a request ({exc})")
                break
            if variant == 0:
                variants = max(min(a_builder.span, MAX_VARIANTS), len(op_forms))
            # Safe methods share one pair of twins; anything else gets a fresh pair, so both
            # twins are always in the same state.
            if method not in ("get", "head") or shared is None:
                twins = (_twin(live, "bravo"), _twin(live, "charlie"))
                if method in ("get", "head"):
                    shared = twins
            b_key, c_key = shared if method in ("get", "head") and shared else twins
            with live.client(b_key) as b, live.client(c_key) as c:
                rb, rc = _send(b, a_call), _send(c, n_call)
            shown = a_call.body if a_call.content_type == "application/json" else (
                f"<{a_call.content_type}, {len(a_call.body)} bytes>")
            request_text = json.dumps([a_call.url, a_call.params, shown], ensure_ascii=False)
            where = f"{label} [{a_call.url} {a_call.params} {shown}]"
            found = leaks(rb, rc, tenant_a.secrets, tenant_a.assertions, request_text)
            if found:
                problems.append(f"{where}: leaks {found}: {rb.text[:300]}")
            if rb.status_code >= 500:
                problems.append(f"{where}: server error {rb.status_code}")
            if rb.status_code not in (400, 405, 415) and rb.status_code < 500:
                exercised.add((path, method))
            same = (rb.status_code, rb.headers.get("content-type")) == (
                rc.status_code, rc.headers.get("content-type"))
            if same and "ops" in op.get("tags", []):
                # Node-level endpoints (health, metrics) hold no tenant data: the leak check
                # above applies, but live counters make byte equality meaningless.
                pass
            elif same and 200 <= rb.status_code < 300:
                a_vals = [str(v) for v in _values(a_call)]
                n_vals = [str(v) for v in _values(n_call)]
                same = masked(rb, a_vals) == masked(rc, n_vals)
            elif same:
                same = rb.content == rc.content
            if not same:
                problems.append(f"{where}: answers differ from a never-existing id: "
                                f"{rb.status_code} {rb.text[:200]!r} vs "
                                f"{rc.status_code} {rc.text[:200]!r}")
            variant += 1
    unexercised = sorted(f"{m.upper()} {p}" for p, m, _ in operations if (p, m) not in exercised)
    assert not unexercised, f"operations the probe did not exercise: {unexercised}\n{problems}"
    assert not problems, "\n".join(problems)

    # The probe's writes did not touch A: same history, keys still valid, and every version
    # still readable (an erasure, POST /v1/versions/{id}/erase with A's ids, would leave the
    # history as it was and answer 410 here).
    with live.client(tenant_a.token) as http:
        assert _history(http) == tenant_a.histories
        for version_id in tenant_a.ids.version_id:
            assert http.get(f"/v1/versions/{version_id}").status_code == 200, version_id
    assert ("/v1/versions/{version_id}/erase", "post") in exercised
    with live.client(tenant_a.read_token) as http:
        assert http.get(f"/v1/documents/{next(iter(A_DOCS))}/history").status_code == 200


def _values(call: Call) -> list[Any]:
    """The substituted values of a call: path segments, query values, body leaves."""
    out: list[Any] = [seg for seg in call.url.split("/") if seg]
    out += list(call.params.values())

    def leaves(v: Any) -> Iterator[Any]:
        if isinstance(v, dict):
            for x in v.values():
                yield from leaves(x)
        elif isinstance(v, list):
            for x in v:
                yield from leaves(x)
        elif isinstance(v, str) and len(v) >= 6:
            yield v

    out += list(leaves(call.body if call.content_type == "application/json" else None))
    return [v for v in out if isinstance(v, str) and len(v) >= 6 and v not in ("documents",)]


def test_identical_text_in_two_tenants_is_a_first_ingest_in_each(live: LiveServer,
                                                                 tenant_a: TenantA) -> None:
    text = A_DOCS["a-zinsverordnung"][1][2]  # already stored in A, by A's version id
    version_a = tenant_a.ids.version_id[1]
    body = {"text": text, "valid_from": "2022-01-01", "confidentiality": "public"}
    b_key, c_key = _twin(live, "bravo"), _twin(live, "charlie")
    with live.client(b_key) as b, live.client(c_key) as c:
        # Before: B cannot read the version by its content address, exactly like a random one.
        assert b.get(f"/v1/versions/{version_a}").content == c.get(
            f"/v1/versions/b3:{secrets.token_hex(32)}").content
        for key in ("a-zinsverordnung", "b-other-name"):
            rb = b.post(f"/v1/documents/{key}/versions", json=body)
            rc = c.post(f"/v1/documents/{key}/versions", json=body)  # C never saw this text
            assert rb.status_code == rc.status_code == 201, (rb.text, rc.text)
            assert rb.headers["content-type"] == rc.headers["content-type"]
            assert rb.json()["version_id"] == version_a
            assert masked(rb, []) == masked(rc, [])
            if key == "a-zinsverordnung":
                assert rb.json()["created"] is True and rb.json()["asserted"] is True
        # B's copy is B's own: the text it reads back is its own, A's history is untouched.
        assert b.get(f"/v1/versions/{version_a}").json()["text"] == text
        hist = b.get("/v1/documents/a-zinsverordnung/history").json()["assertions"]
        # (Ids are per tenant, so A's rows are told apart by what they are, not by number.)
        rows_a = {(a["tx_from"], a["version_id"]) for h in tenant_a.histories.values()
                  for a in h["assertions"]}
        assert [a for a in hist if (a["tx_from"], a["version_id"]) in rows_a] == []
        assert len(hist) == 1
    with live.client(tenant_a.token) as http:
        assert _history(http) == tenant_a.histories


def test_identical_pdf_in_two_tenants_is_a_first_ingest_in_each(live: LiveServer,
                                                                tenant_a: TenantA) -> None:
    """A's very file uploaded by B: B's own original, not a link to A's (no cross-tenant
    deduplication of originals), and before that, A's original and pages are B's 404."""
    key, pdf = A_PDF
    version_a = tenant_a.ids.version_id[-1]
    random_id = f"b3:{secrets.token_hex(32)}"
    b_key, c_key = _twin(live, "bravo"), _twin(live, "charlie")
    with live.client(b_key) as b, live.client(c_key) as c:
        for route in ("original", "pages/1"):
            assert b.get(f"/v1/versions/{version_a}/{route}").content == c.get(
                f"/v1/versions/{random_id}/{route}").content
        headers = {"Content-Type": "application/pdf"}
        rb = b.post(f"/v1/documents/{key}/versions", content=pdf, headers=headers)
        rc = c.post(f"/v1/documents/{key}/versions", content=pdf, headers=headers)
        assert rb.status_code == rc.status_code == 201, (rb.text, rc.text)
        assert rb.json()["version_id"] == version_a and rb.json()["created"] is True
        assert masked(rb, []) == masked(rc, [])
        assert b.get(f"/v1/versions/{version_a}/original").content == pdf
        assert b.get(f"/v1/versions/{version_a}/pages/1").status_code == 200
    with live.client(tenant_a.token) as http:
        assert _history(http) == tenant_a.histories
