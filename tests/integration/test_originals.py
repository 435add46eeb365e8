"""Originals end to end (docs/extraction.md, "How the server uses it"): PDF, HTML and DOCX through
the ingest endpoint in
both body forms, the original and page-image routes, citations with page and boxes that
re-read their quote, re-anchoring across reflowed PDF editions, refusals that store
nothing, and every PDF of the shared pdf-samples corpus.

Everything runs against the real server on loopback, the real PostgreSQL and pdfium; the
law PDFs are typeset from the shared law corpus (tests/extract_docs.py).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import struct
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.cli.documents import cmd_ingest
from stichtag.cli.manifest import media_type_for
from stichtag.cli.output import Output
from stichtag.config import Settings
from stichtag.domain.text import version_id
from stichtag.extract import extract
from stichtag.services.access import Principal
from tests.conftest import Cluster, LiveServer, admin_url_for, shared_path
from tests.originals import (
    DOCX_TYPE,
    LETTER_2COL,
    USER_PASSWORD,
    quote_in_boxes,
    simple_pdf,
    vvg_docx,
    vvg_html,
    vvg_pdf,
    zip_bomb_docx,
)

PDF = "application/pdf"
QUESTION = "Wozu verpflichtet sich der Versicherer mit dem Versicherungsvertrag?"


@pytest.fixture
def settings(database: str, tmp_path: Path, models_dir: Path) -> Settings:
    """As tests/conftest.py, with a body limit above the HTML limit (16 MiB), so the
    HTML refusal is the extractor's and the corpus PDFs fit."""
    return Settings(data_dir=tmp_path / "data", database_url=database,
                    max_body_bytes=24 * 2**20, pool_min=1, pool_max=4, models_path=models_dir,
                    rate_per_second=10_000.0, rate_burst=10_000, rate_tenant_inflight=4,
                    rate_tenant_queue=64, rate_node_inflight=4, rate_node_queue=256,
                    rate_queue_timeout=60.0)


@pytest.fixture
def http(live: LiveServer, tenant: Principal) -> Iterator[Any]:
    with live.client(live.key(tenant)) as client:
        yield client


@pytest.fixture(scope="module")
def edition_a() -> bytes:
    return vvg_pdf(12_000)


@pytest.fixture(scope="module")
def edition_b() -> bytes:
    return vvg_pdf(12_000, **LETTER_2COL)


def raw(http: Any, key: str, data: bytes, content_type: str | None, **params: Any) -> Any:
    headers = {"Content-Type": content_type} if content_type else {}
    return http.post(f"/v1/documents/{key}/versions", content=data, headers=headers,
                     params=params)


def rows(admin: psycopg.Connection[Any], tenant: Principal) -> dict[str, int]:
    """Rows of the tenant in every table that has a tenant_id."""
    tables = [r[0] for r in admin.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
        " WHERE a.attname = 'tenant_id' AND c.relkind = 'r' AND c.relnamespace ="
        " 'public'::regnamespace ORDER BY 1")]
    return {t: admin.execute(sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(
        sql.Identifier(t)), (tenant.tenant_id,)).fetchone()[0] for t in tables}


@pytest.fixture
def admin(cluster: Cluster, database: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as conn:
        yield conn


# -- both body forms, the original, the version's source ----------------------------------


def test_pdf_ingests_as_raw_upload_and_as_json(http: Any, edition_a: bytes) -> None:
    expected = version_id(extract(edition_a, PDF).text)
    # curl --data-binary @report.pdf sends application/x-www-form-urlencoded: sniffed.
    first = raw(http, "vvg", edition_a, "application/x-www-form-urlencoded",
                valid_from="2020-01-01", title="VVG", doc_class="law")
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["version_id"] == expected and body["created"] is True
    prov = body["assertion"]["provenance"]
    assert prov["source_media_type"] == PDF and prov["original_id"].startswith("b3:")
    assert prov["extraction"]["extractor_id"] == "pdf-layout-1"
    assert set(prov["extraction"]["libraries"]) == {"pypdfium2", "pdfium"}
    assert body["assertion"]["title"] == "VVG" and body["assertion"]["doc_class"] == "law"
    # The same file as JSON for the same range: the identical version, nothing new (200).
    again = http.post("/v1/documents/vvg/versions", json={
        "text_base64": base64.b64encode(edition_a).decode(), "media_type": PDF,
        "valid_from": "2020-01-01", "title": "VVG", "doc_class": "law"})
    assert again.status_code == 200, again.text
    assert again.json()["version_id"] == expected and again.json()["asserted"] is False
    # ... and as JSON for a new document: a first ingest there, same version.
    other = http.post("/v1/documents/vvg-copy/versions", json={
        "text_base64": base64.b64encode(edition_a).decode(), "media_type": PDF})
    assert other.status_code == 201 and other.json()["version_id"] == expected
    # The original: exactly the uploaded bytes, as a download that never renders here.
    orig = http.get(f"/v1/versions/{expected}/original")
    assert orig.status_code == 200 and orig.content == edition_a
    assert orig.headers["content-type"] == PDF
    assert orig.headers["content-disposition"].startswith("attachment;")
    assert orig.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in orig.headers["content-security-policy"]
    version = http.get(f"/v1/versions/{expected}").json()
    assert version["source"]["media_type"] == PDF
    assert version["source"]["original_id"] == prov["original_id"]
    assert version["source"]["size"] == len(edition_a)
    assert version["source"]["pages"] == extract(edition_a, PDF).provenance["pages"]
    assert version["source"]["empty_pages"] == []


def test_html_and_docx_keep_their_originals_and_cite_in_text(http: Any) -> None:
    html, docx = vvg_html(4_000), vvg_docx(4_000)
    r_html = raw(http, "vvg-html", html, "text/html; charset=utf-8")
    r_docx = raw(http, "vvg-docx", docx, DOCX_TYPE)
    assert r_html.status_code == r_docx.status_code == 201, (r_html.text, r_docx.text)
    for r, data, kind in ((r_html, html, "text/html"), (r_docx, docx, DOCX_TYPE)):
        vid = r.json()["version_id"]
        assert vid == version_id(extract(data, kind).text)
        orig = http.get(f"/v1/versions/{vid}/original")
        assert orig.content == data and orig.headers["content-type"].startswith(kind)
        assert http.get(f"/v1/versions/{vid}").json()["source"]["media_type"] == kind
        assert http.get(f"/v1/versions/{vid}/pages/1").status_code == 404  # not a PDF
    # A version ingested as text has no original and no source.
    text = http.post("/v1/documents/note/versions", json={"text": "# N\n\nEin Satz.\n"})
    vid = text.json()["version_id"]
    assert http.get(f"/v1/versions/{vid}/original").status_code == 404
    assert "source" not in http.get(f"/v1/versions/{vid}").json()


def test_query_fields_with_a_json_body_are_refused(http: Any) -> None:
    r = http.post("/v1/documents/x/versions", params={"title": "T"},
                  json={"text": "# T\n\nEin Satz.\n"})
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "title"
    assert http.get("/v1/documents/x/history").status_code == 404


# -- citations with page and boxes ------------------------------------------------------------


def test_answer_citations_carry_page_and_boxes_that_reread_the_quote(
        live: LiveServer, tenant: Principal, http: Any, edition_a: bytes) -> None:
    r = raw(http, "vvg", edition_a, PDF, valid_from="2020-01-01", doc_class="regulation")
    assert r.status_code == 201, r.text
    vid = r.json()["version_id"]
    live.services.indexer.catch_up(tenant.tenant_id)
    body = http.post("/v1/answer", json={"question": QUESTION}).json()
    assert body["status"] in ("answered", "partial"), body
    cited = [c for s in body["sentences"] for c in s["citations"]]
    assert cited and all(c["version_id"] == vid for c in cited)
    for c in cited + [s["citation"] for s in body["sources"]]:
        assert c["page"] == c["boxes"][0]["page"] >= 1
        for b in c["boxes"]:
            assert 0 <= b["x0"] < b["x1"] <= b["page_width"]
            assert 0 <= b["y0"] < b["y1"] <= b["page_height"]
        assert quote_in_boxes(edition_a, c), c
    # The run record names the extraction the cited version came from; replay reproduces.
    record = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
    assert record["sources"][vid]["extractor_id"] == "pdf-layout-1"
    assert record["sources"][vid]["media_type"] == PDF
    assert set(record["sources"][vid]["libraries"]) == {"pypdfium2", "pdfium"}
    verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
    assert verdict["reproduced"], verdict
    # The citation resolves with the same page and boxes.
    c = cited[0]
    res = http.get("/v1/citations/resolve", params={
        "version_id": vid, "start": c["start"], "end": c["end"]}).json()
    assert res["citation"]["boxes"] == c["boxes"] and res["current"]["page"] == c["page"]


def test_text_citations_have_no_page_or_boxes(live: LiveServer, tenant: Principal,
                                              http: Any) -> None:
    text = ("# § 1 Vertragstypische Pflichten\n\nDer Versicherer verpflichtet sich mit dem "
            "Versicherungsvertrag, ein bestimmtes Risiko abzusichern.\n")
    assert http.post("/v1/documents/t/versions", json={"text": text}).status_code == 201
    live.services.indexer.catch_up(tenant.tenant_id)
    body = http.post("/v1/answer", json={"question": QUESTION}).json()
    for c in [c for s in body["sentences"] for c in s["citations"]]:
        assert "page" not in c and "boxes" not in c
    assert "sources" not in http.get(f"/v1/runs/{body['run_id']}").json()["record"]


def test_page_images(http: Any, edition_a: bytes) -> None:
    vid = raw(http, "vvg", edition_a, PDF).json()["version_id"]
    r = http.get(f"/v1/versions/{vid}/pages/2", params={"pixels": 900})
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.content[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", r.content[16:24])
    assert height == 900 and abs(width - 900 * 595.28 / 841.89) < 1.5  # A4, unrotated
    assert http.get(f"/v1/versions/{vid}/pages/0").status_code == 422
    assert http.get(f"/v1/versions/{vid}/pages/999").status_code == 404
    assert http.get(f"/v1/versions/{vid}/pages/1", params={"pixels": 50}).status_code == 422
    assert http.get(f"/v1/versions/b3:{'0' * 64}/pages/1").status_code == 404


# -- re-anchoring across editions ------------------------------------------------------------


def test_reanchoring_across_reflowed_pdf_editions(http: Any, edition_a: bytes,
                                                  edition_b: bytes) -> None:
    a = raw(http, "vvg", edition_a, PDF, valid_from="2020-01-01").json()["version_id"]
    b = raw(http, "vvg", edition_b, PDF, valid_from="2022-01-01").json()["version_id"]
    assert a != b  # two typesettings of (almost) the same text
    text = http.get(f"/v1/versions/{a}").json()
    sentences = [s for s in text["sentences"] if len(s["heading_path"]) >= 1
                 and s["end"] - s["start"] > 60]
    moved = 0
    for s in sentences[::7]:
        res = http.get("/v1/citations/resolve", params={
            "version_id": a, "start": s["start"], "end": s["end"]}).json()
        assert res["current_version_id"] == b
        if res["status"] == "removed":
            continue
        old, new = res["citation"], res["current"]
        assert new["version_id"] == b and new["page"] >= 1
        assert quote_in_boxes(edition_a, old) and quote_in_boxes(edition_b, new), new
        moved += old["page"] != new["page"]
    assert moved >= 1  # the reflow put some sentence on another page, and it was found


# -- refusals store nothing ------------------------------------------------------------------


def _big_html() -> bytes:
    return b"<!doctype html><html><body>" + b"<p>Absatz mit Text.</p>" * 800_000 + b"</body></html>"


REFUSALS: list[tuple[str, Any, str | None, dict[str, str], int, str, str]] = [
    # name, file (or a callable making it), content type, headers, status, field, reason part
    ("encrypted, no password", lambda: simple_pdf(["Geheim."], password=USER_PASSWORD), PDF,
     {}, 422, "password", "encrypted"),
    ("encrypted, wrong password", lambda: simple_pdf(["Geheim."], password=USER_PASSWORD),
     PDF, {"Stichtag-Document-Password": "falsch"}, 422, "password", "does not open"),
    ("no text layer", lambda: simple_pdf(["", ""]), PDF, {}, 422, "body", "OCR"),
    ("corrupt PDF", lambda: simple_pdf(["Ein Satz."])[:400], PDF, {}, 422, "body", "corrupt"),
    ("zip bomb", lambda: zip_bomb_docx(vvg_docx(2_000)), DOCX_TYPE, {}, 413, "body",
     "zip bomb"),
    ("HTML over the size limit", _big_html, "text/html", {}, 413, "body", "limit"),
    ("HTML without text", lambda: b"<!doctype html><html><body><script>x()</script>"
     b"<nav>Menu</nav></body></html>", "text/html", {}, 422, "body", "no text"),
    ("declared PDF, bytes HTML", lambda: vvg_html(1_000), PDF, {}, 422, "media_type",
     "declared"),
    ("unsupported type", lambda: b"\x89PNG\r\n\x1a\n0000", "image/png", {}, 422,
     "media_type", "unsupported"),
    ("empty file", lambda: b"", PDF, {}, 422, "body", "empty"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_bad_files_are_refused_naming_why_and_store_nothing(
        http: Any, tenant: Principal, admin: psycopg.Connection[Any],
        case: tuple[Any, ...]) -> None:
    _, make, content_type, headers, status, field, reason = case
    data = make()
    assert http.post("/v1/documents/seed/versions", json={"text": "# S\n\nSaat.\n"}
                     ).status_code == 201  # the tenant has rows: "nothing" is meaningful
    before = rows(admin, tenant)
    r = http.post("/v1/documents/bad/versions", content=data,
                  headers={"Content-Type": content_type, **headers})
    assert r.status_code == status, r.text
    problem = r.json()
    assert problem["errors"][0]["field"] == field and reason in problem["errors"][0]["reason"]
    if content_type == PDF and len(data) < 2**20:  # the JSON form refuses it the same way
        rj = http.post("/v1/documents/bad/versions", json={
            "text_base64": base64.b64encode(data).decode(), "media_type": PDF,
            "password": headers.get("Stichtag-Document-Password")})
        assert rj.status_code == status
        want = "text_base64" if field == "body" else field
        assert rj.json()["errors"][0]["field"] == want
    assert rows(admin, tenant) == before
    assert http.get("/v1/documents/bad/history").status_code == 404


def test_no_text_layer_names_the_pages(http: Any) -> None:
    r = raw(http, "scan", simple_pdf(["", "", ""]), PDF)
    assert r.status_code == 422
    reason = r.json()["errors"][0]["reason"]
    assert "1-3" in reason and "OCR" in reason and "not do" in reason


def test_encrypted_pdf_with_its_password_is_stored_without_page_images(http: Any) -> None:
    data = simple_pdf(["Geheimer Vertragstext."], password=USER_PASSWORD)
    r = raw(http, "secret-pdf", data, PDF, **{})
    assert r.status_code == 422
    r = http.post("/v1/documents/secret-pdf/versions", content=data, headers={
        "Content-Type": PDF, "Stichtag-Document-Password": USER_PASSWORD})
    assert r.status_code == 201, r.text
    vid = r.json()["version_id"]
    assert USER_PASSWORD not in json.dumps(r.json())  # never stored, never echoed
    assert http.get(f"/v1/versions/{vid}/original").content == data  # as uploaded
    page = http.get(f"/v1/versions/{vid}/pages/1")
    assert page.status_code == 422 and "password" in page.json()["errors"][0]["reason"]


def test_partial_text_layer_is_stored_with_its_empty_pages(http: Any) -> None:
    r = raw(http, "partial", simple_pdf(["Erste Seite.", "", "Dritte Seite."]), PDF)
    assert r.status_code == 201, r.text
    assert r.json()["assertion"]["provenance"]["extraction"]["empty_pages"] == [2]
    source = http.get(f"/v1/versions/{r.json()['version_id']}").json()["source"]
    assert source["empty_pages"] == [2] and source["pages"] == 3


# -- extraction is versioned and re-runnable ----------------------------------------------


def test_reextraction_reproduces_the_stored_version(live: LiveServer, tenant: Principal,
                                                    http: Any, edition_b: bytes) -> None:
    vid = raw(http, "vvg", edition_b, PDF).json()["version_id"]
    again = live.services.sources.reextract(tenant, vid)
    assert again.reproduced, again.differences
    assert again.extractor_id == again.stored_extractor_id == "pdf-layout-1"


def test_cli_ingest_sniffs_the_media_type_from_the_bytes(live: LiveServer, tenant: Principal,
                                                         http: Any, tmp_path: Path) -> None:
    pdf = tmp_path / "gesetz.txt"  # the name lies; the bytes decide
    pdf.write_bytes(simple_pdf(["Ein Satz im PDF."]))
    note = tmp_path / "note.md"
    note.write_text("# Notiz\n\nText.\n", encoding="utf-8")
    # only markdown is named by the CLI; the service tells the rest apart by the bytes
    assert media_type_for(pdf) is None and media_type_for(note) == "text/markdown"
    args = argparse.Namespace(tenant="acme", manifest=None, files=[str(pdf)], document=None,
                              valid_from="2021-01-01", valid_to=None, media_type=None,
                              title=None, doc_class="document", confidentiality="internal",
                              json=True, interactive=False, progress_every=25)
    with redirect_stdout(io.StringIO()) as out:
        cmd_ingest(live.services, args, Output(as_json=True))
    assert json.loads(out.getvalue())["versions_created"] == 1
    history = http.get("/v1/documents/gesetz/history").json()["assertions"]
    assert history[0]["provenance"]["source_media_type"] == PDF


# -- the shared corpus -----------------------------------------------------------------------


def test_every_sample_pdf_ingests_with_its_page_count_or_is_refused_naming_why(
        http: Any) -> None:
    root = shared_path("corpus", "pdf-samples")
    listed = json.loads((root / "files.json").read_text(encoding="utf-8"))["data"]
    outcomes: list[str] = []
    for n, entry in enumerate(listed):
        path = root / entry["path"]
        if not path.exists():
            continue
        r = raw(http, f"sample-{n}", path.read_bytes(), "application/octet-stream")
        assert r.status_code < 500, (entry["path"], r.text)
        if r.status_code == 201:
            vid = r.json()["version_id"]
            source = http.get(f"/v1/versions/{vid}").json()["source"]
            assert source["pages"] == entry["pages"], entry["path"]
            # Two samples may extract to the same text (one version): each assertion names
            # the file it came from, and the route serves that one byte for byte.
            own = r.json()["assertion"]["provenance"]["original_id"]
            assert http.get(f"/v1/versions/{vid}/original", params={"original_id": own}
                            ).content == path.read_bytes()
            outcomes.append(f"{entry['path']}: {source['pages']} pages")
        else:
            assert 400 <= r.status_code < 500
            problem = r.json()
            reason = problem["errors"][0]["reason"]
            assert any(w in reason for w in ("password", "encrypted", "no text layer",
                                             "corrupt", "not a readable", "no text")), reason
            if entry["encrypted"]:
                assert problem["errors"][0]["field"] == "password"
            assert http.get(f"/v1/documents/sample-{n}/history").status_code == 404
            outcomes.append(f"{entry['path']}: {r.status_code} {reason}")
    print("\n".join(outcomes))
    assert sum("pages" in o for o in outcomes) >= 20
