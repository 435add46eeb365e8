"""``stichtag ask`` and ``stichtag calibrate`` as an operator runs them (stichtag.cli.main).

The commands read their settings from STICHTAG_* variables and build everything through
bootstrap, exactly as the console script does; the test checks their output against
the database through its own services (the same database, a separate pool). The
demo corpus is loaded and embedded once; only the calibrate test records thresholds.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli import main
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.tenants import operator
from stichtag.config import Settings
from stichtag.domain.calibration import Calibration
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from tests.conftest import TEMPLATE, Cluster

TENANT = "cli-demo"
QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
FAR = "2026-11-30"  # known_at after every demo row, so the labels do not depend on today

# Labelled questions over the demo corpus: answerable ones name its facts, the others
# ask what no demo document covers.
LABELLED = [
    (QUESTION, True, "2022-06-01"),
    (QUESTION, True, "2025-05-01"),
    ("Wie hoch ist die deklarierte Gesamtverzinsung?", True, "2024-03-15"),
    ("Wie hoch ist der Schlussüberschussanteil?", True, "2023-10-01"),
    ("Bis zu welcher Jahresrente ist keine ärztliche Untersuchung erforderlich?", True,
     "2023-07-20"),
    ("Welches Höchsteintrittsalter gilt in der Berufsunfähigkeitsversicherung?", True,
     "2025-03-01"),
    ("Within how many working days must a decision on a claim be made?", True, "2023-06-01"),
    ("Above which benefit amount is a second review mandatory?", True, "2024-10-01"),
    ("Wer gewann die Fußball-Weltmeisterschaft 2014?", False, "2022-06-01"),
    ("Wie backe ich einen Apfelstrudel?", False, "2023-06-01"),
    ("Welche Hauptstadt hat Australien?", False, "2024-06-01"),
    ("How tall is the Eiffel Tower?", False, "2023-06-01"),
    ("Wie wird das Wetter morgen in Hamburg?", False, "2025-06-01"),
    ("Which programming language was created by Guido van Rossum?", False, "2022-06-01"),
]


def run_cli(capsys: pytest.CaptureFixture[str] | None, *argv: str) -> str:
    """Run the command, require exit code 0, return what it printed."""
    if capsys is None:  # module setup: no capture fixture, redirect by hand
        out_buf, err_buf = io.StringIO(), io.StringIO()
        with redirect_stdout(out_buf), redirect_stderr(err_buf):
            code = main(list(argv))
        assert code == 0, err_buf.getvalue()
        return out_buf.getvalue()
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def cli(cluster: Cluster, models_dir: Path, embedder: Any,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    """The CLI environment on a fresh database with the demo corpus in tenant TENANT,
    loaded and embedded once for the module; yields services for checking results."""
    name = f"t_{os.getpid()}_cli_answer_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    url = cluster.database_url(name, role=APP_ROLE)
    data_dir = tmp_path_factory.mktemp("cli-answer") / "data"
    svc = bootstrap(Settings(data_dir=data_dir, database_url=url, pool_min=1, pool_max=2,
                             models_path=models_dir), run_migrations=False, embedder=embedder)
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("STICHTAG_DATABASE_URL", url)
            env.setenv("STICHTAG_DATA_DIR", str(data_dir))
            env.setenv("STICHTAG_MODELS_DIR", str(models_dir))
            run_cli(None, "--json", "tenants", "create", TENANT)
            stats = json.loads(run_cli(None, "--json", "ingest", "--tenant", TENANT,
                                       "--manifest", str(DEMO_DIR / "manifest.csv")))
            assert stats["versions_created"] > 0 and stats["retractions"] == 1
            synced = json.loads(run_cli(None, "--json", "index", "sync", "--tenant", TENANT))
            assert synced["pending_embeddings"] == 0
            yield svc
    finally:
        svc.close()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def _check_quotes(svc: Services, data: dict[str, Any]) -> None:
    who = operator(svc, TENANT)
    for sentence in data["sentences"]:
        assert sentence["citations"], sentence
        for c in sentence["citations"]:
            text = svc.citations.versions.get(who, c["version_id"]).text
            assert text[c["start"]:c["end"]] == c["quote"]


def test_ask_prints_an_answer_with_citations(cli: Services,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    human = run_cli(capsys, "ask", "--tenant", TENANT, QUESTION, "--valid-at", "2022-06-01")
    lines = human.splitlines()
    assert lines[0] in ("answered", "partial")
    assert any(line.startswith("- ") and "0,25 %" in line for line in lines)
    assert any(line.strip().startswith("[surplus-declaration b3:") for line in lines)
    assert lines[-1].startswith("run ")

    data = json.loads(run_cli(capsys, "--json", "ask", "--tenant", TENANT, QUESTION,
                              "--valid-at", "2022-06-01"))
    assert data["status"] in ("answered", "partial") and data["reason"] is None
    assert data["as_of"]["valid_at"] == "2022-06-01T00:00:00Z"
    assert any("0,25 %" in c["quote"] for s in data["sentences"] for c in s["citations"])
    _check_quotes(cli, data)
    # the same command as of 2025 cites the declaration in force then
    later = json.loads(run_cli(capsys, "--json", "ask", "--tenant", TENANT, QUESTION,
                               "--valid-at", "2025-05-01"))
    quotes = [c["quote"] for s in later["sentences"] for c in s["citations"]]
    assert any("1,00 %" in q for q in quotes) and not any("0,25 %" in q for q in quotes)
    _check_quotes(cli, later)
    # an unknown generator is an error on one line, not a traceback
    capsys.readouterr()
    assert main(["ask", "--tenant", TENANT, QUESTION, "--generator", "openai-compatible"]) == 1
    assert "generator" in capsys.readouterr().err


def test_calibrate_is_deterministic_and_apply_records_a_threshold_version(
        cli: Services, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(
        json.dumps({"question": q, "answerable": a, "valid_at": v, "known_at": FAR},
                   ensure_ascii=False) + "\n" for q, a, v in LABELLED), encoding="utf-8")
    digest = hashlib.sha256(labelled.read_bytes()).hexdigest()
    argv = ("--json", "calibrate", "--tenant", TENANT, str(labelled),
            "--target-wrong-rate", "0.1", "--tau", "0.9")

    first = run_cli(capsys, *argv)
    second = run_cli(capsys, *argv)
    assert first == second  # same set, corpus and model: identical report
    report = json.loads(first)
    assert report["dataset_sha256"] == digest
    assert (report["items"], report["positives"]) == (len(LABELLED),
                                                      sum(a for _, a, _ in LABELLED))
    assert 0.0 <= report["theta_rel"] <= 1.0 and report["tau"] == 0.9
    assert report["wrong_rate"] <= 0.1
    assert digest[:16] in report["rationale"] and "applied_version" not in report

    who = operator(cli, TENANT)
    assert [t.version for t in cli.thresholds.history(who)] == [0]  # not applied yet
    applied = json.loads(run_cli(capsys, *argv, "--apply"))
    assert applied["applied_version"] == 1
    assert {k: v for k, v in applied.items() if k != "applied_version"} == report

    history = cli.thresholds.history(who)
    assert [t.version for t in history] == [0, 1]
    recorded = history[-1]
    assert digest[:16] in recorded.rationale and recorded.rationale == report["rationale"]
    assert (recorded.theta_rel, recorded.tau) == (report["theta_rel"], 0.9)
    assert recorded.calibration.to_dict() == report["calibration"]
    assert recorded.set_by == "cli"
    assert cli.answers is not None  # bound to the reranker whose scores it was fitted on
    assert recorded.relevance.reranker == cli.answers.reranker.model_hash

    # the next answer runs under the recorded version
    data = json.loads(run_cli(capsys, "--json", "ask", "--tenant", TENANT, QUESTION,
                              "--valid-at", "2022-06-01"))
    run = cli.store.runs.run(who.tenant_id, uuid.UUID(data["run_id"]))
    assert run is not None
    assert run.record["thresholds"]["version"] == 1
    assert run.record["thresholds"]["rationale"] == report["rationale"]
    # leave the module's tenant on the defaults, whatever order the tests run in
    cli.thresholds.set(who, theta_rel=0.8, tau=1.0, calibration=Calibration.identity(),
                       rationale="Back to the built-in defaults after the calibration test.")


def test_missing_models_is_a_one_line_error_naming_the_fix(
        cli: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A data directory without built models: no traceback, the command that fixes it."""
    monkeypatch.setenv("STICHTAG_DATABASE_URL", cli.settings.database_url or "")
    monkeypatch.setenv("STICHTAG_MODELS_DIR", str(tmp_path / "no-models"))
    capsys.readouterr()
    assert main(["ask", "--tenant", TENANT, QUESTION]) == 1
    err = capsys.readouterr().err
    assert err.startswith("stichtag: error: no embedding model") and "models build" in err
    assert "Traceback" not in err
