"""Replay the shared law corpus manifest through the CLI into a fresh tenant, then check
every version by its blake3 id at as-of pairs inside and just outside its ranges, and
every stored sentence's offsets."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli import main
from stichtag.config import Settings
from stichtag.domain.errors import NotFound
from stichtag.domain.prepared import sentence_hash
from stichtag.domain.records import AssertionRow
from stichtag.domain.text import normalize, version_id
from stichtag.services.access import SCOPES, Principal
from tests.conftest import TEMPLATE, Cluster, shared_path

MICRO = timedelta(microseconds=1)


@pytest.fixture(scope="module")
def corpus(cluster: Cluster, models_dir: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Services, Principal, Path, dict[str, object]]]:
    """The whole manifest ingested once for this module via `stichtag ingest --manifest`."""
    manifest = shared_path("corpus", "de-insurance-law", "manifest.csv")
    import psycopg
    from psycopg import sql

    name = f"corpus_replay_{os.getpid()}"  # unique per xdist worker
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER stichtag_owner")
                     .format(sql.Identifier(name), sql.Identifier(TEMPLATE)))
    url = cluster.database_url(name, role="stichtag_app")
    mp = pytest.MonkeyPatch()
    mp.setenv("STICHTAG_DATABASE_URL", url)
    data_dir = tmp_path_factory.mktemp("corpus-data")
    mp.setenv("STICHTAG_DATA_DIR", str(data_dir))
    mp.setenv("STICHTAG_MODELS_DIR", str(models_dir))
    assert main(["tenants", "create", "law"]) == 0
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["--json", "ingest", "--tenant", "law", "--manifest", str(manifest)]) == 0
    stats = json.loads(buffer.getvalue())
    # the CLI's data directory: its index and signing key, not the checkout's .data
    svc = bootstrap(Settings(database_url=url, data_dir=data_dir, models_path=models_dir),
                    run_migrations=False)
    row = svc.store.tenancy.tenant_by_name("law")
    assert row is not None
    who = Principal(tenant_id=row.tenant_id, key_id="t", scopes=frozenset(SCOPES), clearance=3)
    yield svc, who, manifest, stats
    svc.close()
    mp.undo()


def _visible(rows: list[AssertionRow], valid_at: datetime, known_at: datetime) -> str | None:
    hits = [r.version_id for r in rows
            if r.tx_from <= known_at and (r.tx_to is None or known_at < r.tx_to)
            and r.valid_from <= valid_at and (r.valid_to is None or valid_at < r.valid_to)]
    assert len(hits) <= 1, "two versions in force at one instant"
    return hits[0] if hits else None


def test_manifest_replay_counts(
        corpus: tuple[Services, Principal, Path, dict[str, object]]) -> None:
    _, _, manifest, stats = corpus
    with manifest.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert stats["rows"] == len(rows) == 82
    assert stats["retractions"] == sum(r["action"] == "retract" for r in rows)
    assert stats["assertions"] + stats["unchanged"] == sum(r["action"] == "ingest" for r in rows)


def test_every_version_by_id_inside_and_never_outside(
        corpus: tuple[Services, Principal, Path, dict[str, object]]) -> None:
    svc, who, manifest, _ = corpus
    with manifest.open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["action"] == "ingest"]
    expected_ids = {version_id(normalize((manifest.parent / r["file"]).read_bytes())) for r in rows}
    seen: set[str] = set()
    for doc in sorted({r["document"] for r in rows}):
        history = svc.documents.history(who, doc)
        for a in history:
            if a.tx_to is not None and a.tx_to <= a.tx_from:
                continue
            # Inside both ranges: exactly this version, by id, with text hashing to the id.
            row, content = svc.documents.get(who, doc, valid_at=a.valid_from, known_at=a.tx_from)
            assert row.version_id == a.version_id
            assert version_id(content.text) == a.version_id
            seen.add(a.version_id)
            # Just outside each edge: whatever history says, never this assertion by accident.
            probes = [(a.valid_from - MICRO, a.tx_from), (a.valid_from, a.tx_from - MICRO)]
            if a.valid_to is not None:
                probes.append((a.valid_to, a.tx_from))
            if a.tx_to is not None:
                probes.append((a.valid_from, a.tx_to))
            for valid_at, known_at in probes:
                want = _visible(history, valid_at, known_at)
                try:
                    got: str | None = svc.documents.get(
                        who, doc, valid_at=valid_at, known_at=known_at)[0].version_id
                except NotFound:
                    got = None
                assert got == want, (doc, a.assertion_id, valid_at, known_at)
    assert seen == expected_ids


def test_deckrv_question_from_the_issue(
        corpus: tuple[Services, Principal, Path, dict[str, object]]) -> None:
    """Which DeckRV was in force on 1 Jan 2022 as known on 1 June 2021? The 2021 text, not
    2022's."""
    svc, who, manifest, _ = corpus
    from stichtag.domain.timeutil import parse_time

    _, content = svc.documents.get(who, "deckrv", valid_at=parse_time("2022-01-01", field="v"),
                                   known_at=parse_time("2021-06-01", field="k"))
    expect = normalize((manifest.parent / "deckrv/2021-04-30__kmein__57a17264.md").read_bytes())
    assert content.text == expect
    _, later = svc.documents.get(who, "deckrv", valid_at=parse_time("2022-01-01", field="v"),
                                 known_at=parse_time("2022-06-01", field="k"))
    kmein = manifest.parent / "deckrv/2022-01-01__kmein__12bfdfa4.md"
    assert later.text == normalize(kmein.read_bytes())


def test_every_stored_sentence_offset(
        corpus: tuple[Services, Principal, Path, dict[str, object]]) -> None:
    svc, who, _, _ = corpus
    ids = {a.version_id for doc in ("deckrv", "vag2016", "vag_old", "vvg2008")
           for a in svc.documents.history(who, doc)}
    import numpy as np

    checked = 0
    for vid in sorted(ids):
        content = svc.documents.version(who, vid)
        text = content.text
        # UTF-16 offset of every code point, computed independently of the app's Utf16Map:
        # astral characters take two code units.
        wide = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) > 0xFFFF
        u16 = np.concatenate(([0], np.cumsum(1 + wide.astype(np.int64))))
        for s in content.sentences:
            sentence = text[s.start:s.end]
            assert sentence and sentence == sentence.strip()
            assert sentence_hash(sentence) == s.hash
            assert u16[s.start] == s.utf16_start and u16[s.end] == s.utf16_end
            checked += 1
    assert checked > 100_000
