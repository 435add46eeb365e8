"""The generated law question set (eval/law_questions/): split by section, gold honest.

The as-of rule is re-implemented here from docs/architecture.md §3 (rows known at known_at,
the last one valid at valid_at wins, a retraction ends validity), independently of the
generator's ``corpus.visible``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conftest import REPO, shared_path

SET = REPO / "eval" / "law_questions"


def _items(half: str) -> list[dict[str, Any]]:
    lines = (SET / f"{half}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]


def test_no_section_sits_on_both_sides() -> None:
    fit, test = _items("fit"), _items("test")
    fit_sections = {i["section"] for i in fit}
    test_sections = {i["section"] for i in test}
    assert fit_sections and test_sections
    assert not fit_sections & test_sections
    assert {i["split"] for i in fit} == {"fit"} and {i["split"] for i in test} == {"test"}
    ids = Counter(i["id"] for i in fit + test)
    assert ids.most_common(1)[0][1] == 1


def test_each_half_has_every_kind_of_item() -> None:
    """At least 300 items; templates, cross-references, both refusal kinds, a third in
    English: every half holds each, so fitting on one half and measuring on the other means
    something for each."""
    for half in ("fit", "test"):
        items = _items(half)
        kinds = Counter((i["category"], i["lang"]) for i in items)
        assert len(items) >= 300
        for kind in ("section", "cross-reference", "not-in-force"):
            assert kinds[(kind, "de")] >= 50 and kinds[(kind, "en")] >= 30, (half, kind)
        assert kinds[("off-corpus", "de")] >= 10
        english = sum(n for (_, lang), n in kinds.items() if lang == "en")
        assert english >= len(items) / 6
        answerable = [i for i in items if i["answerable"]]
        assert all(i["gold"]["document"] in i["gold"]["version_file"] for i in answerable)
        assert not any("gold" in i for i in items if not i["answerable"])


def _visible(rows: list[dict[str, str]], document: str, valid_at: str, known_at: str
             ) -> str | None:
    known = [r for r in rows if r["document"] == document and r["tx_time"] <= known_at]
    in_force = [r for r in known if r["valid_from"] <= valid_at]
    if not in_force:
        return None
    last = max(in_force, key=lambda r: (r["valid_from"], r["tx_time"]))
    return last["file"] if last["action"] == "ingest" else None


def test_gold_is_the_version_visible_at_the_asof_pair() -> None:
    root = shared_path("corpus", "de-insurance-law")
    with (root / "manifest.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    texts: dict[str, str] = {}
    for item in _items("fit") + _items("test"):
        law = item["gold"]["document"] if item["answerable"] else item["section"].split(":")[0]
        if law == "subject":
            continue
        seen = _visible(rows, law, item["valid_at"], item["known_at"])
        if not item["answerable"]:
            assert seen is None, item["id"]
            continue
        assert seen == item["gold"]["version_file"], item["id"]
        if seen not in texts:
            raw = (root / seen).read_bytes().decode("utf-8").replace("\r\n", "\n")
            texts[seen] = unicodedata.normalize("NFC", raw)
        assert texts[seen].count(item["gold"]["gold_text"]) == 1, item["id"]


def test_the_committed_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    root = shared_path("corpus", "de-insurance-law")
    subprocess.run([sys.executable, str(SET / "generate.py"), "--corpus", str(root),
                    "--out", str(tmp_path)], check=True, capture_output=True)
    for half in ("fit", "test"):
        assert (tmp_path / f"{half}.jsonl").read_bytes() == (SET / f"{half}.jsonl").read_bytes()
