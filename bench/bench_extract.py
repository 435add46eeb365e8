# ruff: noqa: E402
# E402: the repository goes on sys.path before app is imported (scripts run from bench/).
"""Document extraction: throughput per format and fidelity per test set.

Throughput: a generated 300-page PDF (the VVG typeset repeatedly), the long German
pdfTeX script from pdf-samples, the 28 html-samples pages, a generated DOCX of the VVG.
Each input is extracted ``--repeat`` times; the table gives the median (pages/s, MB/s,
characters/s) and the layout map's size as JSON and zlib-compressed.

Fidelity: source sentences (real segmenter) found verbatim (whitespace-normalized) in
the extracted text, per test set: the full VVG and VAG in two PDF editions each, the
VVG as DOCX and as an HTML page, and the html-samples' expected paragraphs.

    .venv/bin/python bench/bench_extract.py [--repeat 3] [--write]

``--write`` replaces the "## Extraction" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import lxml.html
from _common import Table, emit, pct, replace_section, revision, say, shared

from stichtag.extract import Extracted, extract
from tests.extract_docs import (
    LAW,
    law_blocks,
    law_docx,
    law_html,
    law_pdf,
    sentences,
    shared_share,
    source_markdown,
    ws,
)

SECTION = "## Extraction"
DOC = REPO / "docs" / "benchmarks.md"
VAG = ("corpus", "de-insurance-law", "vag2016", "2026-05-04__kmein__07acd5bb.md")
GEOTOPO = ("corpus", "pdf-samples", "009-pdflatex-geotopo", "GeoTopo-komprimiert.pdf")
LETTER_2COL = {"columns": 2, "size": 9, "page": (612.0, 792.0)}
_PARAGRAPHS = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "td", "th", "dd", "dt",
               "figcaption", "blockquote")


def _median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def throughput(repeat: int) -> Table:
    """Pages/s and MB/s per format."""
    table = Table("Extraction throughput (median of runs, one process, pdfium single-threaded)",
                  ["input", "pages", "MB", "s", "pages/s", "MB/s", "chars/s", "layout JSON",
                   "layout zlib"])
    vvg = law_blocks(shared(*LAW), 10**9)
    say("typesetting the 300-page PDF")
    big = law_pdf(vvg * 6)
    html_dir = shared("corpus", "html-samples")
    pages = [(p / "source.html").read_bytes() for p in sorted(html_dir.iterdir()) if p.is_dir()]
    inputs: list[tuple[str, list[tuple[bytes, str]]]] = [
        ("generated PDF (VVG x6, A4)", [(big, "application/pdf")]),
        ("GeoTopo.pdf (pdfTeX, German)", [(shared(*GEOTOPO).read_bytes(), "application/pdf")]),
        ("html-samples (28 pages)", [(p, "text/html") for p in pages]),
        ("generated DOCX (VVG)", [(law_docx(vvg), "")]),
    ]
    for name, docs in inputs:
        say(f"extracting {name}")
        results: list[Extracted] = [extract(d, t or None) for d, t in docs]
        seconds = _median_seconds(lambda docs=docs: [extract(d, t or None) for d, t in docs],
                                  repeat)
        mb = sum(len(d) for d, _ in docs) / 2**20
        n_pages = sum(int(r.provenance.get("pages", 1)) for r in results)
        chars = sum(len(r.text) for r in results)
        layout = b"".join(r.layout.dumps() for r in results)
        table.rows.append([name, n_pages, f"{mb:.2f}", f"{seconds:.2f}",
                           f"{n_pages / seconds:.0f}", f"{mb / seconds:.2f}",
                           f"{chars / seconds:,.0f}", f"{len(layout) / 1024:.0f} KiB",
                           f"{len(zlib.compress(layout, 6)) / 1024:.0f} KiB"])
    table.notes.append("pages for HTML and DOCX count documents; the layout columns are the "
                       "stored map (runs per word for PDF, element paths for HTML/DOCX)")
    return table


def _fidelity_row(name: str, source_md: str, result: Extracted) -> list[object]:
    src = [s for *_, s in sentences(source_md, "text/markdown")]
    got = [s for *_, s in sentences(result.text, result.media_type)]
    found = shared_share(src, got)
    return [name, int(result.provenance.get("pages", 1)), len(src), pct(found, 1),
            pct(shared_share(got, src), 1)]


def fidelity() -> Table:
    """Source sentences found verbatim, per test set."""
    table = Table("Extraction fidelity (sentences whitespace-normalized, real segmenter)",
                  ["test set", "pages", "source sentences", "found", "extracted in source"])
    for law_name, parts in (("VVG", LAW), ("VAG 2016", VAG)):
        blocks = law_blocks(shared(*parts), 10**9)
        md = source_markdown(blocks)
        for edition, kwargs in (("A4, 1 column, 10 pt", {}), ("Letter, 2 columns, 9 pt",
                                                                 LETTER_2COL)):
            say(f"fidelity: {law_name} {edition}")
            result = extract(law_pdf(blocks, **kwargs), None)  # type: ignore[arg-type]
            table.rows.append(_fidelity_row(f"{law_name} PDF, {edition}", md, result))
        if law_name == "VVG":
            table.rows.append(_fidelity_row("VVG DOCX", md, extract(law_docx(blocks), None)))
            table.rows.append(_fidelity_row("VVG HTML page", md, extract(law_html(blocks), None)))
    found = total = 0
    root = shared("corpus", "html-samples")
    for page in sorted(p for p in root.iterdir() if p.is_dir()):
        got = ws(extract((page / "source.html").read_bytes(), "text/html").text)
        expected = lxml.html.fromstring((page / "expected.html").read_text(encoding="utf-8"))
        paras = [t for e in expected.iter(*_PARAGRAPHS) if len(t := ws(e.text_content())) >= 3]
        found += sum(1 for p in paras if p in got)
        total += len(paras)
    table.rows.append(["html-samples: expected paragraphs", 28, total, pct(found, total), "-"])
    table.notes += [
        "'extracted in source' is lower by design: the generated PDFs add a table and "
        "footnotes, the DOCX and HTML a table, that the source law does not have",
        "the PDFs carry a running header, a footer 'Seite X von Y' and a date, and "
        "hyphenate long words at line ends",
    ]
    return table


def main() -> None:
    """Run both tables, print them, optionally write docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="rewrite docs/benchmarks.md")
    args = parser.parse_args()
    started = time.perf_counter()
    tables = [throughput(args.repeat), fidelity()]
    emit(tables)
    if args.write:
        where = f"{os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}"
        body = [SECTION, "",
                f"`.venv/bin/python bench/bench_extract.py --write` — commit `{revision()}`, "
                f"{where}; run time {time.perf_counter() - started:.0f} s. Method and rules: "
                "docs/extraction.md.", ""]
        for t in tables:
            body += [t.markdown(), ""]
        replace_section(DOC, SECTION, "\n".join(body))


if __name__ == "__main__":
    main()
