"""The typed client (stichtag/client.py) against a real server on loopback: every method it
offers, typed results, and problem+json as typed exceptions with field and reason
(retries after Retry-After: tests/integration/test_client_retry.py)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from stichtag import client as c
from stichtag.api import schemas as s
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import LiveServer, make_tenant
from tests.integration.test_answer_api import DEMO_DIR

POLICY = "# Überschussbeteiligung\n\n(1) Der Deklarationssatz beträgt 2,80 Prozent.\n"


def test_every_client_method_against_a_real_server(live: LiveServer, tmp_path: Path) -> None:
    who = make_tenant(live.services, "client")
    ingest_manifest(live.services, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(who.tenant_id)
    file = tmp_path / "returns.md"
    file.write_text(POLICY, encoding="utf-8")
    with c.Client(live.base_url, live.key(who)) as api:
        first = api.ingest_file("returns", file, media_type="text/markdown",
                                valid_from="2023-01-01")
        again = api.ingest("returns", POLICY, valid_from="2023-01-01")
        assert isinstance(first, s.IngestResponse) and first.created and not again.created
        assert again.version_id == first.version_id

        doc = api.document("returns", valid_at="2023-06-01", include_sentences=True)
        assert doc.text == POLICY and doc.sentences and doc.as_of.valid_at.startswith("2023")
        assert [a.version_id for a in api.history("returns").assertions] == [
            first.version_id]
        version = api.version(first.version_id)
        assert version.text == POLICY and version.length == len(POLICY)

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

        run = api.run(answer.run_id)
        assert run.kind == "answer" and run.record["run_id"] == answer.run_id
        assert api.replay(answer.run_id).reproduced

        changes = api.changes(known_from="2000-01-01", known_to="2100-01-01",
                              document="returns")
        assert [d.document for d in changes.documents] == ["returns"]
        retracted = api.retract("returns", valid_from="2024-01-01", reason="test")
        assert retracted.closed and retracted.opened

        checkpoint = api.checkpoint()
        assert checkpoint.size == 2  # the search and the answer run
        proof = api.inclusion(1)
        assert proof.seq == 1 and proof.size == checkpoint.size
        assert api.consistency(1).new == checkpoint.size
        lines = list(api.export_lines())
        assert json.loads(lines[0])["format"] == "stichtag-log-export/1"
        assert len(lines) == checkpoint.size + 2
        report = api.verify_log(live.services.runlog.public_key().encode())
        assert report.problems == () and report.record_count == checkpoint.size


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



def _readme_snippets() -> list[str]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The Python client", 1)[1].split("\n### ", 1)[0]
    return [block.split("\n", 1)[1] for block in section.split("```python")[1:]
            for block in [block.split("```", 1)[0]]]


def test_the_readme_snippets_with_and_without_the_client_run(
        live: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_client, without = _readme_snippets()
    lines = [len(code.strip().splitlines()) for code in (with_client, without)]
    assert lines == [5, 19]  # the counts the README states
    (tmp_path / "deckrv.md").write_text(POLICY, encoding="utf-8")
    (tmp_path / "signing.pub").write_text(live.services.runlog.public_key(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for code in (with_client, without):
        who = make_tenant(live.services)
        source = code.replace("http://127.0.0.1:8000", live.base_url)
        namespace: dict[str, object] = {"KEY": live.key(who)}
        exec(compile(source, "README.md", "exec"), namespace)  # noqa: S102
        for value in namespace.values():  # a script may leave its client to the exit
            if isinstance(value, httpx.Client):
                value.close()
        assert live.services.runlog.head(who.tenant_id)[0] == 1  # the answer was logged
