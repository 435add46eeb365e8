"""The corpus cache's address changes with every input that decides a corpus's contents
(tests/corpus_cache.py; docs/testing.md, "The corpus cache")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import corpus_cache
from tests.corpus_cache import cache_key, standard_inputs


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in checkout with one migration and one file of each code root."""
    root = tmp_path / "repo"
    (root / "migrations").mkdir(parents=True)
    (root / "migrations" / "0001_core.sql").write_text("CREATE TABLE t ();\n")
    for name in corpus_cache.CODE_ROOTS:
        if name == "migrations":
            continue
        path = root / name if name.endswith(".py") else root / name / "module.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")
    monkeypatch.setattr(corpus_cache, "REPO", root)
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "deckrv").mkdir(parents=True)
    (root / "manifest.csv").write_text("document,file\ndeckrv,deckrv/a.md\n")
    (root / "deckrv" / "a.md").write_text("# § 1\n\nDer Höchstzinssatz beträgt 0,25 %.\n")
    return root


def _key(corpus: Path, *, model: str = "e5:int8", build: str = "b") -> str:
    return cache_key(standard_inputs(corpus, model_hash=model, build=build))


def test_the_key_is_stable_for_unchanged_inputs(repo: Path, corpus: Path) -> None:
    assert _key(corpus) == _key(corpus)


EDITS = {
    "a migration's bytes": lambda repo, corpus: (repo / "migrations" / "0001_core.sql")
    .write_text("CREATE TABLE u ();\n"),
    "a new migration": lambda repo, corpus: (repo / "migrations" / "0002_more.sql")
    .write_text("SELECT 1;\n"),
    "indexer code": lambda repo, corpus: (repo / "app/stichtag/index/module.py")
    .write_text("# changed\n"),
    "extractor code": lambda repo, corpus: (repo / "app/stichtag/extract/module.py")
    .write_text("# changed\n"),
    "the segmenter's module": lambda repo, corpus: (repo / "app/stichtag/domain/segment.py")
    .write_text("# changed\n"),
    "the manifest ingest": lambda repo, corpus: (repo / "app/stichtag/cli/manifest.py")
    .write_text("# changed\n"),
    "a corpus file's bytes": lambda repo, corpus: (corpus / "deckrv" / "a.md")
    .write_text("# § 1\n\nDer Höchstzinssatz beträgt 0,5 %.\n"),
    "a corpus file added": lambda repo, corpus: (corpus / "deckrv" / "b.md").write_text("x"),
    "a corpus file renamed": lambda repo, corpus: (corpus / "deckrv" / "a.md")
    .rename(corpus / "deckrv" / "c.md"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_of_a_file_input_changes_the_key(repo: Path, corpus: Path, edit: str) -> None:
    before = _key(corpus)
    EDITS[edit](repo, corpus)
    assert _key(corpus) != before


@pytest.mark.parametrize("name", ["SEGMENTER_ID", "ANALYZER_ID", "TEXT_EXTRACTOR_ID",
                                  "HTML_EXTRACTOR_ID", "PDF_EXTRACTOR_ID", "DOCX_EXTRACTOR_ID",
                                  "FORMAT"])
def test_a_bumped_id_changes_the_key(repo: Path, corpus: Path, name: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = _key(corpus)
    monkeypatch.setattr(corpus_cache, name, getattr(corpus_cache, name) + "-next")
    assert _key(corpus) != before


def test_the_model_and_the_build_parameters_change_the_key(repo: Path, corpus: Path) -> None:
    assert _key(corpus, model="e5:float") != _key(corpus)
    assert _key(corpus, build="other") != _key(corpus)


def test_the_real_inputs_cover_every_named_input() -> None:
    # The checkout's own inputs: every code root exists (a moved module would otherwise
    # silently drop out of the key).
    for name in corpus_cache.CODE_ROOTS:
        assert (corpus_cache.REPO / name).exists(), name


def test_names_and_values_cannot_be_shifted_into_each_other() -> None:
    assert cache_key({"a": b"bc"}) != cache_key({"ab": b"c"})
    assert cache_key({"a": b"", "b": b"x"}) != cache_key({"a": b"x", "b": b""})


def test_the_cache_can_be_moved_and_switched_off(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("STICHTAG_TEST_CACHE", str(tmp_path / "c"))
    assert corpus_cache.cache_root() == tmp_path / "c"
    monkeypatch.setenv("STICHTAG_TEST_CACHE", "off")
    assert corpus_cache.cache_root() is None
    monkeypatch.delenv("STICHTAG_TEST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert corpus_cache.cache_root() == tmp_path / "xdg" / "stichtag-tests"
