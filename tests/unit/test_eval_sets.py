"""The abstention evaluation sets are honest against the shared corpus.

* eval/out_of_scope_de.jsonl: the decisive term of every question occurs in no version of
  any document of the corpus (all 81 versions, case/umlaut-insensitive, line breaks and
  hyphenated line ends joined).
* eval/not_yet_in_force_de.jsonl: the decisive term is absent from every document version
  in force at (valid_at, known_at) and present in the ``introduced_by`` version, which is
  known at known_at but valid only after valid_at. The as-of rule is re-implemented here
  from docs/architecture.md §3, independently of tests/integration/test_eval.py.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, shared_path

OUT_OF_SCOPE = REPO / "eval" / "out_of_scope_de.jsonl"
NOT_YET = REPO / "eval" / "not_yet_in_force_de.jsonl"
DOCUMENTS = ("deckrv", "vag2016", "vag_old", "vvg2008")
FIELDS = {"id", "category", "question", "valid_at", "known_at", "answerable"}
_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


def _items(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _fold(text: str) -> str:
    """Case/umlaut-folded, with hyphenated line ends joined and whitespace collapsed."""
    text = unicodedata.normalize("NFC", text).casefold().translate(_FOLD)
    return re.sub(r"\s+", " ", re.sub(r"-\n\s*", "", text))


@cache
def _text(root: Path, file: str) -> str:
    return _fold((root / file).read_text(encoding="utf-8"))


def _manifest(root: Path) -> list[dict[str, str]]:
    with (root / "manifest.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _version_in_force(rows: list[dict[str, str]], document: str, valid_at: str,
                      known_at: str) -> str | None:
    """The file in force at valid_at as known at known_at (plain ISO dates compare).

    Each known version holds from its valid_from until the next known version's; a known
    retraction ends, from its valid_from on, every version known when it was made.
    """
    known = [r for r in rows if r["document"] == document and r["tx_time"] <= known_at]
    versions = sorted((r for r in known if r["action"] == "ingest"),
                      key=lambda r: r["valid_from"])
    retractions = [r for r in known if r["action"] == "retract"]
    for here, after in zip(versions, [*versions[1:], None], strict=True):
        end = after["valid_from"] if after else None
        for r in retractions:
            if here["tx_time"] <= r["tx_time"] and (end is None or end > r["valid_from"]):
                end = r["valid_from"]
        if here["valid_from"] <= valid_at and (end is None or valid_at < end):
            return here["file"]
    return None


def test_the_sets_have_the_shape_of_the_as_of_set() -> None:
    for path, minimum in ((OUT_OF_SCOPE, 30), (NOT_YET, 15)):
        items = _items(path)
        assert len(items) >= minimum, path.name
        assert len({i["id"] for i in items}) == len(items)
        for item in items:
            assert set(item) >= FIELDS, item["id"]
            assert item["answerable"] is False and "gold" not in item, item["id"]
            assert _fold(item["decisive"]) in _fold(item["question"]), item["id"]
    categories = {i["category"] for i in _items(OUT_OF_SCOPE)}
    assert {"tax", "labour", "tenancy", "traffic", "social-security", "foreign",
            "other-industry"} <= categories
    english = [i for i in _items(OUT_OF_SCOPE) if re.match(r"(What|How|Which)\b", i["question"])]
    assert len(english) >= 5


def test_out_of_scope_terms_occur_nowhere_in_the_corpus() -> None:
    root = shared_path("corpus", "de-insurance-law")
    files = [str(p.relative_to(root)) for p in sorted(root.glob("*/*.*"))
             if p.suffix in (".md", ".txt")]
    assert len(files) == 81
    texts = [_text(root, f) for f in files]
    for item in _items(OUT_OF_SCOPE):
        for t in [item["decisive"], *item.get("also_absent", [])]:
            hits = [f for f, text in zip(files, texts, strict=True) if _fold(t) in text]
            assert hits == [], (item["id"], t, hits[:3])
    # the honesty check has teeth: terms the colleague might expect out of scope are in it
    for t in ("Schweizer Franken", "Krankenkasse", "Einkommensteuer", "Kündigungsfrist"):
        assert any(_fold(t) in text for text in texts), t


def test_the_as_of_rule_here_agrees_with_known_cases() -> None:
    rows = _manifest(shared_path("corpus", "de-insurance-law"))
    assert _version_in_force(rows, "vag_old", "2017-01-01", "2020-01-01") is None  # retracted
    assert _version_in_force(rows, "vag_old", "2017-01-01", "2019-01-01") is not None
    assert _version_in_force(rows, "deckrv", "2022-06-01", "2021-06-01") == (
        "deckrv/2021-04-30__kmein__57a17264.md")
    assert _version_in_force(rows, "deckrv", "2010-01-01", "2026-01-01") is None


@pytest.mark.parametrize("item", _items(NOT_YET), ids=lambda i: i["id"])
def test_not_yet_in_force_terms_come_with_the_later_version(item: dict[str, Any]) -> None:
    root = shared_path("corpus", "de-insurance-law")
    rows = _manifest(root)
    term = _fold(item["decisive"])
    intro = next(r for r in rows if r["file"] == item["introduced_by"])
    assert intro["tx_time"] <= item["known_at"]  # the system knows the later version ...
    assert item["valid_at"] < intro["valid_from"]  # ... but it is not in force yet
    assert term in _text(root, item["introduced_by"])
    in_force = [f for d in DOCUMENTS
                if (f := _version_in_force(rows, d, item["valid_at"], item["known_at"]))]
    assert in_force, item["id"]
    assert [f for f in in_force if term in _text(root, f)] == [], item["id"]
    # and it is the first version of its document with the term (nothing earlier had it)
    earlier = [r["file"] for r in rows if r["document"] == intro["document"]
               and r["action"] == "ingest" and r["valid_from"] < intro["valid_from"]]
    assert earlier and not any(term in _text(root, f) for f in earlier), item["id"]
