"""``stichtag --url URL --key KEY …`` (app/stichtag/cli/remote.py) in a subprocess against a real
server on loopback: each remote command prints what the API returns, in the shape and
the human view of the local command (run in-process on the same services), with the CLI
conventions (exit codes 0/1/2/3, one-line errors on stderr); operator commands say they
need local access."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stichtag.cli import build_parser
from stichtag.cli.manifest import ingest_manifest
from stichtag.cli.output import (
    EXIT_ABSTAINED,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Output,
    error_line,
)
from tests.conftest import REPO, LiveServer, make_tenant
from tests.integration.test_answer_api import DEMO_DIR

ANSWERABLE = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
OFF_TOPIC = "Wie backe ich einen Apfelstrudel?"
DOC = "surplus-declaration"
FAR = "2026-11-30"  # known_at after every demo row: the reads do not depend on today


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Remote:
    """The CLI against the live server with one key, and the same tenant locally."""

    live: LiveServer
    tenant: str
    key: str
    tmp: Path

    def run(self, *argv: str, url: bool = True, env: dict[str, str] | None = None) -> Result:
        """``python -m stichtag.cli [--url U --key K] ARGV`` in a subprocess."""
        prefix = ["--url", self.live.base_url, "--key", self.key] if url else []
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("STICHTAG_URL", "STICHTAG_KEY")}
        # Nothing local to reach: a remote command must not need it.
        environment.update({"STICHTAG_DATA_DIR": str(self.tmp / "nowhere"),
                            "STICHTAG_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none",
                            **(env or {})})
        done = subprocess.run([sys.executable, "-m", "stichtag.cli", *prefix, *argv],
                              cwd=REPO, env=environment, capture_output=True, text=True,
                              timeout=120, check=False)
        result = Result(done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in result.err, result.err
        if result.code == EXIT_ERROR:
            assert result.err.count("\n") == 1, result.err
            assert result.err.startswith("stichtag: error: "), result.err
        if result.code in (EXIT_OK, EXIT_ABSTAINED):
            assert "error" not in result.err, result.err
        return result

    def local(self, *argv: str) -> Result:
        """The same command run locally, in-process on the server's services."""
        args = build_parser().parse_args([*argv, "--tenant", self.tenant])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = args.handler(self.live.services, args, Output(as_json=args.json))
            except CliError as exc:
                print(error_line(exc), file=sys.stderr)
                code = EXIT_ERROR
        return Result(EXIT_OK if code is None else code, out.getvalue(), err.getvalue())

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        with self.live.client(self.key) as http:
            response = http.request(method, path, **kwargs)
            assert response.is_success, response.text
            return response.json()


@pytest.fixture
def remote(live: LiveServer, tmp_path: Path) -> Iterator[Remote]:
    name = f"remote-{uuid.uuid4().hex[:8]}"
    who = make_tenant(live.services, name, time_zone="Europe/Berlin")
    ingest_manifest(live.services, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(who.tenant_id)
    yield Remote(live=live, tenant=name, key=live.key(who), tmp=tmp_path)


ASSERTION = ("assertion_id", "version_id", "valid_from", "valid_to", "tx_from", "tx_to",
             "confidentiality", "ended", "provenance")


def test_reads_print_what_the_api_returns_as_the_local_command_does(remote: Remote) -> None:
    at = ("--valid-at", "2022-06-01", "--known-at", FAR)
    got = remote.run("get", DOC, *at, "--json", "--text")
    assert got.code == EXIT_OK
    api = remote.api("GET", f"/v1/documents/{DOC}",
                     params={"valid_at": "2022-06-01", "known_at": FAR})
    assert got.json() == {"document": DOC, "as_of": {k: api["as_of"][k] for k in (
        "valid_at", "known_at")}, "text": api["text"],
        **{k: api["assertion"][k] for k in ASSERTION}}
    assert got.json()["as_of"]["valid_at"] == "2022-05-31T22:00:00Z"  # the tenant's zone
    assert got.json() == remote.local("get", DOC, *at, "--json", "--text").json()
    assert remote.run("get", DOC, *at).out == remote.local("get", DOC, *at).out

    history = remote.run("history", DOC, "--json")
    api = remote.api("GET", f"/v1/documents/{DOC}/history")
    assert history.json() == [{k: a[k] for k in ASSERTION} for a in api["assertions"]]
    assert history.json() == remote.local("history", DOC, "--json").json()
    human = remote.run("history", DOC)
    assert human.code == EXIT_OK and human.out == remote.local("history", DOC).out

    # A window into the future is read as ending now; its echoed end, asked again by
    # every client, gives the same report.
    api = remote.api("GET", "/v1/changes",
                     params={"known_from": "2000-01-01", "known_to": "2100-01-01"})
    known_to = api["window"]["known_to"]
    assert not known_to.startswith("2100")
    window = ("--known-from", "2000-01-01", "--known-to", known_to)
    changes = remote.run("changes", *window, "--json")
    assert changes.json() == api == remote.local("changes", *window, "--json").json()
    assert remote.run("changes", *window).out == remote.local("changes", *window).out

    missing = remote.run("get", "no-such-document")
    assert missing.code == EXIT_ERROR and "not found" in missing.err.lower()


def test_search_ask_replay_and_the_log_through_the_server(remote: Remote) -> None:
    search = remote.run("search", "Höchstrechnungszins", "--valid-at", "2022-06-01", "-k",
                        "3", "--json")
    assert search.code == EXIT_OK
    data = search.json()
    run = remote.api("GET", f"/v1/runs/{data['run_id']}")
    assert run["kind"] == "search"
    api = remote.api("POST", "/v1/search", json={"query": "Höchstrechnungszins",
                                                 "valid_at": "2022-06-01", "k": 3})
    assert [(h["document"], h["version_id"], h["start"], h["end"], h["bm25"], h["fused"])
            for h in data["hits"]] == [
        (h["document"], h["version_id"], h["start"], h["end"], h["scores"]["bm25"],
         h["scores"]["fused"]) for h in api["hits"]]
    local = remote.local("search", "Höchstrechnungszins", "--valid-at", "2022-06-01", "-k",
                         "3", "--json").json()
    assert local["hits"] == data["hits"] and local.keys() == data.keys()

    answered = remote.run("ask", ANSWERABLE, "--valid-at", "2022-06-01", "--json")
    assert answered.code == EXIT_OK, answered.err
    answer = answered.json()
    assert answer["status"] in ("answered", "partial") and answer["sentences"]
    local = remote.local("ask", ANSWERABLE, "--valid-at", "2022-06-01", "--json").json()
    assert local.keys() == answer.keys()
    assert local["sentences"] == answer["sentences"]
    record = remote.api("GET", f"/v1/runs/{answer['run_id']}")["record"]
    assert record["run_id"] == answer["run_id"]
    human = remote.run("ask", ANSWERABLE, "--valid-at", "2022-06-01")
    assert human.code == EXIT_OK and human.out.startswith(answer["status"])
    abstained = remote.run("ask", OFF_TOPIC, "--json")
    assert abstained.code == EXIT_ABSTAINED and abstained.json()["status"] == "abstained"
    assert abstained.json()["next_step"]

    replay = remote.run("replay", answer["run_id"], "--json")
    assert replay.code == EXIT_OK and replay.json()["reproduced"] is True
    assert replay.json().keys() == remote.local("replay", answer["run_id"], "--json").json().keys()
    impact = remote.run("impact", "--json")
    assert impact.code == EXIT_OK and impact.json() == remote.api("GET", "/v1/impact")["runs"]
    gaps = remote.run("gaps", "--json")
    assert gaps.code == EXIT_OK and gaps.json() == remote.api("GET", "/v1/gaps")["groups"]

    checkpoint = remote.api("GET", "/v1/log/checkpoint")
    exported = remote.run("log", "export")
    lines = exported.out.splitlines()
    assert exported.code == EXIT_OK and len(lines) == checkpoint["size"] + 2
    assert lines[:-1] == remote.local("log", "export").out.splitlines()[:-1]
    target = remote.tmp / "log.jsonl"
    written = remote.run("log", "export", "-o", str(target), "--json")
    assert written.json() == {"written": str(target), "lines": len(lines)}
    pem = remote.run("log", "public-key")
    assert pem.out == remote.live.services.runlog.public_key()
    (remote.tmp / "log.pem").write_text(pem.out, encoding="utf-8")
    note = remote.run("log", "checkpoint")
    assert note.code == EXIT_OK and note.out.splitlines()[1] == str(checkpoint["size"])
    # log verify is offline: with --url it still reads only the files
    verified = remote.run("log", "verify", str(target), "--public-key",
                          str(remote.tmp / "log.pem"), "--json")
    assert verified.code == EXIT_OK and verified.json()["ok"] is True


def test_review_and_ingest_through_the_server(remote: Remote) -> None:
    assert remote.run("ask", ANSWERABLE, "--valid-at", "2022-06-01").code == EXIT_OK
    sample = remote.run("review", "sample", "--seed", "7", "-n", "5", "--json")
    assert sample.code == EXIT_OK, sample.err
    drawn = sample.json()
    stored = remote.api("GET", f"/v1/review/samples/{drawn['sample_id']}")
    assert drawn == {k: stored[k] for k in ("sample_id", "seed", "strata", "n_per_stratum",
                                            "population")} | {"items": len(stored["items"])}
    shown = remote.run("review", "show", drawn["sample_id"], "--json")
    assert shown.json()["items"] == stored["items"]
    assert shown.json() == remote.local("review", "show", drawn["sample_id"], "--json").json()
    verdict = remote.run("review", "verdict", drawn["sample_id"], "1", "full", "--json")
    assert verdict.code == EXIT_OK and verdict.json()["item"] == 1
    assert verdict.json()["reviewer"] != "cli"  # recorded by the key, not the operator
    report = remote.run("review", "report", drawn["sample_id"], "--json")
    assert report.json() == remote.api("GET",
                                       f"/v1/review/samples/{drawn['sample_id']}/report")
    assert report.json() == remote.local("review", "report", drawn["sample_id"],
                                         "--json").json()

    file = remote.tmp / "returns.md"
    file.write_text("# Rückkauf\n\n(1) Der Rückkaufswert beträgt 90 Prozent.\n",
                    encoding="utf-8")
    first = remote.run("ingest", str(file), "--valid-from", "2024-01-01", "--json")
    again = remote.run("ingest", str(file), "--valid-from", "2024-01-01", "--json")
    assert first.json() == {"rows": 1, "versions_created": 1, "assertions": 1, "unchanged": 0}
    assert again.json() == {"rows": 1, "versions_created": 0, "assertions": 0, "unchanged": 1}
    assert len(remote.api("GET", "/v1/documents/returns/history")["assertions"]) == 1


def test_operator_commands_and_bad_remote_lines_say_what_is_wrong(remote: Remote) -> None:
    for argv in (["tenants", "create", "x"], ["keys", "list"], ["index", "check"], ["serve"],
                 ["models", "build"], ["demo"], ["review", "export-labels", "S", "--out", "f"]):
        refused = remote.run(*argv)
        assert refused.code == EXIT_USAGE, (argv, refused)
        assert "needs local access" in refused.err and "--url" in refused.err
    manifest = remote.run("ingest", "--manifest", str(DEMO_DIR / "manifest.csv"))
    assert manifest.code == EXIT_USAGE and "needs local access" in manifest.err
    tenant = remote.run("history", DOC, "--tenant", remote.tenant)
    assert tenant.code == EXIT_USAGE and "the key decides the tenant" in tenant.err
    no_key = remote.run("--url", remote.live.base_url, "history", DOC, url=False)
    assert no_key.code == EXIT_USAGE and "--key" in no_key.err
    local_without_tenant = remote.run("history", DOC, url=False)
    assert local_without_tenant.code == EXIT_USAGE and "--tenant" in local_without_tenant.err

    stranger = remote.run("--url", remote.live.base_url, "--key", "stk_nope_nope",
                          "history", DOC, url=False)
    assert stranger.code == EXIT_ERROR
    assert "unauthorized (http 401): A valid API key" in stranger.err
    bad_time = remote.run("get", DOC, "--valid-at", "gestern")
    assert bad_time.code == EXIT_ERROR and bad_time.err.startswith("stichtag: error: valid_at:")
    down = remote.run("--url", "http://127.0.0.1:9", "--key", remote.key, "history", DOC,
                      url=False)
    assert down.code == EXIT_ERROR and "cannot reach" in down.err

    from_env = remote.run("history", DOC, "--json", url=False, env={
        "STICHTAG_URL": remote.live.base_url, "STICHTAG_KEY": remote.key})
    assert from_env.code == EXIT_OK and from_env.json() == remote.run("history", DOC,
                                                                      "--json").json()
