"""A real server on loopback over the DeckRV of the shared law corpus (its versions from
2019 on, with their historical transaction times), one per test module: what the
grounding check and the MCP tests ask their as-of questions of (docs/assistants.md)."""

from __future__ import annotations

import csv
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from tests.conftest import TEMPLATE, Cluster, served, shared_path

QUESTION = "Wie hoch ist der Höchstzinssatz für die Berechnung der Deckungsrückstellungen?"
IN_2021 = "2021-06-01"  # in force: the version of 2021-04-30 (0,9 Prozent)
IN_2022 = "2022-06-01"  # in force: the version of 2022-01-01 (0,25 Prozent)
HIGH_NOTE = ("# Tarifnotiz\n\nDer interne Rechnungszins des Tarifs Morgenrot beträgt ab dem "
          "1. Januar 2022 genau 0,15 Prozent.\n")
"""The law tenant's ``secret`` note (``tarifnotiz``): above an internal key's clearance."""
FOREIGN = ("# Fremdnotiz\n\nDer Rechnungszins des Tarifs Abendrot beträgt ab dem 1. Januar "
           "2022 genau 0,35 Prozent.\n")
"""The other tenant's note (``fremdnotiz``, internal): the law tenant never sees it."""


@dataclass
class DeckrvServer:
    """The server, its services, the law tenant and a second tenant with its own DeckRV."""

    base_url: str
    svc: Services
    law: Principal
    other: Principal
    root: Path
    """The law corpus."""

    def key(self, who: Principal, *, scopes: str = "read", clearance: int = 3) -> str:
        """A new API key of ``who``'s tenant."""
        _, token = self.svc.access.create_key(who.tenant_id, scopes=scopes.split(","),
                                              clearance=clearance)
        return token

    def in_force(self, key: str, valid_at: str) -> str:
        """The version id of ``key`` in force at ``valid_at``, known now (operator)."""
        now = self.svc.clock.now()
        row, _ = self.svc.documents.get(self.law, key, known_at=now,
                                        valid_at=parse_time(valid_at, field="valid_at"))
        return row.version_id

    def text(self, version_id: str) -> str:
        """A version's text, read with the operator principal (for assertions)."""
        return self.svc.documents.version(self.law, version_id).text


def _manifest(root: Path, target: Path) -> Path:
    """The corpus manifest's DeckRV rows from 2019 on, with absolute file paths."""
    with (root / "manifest.csv").open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["document"] == "deckrv" and r["tx_time"] >= "2019"]
    with target.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "file": str(root / r["file"])})
    return target


def serve_deckrv(cluster: Cluster, models_dir: Path, embedder: Any,
                 tmp: Path) -> Iterator[DeckrvServer]:
    """Build the database, ingest, index and serve; tear everything down after."""
    root = shared_path("corpus", "de-insurance-law")
    name = f"deckrv_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    settings = Settings(data_dir=tmp, database_url=cluster.database_url(name, role=APP_ROLE),
                        models_path=models_dir, pool_min=1, pool_max=6)
    svc = bootstrap(settings, run_migrations=False, embedder=embedder)
    try:
        manifest = _manifest(root, tmp / "deckrv.csv")
        people = []
        for tenant in ("law", "other"):
            svc.access.create_tenant(tenant)
            who = svc.access.operator(tenant)
            ingest_manifest(svc, who, manifest, use_tx_time=True)
            svc.documents.ingest(who, "tarifnotiz" if tenant == "law" else "fremdnotiz",
                                 IngestRequest(
                text=HIGH_NOTE if tenant == "law" else FOREIGN,
                valid_from=parse_time("2022-01-01", field="valid_from"),
                confidentiality="secret" if tenant == "law" else "internal"))
            svc.indexer.catch_up(who.tenant_id)
            people.append(who)
        with served(settings, svc) as base_url:
            yield DeckrvServer(base_url=base_url, svc=svc, law=people[0], other=people[1],
                               root=root)
    finally:
        svc.close()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))
