"""The W3C selector round trip on real legal history (DeckRV, VVG 2008, 2012-2026).

A citation of an old version carries ``source`` and a TextQuoteSelector; that selector
alone (no offsets) must find the quote again in the document's current version. The
expectation is computed here from the two texts only: a quote that occurs verbatim once
is found there exactly; one that occurs several times is found where its prefix, quote
and suffix stand together (when that string occurs once); a quote that occurs nowhere is
never reported as an exact or context match.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from stichtag.bootstrap import Services
from stichtag.domain.selectors import TextQuote, quote_context
from stichtag.services.access import Principal
from tests.conftest import LiveServer
from tests.integration.test_reanchor_corpus import (
    _resolve,
    _version_at,
    ingest,
    sentences,
    versions_by_row,
)

SEED = 20_261_201
PER_CLASS = 12  # sampled citations per document and class


def _occurrences(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at != -1:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def test_sampled_selectors_alone_find_their_quotes_in_the_current_version(
        services: Services, tenant: Principal, tmp_path: Path) -> None:
    rng = random.Random(SEED)  # reproducible sampling, not secrecy
    tally: Counter[tuple[str, str]] = Counter()
    every = ingest(services, tenant, tmp_path, {"deckrv", "vvg2008"})
    for document in ("deckrv", "vvg2008"):
        rows = [r for r in every if r["document"] == document]
        ids = versions_by_row(services, tenant, rows)
        now_text, _ = sentences(services, tenant, ids[-1])
        pools: dict[str, list[tuple[str, str, TextQuote]]] = {
            "unique": [], "repeated": [], "absent": []}
        for vid in dict.fromkeys(ids[:-1]):
            text, spans = sentences(services, tenant, vid)
            for s, e in spans:
                prefix, suffix = quote_context(text, s, e)
                quote = TextQuote(exact=text[s:e], prefix=prefix, suffix=suffix)
                n = len(_occurrences(now_text, quote.exact))
                kind = "absent" if n == 0 else "unique" if n == 1 else "repeated"
                if kind != "repeated" or len(_occurrences(
                        now_text, prefix + quote.exact + suffix)) == 1:
                    pools[kind].append((vid, document, quote))
        for kind, pool in pools.items():
            if kind == "repeated" and not pool:
                continue  # a law need not repeat a sentence; the other one does (below)
            assert len(pool) >= PER_CLASS, f"{document}: only {len(pool)} {kind} quotes"
            for vid, _, quote in rng.sample(pool, PER_CLASS):
                got = services.citations.anchor(tenant, quote=quote, source=vid)
                where = f"{document} {vid[:15]} {quote.exact[:60]!r}"
                assert got.current_version_id == ids[-1], where
                m = got.match
                if kind == "absent":
                    assert m is None or m.method == "fuzzy", where
                    if m is not None:
                        assert got.current is not None and got.current.quote != quote.exact
                        assert 0.6 <= m.similarity < 1.0, where
                        assert now_text[m.start:m.end] == got.current.quote
                else:
                    assert m is not None, where
                    assert m.method == ("exact" if kind == "unique" else "context"), where
                    if kind == "unique":
                        expected = now_text.index(quote.exact)
                    else:
                        expected = now_text.index(quote.prefix + quote.exact + quote.suffix) + (
                            len(quote.prefix))
                    assert m.start == expected and m.similarity == 1.0, where
                    assert got.current is not None and got.current.quote == quote.exact
                    assert (got.current.start, got.current.end) == (m.start, m.end)
                    assert got.current.prefix == quote_context(now_text, m.start, m.end)[0]
                tally[(kind, m.method if m else "none")] += 1
    assert tally[("unique", "exact")] == 2 * PER_CLASS
    assert tally[("repeated", "context")] >= PER_CLASS  # at least one law repeats sentences
    assert sum(n for (kind, _), n in tally.items() if kind == "absent") == 2 * PER_CLASS


def _anchor(http: Any, body: dict[str, Any]) -> dict[str, Any]:
    got = http.post("/v1/citations/anchor", json=body)
    assert got.status_code == 200, got.text
    out: dict[str, Any] = got.json()
    return out


def _quote_selector(citation: dict[str, Any]) -> dict[str, Any]:
    quote = next(s for s in citation["selector"] if s["type"] == "TextQuoteSelector")
    position = next(s for s in citation["selector"] if s["type"] == "TextPositionSelector")
    assert quote["exact"] == citation["quote"]
    assert (position["start"], position["end"]) == (citation["start"], citation["end"])
    return dict(quote)


def test_a_citations_selector_alone_reanchors_deckrv_over_the_api(
        live: LiveServer, tenant: Principal, tmp_path: Path) -> None:
    svc = live.services
    ingest(svc, tenant, tmp_path, {"deckrv"})
    old_id, old_text, old_sents = _version_at(svc, tenant, "2021-04-30")
    now_id, now_text, _ = _version_at(svc, tenant, "2025-01-20")
    rate = next(s for s in old_sents if "0,9 Prozent" in old_text[s.start:s.end])
    old_quote = old_text[rate.start:rate.end]
    stable = next(s for s in old_sents if s.start > rate.end and len(old_text[s.start:s.end]) > 20
                  and len(_occurrences(now_text, old_text[s.start:s.end])) == 1)
    with live.client(live.key(tenant)) as http:
        cited = _resolve(http, old_id, rate.start, rate.end)["citation"]
        assert cited["source"] == old_id
        selector = _quote_selector(cited)
        assert selector["prefix"] == old_text[max(0, rate.start - 32):rate.start]
        assert selector["suffix"] == old_text[rate.end:rate.end + 32]

        # the rate changed twice since (0,9 → 0,25 → 1 Prozent): found fuzzily
        changed = _anchor(http, {"source": cited["source"], "selector": [selector]})
        assert (changed["matched"], changed["current_version_id"]) == ("fuzzy", now_id)
        assert changed["current"]["quote"] == old_quote.replace("0,9 Prozent", "1 Prozent")
        current = changed["current"]
        assert now_text[current["start"]:current["end"]] == current["quote"]
        assert 0.6 <= changed["similarity"] < 1.0 and changed["occurrences"] == 0
        # and where the offset-based resolver puts it
        resolved = _resolve(http, old_id, rate.start, rate.end)
        assert (resolved["current"]["start"], resolved["current"]["end"]) == (
            current["start"], current["end"])

        # a sentence still in the law: found exactly where the current text has it
        cited = _resolve(http, old_id, stable.start, stable.end)["citation"]
        same = _anchor(http, {"source": old_id, "selector": [_quote_selector(cited)]})
        quote = old_text[stable.start:stable.end]
        assert (same["matched"], same["similarity"]) == ("exact", 1.0)
        assert same["current"]["start"] == now_text.index(quote)
        assert same["current"]["quote"] == quote
        assert same["current"]["selector"][0]["exact"] == quote
        # by document key, with no version at all
        by_key = _anchor(http, {"document": "deckrv", "selector": [_quote_selector(cited)]})
        assert by_key["current"] == same["current"]

        # the 2012 rate for the Estonian kroon is in no form in today's law
        first_id, first_text, first_sents = _version_at(svc, tenant, "2012-08-02")
        kroon = next(s for s in first_sents if "Estnische Krone" in first_text[s.start:s.end])
        cited = _resolve(http, first_id, kroon.start, kroon.end)["citation"]
        gone = _anchor(http, {"source": first_id, "selector": [_quote_selector(cited)]})
        assert (gone["matched"], gone["current"]) == ("none", None)

        # no quote selector, an empty quote, a foreign version: field and reason
        bad = http.post("/v1/citations/anchor", json={
            "source": old_id, "selector": [{"type": "TextPositionSelector", "start": 0,
                                            "end": 3}]})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "selector"
        bad = http.post("/v1/citations/anchor", json={
            "source": old_id, "selector": [{"type": "TextQuoteSelector", "exact": ""}]})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "selector"
        missing = http.post("/v1/citations/anchor", json={
            "selector": [{"type": "TextQuoteSelector", "exact": "x"}]})
        assert missing.status_code == 422 and missing.json()["errors"][0]["field"] == "source"
        unknown = http.post("/v1/citations/anchor", json={
            "source": "b3:" + "0" * 64, "selector": [{"type": "TextQuoteSelector", "exact": "x"}]})
        assert unknown.status_code == 404
