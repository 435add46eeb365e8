"""Confidentiality levels against key clearance, randomized over a few hundred documents.

Nothing above a key's clearance appears in any answer, count or error; above-clearance
ids answer exactly like ids that never existed (docs/architecture.md §9).
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from stichtag.bootstrap import Services
from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer

DOCS = 260
REQUESTS = 600
MARK = re.compile(r"L([0-3])marke")
# Search joins the mix where the build has it (the route is discovered, not assumed).
KINDS = ["asof", "history", "version"]
SEED = int(os.environ.get("STICHTAG_TEST_SEED", "0")) or random.SystemRandom().randrange(1, 2**31)


def _text(level: int, doc: int, n: int) -> str:
    return f"# Dokument {doc}\n\n(1) L{level}marke{doc:04d} Fassung {n}.\n"


@dataclass
class Doc:
    key: str
    level: int
    versions: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # valid_from years of the versions


@dataclass
class Corpus:
    docs: list[Doc]
    raised: Doc
    tokens: dict[int, str]  # clearance -> key with read and write


def _ingest(svc: Services, who: Principal, doc: Doc, year: int, level: int, n: int) -> None:
    result = svc.documents.ingest(who, doc.key, IngestRequest(
        text=_text(level, int(doc.key.rsplit("-", 1)[1]), n),
        valid_from=datetime(year, 1, 1, tzinfo=UTC), confidentiality=CONFIDENTIALITY[level]))
    doc.versions.append(result.version_id)
    doc.starts.append(year)


@pytest.fixture
def corpus(live: LiveServer, tenant: Principal) -> Corpus:
    svc = live.services
    rng = random.Random(SEED)
    docs: list[Doc] = []
    for i in range(DOCS):
        doc = Doc(key=f"doc-{i:04d}", level=i % 4)
        for n, year in enumerate(sorted(rng.sample(range(2018, 2026), rng.randint(1, 2)))):
            _ingest(svc, tenant, doc, year, doc.level, n)
        docs.append(doc)
    # A document whose confidentiality a later version raised from public to secret.
    raised = Doc(key="doc-9999", level=0)
    _ingest(svc, tenant, raised, 2020, 0, 0)
    _ingest(svc, tenant, raised, 2023, 3, 1)
    tokens = {c: live.key(tenant, scopes="read,write", clearance=c) for c in range(4)}
    indexer = getattr(svc, "indexer", None)
    if indexer is not None:  # searchable before the random reads start
        indexer.catch_up(tenant.tenant_id)
    return Corpus(docs=docs, raised=raised, tokens=tokens)


def _above(text: str, clearance: int) -> list[str]:
    """Markers and confidentiality labels above ``clearance`` in a response text."""
    found = [m.group(0) for m in MARK.finditer(text) if int(m.group(1)) > clearance]
    found += [f"confidentiality {name}" for name in CONFIDENTIALITY[clearance + 1:]
              if f'"confidentiality":"{name}"' in text.replace(" ", "")]
    return found


def _never(kind: str) -> str:
    suffix = f"{random.getrandbits(64):016x}"
    return {"asof": f"/v1/documents/nx-{suffix}", "history": f"/v1/documents/nx-{suffix}/history",
            "version": f"/v1/versions/b3:{suffix * 4}"}[kind]


def test_random_reads_show_nothing_above_clearance(live: LiveServer, corpus: Corpus) -> None:
    rng = random.Random(SEED + 1)
    clients = {c: live.client(t) for c, t in corpus.tokens.items()}
    with live.client() as anon:
        paths = anon.get("/schema/openapi.json").json()["paths"]
    kinds = [*KINDS, "search"] if "post" in paths.get("/v1/search", {}) else KINDS
    if "post" in paths.get("/v1/answer", {}):
        kinds = [*kinds, "answer"]
    if "post" in paths.get("/v1/answer/check", {}):  # docs/assistants.md
        kinds = [*kinds, "evidence", "check"]
    if "post" in paths.get("/v1/answer/compare", {}):
        kinds = [*kinds, "compare"]
    pool = [*corpus.docs, corpus.raised]
    problems: list[str] = []
    checked = {"ok": 0, "hidden": 0}
    try:
        for _ in range(REQUESTS):
            c = rng.randrange(4)
            doc = rng.choice(pool)
            kind = rng.choice(kinds)
            if kind == "compare":  # both answers and every cause stay within the clearance
                marker = f"L{doc.level}marke{int(doc.key.rsplit('-', 1)[1]):04d}"
                r = clients[c].post("/v1/answer/compare", json={
                    "question": f"Was gilt für {marker}?", "from": {"valid_at": "2019-07-01"},
                    "to": {"valid_at": "2024-07-01"}})
                where = f"seed {SEED}: clearance {c} compare {marker}"
                hidden = [v for v in doc.versions if doc.level > c] + (
                    corpus.raised.versions[1:] if c < 3 else [])
                if r.status_code != 200 or _above(r.text, c) or any(v in r.text for v in hidden):
                    problems.append(f"{where}: {r.status_code} {_above(r.text, c)}")
                continue
            if kind == "answer":
                marker = f"L{doc.level}marke{int(doc.key.rsplit('-', 1)[1]):04d}"
                r = clients[c].post("/v1/answer", json={"question": f"Was gilt für {marker}?"})
                where = f"seed {SEED}: clearance {c} answer {marker}"
                if r.status_code != 200 or _above(r.text, c):
                    problems.append(f"{where}: {r.status_code} {_above(r.text, c)}")
                elif "get" in paths.get("/v1/runs/{run_id}/receipt", {}):
                    # the asking key's receipt of it: within the same clearance
                    got = clients[c].get(f"/v1/runs/{r.json()['run_id']}/receipt")
                    # the receipt repeats the question, the caller's own words
                    shown = got.text.replace(f"Was gilt für {marker}?", "")
                    if got.status_code != 200 or _above(shown, c):
                        problems.append(f"{where} receipt: {got.status_code} "
                                        f"{_above(shown, c)}")
                continue
            if kind == "evidence":
                marker = f"L{doc.level}marke{int(doc.key.rsplit('-', 1)[1]):04d}"
                r = clients[c].post("/v1/answer/evidence",
                                    json={"question": f"Was gilt für {marker}?"})
                where = f"seed {SEED}: clearance {c} evidence {marker}"
                if r.status_code != 200 or _above(r.text, c):
                    problems.append(f"{where}: {r.status_code} {_above(r.text, c)}")
                continue
            if kind == "check" and doc is not corpus.raised:
                problem = _check_quote(clients[c], doc, c, checked)
                if problem:
                    problems.append(f"seed {SEED}: clearance {c} check {doc.key}: {problem}")
                continue
            if kind == "search":
                marker = f"L{doc.level}marke{int(doc.key.rsplit('-', 1)[1]):04d}"
                r = clients[c].post("/v1/search", json={"query": marker, "k": 5})
                where = f"seed {SEED}: clearance {c} search {marker}"
                if r.status_code != 200 or _above(r.text, c):
                    problems.append(f"{where}: {r.status_code} {_above(r.text, c)}")
                elif doc is not corpus.raised and doc.level <= c:
                    checked["ok"] += 1
                    if doc.key not in {h["document"] for h in r.json()["hits"]}:
                        problems.append(f"{where}: the readable document was not found")
                continue
            if kind == "asof":
                year = rng.randint(2018, 2027)
                path, params = f"/v1/documents/{doc.key}", {"valid_at": f"{year}-07-01"}
                in_force = [i for i, start in enumerate(doc.starts) if start <= year]
                level = None if not in_force else (
                    3 if doc is corpus.raised and doc.starts[in_force[-1]] == 2023 else doc.level)
            elif kind == "history":
                path, params = f"/v1/documents/{doc.key}/history", {}
                level = 0 if doc is corpus.raised else doc.level
            else:
                n = rng.randrange(len(doc.versions))
                path, params = f"/v1/versions/{doc.versions[n]}", {}
                level = (3 if n == 1 else 0) if doc is corpus.raised else doc.level
            r = clients[c].get(path, params=params)
            where = f"seed {SEED}: clearance {c} {path} {params}"
            if leaked := _above(r.text, c):
                problems.append(f"{where}: above clearance {leaked}")
            if level is not None and level <= c:
                checked["ok"] += 1
                if r.status_code != 200:
                    problems.append(f"{where}: {r.status_code} for a readable item")
                    continue
                if kind == "history":
                    body = r.json()["assertions"]
                    want = _expected_history(live.services, corpus, doc, c)
                    if [a["assertion_id"] for a in body] != want:
                        problems.append(f"{where}: history {body} != {want}")
            elif level is not None or kind == "asof":
                checked["hidden"] += 1
                missing = clients[c].get(_never(kind), params=params)
                if (r.status_code, r.headers.get("content-type"), r.content) != (
                        404, missing.headers.get("content-type"), missing.content):
                    problems.append(f"{where}: {r.status_code} {r.text[:200]} differs from a "
                                    f"missing id: {missing.status_code} {missing.text[:200]}")
    finally:
        for client in clients.values():
            client.close()
    assert not problems, "\n".join(problems[:30])
    assert checked["ok"] > 100 and checked["hidden"] > 100, checked


def _check_quote(client: Any, doc: Doc, clearance: int, checked: dict[str, int]) -> str:
    """A quote of the document's text checked by a key of ``clearance``: resolved when the
    document is within it, else exactly what a never-existing document gets."""
    quote = f"L{doc.level}marke{int(doc.key.rsplit('-', 1)[1]):04d} Fassung"

    def check(key: str) -> Any:
        return client.post("/v1/answer/check", json={
            "answer": "Der Satz gilt.", "citations": [
                {"sentence": 0, "document": key, "quote": quote}]})

    r = check(doc.key)
    if r.status_code != 200 or _above(r.text, clearance):
        return f"{r.status_code} {_above(r.text, clearance)}"
    got = r.json()
    if doc.level <= clearance:
        checked["ok"] += 1
        return "" if got["status"] == "answered" else f"readable quote {got['reason']}"
    checked["hidden"] += 1
    never = f"nx-{random.getrandbits(64):016x}"
    missing = check(never).json()
    same = [json.dumps({f: v for f, v in x.items() if f not in ("run_id", "as_of")},
                       sort_keys=True).replace(k, "D")
            for x, k in ((got, doc.key), (missing, never))]
    return "" if same[0] == same[1] and got["reason"] == "quote_not_in_source" else (
        f"differs from a missing document: {same}")


def _expected_history(svc: Services, corpus: Corpus, doc: Doc, clearance: int) -> list[int]:
    """Assertion ids of the document within ``clearance``, read with full clearance."""
    rows = svc.store.documents.history(_tenant_of(svc, corpus), key=doc.key, clearance=3)
    return [a.assertion_id for a in rows if a.confidentiality <= clearance]


def _tenant_of(svc: Services, corpus: Corpus) -> Any:
    found = svc.store.tenancy.lookup_key(corpus.tokens[0].split("_")[1])
    assert found is not None
    return found[0].tenant_id


def test_raised_document_history_and_writes(live: LiveServer, corpus: Corpus) -> None:
    raised = corpus.raised
    full = live.services.store.documents.history(_tenant_of(live.services, corpus), key=raised.key,
                                       clearance=3)
    assert {a.confidentiality for a in full} == {0, 3}
    with live.client(corpus.tokens[0]) as low, live.client(corpus.tokens[3]) as high:
        hist = low.get(f"/v1/documents/{raised.key}/history").json()["assertions"]
        assert hist and {a["confidentiality"] for a in hist} == {"public"}
        assert [a["assertion_id"] for a in hist] == [a.assertion_id for a in full
                                                     if a.confidentiality == 0]
        assert {a["version_id"] for a in hist} == {raised.versions[0]}
        assert _above(low.get(f"/v1/documents/{raised.key}/history").text, 0) == []
        top = high.get(f"/v1/documents/{raised.key}/history").json()["assertions"]
        assert len(top) == len(full)
        # Before the raise the public version reads; after it, nothing, like a missing date.
        assert low.get(f"/v1/documents/{raised.key}", params={"valid_at": "2021-01-01"}
                       ).json()["version_id"] == raised.versions[0]
        hidden = low.get(f"/v1/documents/{raised.key}", params={"valid_at": "2024-01-01"})
        missing = low.get("/v1/documents/doc-never", params={"valid_at": "2024-01-01"})
        assert (hidden.status_code, hidden.content) == (404, missing.content)

        # Writes by a lower key to a document that is secret now: the 404 of a missing one.
        visible_id = hist[0]["assertion_id"]
        writes = {
            "ingest": ("versions", {"text": "L0marke0000 überschreiben.",
                                    "media_type": "text/plain", "valid_from": "2025-01-01",
                                    "confidentiality": "public"}),
            "retract": ("retract", {"valid_from": "2024-01-01", "reason": "weg damit"}),
            "correct": ("corrections", {"assertion_id": visible_id, "reason": "nie wahr"}),
        }
        for name, (tail, body) in writes.items():
            r = low.post(f"/v1/documents/{raised.key}/{tail}", json=body)
            gone = low.post(f"/v1/documents/doc-never/{'retract' if name == 'ingest' else tail}",
                            json=body if name != "ingest" else writes["retract"][1])
            assert gone.status_code == 404, (name, gone.text)
            assert (r.status_code, r.headers["content-type"], r.content) == (
                404, gone.headers["content-type"], gone.content), (name, r.text)
        after = live.services.store.documents.history(_tenant_of(live.services, corpus),
                                                      key=raised.key, clearance=3)
        assert after == full, "a refused write changed the document"


@pytest.mark.parametrize("clearance", [0, 1, 2])
def test_ingest_above_clearance_is_refused_naming_the_field(live: LiveServer, tenant: Principal,
                                                            clearance: int) -> None:
    with live.client(live.key(tenant, scopes="read,write", clearance=clearance)) as http:
        for level in range(clearance + 1, 4):
            r = http.post(f"/v1/documents/new-{clearance}-{level}/versions", json={
                "text": f"L{level}marke0001 zu hoch.", "media_type": "text/plain",
                "confidentiality": CONFIDENTIALITY[level]})
            assert r.status_code == 422, r.text
            assert r.headers["content-type"].startswith("application/problem+json")
            assert [e["field"] for e in r.json()["errors"]] == ["confidentiality"]
            assert http.get(f"/v1/documents/new-{clearance}-{level}/history").status_code == 404
        ok = http.post(f"/v1/documents/new-{clearance}/versions", json={
            "text": "Innerhalb der Freigabe.", "media_type": "text/plain",
            "confidentiality": CONFIDENTIALITY[clearance]})
        assert ok.status_code == 201, ok.text


def test_keys_cannot_be_created_above_the_creating_clearance(live: LiveServer,
                                                             tenant: Principal) -> None:
    low_admin = live.key(tenant, scopes="admin", clearance=1)
    with live.client(low_admin) as http:
        before = http.get("/v1/keys").json()["keys"]
        for clearance in ("confidential", "secret"):
            r = http.post("/v1/keys", json={"scopes": ["read"], "clearance": clearance})
            assert r.status_code == 422, r.text
            assert [e["field"] for e in r.json()["errors"]] == ["clearance"]
        assert http.get("/v1/keys").json()["keys"] == before
        r = http.post("/v1/keys", json={"scopes": ["read"], "clearance": "internal"})
        assert r.status_code == 201, r.text
