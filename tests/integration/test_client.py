"""The typed clients (app/stichtag/client/), sync and async, against a real server on loopback:
every operation of the OpenAPI document, typed results, the pager, a lost response
retried for an idempotent ingest only, and problem+json as typed exceptions with field
and reason (retries after Retry-After: tests/integration/test_client_retry.py)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from stichtag import client as c
from stichtag.api import schemas as s
from stichtag.audit.receipt import verify_receipt
from stichtag.audit.signing import load_public_key
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import METRICS_KEY, REPO, LiveServer, make_tenant
from tests.integration.test_answer_api import DEMO_DIR
from tests.originals import simple_pdf

POLICY = "# Überschussbeteiligung\n\n(1) Der Deklarationssatz beträgt 2,80 Prozent.\n"


class Recorder:
    """The client under test, sync or async, driven from this synchronous test: an
    awaitable result is run to completion on one event loop, an async iterator collected.
    Records the name of every method called."""

    def __init__(self, client: c.Client | c.AsyncClient) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop() if isinstance(client, c.AsyncClient) else None
        self.called: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        self.called.add(name)
        if self.loop is None:
            return method
        loop = self.loop

        def run(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if inspect.isasyncgen(result):
                return loop.run_until_complete(_collect(result))
            return loop.run_until_complete(result)

        return run

    def close(self) -> None:
        if isinstance(self.client, c.AsyncClient):
            assert self.loop is not None
            self.loop.run_until_complete(self.client.aclose())
            self.loop.close()
        else:
            self.client.close()


async def _collect(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


@contextmanager
def opened(kind: str, base_url: str, key: str, **options: Any) -> Iterator[Recorder]:
    """A ``Client`` or an ``AsyncClient`` behind a :class:`Recorder`."""
    factory = c.Client if kind == "sync" else c.AsyncClient
    api = Recorder(factory(base_url, key, **options))
    try:
        yield api
    finally:
        api.close()


KINDS = pytest.mark.parametrize("kind", ["sync", "async"])


def test_every_operation_of_the_openapi_document_has_a_method_on_both_clients() -> None:
    spec = json.loads((REPO / "schemas" / "openapi.json").read_text(encoding="utf-8"))
    ids = {op["operationId"] for path in spec["paths"].values() for op in path.values()}
    assert ids == set(c.OPERATION_IDS)
    sync, aio = c.Client("http://127.0.0.1:9", "k"), c.AsyncClient("http://127.0.0.1:9", "k")
    for name in c.OPERATION_IDS.values():
        assert callable(getattr(sync, name)) and callable(getattr(aio, name)), name
    sync.close()
    asyncio.run(aio.aclose())


@KINDS
def test_every_client_method_against_a_real_server(live: LiveServer, tmp_path: Path,
                                                   kind: str) -> None:
    who = make_tenant(live.services, "client")
    ingest_manifest(live.services, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(who.tenant_id)
    file = tmp_path / "returns.md"
    file.write_text(POLICY, encoding="utf-8")
    with opened(kind, live.base_url, live.key(who)) as api:
        assert api.health().status == "ok" and api.ready().status == "ok"
        assert "stichtag_" in api.metrics(operator_key=METRICS_KEY)
        status = api.index_status()
        assert status.complete and status.pending_embeddings == 0 and status.model
        first = api.ingest_file("returns", file, media_type="text/markdown",
                                valid_from="2023-01-01")
        again = api.ingest("returns", POLICY, valid_from="2023-01-01")
        assert isinstance(first, s.IngestResponse) and first.created and not again.created
        assert again.version_id == first.version_id and not again.asserted

        doc = api.document("returns", valid_at="2023-06-01", include_sentences=True)
        assert doc.text == POLICY and doc.sentences and doc.as_of.valid_at.startswith("2023")
        assert [a.version_id for a in api.history("returns").assertions] == [
            first.version_id]
        version = api.version(first.version_id)
        assert version.text == POLICY and version.length == len(POLICY)
        second = api.ingest("returns", POLICY.replace("2,80", "2,75"), valid_from="2024-01-01")
        diff = api.version_diff(first.version_id, second.version_id)
        assert diff.diff.changed == 1 and diff.to_version == second.version_id

        pdf = simple_pdf(["Der Rechnungszins beträgt 0,25 Prozent."])
        uploaded = api.ingest("scan", file=pdf, media_type="application/pdf",
                              valid_from="2023-01-01")
        assert api.original(uploaded.version_id) == pdf
        assert api.page(uploaded.version_id, 1).startswith(b"\x89PNG")
        wrong = api.ingest("scan", "# Falsch\n\n(1) Nie gültig.\n", valid_from="2030-01-01")
        assert wrong.assertion is not None
        corrected = api.correct("scan", assertion_id=wrong.assertion.assertion_id,
                                reason="test")
        assert corrected.closed == [wrong.assertion.assertion_id]
        erased = api.erase(wrong.version_id, reason="ticket 1")
        assert erased.erased and erased.erasure.version_id == wrong.version_id
        assert not api.erase(wrong.version_id, reason="ticket 1").erased  # once only
        with pytest.raises(c.Gone) as gone:
            api.version(wrong.version_id)
        assert gone.value.problem.status == 410

        hits = api.search("Höchstrechnungszins Neugeschäft", valid_at="2022-06-01", k=3)
        assert hits.hits and isinstance(hits.hits[0], s.SearchHit)
        answer = api.answer("Welcher Höchstrechnungszins gilt für Neugeschäft?",
                            valid_at="2022-06-01")
        assert answer.status in ("answered", "partial"), answer
        cited = answer.sentences[0].citations[0]
        resolved = api.resolve(cited.version_id, cited.start, cited.end)
        assert resolved.citation.quote == cited.quote
        anchored = api.anchor([cited.selector[0]], source=cited.source)
        # the selector alone lands where the offset-based resolver puts the sentence
        assert anchored.current_version_id == resolved.current_version_id
        assert anchored.current is not None and resolved.current is not None
        assert (anchored.current.start, anchored.current.end) == (
            resolved.current.start, resolved.current.end)
        assert anchored.matched == ("fuzzy" if resolved.status == "changed" else "exact")
        refused = api.answer("Wie backe ich einen Apfelstrudel?")
        assert refused.status == "abstained"

        run = api.run(answer.run_id)
        assert run.kind == "answer" and run.record["run_id"] == answer.run_id
        assert api.replay(answer.run_id).reproduced
        compared = api.compare("Welcher Höchstrechnungszins gilt für Neugeschäft?",
                               from_valid_at="2021-06-01", to_valid_at="2022-06-01")
        assert compared.to.run_id != compared.from_.run_id
        assert all(c.cause in ("valid_time", "transaction_time", "both", "none")
                   for c in compared.changes)
        assert api.replay(compared.run_id).kind == "compare"
        handed = api.evidence("Welcher Höchstrechnungszins gilt für Neugeschäft?",
                              valid_at="2022-06-01")
        made_up = api.check_answer("Das steht so im Gesetz [99].", run_id=handed.run_id)
        assert made_up.status == "abstained"  # [99] names no Fundstelle of that run
        receipt = api.receipt(answer.run_id)  # typed, and still verifiable as decoded
        assert verify_receipt(msgspec.to_builtins(receipt), load_public_key(
            live.services.runlog.public_key().encode())).ok
        assert receipt.log.leaf_hash in api.receipt_html(answer.run_id)
        assert isinstance(api.impact(since="2000-01-01").runs, list)
        assert isinstance(api.gaps().groups, list)

        changes = api.changes(known_from="2000-01-01", known_to="2100-01-01",
                              document="returns")
        assert [d.document for d in changes.documents] == ["returns"]
        retracted = api.retract("returns", valid_from="2025-01-01", reason="test")
        assert retracted.closed and retracted.opened

        sample = api.create_review_sample(seed=7, n=5)
        assert sample.items and api.review_sample(sample.sample_id).items == sample.items
        assert [x.sample_id for x in api.review_samples().samples] == [sample.sample_id]
        verdict = api.record_verdict(sample_id=sample.sample_id, item=1, verdict="full")
        assert verdict.item == 1 and verdict.seq > 0
        assert api.review_report(sample.sample_id).overall["pairs"]

        checkpoint = api.checkpoint()
        assert checkpoint.size >= 5  # the search, two answers, the sample, the verdict
        proof = api.inclusion(1)
        assert proof.seq == 1 and proof.size == checkpoint.size
        assert api.consistency(1).new == checkpoint.size
        lines = list(api.export_lines())
        assert json.loads(lines[0])["format"] == "stichtag-log-export/1"
        assert len(lines) == checkpoint.size + 2
        report = api.verify_log(live.services.runlog.public_key().encode())
        assert report.problems == () and report.record_count == checkpoint.size

        made = api.create_key(scopes=["read"], label="reader")
        assert made.key.startswith("stk_") and made.info.scopes == ["read"]
        rotated = api.rotate_key(made.info.key_id)
        assert rotated.info.rotated_from == made.info.key_id
        assert api.revoke_key(rotated.info.key_id).revoked_at is not None
        assert made.info.key_id in {k.key_id for k in api.keys().keys}
        before = api.thresholds()
        changed = api.set_thresholds(theta_rel=before[-1].theta_rel, tau=before[-1].tau,
                                     rationale="unchanged, set by the client test")
        assert changed.version > before[-1].version
        assert [t.version for t in api.thresholds()][-1] == changed.version
        # extractive answers cite every sentence by construction: none counts for τ
        leverage = api.leverage()
        assert (leverage.runs, leverage.enough, leverage.delivery) == (0, False, [])
        assert leverage.tau == changed.tau and "at least 30" in leverage.note
    assert api.called >= set(c.OPERATION_IDS.values()), (
        set(c.OPERATION_IDS.values()) - api.called)


@KINDS
def test_iter_changes_pages_through_a_window_the_limit_would_cut(live: LiveServer,
                                                                 kind: str) -> None:
    who = make_tenant(live.services)
    with opened(kind, live.base_url, live.key(who)) as api:
        tx = [api.ingest(f"doc-{n}", POLICY.replace("2,80", f"2,{n}0"),
                         valid_from="2024-01-01").tx_time for n in range(5)]
        start = (datetime.fromisoformat(tx[0]) - timedelta(seconds=1)).isoformat()
        whole = api.changes(known_from=start, diff=False)
        pages = list(api.iter_changes(known_from=start, known_to=whole.window.known_to,
                                      limit=2, diff=False))
    assert whole.counts["appeared"] == 5 and not whole.truncated
    assert len(pages) >= 3 and not any(p.truncated for p in pages)
    # consecutive sub-windows of the requested one, in transaction-time order
    assert pages[0].window.known_from == whole.window.known_from
    assert pages[-1].window.known_to == whole.window.known_to
    assert all(a.window.known_to == b.window.known_from for a, b in itertools.pairwise(pages))
    listed = [(d.document, a.assertion_id) for p in pages for d in p.documents
              for a in d.appeared]
    assert listed == [(f"doc-{n}", n + 1) for n in range(5)]  # each once, in time order
    assert all(len(p.documents) <= 2 for p in pages)


@KINDS
def test_a_lost_ingest_response_is_sent_again_and_asserts_once(live: LiveServer,
                                                                kind: str) -> None:
    """The connection drops after the server has ingested: the client sends the same
    request again, the server recognises the version and range (content address) and
    asserts nothing new; a retraction, which is not idempotent, is not repeated."""
    who = make_tenant(live.services)
    sent: list[str] = []

    def lose(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        """The response of the first ingest and of the first retraction is lost."""
        sent.append(f"{request.method} {request.url.path}")
        if request.method == "POST" and sent.count(sent[-1]) == 1:
            raise httpx.ReadError("connection reset after the request was sent",
                                  request=request)
        return response

    class Sync(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = super().handle_request(request)
            response.read()
            return lose(request, response)

    class Async(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await super().handle_async_request(request)
            await response.aread()
            return lose(request, response)

    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    transport = Sync() if kind == "sync" else Async()
    with opened(kind, live.base_url, live.key(who), transport=transport,
                sleep=waits.append if kind == "sync" else async_sleep) as api:
        done = api.ingest("doc", POLICY, valid_from="2024-01-01")
        assert not done.created and not done.asserted  # the first attempt did the work
        assert waits == [1.0] and len(api.history("doc").assertions) == 1
        with pytest.raises(httpx.ReadError):
            api.retract("doc", valid_from="2025-01-01", reason="once")
        assert waits == [1.0]  # not repeated
    assert sent == ["POST /v1/documents/doc/versions"] * 2 + [
        "GET /v1/documents/doc/history", "POST /v1/documents/doc/retract"]
    # the retraction reached the server once: the 2024 assertion was closed and re-asserted
    rows = live.services.documents.history(who, "doc")
    assert len(rows) == 2 and rows[1].valid_to is not None


def test_problems_become_typed_exceptions_with_field_and_reason(live: LiveServer) -> None:
    who = make_tenant(live.services, "errors")
    with c.Client(live.base_url, live.key(who)) as api:
        with pytest.raises(c.Unprocessable) as bad:
            api.document("nothing", valid_at="not a date")
        assert bad.value.field == "valid_at" and bad.value.status == 422
        assert bad.value.reason and bad.value.problem.errors
        with pytest.raises(c.NotFound):
            api.version("b3:" + "0" * 64)
        with pytest.raises(c.Unprocessable) as no_quote:
            api.anchor([s.TextPositionSelector(start=0, end=1)], source="b3:" + "0" * 64)
        assert no_quote.value.field == "selector"
        with pytest.raises(c.BadRequest) as malformed:
            api.search("x", k="many")  # type: ignore[arg-type]
        assert malformed.value.field == "k"
        with pytest.raises(c.NotFound):
            api.run("nope")
    with c.Client(live.base_url, "stk_nope_nope") as stranger, pytest.raises(c.Unauthorized):
        stranger.history("x")
    with c.Client(live.base_url, live.key(who, scopes="read")) as reader:
        with pytest.raises(c.Forbidden) as refused:
            reader.retract("x", valid_from="2024-01-01", reason="no")
        assert "write" in refused.value.reason
        with pytest.raises(c.Forbidden):
            list(reader.export_lines())



def _client_doc_snippets() -> list[str]:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text(encoding="utf-8")
    section = doc.split("\n## ", 1)[0]  # the opening section, before any sub-heading
    return [block.split("\n", 1)[1] for block in section.split("```python")[1:]
            for block in [block.split("```", 1)[0]]]


def test_the_documented_snippets_with_and_without_the_client_run(
        live: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = _client_doc_snippets()
    lines = [len(code.strip().splitlines()) for code in snippets]
    assert lines == [5, 19, 8]  # the counts docs/client.md states: client, httpx, async
    (tmp_path / "deckrv.md").write_text(POLICY, encoding="utf-8")
    (tmp_path / "signing.pub").write_text(live.services.runlog.public_key(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for code in snippets:
        who = make_tenant(live.services)
        source = code.replace("http://127.0.0.1:8000", live.base_url)
        namespace: dict[str, object] = {"KEY": live.key(who)}
        exec(compile(source, "docs/client.md", "exec"), namespace)  # noqa: S102
        for value in namespace.values():  # a script may leave its client to the exit
            if isinstance(value, httpx.Client):
                value.close()
        assert live.services.runlog.head(who.tenant_id)[0] == 1  # the answer was logged
