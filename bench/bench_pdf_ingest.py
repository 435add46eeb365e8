# ruff: noqa: E402
# E402: the repository goes on sys.path before app is imported (scripts run from bench/).
"""PDF ingest (docs/extraction.md, "How the server uses it"): a 300-page PDF end to end, and ten
PDF editions of one law.

1. **End to end**: three different laws of the shared corpus (VAG 2016, VVG, the old VAG;
   distinct text, so every passage is embedded) typeset as one PDF (A4, one column,
   10 pt, running header, footer, hyphenation, a table and footnotes; ~300 pages) go
   through the ingest use case as an upload would, then the derived indexes catch up.
   Stage times: extract (pdfium, reading order, layout map), segment (prepare: blocks,
   sentences, passages), store (one transaction: version, blocks, passages, the
   original and its layout map), lexical index (tantivy), embed (e5 int8, every new
   passage).
2. **History cost**: the last ten VVG versions of the shared law corpus, each typeset as
   its own PDF edition, ingested one after another into one tenant, against the newest
   edition alone in another: bytes per table (rows as stored, TOAST compressed, plus the
   tenant's share of the indexes). Each edition's original is kept whole; the text blocks
   and passages deduplicate, so only changed paragraphs cost again.

Extraction throughput and fidelity per test set: ``bench/bench_extract.py`` (section
"Extraction" of docs/benchmarks.md).

    .venv/bin/python bench/bench_pdf_ingest.py [--chars 1100000] [--editions 10] [--write]

``--write`` replaces the "## PDF ingest" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import (
    Table,
    admin,
    embedder,
    emit,
    machine,
    pct,
    ratio,
    replace_section,
    revision,
    say,
    services,
    shared,
    tenant,
)
from bench_ingest import storage, total_bytes

from stichtag.bootstrap import Services
from stichtag.domain.prepared import prepare
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.extract_docs import LAW, LawBlock, law_blocks, law_pdf

SECTION = "## PDF ingest"
DOC = REPO / "docs" / "benchmarks.md"
PDF = "application/pdf"
VVG_DIR = ("corpus", "de-insurance-law", "vvg2008")
VAG = ("corpus", "de-insurance-law", "vag2016", "2026-05-04__kmein__07acd5bb.md")
VAG_OLD = ("corpus", "de-insurance-law", "vag_old", "2013-01-11__bundestag__e405ed49.md")
KIB = 1024


def kib(n: int) -> str:
    return f"{n / KIB:,.0f}"


def _analyze(svc: Services) -> None:
    """ANALYZE, as autovacuum does after a bulk write. Without fresh statistics the
    planner once took minutes for the lexical feed's join (index_docs_for_assertions)
    right after ten editions went into a new database; this measures the ingest, not
    that plan (see docs/benchmarks.md, PDF ingest)."""
    with admin(svc) as conn:
        conn.execute("ANALYZE")


def _drain(svc: Services, who: Principal) -> tuple[float, float, int]:
    """Lexical index, then every pending embedding: (index s, embed s, passages embedded)."""
    _analyze(svc)
    started = time.perf_counter()
    svc.indexer.sync_lexical(who.tenant_id)
    indexed = time.perf_counter() - started
    started = time.perf_counter()
    embedded = 0
    while (n := svc.indexer.embed_pending(who.tenant_id)) > 0:
        embedded += n
    return indexed, time.perf_counter() - started, embedded


def big_law(chars: int) -> list[LawBlock]:
    """About ``chars`` characters of law text, no paragraph twice: VAG 2016, VVG, old VAG."""
    blocks: list[LawBlock] = []
    for parts in (VAG, LAW, VAG_OLD):
        left = chars - sum(len(b.text) for b in blocks)
        if left <= 0:
            break
        blocks += law_blocks(shared(*parts), left)
    return blocks


def end_to_end(svc: Services, chars: int) -> Table:
    """Stage times of one big PDF, ingested through the use case."""
    say(f"typesetting {chars:,} characters of three laws")
    pdf = law_pdf(big_law(chars))
    who = tenant(svc)
    assert svc.documents.extractor is not None
    say("extracting (timed alone)")
    started = time.perf_counter()
    extracted = svc.documents.extractor.extract(pdf, PDF)
    t_extract = time.perf_counter() - started
    started = time.perf_counter()
    version = prepare(extracted.text, extracted.media_type)
    t_segment = time.perf_counter() - started
    say("ingesting (extract + segment + store)")
    started = time.perf_counter()
    result = svc.documents.ingest(who, "laws", IngestRequest(
        text=pdf, media_type=PDF, valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        doc_class="regulation"))
    t_ingest = time.perf_counter() - started
    assert result.version_id == version.version_id
    t_store = max(0.0, t_ingest - t_extract - t_segment)
    say("indexing and embedding")
    t_index, t_embed, embedded = _drain(svc, who)
    total = t_ingest + t_index + t_embed
    pages = int(extracted.provenance["pages"])
    table = Table(f"A {pages}-page PDF end to end ({len(pdf) / 2**20:.1f} MB, "
                  f"{len(extracted.text):,} characters, {version.n_sentences:,} sentences, "
                  f"{len(version.passages):,} passages)",
                  ["stage", "seconds", "share", "per page (ms)"])
    for name, seconds in (("extract (pdfium, reading order, layout map)", t_extract),
                          ("segment (blocks, sentences, passages)", t_segment),
                          ("store (one transaction, original + layout included)", t_store),
                          ("lexical index (tantivy)", t_index),
                          (f"embed ({embedded:,} passages, e5 int8)", t_embed)):
        table.rows.append([name, f"{seconds:.2f}", pct(seconds, total),
                           f"{1000 * seconds / pages:.1f}"])
    table.rows.append(["total", f"{total:.2f}", "100.0 %", f"{1000 * total / pages:.1f}"])
    table.notes += [
        "the ingest call ran extract + segment + store; extract and segment were also "
        "timed alone on the same bytes, store is the rest of the call",
        f"{pages / t_ingest:.0f} pages/s until the text is stored and citable by its "
        f"offsets; {pages / total:.0f} pages/s until it is searchable by both lists",
    ]
    return table


def editions(svc: Services, n: int) -> Table:
    """Ten successive editions vs the newest alone: bytes per table."""
    files = sorted(p for p in shared(*VVG_DIR).iterdir() if p.suffix == ".md")[-n:]
    say(f"typesetting {len(files)} VVG editions")
    pdfs = [(p.name[:10], law_pdf(law_blocks(p, 10**9))) for p in files]
    one, many = tenant(svc, "one-edition"), tenant(svc, f"{len(pdfs)}-editions")
    for label, who, chosen in (("newest", one, pdfs[-1:]), ("all", many, pdfs)):
        for day, pdf in chosen:
            say(f"ingesting {label}: edition {day}")
            svc.documents.ingest(who, "vvg", IngestRequest(
                text=pdf, media_type=PDF, doc_class="regulation",
                valid_from=datetime.fromisoformat(day).replace(tzinfo=UTC)))
        _drain(svc, who)
    url = svc.urls.migration_url
    assert url is not None
    cost_one, cost_many = storage(url, one.tenant_id), storage(url, many.tenant_id)
    table = Table(f"Storage: {len(pdfs)} successive PDF editions of the VVG vs the newest "
                  "alone (KiB)", ["table", "1 edition", f"{len(pdfs)} editions", "ratio"])
    for name in sorted(set(cost_one) | set(cost_many),
                       key=lambda t: -cost_many.get(t, cost_one[t]).total):
        a, b = cost_one.get(name), cost_many.get(name)
        if not (a and a.rows) and not (b and b.rows):
            continue
        ta, tb = a.total if a else 0, b.total if b else 0
        table.rows.append([f"{name} ({a.rows if a else 0} / {b.rows if b else 0} rows)",
                           kib(ta), kib(tb), ratio(tb, ta)])
    t1, tn = total_bytes(cost_one), total_bytes(cost_many)
    table.rows.append(["total", kib(t1), kib(tn), ratio(tn, t1)])
    originals = sum(len(p) for _, p in pdfs)
    text_one = cost_one["blocks"].total + cost_one["passages"].total + cost_one["versions"].total
    text_many = (cost_many["blocks"].total + cost_many["passages"].total
                 + cost_many["versions"].total)
    table.notes += [
        f"the {len(pdfs)} PDFs are {originals / 2**20:.1f} MB as uploaded "
        f"({kib(originals // len(pdfs))} KiB each on average): originals are kept per "
        "edition, byte for byte",
        f"text (blocks + passages with vectors + version rows): {kib(text_one)} KiB for one, "
        f"{kib(text_many)} KiB for {len(pdfs)} ({ratio(text_many, text_one)}): "
        "unchanged paragraphs are stored once",
        "layout maps (version_sources) are per edition too: each typesetting has its own "
        "page geometry; zlib keeps them at about a fifth of their JSON",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--chars", type=int, default=1_100_000,
                        help="characters of law text in the big PDF (~3,700 a page)")
    parser.add_argument("--editions", type=int, default=10)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with services(embedder()) as svc:
        where = machine(svc)
        tables = [end_to_end(svc, args.chars), editions(svc, args.editions)]
    seconds = time.perf_counter() - started
    emit(tables)
    if args.write:
        command = "python bench/bench_pdf_ingest.py " + " ".join(
            sys.argv[1:] if argv is None else argv)
        body: list[Any] = [
            SECTION, "",
            f"`{command.strip()}` — commit `{revision()}`, {where}; run time "
            f"{seconds:.0f} s. Extraction throughput and fidelity per test set: "
            "`bench/bench_extract.py`, section \"Extraction\" below.", ""]
        for t in tables:
            body += [t.markdown(), ""]
        replace_section(DOC, SECTION, "\n".join(body))
        say(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
