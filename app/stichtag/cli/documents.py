"""``stichtag ingest``, ``get`` and ``history``: writing versions and reading them as of a
Stichtag."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import (
    Subparsers,
    add_as_of,
    add_tenant,
    as_of,
    as_of_json,
    command,
    optional_time,
)
from stichtag.cli.manifest import ingest_manifest, manifest_bytes, media_type_for, read_manifest
from stichtag.cli.output import Output, UsageError
from stichtag.cli.progress import Progress
from stichtag.cli.remote import as_of as remote_as_of
from stichtag.cli.remote import plain
from stichtag.cli.tenants import operator
from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.domain.records import AssertionRow
from stichtag.domain.timeutil import format_time
from stichtag.services.documents import IngestRequest

if TYPE_CHECKING:
    from stichtag.client import Client

ASSERTION_KEYS = ("assertion_id", "version_id", "valid_from", "valid_to", "tx_from", "tx_to",
                  "confidentiality", "ended", "provenance")
"""What ``history`` and ``get`` print of an assertion (the API's ``Assertion`` has more)."""


def assertion_dict(a: AssertionRow) -> dict[str, Any]:
    """An assertion's ranges, version and provenance."""
    return {"assertion_id": a.assertion_id, "version_id": a.version_id,
            "valid_from": format_time(a.valid_from), "valid_to": format_time(a.valid_to),
            "tx_from": format_time(a.tx_from), "tx_to": format_time(a.tx_to),
            "confidentiality": CONFIDENTIALITY[a.confidentiality], "ended": a.ended,
            "provenance": a.provenance}


def assertion_out(struct: Any) -> dict[str, Any]:
    """The same from the API's ``Assertion`` (remote)."""
    data = plain(struct)
    return {k: data[k] for k in ASSERTION_KEYS}


def _check_ingest(args: argparse.Namespace) -> None:
    if args.manifest and args.files:
        raise UsageError("give FILE… or --manifest CSV, not both")
    if not args.manifest and not args.files:
        raise UsageError("give FILE… or --manifest CSV")
    if args.interactive and not args.manifest:
        raise UsageError("--interactive goes with --manifest (files are interactive writes)")
    if len(args.files) > 1 and args.document:
        raise UsageError("--document names one document; give one FILE with it")


def _ingested(out: Output, stats: dict[str, int]) -> None:
    out.emit(stats, lambda s: "ingested: " + ", ".join(f"{k} {v}" for k, v in s.items()))


def cmd_ingest(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Ingest files (one version each) or replay a manifest."""
    _check_ingest(args)
    who = operator(svc, args.tenant)
    if args.manifest:
        rows = read_manifest(Path(args.manifest))
        bar = Progress(len(rows), enabled=not args.json, total_bytes=manifest_bytes(rows),
                       every=args.progress_every)
        try:
            stats = ingest_manifest(svc, who, Path(args.manifest), use_tx_time=not args.now,
                                    progress=bar, bulk=not args.interactive)
        finally:
            bar.close()
    else:
        valid = optional_time(who, args.valid_from, field="valid_from")
        valid_to = optional_time(who, args.valid_to, field="valid_to")
        bar = _files_progress(args)
        stats = {"rows": len(args.files), "versions_created": 0, "assertions": 0,
                 "unchanged": 0}
        try:
            for name in args.files:
                path = Path(name)
                key = args.document or path.stem
                raw = path.read_bytes()
                result = svc.documents.ingest(who, key, IngestRequest(
                    text=raw, media_type=args.media_type or media_type_for(path),
                    valid_from=valid, valid_to=valid_to, title=args.title,
                    doc_class=args.doc_class, confidentiality=args.confidentiality,
                    source=str(path)))
                stats["versions_created"] += int(result.created)
                stats["assertions"] += int(result.write.asserted is not None)
                stats["unchanged"] += int(result.write.asserted is None)
                bar.step(f"{key} {result.version_id[:15]}", len(raw))
        finally:
            bar.close()
    _ingested(out, stats)


def _files_progress(args: argparse.Namespace) -> Progress:
    # A missing file has no size: the ingest names it when it gets there.
    total = sum(p.stat().st_size for p in map(Path, args.files) if p.is_file())
    return Progress(len(args.files), enabled=not args.json, total_bytes=total,
                    every=args.progress_every)


def remote_ingest(api: Client, args: argparse.Namespace, out: Output) -> None:
    """Ingest files through the server (a manifest replays admin imports: local only)."""
    _check_ingest(args)
    if args.manifest or args.now:
        raise UsageError("--manifest: replaying a manifest needs local access; run it "
                         "without --url/--key")
    bar = _files_progress(args)
    stats = {"rows": len(args.files), "versions_created": 0, "assertions": 0, "unchanged": 0}
    try:
        for name in args.files:
            path = Path(name)
            key = args.document or path.stem
            result = api.ingest_file(
                key, path, media_type=args.media_type or media_type_for(path),
                valid_from=args.valid_from, valid_to=args.valid_to, title=args.title,
                doc_class=args.doc_class, confidentiality=args.confidentiality,
                source=str(path))
            stats["versions_created"] += int(result.created)
            stats["assertions"] += int(result.asserted)
            stats["unchanged"] += int(not result.asserted)
            bar.step(f"{key} {result.version_id[:15]}", path.stat().st_size)
    finally:
        bar.close()
    _ingested(out, stats)


def cmd_history(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """A document's assertions on both time axes."""
    _history(out, [assertion_dict(a) for a in
                   svc.documents.history(operator(svc, args.tenant), args.document)])


def remote_history(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server."""
    _history(out, [assertion_out(a) for a in api.history(args.document).assertions])


def _history(out: Output, rows: list[dict[str, Any]]) -> None:
    out.emit(rows, lambda rs: "\n".join(
        f"#{r['assertion_id']:<6} valid [{r['valid_from']}, {r['valid_to'] or '∞'})  "
        f"known [{r['tx_from']}, {r['tx_to'] or '∞'})  {r['version_id'][:19]}…  "
        f"{r['ended'] or ''}" for r in rs))


def cmd_get(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """The version in force as of a Stichtag."""
    who = operator(svc, args.tenant)
    at = as_of(svc, who, args)
    row, content = svc.documents.get(who, args.document, valid_at=at.valid_at,
                                     known_at=at.known_at)
    data = {"document": args.document, "as_of": as_of_json(at), **assertion_dict(row)}
    if args.text:
        data["text"] = content.text
    _got(out, args, data)


def remote_get(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server (plain dates are read in the key's tenant zone there)."""
    d = api.document(args.document, valid_at=args.valid_at, known_at=args.known_at)
    data = {"document": d.document, "as_of": remote_as_of(d.as_of),
            **assertion_out(d.assertion)}
    if args.text:
        data["text"] = d.text
    _got(out, args, data)


def _got(out: Output, args: argparse.Namespace, data: dict[str, Any]) -> None:
    out.emit(data, lambda d: (f"{d['document']} as of valid {d['as_of']['valid_at']}, known "
                              f"{d['as_of']['known_at']}:\n  {d['version_id']}\n  valid "
                              f"[{d['valid_from']}, {d['valid_to'] or '∞'})"
                              + (f"\n\n{d['text']}" if args.text else "")))


def register(sub: Subparsers) -> None:
    """``ingest``, ``history``, ``get``."""
    ing = command(sub, "ingest", help="ingest files or a manifest CSV",
                  example="stichtag ingest --tenant acme deckrv.md --valid-from 2025-01-01\n"
                          "stichtag ingest --tenant acme --manifest corpus/manifest.csv --json")
    add_tenant(ing, remote=True)
    ing.add_argument("files", nargs="*", metavar="FILE",
                     help="one version per file (Markdown by extension, else plain text)")
    ing.add_argument("--manifest", metavar="CSV",
                     help="CSV: tx_time,document,action,valid_from,source,file,note; a bulk "
                          "load: a running server's readers do not wait for its indexing "
                          "(send the printed consistency token to wait)")
    ing.add_argument("--interactive", action="store_true",
                     help="with --manifest: a running server's readers wait for each row "
                          "to be indexed, as for an API write (default: they do not)")
    ing.add_argument("--progress-every", type=int, default=25, metavar="N",
                     help="when stderr is not a terminal: a progress line every N files "
                          "(default 25; a terminal gets one line updated in place)")
    ing.add_argument("--now", action="store_true",
                     help="ignore the manifest's tx_time (record at server time)")
    ing.add_argument("--document", metavar="KEY",
                     help="document key (default: the file name without extension)")
    ing.add_argument("--valid-from", metavar="TIME",
                     help="in force from (default: now, or the known version's start)")
    ing.add_argument("--valid-to", metavar="TIME",
                     help="in force until, exclusive (default: the next version or open)")
    ing.add_argument("--media-type", help="text/markdown or text/plain (default by extension)")
    ing.add_argument("--title")
    ing.add_argument("--doc-class", default="document",
                     help="the document class that decides contradictions (default document)")
    ing.add_argument("--confidentiality", default="internal",
                     help=f"{'|'.join(CONFIDENTIALITY)} (default internal)")
    ing.set_defaults(handler=cmd_ingest, remote=remote_ingest)

    hist = command(sub, "history", help="a document's assertions on both time axes",
                   example="stichtag history --tenant acme deckrv")
    add_tenant(hist, remote=True)
    hist.add_argument("document", help="the document key")
    hist.set_defaults(handler=cmd_history, remote=remote_history)

    get = command(sub, "get", help="the version in force as of a Stichtag",
                  example="stichtag get --tenant acme deckrv --valid-at 2022-01-01 "
                          "--known-at 2021-06-01 --text")
    add_tenant(get, remote=True)
    get.add_argument("document", help="the document key")
    add_as_of(get)
    get.add_argument("--text", action="store_true", help="print the version text too")
    get.set_defaults(handler=cmd_get, remote=remote_get)
