"""Citation re-anchoring on real legal history (DeckRV and VVG, 2012-2026).

Citations into old versions are resolved against the document's current version and the
reported status is compared with ground truth computed here from the two texts alone:
the same sentence text (hash equality) at the same offsets is ``unchanged``, elsewhere
``moved`` (to the nearest occurrence), and a sentence whose text is no sentence of the
current version is never reported as unchanged or moved — nor the other way round.
"""

from __future__ import annotations

import csv
import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stichtag.bootstrap import Services
from stichtag.cli.manifest import ingest_manifest
from stichtag.services.access import Principal
from tests.conftest import LiveServer, make_tenant, shared_path

SEED = 20_261_130
PER_CLASS = 10  # sampled citations per document and ground-truth class


def law_manifest(tmp_path: Path, documents: set[str], *,
                 until: str | None = None) -> tuple[Path, list[dict[str, str]]]:
    """The corpus manifest rows of ``documents`` (up to valid_from ``until``), written as a
    manifest with absolute file paths; returns it and the rows in manifest order."""
    source = shared_path("corpus", "de-insurance-law", "manifest.csv")
    with source.open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["document"] in documents
                and (until is None or r["valid_from"] <= until)]
    assert rows and all(r["action"] == "ingest" for r in rows)
    for r in rows:
        r["file"] = str((source.parent / r["file"]).resolve())
    target = tmp_path / f"manifest-{'-'.join(sorted(documents))}-{until or 'all'}.csv"
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return target, rows


def ingest(svc: Services, who: Principal, tmp_path: Path, documents: set[str], *,
           until: str | None = None) -> list[dict[str, str]]:
    """Replay the rows with their tx_time; media type by extension (ingest_manifest)."""
    target, rows = law_manifest(tmp_path, documents, until=until)
    stats = ingest_manifest(svc, who, target, use_tx_time=True)
    assert stats["rows"] == len(rows)
    return rows


def _day(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def versions_by_row(svc: Services, who: Principal, rows: list[dict[str, str]]) -> list[str]:
    """The version in force from each row's valid_from, checked against the row's file."""
    now = datetime.now(UTC)
    out = []
    for r in rows:
        _, content = svc.documents.get(who, r["document"], valid_at=_day(r["valid_from"]),
                                       known_at=now)
        # the stored text is the file's text: the version really is this row's
        assert content.text == Path(r["file"]).read_text(encoding="utf-8").replace("\r\n", "\n")
        out.append(content.version.version_id)
    return out


def sentences(svc: Services, who: Principal, version_id: str) -> tuple[str, list[tuple[int, int]]]:
    content = svc.citations.versions.get(who, version_id)
    return content.text, [(s.start, s.end) for s in content.sentences]


def expected(quote: str, start: int, current: dict[str, list[int]]) -> tuple[str, int | None]:
    """Ground truth from the texts: ('unchanged'|'moved', target start) or ('absent', None)."""
    starts = current.get(quote)
    if not starts:
        return "absent", None
    nearest = min(starts, key=lambda s: (abs(s - start), s))
    return ("unchanged" if nearest == start else "moved"), nearest


def test_sampled_citations_into_old_versions_reanchor_as_the_texts_say(
        services: Services, tenant: Principal, tmp_path: Path) -> None:
    rng = random.Random(SEED)  # reproducible sampling, not secrecy
    tally: Counter[tuple[str, str]] = Counter()
    checked = 0
    # one replay in manifest order: a tenant's transaction time only moves forward
    every = ingest(services, tenant, tmp_path, {"deckrv", "vvg2008"})
    for document in ("deckrv", "vvg2008"):
        rows = [r for r in every if r["document"] == document]
        ids = versions_by_row(services, tenant, rows)
        # the current version is the one of the latest valid_from (every tx_time is past)
        current_id = ids[max(range(len(rows)), key=lambda i: rows[i]["valid_from"])]
        assert current_id == ids[-1]
        now_text, now_spans = sentences(services, tenant, current_id)
        current: dict[str, list[int]] = {}
        for s, e in now_spans:
            current.setdefault(now_text[s:e], []).append(s)
        pools: dict[str, list[tuple[str, int, int, str]]] = {
            "unchanged": [], "moved": [], "absent": []}
        for vid in dict.fromkeys(ids[:-1]):
            assert vid != current_id
            text, spans = sentences(services, tenant, vid)
            for s, e in spans:
                pools[expected(text[s:e], s, current)[0]].append((vid, s, e, text[s:e]))
        for kind, pool in pools.items():
            assert len(pool) >= PER_CLASS, f"{document}: only {len(pool)} {kind} sentences"
            for vid, s, e, quote in rng.sample(pool, PER_CLASS):
                truth, target = expected(quote, s, current)
                res = services.citations.resolve(tenant, version_id=vid, start=s, end=e)
                assert (res.citation.quote, res.current_version_id) == (quote, current_id)
                got = res.anchor
                where = f"{document} {vid[:15]} [{s},{e}) {quote[:60]!r}"
                if truth == "absent":
                    # no identical sentence exists: never claimed unchanged or moved
                    assert got.status in ("changed", "removed"), where
                    if got.status == "changed":
                        assert got.target is not None and got.target.text != quote, where
                        assert 0.6 <= got.similarity < 1.0, where
                        assert now_text[got.target.start:got.target.end] == got.target.text
                    else:
                        assert got.target is None, where
                else:
                    # it exists verbatim: never changed or removed, and found where it is
                    assert got.status == truth, where
                    assert got.target is not None and got.target.start == target, where
                    assert got.target.text == quote == now_text[target:target + len(quote)]
                    assert got.similarity == 1.0
                tally[(truth, got.status)] += 1
                checked += 1
    assert checked >= 50
    # every class of the ground truth was exercised on both documents
    assert tally[("unchanged", "unchanged")] == tally[("moved", "moved")] == 2 * PER_CLASS
    assert sum(n for (truth, _), n in tally.items() if truth == "absent") == 2 * PER_CLASS


def _version_at(svc: Services, who: Principal, day: str) -> tuple[str, str, list[Any]]:
    _, content = svc.documents.get(who, "deckrv", valid_at=_day(day), known_at=datetime.now(UTC))
    return content.version.version_id, content.text, list(content.sentences)


def _resolve(http: Any, version_id: str, start: int, end: int) -> dict[str, Any]:
    got = http.get("/v1/citations/resolve",
                   params={"version_id": version_id, "start": start, "end": end})
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def test_deckrv_hoechstzinssatz_changed_moved_unchanged_removed(
        live: LiveServer, tenant: Principal, tmp_path: Path) -> None:
    svc = live.services
    ingest(svc, tenant, tmp_path, {"deckrv"})
    until_2022 = make_tenant(svc)  # the history as it stood on 2022-01-01
    ingest(svc, until_2022, tmp_path, {"deckrv"}, until="2022-01-01")

    old_id, old_text, old_sents = _version_at(svc, tenant, "2021-04-30")
    rate = next(s for s in old_sents if "0,9 Prozent" in old_text[s.start:s.end])
    old_quote = old_text[rate.start:rate.end]
    assert "Höchstzinssatz" in old_quote and "§ 2" in " ".join(rate.heading_path)
    new_id, new_text, _ = _version_at(svc, until_2022, "2022-01-01")
    # ground truth from the texts: § 2 (1) differs only in the rate, everything after
    # it shifts by one character ("0,25" is one longer than "0,9")
    assert new_text == old_text.replace("0,9 Prozent", "0,25 Prozent", 1)
    before = next(s for s in old_sents if s.end <= rate.start and new_text[s.start:s.end]
                  == old_text[s.start:s.end] and len(old_text[s.start:s.end]) > 20)
    after = next(s for s in old_sents if s.start > rate.end and len(old_text[s.start:s.end]) > 20
                 and old_text[s.start:s.end] in new_text)

    with live.client(live.key(until_2022)) as http:
        changed = _resolve(http, old_id, rate.start, rate.end)
        assert (changed["status"], changed["current_version_id"]) == ("changed", new_id)
        assert changed["citation"]["quote"] == old_quote
        assert "0,25" in changed["current"]["quote"]
        assert changed["current"]["quote"] == old_quote.replace("0,9", "0,25")
        assert changed["current"]["start"] == rate.start
        assert 0.6 <= changed["similarity"] < 1.0

        unchanged = _resolve(http, old_id, before.start, before.end)
        assert unchanged["status"] == "unchanged"
        assert (unchanged["current"]["start"], unchanged["current"]["end"]) == (
            before.start, before.end)

        moved = _resolve(http, old_id, after.start, after.end)
        assert moved["status"] == "moved"
        assert (moved["current"]["start"], moved["current"]["end"]) == (after.start + 1,
                                                                        after.end + 1)
        assert moved["current"]["quote"] == old_text[after.start:after.end]

    with live.client(live.key(tenant)) as http:
        # today DeckRV (2025-01-20) fixes 1 Prozent: the same citation is changed again
        now_id, now_text, _ = _version_at(svc, tenant, "2025-01-20")
        today = _resolve(http, old_id, rate.start, rate.end)
        assert (today["status"], today["current_version_id"]) == ("changed", now_id)
        assert today["current"]["quote"] == old_quote.replace("0,9 Prozent", "1 Prozent")
        assert now_text[today["current"]["start"]:today["current"]["end"]] == (
            today["current"]["quote"])
        # the 2012 rate for the Estonian kroon is gone from today's text altogether
        first_id, first_text, first_sents = _version_at(svc, tenant, "2012-08-02")
        kroon = next(s for s in first_sents if "Estnische Krone" in first_text[s.start:s.end])
        assert "Estnische" not in now_text and "Krone" not in now_text
        removed = _resolve(http, first_id, kroon.start, kroon.end)
        assert (removed["status"], removed["current"]) == ("removed", None)
        assert removed["current_version_id"] == now_id
        assert removed["citation"]["quote"] == first_text[kroon.start:kroon.end]
