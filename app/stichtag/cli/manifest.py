"""Ingest manifests (the CSV format of the shared law corpus).

Tests and benchmarks load corpora through ``ingest_manifest`` as the operator does.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stichtag.bootstrap import Services
from stichtag.cli.output import EXPECTED, CliError, describe
from stichtag.cli.progress import Progress
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest

COLUMNS = ("tx_time", "document", "action", "valid_from", "file")
"""Required; ``source``, ``note``, ``title``, ``doc_class`` and ``confidentiality`` are
optional."""


@dataclass(frozen=True)
class ManifestRow:
    """One row of an ingest manifest."""

    line: int
    tx_time: str
    document: str
    action: str
    valid_from: str
    file: Path | None
    source: str
    note: str
    title: str | None
    doc_class: str
    confidentiality: str


def read_manifest(path: Path) -> list[ManifestRow]:
    """Parse and check a manifest CSV before anything is written."""
    rows: list[ManifestRow] = []
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = set(COLUMNS) - set(reader.fieldnames or [])
        if missing:
            raise CliError(f"{path}: missing columns {', '.join(sorted(missing))}")
        for number, rec in enumerate(reader, start=2):
            action = rec["action"].strip()
            if action not in ("ingest", "retract"):
                raise CliError(f"{path}:{number}: action must be ingest or retract, "
                               f"got {action!r}")
            file = (path.parent / rec["file"]).resolve() if rec.get("file") else None
            if action == "ingest" and (file is None or not file.is_file()):
                raise CliError(f"{path}:{number}: file not found: {rec.get('file')!r}")
            rows.append(ManifestRow(
                line=number, tx_time=rec["tx_time"].strip(), document=rec["document"].strip(),
                action=action, valid_from=rec["valid_from"].strip(), file=file,
                source=(rec.get("source") or "").strip(), note=(rec.get("note") or "").strip(),
                title=(rec.get("title") or "").strip() or None,
                doc_class=(rec.get("doc_class") or "").strip() or "regulation",
                confidentiality=(rec.get("confidentiality") or "").strip() or "public"))
    return rows


def media_type_for(path: Path) -> str | None:
    """Markdown by extension; anything else is left to the service, which tells PDF, DOCX,
    HTML and plain text apart by the bytes, never by the name (a PDF named ``.md`` is
    refused with the media type to give)."""
    return "text/markdown" if path.suffix.lower() in (".md", ".markdown") else None


def ingest_manifest(svc: Services, who: Principal, path: Path, *, use_tx_time: bool,
                    progress: Progress | None = None, bulk: bool = False) -> dict[str, Any]:
    """Replay a manifest in order; each row is its own transaction (nothing half-written).

    ``bulk`` (the ``ingest --manifest`` command): a server's readers do not wait for the
    index to apply these rows (0014_outbox_awaited.sql); ``consistency`` in the result is
    the outbox position after the last row, the token a reader sends to wait for them.
    """
    rows = read_manifest(path)
    tz = who.time_zone
    stats: dict[str, Any] = {"rows": len(rows), "versions_created": 0, "assertions": 0,
                             "retractions": 0, "unchanged": 0, "sentences": 0, "bytes": 0,
                             "seconds": 0.0}
    started = time.monotonic()
    for row in rows:
        nbytes = 0
        try:
            tx = parse_time(row.tx_time, field="tx_time", tz=tz) if use_tx_time else None
            valid = parse_time(row.valid_from, field="valid_from", tz=tz)
            if row.action == "retract":
                svc.documents.retract(who, row.document, valid_from=valid, tx_time=tx,
                                      reason=row.note or "retracted by manifest", bulk=bulk)
                stats["retractions"] += 1
            else:
                if row.file is None:  # read_manifest checked it; for the type checker
                    raise CliError(f"line {row.line}: no file")
                raw = row.file.read_bytes()
                nbytes = len(raw)
                result = svc.documents.ingest(who, row.document, IngestRequest(
                    text=raw, media_type=media_type_for(row.file), valid_from=valid,
                    tx_time=tx, title=row.title, doc_class=row.doc_class,
                    confidentiality=row.confidentiality, source=row.source or None,
                    bulk=bulk))
                stats["versions_created"] += int(result.created)
                stats["assertions"] += int(result.write.asserted is not None)
                stats["unchanged"] += int(result.write.asserted is None)
                stats["bytes"] += len(raw)
                if result.created:
                    stats["sentences"] += result.n_sentences
        except EXPECTED as exc:
            raise CliError(f"{path}:{row.line} ({row.document}): {describe(exc)}") from exc
        if progress is not None:
            progress.step(f"{row.document} {row.valid_from}", nbytes)
    stats["seconds"] = round(time.monotonic() - started, 3)
    stats["consistency"] = svc.indexer.outbox_head(who.tenant_id)
    return stats


def manifest_bytes(rows: list[ManifestRow]) -> int:
    """The size of the files a manifest ingests (the progress display's total)."""
    return sum(r.file.stat().st_size for r in rows if r.file is not None and r.action == "ingest")
