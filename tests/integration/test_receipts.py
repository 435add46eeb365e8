"""Answer receipts that verify offline (GET /v1/runs/{run_id}/receipt, `stichtag receipt
verify`; docs/audit.md, "Receipts"), from a real server and log.

A receipt verifies with nothing but the tenant's public key and the cited versions'
texts; changing any single field of it — every scalar of the answer, the citations, the
record, the proof and the checkpoint is tried — makes it fail; so does another key.
"""

from __future__ import annotations

import contextlib
import copy
import html
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stichtag.audit.receipt import cited_versions, load_versions, verify_receipt
from stichtag.audit.signing import load_public_key, public_key_pem
from stichtag.cli import main
from stichtag.services.access import Principal
from tests.conftest import LiveServer, make_tenant

ZINS = "# § 2 Höchstzinssatz\n\n"
TEXT = (f"{ZINS}(1) Der Höchstzinssatz Sigmamarke beträgt 0,25 % für Neuverträge. "
        "Ältere Verträge behalten ihren Satz.\n\n# § 3 Tafeln\n\n(1) Die Tafel DAV 2004 R gilt "
        "für die Sigmamarke weiter 😀.\n")
ASK = "Welcher Höchstzinssatz Sigmamarke gilt für Neuverträge?"


def _scalars(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _scalars(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _scalars(v, (*path, i))
    else:
        yield path, node


def _flipped(value: Any) -> Any:
    """The same field with one byte changed (or, for an empty or null value, one added)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str) and value:
        return chr(ord(value[0]) ^ 1) + value[1:]
    return "x"


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


@pytest.fixture
def answered(live: LiveServer, tenant: Principal) -> tuple[dict[str, Any], str, dict[str, str]]:
    """A recorded answer's receipt, the tenant's public key (PEM) and the cited texts."""
    svc = live.services
    token = live.key(tenant, scopes="read,write,audit", clearance=1)
    with live.client(token) as http:
        assert http.post("/v1/documents/zins/versions", json={
            "text": TEXT, "valid_from": "2022-01-01", "confidentiality": "internal"}
        ).status_code == 201
        svc.indexer.catch_up(tenant.tenant_id)
        for _ in range(2):  # leaves before and after it: a proof with steps on both sides
            assert http.post("/v1/search", json={"query": "Tafel"}).status_code == 200
        answer = http.post("/v1/answer", json={"question": ASK, "valid_at": "2023-01-01"})
        assert answer.status_code == 200 and answer.json()["status"] == "answered", answer.text
        assert http.post("/v1/search", json={"query": "Satz"}).status_code == 200
        r = http.get(f"/v1/runs/{answer.json()['run_id']}/receipt")
        assert r.status_code == 200, r.text
        receipt = r.json()
        texts = {v: http.get(f"/v1/versions/{v}").json()["text"]
                 for v in cited_versions(receipt)}
        pem = http.get("/v1/log/checkpoint").json()["public_key"]
    return receipt, pem, texts


def test_a_receipt_verifies_offline_and_any_changed_field_fails(
        answered: tuple[dict[str, Any], str, dict[str, str]]) -> None:
    receipt, pem, texts = answered
    key = load_public_key(pem.encode())
    versions = load_versions(texts.values())
    report = verify_receipt(receipt, key, versions=versions)
    assert report.ok, report.problems
    assert report.quotes_checked >= 1 and report.quotes_unchecked == 0
    assert receipt["answer"]["sentences"][0]["citations"][0]["quote"] in TEXT
    # Without the texts the quotes are reported unchecked, not verified.
    bare = verify_receipt(receipt, key)
    assert bare.ok and bare.quotes_checked == 0 and bare.quotes_unchecked >= 1

    fields = list(_scalars(receipt))
    assert len(fields) > 50 and len(receipt["log"]["inclusion"]) >= 2
    survived = []
    for path, value in fields:
        changed = copy.deepcopy(receipt)
        _set(changed, path, _flipped(value))
        if verify_receipt(changed, key, versions=versions).ok:
            survived.append(path)
    assert survived == []
    # Structural edits too: a dropped citation, an added sentence, a dropped proof step.
    for edit in ("citation", "sentence", "proof"):
        changed = copy.deepcopy(receipt)
        if edit == "citation":
            changed["answer"]["sentences"][0]["citations"].pop()
        elif edit == "sentence":
            changed["answer"]["sentences"].append({"text": "Erfunden.", "citations": []})
        else:
            changed["log"]["inclusion"] = changed["log"]["inclusion"][1:]
        assert not verify_receipt(changed, key, versions=versions).ok, edit
    # A text that is not the cited version does not stand in for it.
    forged = load_versions([TEXT.replace("0,25", "0,35")])
    assert verify_receipt(receipt, key, versions=forged).quotes_checked == 0


def test_another_key_or_tenant_fails(live: LiveServer,
                                     answered: tuple[dict[str, Any], str, dict[str, str]]
                                     ) -> None:
    receipt, _, texts = answered
    other = load_public_key(public_key_pem(Ed25519PrivateKey.generate()).encode())
    report = verify_receipt(receipt, other, versions=load_versions(texts.values()))
    assert not report.ok and any("log.checkpoint" in p for p in report.problems)
    # Another tenant cannot fetch it: the same 404 as a run that never existed.
    stranger = make_tenant(live.services, "stranger")
    with live.client(live.key(stranger)) as http:
        foreign = http.get(f"/v1/runs/{receipt['run_id']}/receipt")
        never = http.get("/v1/runs/00000000-0000-4000-8000-000000000000/receipt")
        assert foreign.status_code == never.status_code == 404
        assert foreign.content == never.content


def test_receipt_cli_get_and_verify(live: LiveServer, tenant: Principal, tmp_path: Path,
                                    answered: tuple[dict[str, Any], str, dict[str, str]]
                                    ) -> None:
    receipt, pem, texts = answered
    key = live.key(tenant, scopes="read,audit", clearance=1)
    path, pem_path = tmp_path / "receipt.json", tmp_path / "log.pem"
    pem_path.write_text(pem, encoding="utf-8")
    assert main(["--url", live.base_url, "--key", key, "receipt", "get", receipt["run_id"],
                 "-o", str(path)]) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["record"] == receipt["record"]
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, text in enumerate(texts.values()):
        (folder / f"v{i}.txt").write_text(text, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--json", "receipt", "verify", str(path), "--public-key", str(pem_path),
                     "--versions", str(folder)]) == 0
    data = json.loads(out.getvalue())
    assert data["ok"] and data["quotes_checked"] >= 1
    # The quotes fetched from a server instead: it is trusted for bytes only.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--url", live.base_url, "--key", key, "--json", "receipt", "verify",
                     str(path), "--public-key", str(pem_path)]) == 0
    assert json.loads(out.getvalue())["quotes_checked"] >= 1
    page = tmp_path / "receipt.html"
    assert main(["--url", live.base_url, "--key", key, "receipt", "get", receipt["run_id"],
                 "--html", "-o", str(page)]) == 0
    printed = page.read_text(encoding="utf-8")
    quote = receipt["answer"]["sentences"][0]["citations"][0]["quote"]
    assert html.escape(quote) in printed and receipt["log"]["leaf_hash"] in printed
    assert "<script" not in printed and "receipt verify" in printed
    with live.client(key) as http:
        served = http.get(f"/v1/runs/{receipt['run_id']}/receipt/html")
    assert served.status_code == 200 and served.text == printed
    assert served.headers["content-type"].startswith("text/html")
    tampered = json.loads(path.read_text(encoding="utf-8"))
    tampered["answer"]["sentences"][0]["citations"][0]["start"] += 1
    path.write_text(json.dumps(tampered), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["receipt", "verify", str(path), "--public-key", str(pem_path)]) == 1
    assert "does not verify" in err.getvalue()


def test_no_receipt_above_clearance_or_for_an_erased_version(
        live: LiveServer, tenant: Principal, tmp_path: Path,
        answered: tuple[dict[str, Any], str, dict[str, str]]) -> None:
    receipt, pem, texts = answered
    with live.client(live.key(tenant, scopes="read,audit", clearance=0)) as http:
        assert http.get(f"/v1/runs/{receipt['run_id']}/receipt").status_code == 404
    [vid] = texts
    live.services.erasures.erase(tenant, vid, reason="GDPR request 7")
    with live.client(live.key(tenant, scopes="read,audit", clearance=3)) as http:
        gone = http.get(f"/v1/runs/{receipt['run_id']}/receipt")
        assert gone.status_code == 410 and TEXT[:40] not in gone.text
    # A receipt issued before the erasure still verifies its signature and inclusion (the
    # log is unchanged); its quotes can no longer be checked against the server, and the
    # verifier says so.
    assert verify_receipt(receipt, load_public_key(pem.encode())).ok
    path, pem_path = tmp_path / "receipt.json", tmp_path / "log.pem"
    path.write_text(json.dumps(receipt), encoding="utf-8")
    pem_path.write_text(pem, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--url", live.base_url, "--key", live.key(tenant), "--json", "receipt",
                     "verify", str(path), "--public-key", str(pem_path)]) == 0
    data = json.loads(out.getvalue())
    assert data["erased_versions"] == [vid] and data["quotes_checked"] == 0
