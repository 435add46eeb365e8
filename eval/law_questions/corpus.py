"""Read the shared law corpus for the question generator: the manifest's visibility rule
and the sections (``§ N Title`` plus body) of each version file. Standard library only."""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

# Headings of the three source formats: "# § 2 – Höchstzinssatz" (kmein),
# "## § 2 Höchstzinssatz (Euro)" (bundestag), "## § 2 Höchstzinssatz" (gii).
_HEADING = re.compile(r"^#{1,4}[ \t]*§[ \t]*(\d+[a-z]?)\b[ \t]*[–-]?[ \t]*(.*)$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#", re.MULTILINE)


@dataclass(frozen=True)
class Row:
    tx_time: str
    document: str
    action: str
    valid_from: str
    file: str


@dataclass(frozen=True)
class Section:
    number: str   # "2a"
    title: str    # "Höchstzinssatz" (may be empty or "(weggefallen)")
    body: str     # text up to the next heading, as in the normalized file


def read_text(path: Path) -> str:
    """The file as the server stores it: CRLF/CR to LF, NFC (docs/architecture.md §3)."""
    text = path.read_bytes().decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def read_manifest(root: Path) -> list[Row]:
    with (root / "manifest.csv").open(encoding="utf-8", newline="") as fh:
        return [Row(r["tx_time"], r["document"], r["action"], r["valid_from"], r["file"])
                for r in csv.DictReader(fh)]


def visible(rows: list[Row], document: str, valid_at: str, known_at: str) -> str | None:
    """The version file of ``document`` visible at (valid_at, known_at), or None.

    Rows recorded up to ``known_at`` count; walked by (valid_from, tx_time), the last one
    with valid_from <= valid_at wins: an ingest makes its file the version, a retraction
    removes the document. Dates are ISO strings, so they compare as text."""
    seen = sorted((r for r in rows if r.document == document and r.tx_time <= known_at),
                  key=lambda r: (r.valid_from, r.tx_time))
    current: str | None = None
    for row in seen:
        if row.valid_from > valid_at:
            break
        current = row.file if row.action == "ingest" else None
    return current


def sections(text: str) -> list[Section]:
    """The sections of one version: each ``§`` heading with the text up to the next heading."""
    out = []
    for match in _HEADING.finditer(text):
        start = match.end()
        following = _ANY_HEADING.search(text, start + 1)
        body = text[start:following.start() if following else len(text)]
        out.append(Section(match.group(1), match.group(2).strip(), body))
    return out
