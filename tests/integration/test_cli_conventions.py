"""The command line's conventions as a table, run in-process against a real database.

Each row: the arguments, the exit code, what stdout and stderr must contain. Every row
also checks what holds for all commands: no traceback; an error (exit 1) is exactly one
line ``stichtag: error: <field>: <reason>`` on stderr; a result (exit 0 or 3) writes
nothing that looks like an error; ``--json`` output parses. The exit codes are those
``stichtag --help`` lists (0 ok, 1 error, 2 usage, 3 abstained).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import bootstrap
from stichtag.cli import build_parser, main
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.cli.output import EXIT_ABSTAINED, EXIT_ERROR, EXIT_OK, EXIT_USAGE
from stichtag.config import Settings
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from tests.conftest import REPO, TEMPLATE, Cluster

T = "conv"
ANSWERABLE = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
OFF_TOPIC = "Wie backe ich einen Apfelstrudel?"


@dataclass(frozen=True)
class Row:
    """One convention: ``{tmp}`` in an argument or a variable is the row's scratch dir."""

    name: str
    argv: list[str]
    code: int
    out: tuple[str, ...] = ()
    err: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


ROWS = [
    # --help everywhere, with examples and the exit codes
    Row("help", ["--help"], EXIT_OK, out=("exit codes:", "3  ask abstained",
                                          "--json works before or after")),
    Row("help-command", ["tenants", "create", "--help"], EXIT_OK,
        out=("example", "stichtag tenants create acme", "--json")),
    Row("help-ask", ["ask", "--help"], EXIT_OK, out=("exits with code 3", "examples:")),
    # usage errors are argparse's own: exit 2, its message on stderr
    Row("no-command", [], EXIT_USAGE, err=("usage: stichtag", "required: COMMAND")),
    Row("unknown-command", ["frobnicate"], EXIT_USAGE, err=("invalid choice: 'frobnicate'",)),
    Row("missing-argument", ["tenants", "create"], EXIT_USAGE, err=("required: name",)),
    Row("bad-type", ["search", "--tenant", T, "Zins", "-k", "many"], EXIT_USAGE,
        err=("invalid int value: 'many'",)),
    Row("unknown-option", ["get", "--tenant", T, "deckrv", "--as-of", "2022"], EXIT_USAGE,
        err=("unrecognized arguments: --as-of",)),
    Row("option-combination", ["ingest", "--tenant", T], EXIT_USAGE,
        err=("stichtag: error: give FILE… or --manifest CSV",)),
    Row("option-needs-manifest", ["ingest", "--tenant", T, "--interactive", "{tmp}/a.md"],
        EXIT_USAGE, err=("stichtag: error: --interactive goes with --manifest",)),
    # --json before the command, after it, or after the group
    Row("json-after", ["tenants", "create", "hotel", "--json"], EXIT_OK,
        out=('"name": "hotel"',)),
    Row("json-before", ["--json", "tenants", "create", "india"], EXIT_OK,
        out=('"name": "india"',)),
    Row("json-after-group", ["tenants", "--json", "create", "juliet"], EXIT_OK,
        out=('"name": "juliet"',)),
    Row("json-read", ["get", "--tenant", T, "surplus-declaration", "--valid-at", "2022-06-01",
                      "--known-at", "2021-06-01", "--json"], EXIT_OK,
        out=('"valid_at": "2022-05-31T22:00:00Z"',)),  # a plain date in the tenant's zone
    # expected errors: exit 1, one line naming the field and the reason
    Row("conflict", ["tenants", "create", T], EXIT_ERROR,
        err=(f"stichtag: error: name: tenant '{T}' exists",)),
    Row("unknown-tenant", ["keys", "list", "--tenant", "nobody"], EXIT_ERROR,
        err=("stichtag: error: tenant: unknown tenant 'nobody'", "tenants create nobody")),
    Row("not-found", ["get", "--tenant", T, "no-such-document"], EXIT_ERROR,
        err=("stichtag: error: document: not found",)),
    Row("bad-time", ["get", "--tenant", T, "surplus-declaration", "--valid-at", "gestern"],
        EXIT_ERROR, err=("stichtag: error: valid_at: ",)),
    Row("invalid", ["keys", "create", "--tenant", T, "--scopes", "root"], EXIT_ERROR,
        err=("stichtag: error: scopes: unknown scope 'root'",)),
    Row("bad-text", ["ingest", "--tenant", T, "{tmp}/latin1.md"], EXIT_ERROR,
        err=("stichtag: error: text: ",)),
    Row("missing-file", ["ingest", "--tenant", T, "{tmp}/missing.md"], EXIT_ERROR,
        err=("missing.md: No such file or directory",)),
    Row("missing-file-offline", ["log", "verify", "{tmp}/log.jsonl", "--public-key",
                                 "{tmp}/none.pem"], EXIT_ERROR,
        err=("none.pem: No such file or directory",)),
    Row("database-down", ["tenants", "create", "kilo"], EXIT_ERROR,
        err=("stichtag: error: database: ", "port 1"),
        env={"STICHTAG_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}),
    Row("bad-settings", ["tenants", "create", "lima"], EXIT_ERROR,
        err=("stichtag: error: STICHTAG_LOG_FORMAT",), env={"STICHTAG_LOG_FORMAT": "xml"}),
    Row("models-missing", ["ask", "--tenant", T, ANSWERABLE], EXIT_ERROR,
        err=("stichtag: error: no embedding model", "stichtag models build"),
        env={"STICHTAG_MODELS_DIR": "{tmp}/no-models"}),
    # results: an answer 0, an abstention 3 and printed in full, a failed check 1
    Row("answered", ["ask", "--tenant", T, ANSWERABLE, "--valid-at", "2022-06-01"], EXIT_OK,
        out=("- ", "[surplus-declaration b3:", "run ")),
    Row("abstained", ["ask", "--tenant", T, OFF_TOPIC], EXIT_ABSTAINED,
        out=("abstained (out_of_scope: observed", "threshold", "next step: ", "run ")),
    Row("abstained-json", ["ask", "--tenant", T, OFF_TOPIC, "--json"], EXIT_ABSTAINED,
        out=('"status": "abstained"', '"reason": "out_of_scope"', '"next_step"')),
    Row("check-ok", ["index", "check", "--tenant", T], EXIT_OK, out=("differences 0",)),
    # an import into the past the fixture's search observed (docs/architecture.md §3.6)
    Row("observed-past", ["ingest", "--tenant", T, "--manifest", "{tmp}/late/manifest.csv"],
        EXIT_ERROR, err=("stichtag: error: ", "manifest.csv:2 (surplus-declaration): tx_time: "
                         "must be after the tenant's transaction clock 20",)),
    # a --known-at after now is read as now, and the output says what was asked for
    Row("future-known-at", ["get", "--tenant", T, "surplus-declaration", "--known-at",
                            "2099-01-01", "--json"], EXIT_OK,
        out=('"known_at_requested": "2098-12-31T23:00:00Z"',)),
    # progress on stderr: a pipe gets a line every N files and the last, stdout the result
    Row("ingest-progress", ["ingest", "--tenant", T, "--progress-every", "2", "{tmp}/many/a.md",
                            "{tmp}/many/b.md", "{tmp}/many/c.md", "--valid-from", "2020-01-01"],
        EXIT_OK, out=("ingested: rows 3, versions_created 3",),
        err=("ingest 2/3 files · 6 B of 9 B", "ingest 3/3 files · 9 B of 9 B", "files/s",
             " B/s · c ")),
    # make serve: the demo's calls, then what runs next and how to stop it
    Row("demo", ["demo", "--tenant", "demo-conv"], EXIT_OK,
        out=("Admin key (shown once", "What is the maximum entry age?", "Running next",
             "console     http://", "stichtag keys create --tenant demo-conv", "data        ",
             "Ctrl+C", "stichtag db stop")),
    Row("demo-again", ["demo", "--tenant", T], EXIT_OK,
        out=(f"demo tenant '{T}' exists", "Running next", "Ctrl+C", "stichtag db stop")),
    Row("verify-fails", ["log", "verify", "{tmp}/log.jsonl", "--public-key", "{tmp}/log.pem"],
        EXIT_ERROR, out=("FAILED",), err=("stichtag: error: log: the export does not verify",)),
]


@pytest.fixture(scope="module")
def env(cluster: Cluster, models_dir: Path, embedder: Any,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A database with the demo corpus in tenant T, loaded and embedded once; yields the
    STICHTAG_* variables the CLI reads."""
    name = f"t_{os.getpid()}_cli_conv_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    url = cluster.database_url(name, role=APP_ROLE)
    data_dir = tmp_path_factory.mktemp("cli-conventions") / "data"
    svc = bootstrap(Settings(data_dir=data_dir, database_url=url, pool_min=1, pool_max=2,
                             models_path=models_dir), run_migrations=False, embedder=embedder)
    try:
        svc.access.create_tenant(T, "Europe/Berlin")
        who = svc.access.operator(T)
        ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        svc.search.search(who, "Höchstrechnungszins", valid_at=svc.clock.now(),
                          known_at=svc.clock.now(), k=3)  # one record for the log rows
        log = data_dir.parent / "log"
        log.mkdir()
        header, _record, *rest = svc.runlog.export(who.tenant_id)
        # The export without its one record: verify must report the deletion.
        (log / "log.jsonl").write_text("".join(line + "\n" for line in (header, *rest)),
                                       encoding="utf-8")
        (log / "log.pem").write_text(svc.runlog.public_key(), encoding="utf-8")
        (log / "latin1.md").write_bytes("Höchstzins".encode("latin-1"))
        many = log / "many"  # three files of three bytes each, for the progress lines
        many.mkdir()
        for name in "abc":
            (many / f"{name}.md").write_text(f"{name}{name}\n", encoding="utf-8")
        late = log / "late"  # after the demo's last tx_time, before the search above
        late.mkdir()
        (late / "v.md").write_text("# Überschussdeklaration 2027\n\nNeu.\n", encoding="utf-8")
        (late / "manifest.csv").write_text(
            "tx_time,document,action,valid_from,file\n"
            "2025-12-01,surplus-declaration,ingest,2027-01-01,v.md\n", encoding="utf-8")
        yield {"STICHTAG_DATABASE_URL": url, "STICHTAG_DATA_DIR": str(data_dir),
               "STICHTAG_MODELS_DIR": str(models_dir), "{tmp}": str(log)}
    finally:
        svc.close()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_cli_convention(row: Row, env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    tmp = env["{tmp}"]
    for key, value in {**env, **row.env}.items():
        if key != "{tmp}":
            monkeypatch.setenv(key, value.replace("{tmp}", tmp))
    monkeypatch.delenv("STICHTAG_LOG_LEVEL", raising=False)
    capsys.readouterr()
    code = main([arg.replace("{tmp}", tmp) for arg in row.argv])
    out, err = capsys.readouterr()
    assert code == row.code, (out, err)
    for text in row.out:
        assert text in out, (text, out)
    for text in row.err:
        assert text in err, (text, err)
    assert "Traceback" not in err
    if code == EXIT_ERROR:
        assert err.count("\n") == 1 and err.startswith("stichtag: error: "), err
    if code in (EXIT_OK, EXIT_ABSTAINED):
        assert "error" not in err, err
    if code == EXIT_USAGE and "--help" not in row.argv:
        assert "error: " in err.strip().splitlines()[-1], err
    if "--json" in row.argv and code != EXIT_USAGE:
        json.loads(out)


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
              ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and command group below ``parser``, with its path."""
    for action in parser._actions:  # argparse offers no public walk
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name), child
                yield from _commands(child, (*path, name))


def test_every_command_has_help_with_an_example_and_takes_json() -> None:
    commands = list(_commands(build_parser()))
    assert len(commands) > 30
    for path, parser in commands:
        assert (parser.epilog or "").startswith("example"), path
        assert f"stichtag {path[0]}" in (parser.epilog or ""), path
        assert "--json" in parser._option_string_actions, path
        assert parser.description, path


def test_python_dash_m_runs_the_same_command() -> None:
    """``python -m stichtag.cli`` is the console script (the server tests start it that way)."""
    ok = subprocess.run([sys.executable, "-m", "stichtag.cli", "index", "--help"], cwd=REPO,
                        capture_output=True, text=True, timeout=60, check=False)
    assert ok.returncode == EXIT_OK and "stichtag index check --tenant acme" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "stichtag.cli", "index", "wipe"], cwd=REPO,
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == EXIT_USAGE and "invalid choice: 'wipe'" in bad.stderr
