"""The corpus cache builds an indexed corpus once and restores it whole (tests/corpus_cache.py;
docs/testing.md, "The corpus cache"): the clone is the same tenant with the same versions,
vectors, lexical index and data directory; an input's change builds a new entry; a failed
build leaves none."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import APP_ROLE
from tests.conftest import TEMPLATE, Cluster
from tests.corpus_cache import Clone, cloned_corpus, standard_inputs

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster: Cluster) -> Path:
    if cluster.external:
        pytest.skip("the cache restores with the bundled pg_restore, which must match the "
                    "embedded server (STICHTAG_TEST_DATABASE_URL is set)")
    monkeypatch.setenv("STICHTAG_TEST_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "deckrv.md").write_text(
        "# § 2 Höchstzinssatz\n\nDer Höchstzinssatz für die Berechnung der "
        "Deckungsrückstellung beträgt 0,25 Prozent.\n", encoding="utf-8")
    return root


@pytest.fixture
def dropped(cluster: Cluster) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".tantivy-")}


def _node(cluster: Cluster, clone: Clone, models_dir: Path, embedder: Any) -> Services:
    return bootstrap(Settings(data_dir=clone.data_dir, models_path=models_dir,
                              database_url=cluster.database_url(clone.name, role=APP_ROLE),
                              pool_max=2), run_migrations=False, embedder=embedder)


def _clone(cluster: Cluster, corpus: Path, tmp_path: Path, models_dir: Path, embedder: Any,
           dropped: list[str], builds: list[str], tag: str, *, fail: bool = False) -> Clone:
    database = f"cache_{os.getpid()}_{tag}"
    dropped.append(database)
    url = cluster.database_url(database, role=APP_ROLE)

    def build(data_dir: Path) -> dict[str, Any]:
        builds.append(tag)
        svc = bootstrap(Settings(data_dir=data_dir, database_url=url, models_path=models_dir,
                                 pool_max=2), run_migrations=False, embedder=embedder)
        try:
            svc.access.create_tenant("law")
            who = svc.access.operator("law")
            result = svc.documents.ingest(who, "deckrv", IngestRequest(
                text=(corpus / "deckrv.md").read_bytes(), valid_from=NOW))
            if fail:
                raise RuntimeError("the build failed half way")
            svc.indexer.catch_up(who.tenant_id)
            return {"version_id": result.version_id}
        finally:
            svc.close()

    return cloned_corpus(admin_url=cluster.admin_url, template=TEMPLATE, name="tiny",
                         database=database, data_dir=tmp_path / tag / "data",
                         inputs=standard_inputs(corpus, model_hash=embedder.model_hash,
                                                build="tiny"), build=build)


def test_a_restored_clone_is_the_built_corpus(cluster: Cluster, corpus: Path, tmp_path: Path,
                                              models_dir: Path, embedder: Any,
                                              dropped: list[str]) -> None:
    builds: list[str] = []
    first = _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "a")
    second = _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "b")
    assert (first.built, second.built, builds) == (True, False, ["a"])
    assert second.meta == first.meta
    assert _files(second.data_dir) == _files(first.data_dir)  # the index, and any key
    seen = []
    for clone in (first, second):
        node = _node(cluster, clone, models_dir, embedder)
        try:
            who = node.access.operator("law")
            status = node.indexer.status(who.tenant_id)
            assert status.pending_embeddings == 0
            result = node.search.search(who, "Höchstzinssatz Deckungsrückstellung",
                                        valid_at=NOW, known_at=datetime.now(UTC))
            hits = [(h.version_id, h.bm25 is not None, h.vector is not None)
                    for h in result.hits]
            seen.append((who.tenant_id, status.lexical_seq, hits))
        finally:
            node.close()
    assert seen[0] == seen[1]
    assert seen[1][2] == [(first.meta["version_id"], True, True)]  # both indexes answer


def test_a_changed_input_builds_a_new_entry_and_drops_the_old(
        cluster: Cluster, corpus: Path, tmp_path: Path, models_dir: Path, embedder: Any,
        dropped: list[str]) -> None:
    builds: list[str] = []
    _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "a")
    (corpus / "deckrv.md").write_text("# § 2\n\nDer Höchstzinssatz beträgt 0,5 Prozent.\n",
                                      encoding="utf-8")
    _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "b")
    _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "c")
    assert builds == ["a", "b"]
    assert len(list((tmp_path / "cache").glob("tiny-*"))) == 1


def test_a_failed_build_leaves_no_entry(cluster: Cluster, corpus: Path, tmp_path: Path,
                                        models_dir: Path, embedder: Any,
                                        dropped: list[str]) -> None:
    builds: list[str] = []
    with pytest.raises(RuntimeError, match="half way"):
        _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds, "a",
               fail=True)
    assert list((tmp_path / "cache").glob("tiny-*")) == []
    assert _clone(cluster, corpus, tmp_path, models_dir, embedder, dropped, builds,
                  "b").built
    assert builds == ["a", "b"]
