"""Evidence for an outside formulator and the grounding check of what it wrote, over HTTP
against a real server on the DeckRV of the law corpus (docs/assistants.md, "What the
check guarantees"): markers of an evidence run, quotes at the as-of pair, the reasons, τ,
the recorded run and its replay, the tenant wall and clearance."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stichtag.api import schemas as s
from stichtag.cli import main
from stichtag.client import Client
from stichtag.client.errors import NotFound
from tests.conftest import Cluster
from tests.integration.deckrv_server import (
    FOREIGN,
    HIGH_NOTE,
    IN_2021,
    IN_2022,
    QUESTION,
    DeckrvServer,
    serve_deckrv,
)


@pytest.fixture(scope="module")
def server(cluster: Cluster, models_dir: Path, embedder: Any,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeckrvServer]:
    yield from serve_deckrv(cluster, models_dir, embedder, tmp_path_factory.mktemp("deckrv"))


@pytest.fixture(scope="module")
def law(server: DeckrvServer) -> Iterator[Client]:
    with Client(server.base_url, server.key(server.law, scopes="read,audit,admin")) as c:
        yield c


def _in_force(server: DeckrvServer, law: Client, valid_at: str) -> tuple[str, str]:
    doc = law.document("deckrv", valid_at=valid_at)
    return doc.version_id, server.text(doc.version_id)


def _sentences(server: DeckrvServer, version_id: str, n: int,
               needle: str = "") -> list[tuple[int, int]]:
    """The first ``n`` statement sentences of a version (headings skipped) that contain
    ``needle``, as (start, end)."""
    content = server.svc.documents.version(server.law, version_id)
    out = [(x.start, x.end) for x in content.sentences
           if x.end - x.start > 40 and needle in content.text[x.start:x.end]]
    assert len(out) >= n, (version_id, needle, len(out))
    return out[:n]


def test_evidence_then_markers_is_answered_and_replays(server: DeckrvServer,
                                                       law: Client) -> None:
    got = law.evidence(QUESTION, valid_at=IN_2022)
    assert got.status == "ready" and got.evidence, got
    version_2022, _ = _in_force(server, law, IN_2022)
    for e in got.evidence:  # every quote is the text at its offsets
        assert server.text(e.version_id)[e.start:e.end] == e.quote
    hit = next(e for e in got.evidence if "0,25 Prozent" in e.quote)
    assert hit.version_id == version_2022 and hit.document == "deckrv"
    answer = (f"Der Höchstzinssatz für die Deckungsrückstellungen beträgt 0,25 Prozent "
              f"[{hit.n}]. Er gilt für Verträge mit Zinsgarantie in Euro [{hit.n}].")
    checked = law.check_answer(answer, run_id=got.run_id)
    assert (checked.status, checked.coverage) == ("answered", 1.0), checked
    assert checked.evidence_run == got.run_id and checked.source_line == ["deckrv"]
    assert [c.quote for c in checked.sentences[0].citations] == [hit.quote]
    record = law.run(checked.run_id)
    assert record.kind == "check" and record.record["evidence_run"] == got.run_id
    assert record.record["provenance"]["cited"] == ["deckrv"]
    assert law.run(got.run_id).kind == "evidence"
    for run_id in (got.run_id, checked.run_id):
        verdict = law.replay(run_id)
        assert verdict.reproduced, verdict


def test_a_marker_outside_the_evidence_rejects_the_whole_answer(law: Client) -> None:
    got = law.evidence(QUESTION, valid_at=IN_2022)
    assert got.status == "ready"
    invented = len(got.evidence) + 7
    answer = (f"Der Höchstzinssatz beträgt 0,25 Prozent [1]. Das gilt seit 2022 [1]. "
              f"Er sinkt 2026 auf null [{invented}].")
    checked = law.check_answer(answer, run_id=got.run_id)
    assert (checked.status, checked.reason) == ("abstained", "invented_citation")
    assert checked.detail is not None and f"[{invented}]" in checked.detail
    assert checked.gates[-1].gate == "citations" and checked.source_line == []
    assert law.replay(checked.run_id).reproduced


def _quote_check(law: Client, quotes: list[tuple[int, int]], text: str, *,
                 valid_at: str, version_id: str | None = None,
                 change: int | None = None, uncited: int = 0,
                 shift: int = 0) -> s.CheckResponse:
    """An answer of ``len(quotes) + uncited`` sentences, each quoted one citing its quote."""
    sentences = [f"Satz {i + 1} gibt die Verordnung wieder." for i in range(len(quotes))]
    sentences += [f"Satz {len(quotes) + i + 1} ist eine eigene Meinung." for i in range(uncited)]
    cites = []
    for i, (start, end) in enumerate(quotes):
        quote = text[start:end]
        if i == change:  # one character differs from the source
            quote = quote[:5] + ("X" if quote[5] != "X" else "Y") + quote[6:]
        cites.append(s.QuoteCitationBody(sentence=i, document="deckrv", quote=quote,
                                         version_id=version_id, start=start + shift,
                                         end=end + shift))
    return law.check_answer(" ".join(sentences), citations=cites, valid_at=valid_at)


def test_quotes_exact_reanchored_and_one_character_off(server: DeckrvServer,
                                                       law: Client) -> None:
    version_id, text = _in_force(server, law, IN_2022)
    quotes = _sentences(server, version_id, 3, "Prozent")
    exact = _quote_check(law, quotes, text, valid_at=IN_2022, version_id=version_id)
    assert exact.status == "answered", exact
    for (start, end), sentence in zip(quotes, exact.sentences, strict=True):
        (c,) = sentence.citations
        assert (c.start, c.end, c.quote) == (start, end, text[start:end])
        assert c.version_id == version_id and not sentence.references[0].reanchored
    moved = _quote_check(law, quotes, text, valid_at=IN_2022, shift=3)
    assert moved.status == "answered"
    assert all(x.references[0].reanchored for x in moved.sentences)
    assert [(x.citations[0].start, x.citations[0].end) for x in moved.sentences] == quotes
    off = _quote_check(law, quotes, text, valid_at=IN_2022, change=1)
    assert (off.status, off.reason) == ("abstained", "quote_not_in_source")
    assert off.sentences[1].references[0].failure == "quote_not_in_source"
    assert law.replay(off.run_id).reproduced


def test_a_version_not_in_force_is_named(server: DeckrvServer, law: Client) -> None:
    old_version, old_text = _in_force(server, law, IN_2021)
    quotes = _sentences(server, old_version, 1, "0,9 Prozent")
    then = _quote_check(law, quotes, old_text, valid_at=IN_2021, version_id=old_version)
    assert then.status == "answered"
    now = _quote_check(law, quotes, old_text, valid_at=IN_2022, version_id=old_version)
    assert (now.status, now.reason) == ("abstained", "not_visible_at_as_of")
    # without a version: the quote is looked up in the version in force, where it is not
    gone = _quote_check(law, quotes, old_text, valid_at=IN_2022)
    assert (gone.status, gone.reason) == ("abstained", "quote_not_in_source")


def test_other_tenants_and_higher_clearances_are_quotes_not_in_source(
        server: DeckrvServer, law: Client) -> None:
    got = law.evidence(QUESTION, valid_at=IN_2022)
    internal = server.key(server.law, scopes="read", clearance=1)
    with Client(server.base_url, server.key(server.other, scopes="read,audit")) as other, \
            Client(server.base_url, internal) as low:
        with pytest.raises(NotFound):  # the law tenant's run is no run of the other
            other.check_answer("Der Satz gilt [1].", run_id=got.run_id)
        with pytest.raises(NotFound):
            other.run(got.run_id)
        cases = [(law, "fremdnotiz", FOREIGN), (low, "tarifnotiz", HIGH_NOTE),
                 (law, "erfundennotiz", HIGH_NOTE)]
        verdicts = []
        for client, document, text in cases:
            quote = next(line for line in text.splitlines() if "Prozent" in line)
            r = client.check_answer("Der Zins beträgt 0,15 Prozent.", valid_at=IN_2022,
                                    citations=[s.QuoteCitationBody(
                                        sentence=0, document=document, quote=quote)])
            verdicts.append((r.status, r.reason, r.coverage, r.source_line,
                             r.detail.replace(document, "D") if r.detail else None,
                             [c for x in r.sentences for c in x.citations]))
        assert verdicts[0] == verdicts[1] == verdicts[2]
        assert verdicts[0][:2] == ("abstained", "quote_not_in_source")
        # the operator's key reads the secret note: the same quote resolves
        quote = next(line for line in HIGH_NOTE.splitlines() if "Prozent" in line)
        ok = law.check_answer("Der Zins beträgt 0,15 Prozent.", valid_at=IN_2022,
                              citations=[s.QuoteCitationBody(sentence=0, document="tarifnotiz",
                                                             quote=quote)])
        assert ok.status == "answered"


def test_the_command_line_fetches_evidence_and_checks_a_file(
        server: DeckrvServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = ["--url", server.base_url, "--key", server.key(server.law, scopes="read")]
    assert main([*line, "ask", "--evidence", QUESTION, "--valid-at", IN_2022, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    n = next(e["n"] for e in got["evidence"] if "0,25 Prozent" in e["quote"])
    body = tmp_path / "answer.json"
    body.write_text(json.dumps({"run_id": got["run_id"],
                                "answer": f"Der Höchstzinssatz beträgt 0,25 Prozent [{n}]."}),
                    encoding="utf-8")
    assert main([*line, "check", str(body), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "answered"
    body.write_text(json.dumps({"run_id": got["run_id"], "answer": "Er gilt ewig [99]."}),
                    encoding="utf-8")
    assert main([*line, "check", str(body)]) == 3  # abstained, printed in full
    assert "invented_citation" in capsys.readouterr().out
    assert main(["check", str(body)]) == 2  # without a server: a usage error
    assert "needs a server" in capsys.readouterr().err


def test_one_uncited_sentence_of_ten_passes_at_08_and_fails_at_095(server: DeckrvServer,
                                                                   law: Client) -> None:
    version_id, text = _in_force(server, law, IN_2022)
    quotes = _sentences(server, version_id, 9)
    theta_rel = server.svc.thresholds.current(server.law.tenant_id).theta_rel
    try:
        law.set_thresholds(theta_rel=theta_rel, tau=0.8, rationale="grounding test: tau 0.8")
        passed = _quote_check(law, quotes, text, valid_at=IN_2022, uncited=1)
        assert (passed.status, passed.coverage) == ("partial", 0.9), passed
        assert passed.gaps == ["Satz 10 ist eine eigene Meinung."]
        law.set_thresholds(theta_rel=theta_rel, tau=0.95, rationale="grounding test: 0.95")
        failed = _quote_check(law, quotes, text, valid_at=IN_2022, uncited=1)
        assert (failed.status, failed.reason) == ("abstained", "below_coverage")
        assert (failed.threshold, failed.observed) == (0.95, 0.9)
        assert law.replay(failed.run_id).reproduced
    finally:
        law.set_thresholds(theta_rel=theta_rel, tau=1.0, rationale="grounding test: back")

def test_the_leverage_of_tau_is_measured_on_recorded_checks(server: DeckrvServer) -> None:
    leverage = server.svc.leverage
    assert leverage is not None
    before = leverage.report(server.law).runs
    with Client(server.base_url, server.key(server.law, scopes="read")) as law:
        version_id, text = _in_force(server, law, IN_2022)
        quotes = _sentences(server, version_id, 10)
        for i in range(32):  # 10, 9 or 8 of ten sentences cited
            _quote_check(law, quotes[:10 - i % 3], text, valid_at=IN_2022, uncited=i % 3)
    out = leverage.report(server.law)
    assert out.runs == before + 32 and out.enough, out.note
    assert out.sentences == 10 and out.presence is not None
    assert out.leverage_measured is not None and out.leverage_binomial is not None
    observed = {d.tau: d.observed for d in out.delivery}
    assert observed[1.0] < observed[0.8] <= 1.0
