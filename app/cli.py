"""The ``stichtag`` command for operators and scripts (``--json`` for machine output)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.bootstrap import ModelsMissing, Services, bootstrap
from app.config import Settings, SettingsError, load_settings
from app.domain.bitemporal import CONFIDENTIALITY, BitemporalError
from app.domain.errors import Conflict, Invalid, NotFound
from app.domain.extraction import DOCX, HTML, PDF, ExtractionRefused
from app.domain.text import TextError
from app.domain.timeutil import TimeError, format_time, parse_time, zone
from app.extract.sniff import sniff
from app.services.access import SCOPES, Principal, parse_clearance, parse_scopes
from app.services.documents import IngestRequest

DEMO_DIR = Path(__file__).resolve().parent / "demo" / "corpus"
USER_ERRORS = (Invalid, Conflict, NotFound, TextError, TimeError, BitemporalError, SettingsError,
               ModelsMissing, ExtractionRefused)


class CliError(Exception):
    """An error to print without a traceback (exit code 2)."""


@dataclass(frozen=True)
class Output:
    """Prints either for people or as JSON."""

    as_json: bool

    def emit(self, data: Any, human: Callable[[Any], str]) -> None:
        """Write ``data`` as JSON or through ``human``."""
        if self.as_json:
            print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        else:
            print(human(data))


def operator(svc: Services, tenant: str) -> Principal:
    """The operator acts for a tenant with every scope and full clearance."""
    try:
        return svc.access.operator(tenant)
    except NotFound:
        raise CliError(f"unknown tenant {tenant!r} (create it with: "
                       f"stichtag tenants create {tenant})") from None


def cmd_tenants_create(svc: Services, args: argparse.Namespace, out: Output) -> None:
    row = svc.access.create_tenant(args.name, args.time_zone)
    out.emit({"tenant_id": str(row.tenant_id), "name": row.name, "time_zone": row.time_zone},
             lambda d: f"created tenant {d['name']} ({d['tenant_id']}, zone {d['time_zone']})")


def create_key(svc: Services, tenant: str, scopes: str, clearance: str, label: str,
               expires: str | None) -> dict[str, Any]:
    """Create a key and return its public fields plus the one-time plaintext."""
    who = operator(svc, tenant)
    expires_at = parse_time(expires, field="expires_at") if expires else None
    row, token = svc.access.create_key(who.tenant_id, scopes=parse_scopes(scopes),
                                       clearance=parse_clearance(clearance), label=label,
                                       expires_at=expires_at)
    return {"key": token, "key_id": row.key_id, "tenant": tenant, "scopes": row.scopes,
            "clearance": CONFIDENTIALITY[row.clearance],
            "expires_at": format_time(row.expires_at)}


def cmd_keys_create(svc: Services, args: argparse.Namespace, out: Output) -> None:
    data = create_key(svc, args.tenant, args.scopes, args.clearance, args.label, args.expires_at)
    out.emit(data, lambda d: f"{d['key']}\n(key id {d['key_id']}, scopes {','.join(d['scopes'])},"
                             f" clearance {d['clearance']}; shown once, store it now)")


def cmd_keys_list(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    rows = [{"key_id": k.key_id, "scopes": k.scopes, "clearance": CONFIDENTIALITY[k.clearance],
             "label": k.label, "created_at": format_time(k.created_at),
             "expires_at": format_time(k.expires_at), "revoked_at": format_time(k.revoked_at)}
            for k in svc.access.list_keys(who.tenant_id)]
    out.emit(rows, lambda rs: "\n".join(
        f"{r['key_id']}  {','.join(r['scopes']):<24} {r['clearance']:<12} "
        f"{'revoked ' + r['revoked_at'] if r['revoked_at'] else 'active'}  {r['label']}"
        for r in rs) or "(no keys)")


def cmd_keys_revoke(svc: Services, args: argparse.Namespace, out: Output) -> None:
    svc.access.revoke(operator(svc, args.tenant).tenant_id, args.key_id)
    out.emit({"key_id": args.key_id, "revoked": True}, lambda d: f"revoked {d['key_id']}")


def cmd_keys_rotate(svc: Services, args: argparse.Namespace, out: Output) -> None:
    row, token = svc.access.rotate(operator(svc, args.tenant).tenant_id, args.key_id)
    out.emit({"key": token, "key_id": row.key_id, "rotated_from": args.key_id},
             lambda d: f"{d['key']}\n(new key id {d['key_id']}; {d['rotated_from']} revoked)")


@dataclass(frozen=True)
class ManifestRow:
    """One row of an ingest manifest (the format of the shared law corpus)."""

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
        need = {"tx_time", "document", "action", "valid_from", "file"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise CliError(f"{path}: missing columns {', '.join(sorted(missing))}")
        for number, rec in enumerate(reader, start=2):
            action = rec["action"].strip()
            if action not in ("ingest", "retract"):
                raise CliError(f"{path}:{number}: action must be ingest or retract, got {action!r}")
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


def media_type_for(path: Path, data: bytes | None = None) -> str:
    """PDF, DOCX or HTML by the file's magic bytes, never by its name; text is markdown by
    extension, else plain text (the bytes cannot tell the two apart)."""
    kind = sniff(path.read_bytes() if data is None else data)
    if kind in (PDF, DOCX, HTML):
        return kind
    return "text/markdown" if path.suffix.lower() in (".md", ".markdown") else "text/plain"


class Progress:
    """A progress bar on a terminal, one line per step otherwise; silent with --json."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.started = total, enabled, 0, time.monotonic()
        self._bar: Any = None
        if enabled and sys.stderr.isatty():
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(transient=False)
            self._bar.start()
            self._task = self._bar.add_task("ingest", total=total)

    def step(self, label: str) -> None:
        """Advance by one, naming what was done."""
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=label[:40])
        elif self.enabled:
            print(f"[{self.done}/{self.total}] {label}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop the bar."""
        if self._bar is not None:
            self._bar.stop()


def ingest_manifest(svc: Services, who: Principal, path: Path, *, use_tx_time: bool,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Replay a manifest in order; each row is its own transaction (nothing half-written)."""
    rows = read_manifest(path)
    tz = who.time_zone
    stats = {"rows": len(rows), "versions_created": 0, "assertions": 0, "retractions": 0,
             "unchanged": 0, "sentences": 0, "bytes": 0, "seconds": 0.0}
    started = time.monotonic()
    for row in rows:
        tx = parse_time(row.tx_time, field=f"line {row.line} tx_time", tz=tz) if use_tx_time else None
        valid = parse_time(row.valid_from, field=f"line {row.line} valid_from", tz=tz)
        try:
            if row.action == "retract":
                svc.documents.retract(who, row.document, valid_from=valid, tx_time=tx,
                                      reason=row.note or "retracted by manifest")
                stats["retractions"] += 1
            else:
                assert row.file is not None
                raw = row.file.read_bytes()
                result = svc.documents.ingest(who, row.document, IngestRequest(
                    text=raw, media_type=media_type_for(row.file, raw), valid_from=valid,
                    tx_time=tx, title=row.title, doc_class=row.doc_class,
                    confidentiality=row.confidentiality, source=row.source or None))
                stats["versions_created"] += int(result.created)
                stats["assertions"] += int(result.write.asserted is not None)
                stats["unchanged"] += int(result.write.asserted is None)
                stats["bytes"] += len(raw)
                if result.created:
                    stats["sentences"] += result.n_sentences
        except USER_ERRORS as exc:
            raise CliError(f"{path}:{row.line} ({row.document}): {exc}") from exc
        if progress is not None:
            progress.step(f"{row.document} {row.valid_from}")
    stats["seconds"] = round(time.monotonic() - started, 3)
    return stats


def cmd_ingest(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    if args.manifest:
        total = len(read_manifest(Path(args.manifest)))
        bar = Progress(total, enabled=not args.json)
        try:
            stats = ingest_manifest(svc, who, Path(args.manifest), use_tx_time=not args.now,
                                    progress=bar)
        finally:
            bar.close()
    else:
        if not args.files:
            raise CliError("give FILE… or --manifest CSV")
        if len(args.files) > 1 and args.document:
            raise CliError("--document names one document; give one FILE with it")
        tz = who.time_zone
        valid = parse_time(args.valid_from, field="valid_from", tz=tz) if args.valid_from else None
        valid_to = parse_time(args.valid_to, field="valid_to", tz=tz) if args.valid_to else None
        bar = Progress(len(args.files), enabled=not args.json)
        stats = {"rows": len(args.files), "versions_created": 0, "assertions": 0, "unchanged": 0}
        try:
            for name in args.files:
                path = Path(name)
                key = args.document or path.stem
                data = path.read_bytes()
                result = svc.documents.ingest(who, key, IngestRequest(
                    text=data, media_type=args.media_type or media_type_for(path, data),
                    valid_from=valid, valid_to=valid_to, title=args.title,
                    doc_class=args.doc_class, confidentiality=args.confidentiality,
                    source=str(path)))
                stats["versions_created"] += int(result.created)
                stats["assertions"] += int(result.write.asserted is not None)
                stats["unchanged"] += int(result.write.asserted is None)
                bar.step(f"{key} {result.version_id[:15]}")
        finally:
            bar.close()
    out.emit(stats, lambda s: "ingested: " + ", ".join(f"{k} {v}" for k, v in s.items()))


def _assertion_dict(a: Any) -> dict[str, Any]:
    return {"assertion_id": a.assertion_id, "version_id": a.version_id,
            "valid_from": format_time(a.valid_from), "valid_to": format_time(a.valid_to),
            "tx_from": format_time(a.tx_from), "tx_to": format_time(a.tx_to),
            "confidentiality": CONFIDENTIALITY[a.confidentiality], "ended": a.ended,
            "provenance": a.provenance}


def cmd_history(svc: Services, args: argparse.Namespace, out: Output) -> None:
    rows = [_assertion_dict(a) for a in svc.documents.history(operator(svc, args.tenant), args.document)]
    out.emit(rows, lambda rs: "\n".join(
        f"#{r['assertion_id']:<6} valid [{r['valid_from']}, {r['valid_to'] or '∞'})  "
        f"known [{r['tx_from']}, {r['tx_to'] or '∞'})  {r['version_id'][:19]}…  {r['ended'] or ''}"
        for r in rs))


def _changes_text(data: dict[str, Any]) -> str:
    """People's view of a knowledge diff: per document the assertions, then the pairs."""
    w = data["window"]
    lines = [f"changes known after {w['known_from']} up to and including {w['known_to']}"
             + (" (truncated: narrow the window or name a document)" if data["truncated"] else "")]
    for d in data["documents"]:
        lines.append(f"\n{d['document']}" + ("  (new document)" if d["new_document"] else ""))
        for label, rows in (("appeared", d["appeared"]), ("ended", d["ended"]),
                            ("corrected", d["corrected"])):
            for a in rows:
                appeared = label == "appeared"
                when = a["tx_from"] if appeared else a["tx_to"]
                how = a["provenance"].get("kind", "") if appeared else a["ended"]
                lines.append(f"  {label:<9} #{a['assertion_id']:<6} {a['version_id'][:19]}…  "
                             f"valid [{a['valid_from']}, {a['valid_to'] or '∞'})  at {when}  {how}")
        for p in d["pairs"]:
            ranges = ", ".join(f"[{r['valid_from']}, {r['valid_to'] or '∞'})" for r in p["ranges"])
            old = p["from_version"][:19] + "…" if p["from_version"] else p["from_state"]
            new = p["to_version"][:19] + "…" if p["to_version"] else p["to_state"]
            lines.append(f"  {old} → {new}  for {ranges}")
            diff = p["diff"]
            if diff is None:
                continue
            cut = " (list truncated)" if diff["truncated"] else ""
            lines.append(f"    +{diff['added']} -{diff['removed']} ~{diff['changed']} "
                         f"={diff['unchanged']} sentences{cut}")
            for c in diff["sentences"]:
                if c["op"] == "changed":
                    lines.append(f"    ~ {c['old']['text']}\n      → {c['new']['text']}")
                else:
                    side = c["new"] if c["op"] == "added" else c["old"]
                    lines.append(f"    {'+' if c['op'] == 'added' else '-'} {side['text']}")
    if not data["documents"]:
        lines.append("no changes in this window")
    return "\n".join(lines)


def cmd_changes(svc: Services, args: argparse.Namespace, out: Output) -> None:
    import msgspec

    from app.api.changes import changes_response

    who = operator(svc, args.tenant)
    tz = who.time_zone
    known_from = parse_time(args.known_from, field="known_from", tz=tz)
    known_to = (parse_time(args.known_to, field="known_to", tz=tz) if args.known_to
                else datetime.now(UTC))
    report = svc.changes.changes(who, known_from=known_from, known_to=known_to,
                                 document=args.document, diff=not args.no_diff,
                                 limit=args.limit, max_sentences=args.max_sentences)
    out.emit(msgspec.to_builtins(changes_response(report)), _changes_text)


def cmd_get(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    tz = who.time_zone
    now = datetime.now(UTC)
    valid_at = parse_time(args.valid_at, field="valid_at", tz=tz) if args.valid_at else now
    known_at = parse_time(args.known_at, field="known_at", tz=tz) if args.known_at else now
    row, content = svc.documents.get(who, args.document, valid_at=valid_at, known_at=known_at)
    data = {"document": args.document, "as_of": {"valid_at": format_time(valid_at),
            "known_at": format_time(known_at)}, **_assertion_dict(row)}
    if args.text:
        data["text"] = content.text
    out.emit(data, lambda d: (f"{d['document']} as of valid {d['as_of']['valid_at']}, known "
                              f"{d['as_of']['known_at']}:\n  {d['version_id']}\n  valid "
                              f"[{d['valid_from']}, {d['valid_to'] or '∞'})"
                              + (f"\n\n{d['text']}" if args.text else "")))


def cmd_search(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    tz = who.time_zone
    now = datetime.now(UTC)
    valid_at = parse_time(args.valid_at, field="valid_at", tz=tz) if args.valid_at else now
    known_at = parse_time(args.known_at, field="known_at", tz=tz) if args.known_at else now
    svc.indexer.catch_up(who.tenant_id)
    result = svc.search.search(who, args.query, valid_at=valid_at, known_at=known_at, k=args.k)
    data = {"run_id": str(result.run_id), "as_of": {"valid_at": format_time(valid_at),
            "known_at": format_time(known_at)},
            "hits": [{"document": h.document, "version_id": h.version_id, "start": h.start,
                      "end": h.end, "heading_path": h.heading_path, "text": h.text,
                      "bm25": h.bm25, "vector": h.vector, "fused": h.fused} for h in result.hits]}
    out.emit(data, lambda d: f"run {d['run_id']} as of valid {d['as_of']['valid_at']}, known "
             f"{d['as_of']['known_at']}\n" + "\n".join(
                 f"{i + 1:>2}. {h['document']} {h['version_id'][:15]}… [{h['start']},{h['end']}) "
                 f"{' › '.join(h['heading_path'])}\n    {h['text'][:160]}"
                 for i, h in enumerate(d["hits"])))


def cmd_index(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    if args.sub == "rebuild":
        seq = svc.indexer.rebuild(who.tenant_id)
        svc.indexer.embed_pending(who.tenant_id)
        data: dict[str, Any] = {"tenant": args.tenant, "rebuilt": True, "applied_seq": seq}
    elif args.sub == "check":
        data = {"tenant": args.tenant, **svc.indexer.check(who.tenant_id)}
    else:
        status = svc.indexer.catch_up(who.tenant_id)
        data = {"tenant": args.tenant, "outbox_seq": status.outbox_seq,
                "lexical_seq": status.lexical_seq, "pending_embeddings": status.pending_embeddings}
    out.emit(data, lambda d: ", ".join(f"{k} {v}" for k, v in d.items() if k != "sample"))
    if args.sub == "check" and data["differences"]:
        raise CliError(f"index and database differ in {data['differences']} documents")


def cmd_ask(svc: Services, args: argparse.Namespace, out: Output) -> None:
    who = operator(svc, args.tenant)
    if svc.answers is None:
        raise CliError("answering needs the models: stichtag models build")
    tz = who.time_zone
    now = datetime.now(UTC)
    valid_at = parse_time(args.valid_at, field="valid_at", tz=tz) if args.valid_at else now
    known_at = parse_time(args.known_at, field="known_at", tz=tz) if args.known_at else now
    svc.indexer.catch_up(who.tenant_id)
    r = svc.answers.answer(who, args.question, valid_at=valid_at, known_at=known_at,
                           generator=args.generator)
    data = {"run_id": str(r.run_id), "status": r.status, "reason": r.reason,
            "next_step": r.next_step, "coverage": r.coverage, "gaps": r.gaps,
            "threshold": r.failed.threshold if r.failed else None,
            "observed": r.failed.observed if r.failed else None,
            "as_of": {"valid_at": format_time(valid_at), "known_at": format_time(known_at)},
            "sentences": [{"text": s.text, "citations": [
                {"document": c.document, "version_id": c.version_id, "start": c.start,
                 "end": c.end, "quote": c.quote, "heading_path": list(c.heading_path)}
                for c in s.citations]} for s in r.sentences]}

    def human(d: dict[str, Any]) -> str:
        head = f"{d['status']}" + (f" ({d['reason']}: observed {d['observed']}, threshold "
                                   f"{d['threshold']})\n  next step: {d['next_step']}"
                                   if d["reason"] else "")
        lines = [head]
        for s in d["sentences"]:
            lines.append(f"- {s['text']}")
            lines.extend(f"    [{c['document']} {c['version_id'][:15]}… "
                         f"{' › '.join(c['heading_path'])} {c['start']}-{c['end']}]"
                         for c in s["citations"])
        lines.append(f"run {d['run_id']}")
        return "\n".join(lines)

    out.emit(data, human)


def cmd_calibrate(svc: Services, args: argparse.Namespace, out: Output) -> None:
    from app.services.calibrate import calibrate

    who = operator(svc, args.tenant)
    if svc.answers is None:
        raise CliError("calibration needs the models: stichtag models build")
    svc.indexer.catch_up(who.tenant_id)
    report = calibrate(svc.answers, who, Path(args.file), target_wrong_rate=args.target_wrong_rate,
                       tau=args.tau, time_zone=who.time_zone)
    data = report.to_dict()
    if args.apply:
        row = svc.thresholds.set(who, theta_rel=report.theta_rel, tau=report.tau,
                                 calibration=report.calibration, rationale=report.rationale)
        data["applied_version"] = row.version
    out.emit(data, lambda d: d["rationale"] + (
        f"\napplied as threshold version {d['applied_version']}" if "applied_version" in d
        else "\n(not applied; add --apply to record it)"))


def cmd_log(svc: Services, args: argparse.Namespace, out: Output) -> None:
    if args.sub == "public-key":
        print(svc.runlog.public_key(), end="")
        return
    who = operator(svc, args.tenant)
    if args.sub == "export":
        lines = svc.runlog.export(who.tenant_id)
        if args.output:
            with Path(args.output).open("w", encoding="utf-8") as handle:
                count = sum(handle.write(line + "\n") > 0 for line in lines)
            out.emit({"written": args.output, "lines": count},
                     lambda d: f"exported {d['lines']} lines to {d['written']}")
        else:
            for line in lines:
                print(line)
        return
    note = svc.runlog.checkpoint(who.tenant_id)
    if args.output:
        Path(args.output).write_text(note, encoding="utf-8")
    print(note, end="")


def cmd_log_verify(args: argparse.Namespace, out: Output) -> int:
    """Offline: needs only the export, the public key and optionally an older checkpoint."""
    from app.audit.signing import load_public_key
    from app.audit.verify import verify_export

    key = load_public_key(Path(args.public_key))
    older = Path(args.older_checkpoint).read_text(encoding="utf-8") if args.older_checkpoint else None
    older_key = load_public_key(Path(args.older_public_key)) if args.older_public_key else None
    with Path(args.export).open(encoding="utf-8") as handle:
        report = verify_export(handle, key, older_checkpoint=older, older_public_key=older_key)
    data = {"ok": report.ok, "records": report.record_count, "tenant": report.tenant,
            "root": report.root.hex(),
            "problems": [f"line {p.line}: {p.message}" for p in report.problems],
            "notices": [f"line {n.line}: {n.message}" for n in report.notices]}
    out.emit(data, lambda d: ("OK" if d["ok"] else "FAILED") + f": {d['records']} records, "
             f"root {d['root'][:16]}…" + "".join(f"\n  problem: {p}" for p in d["problems"]))
    return 0 if report.ok else 1


def cmd_replay(svc: Services, args: argparse.Namespace, out: Output) -> None:
    if svc.replay is None:
        raise CliError("replay needs the models: stichtag models build")
    v = svc.replay.replay(operator(svc, args.tenant), args.run_id)
    data = {"run_id": v.run_id, "kind": v.kind, "reproduced": v.reproduced,
            "differences": v.differences, "notes": v.notes}
    out.emit(data, lambda d: ("REPRODUCED" if d["reproduced"] else "DIFFERS") + f" {d['run_id']}"
             + "".join(f"\n  {x['what']}: recorded {x['recorded']!r} → replayed {x['replayed']!r}"
                       for x in d["differences"])
             + "".join(f"\n  note: {n}" for n in d["notes"]))
    if not v.reproduced:
        raise CliError(f"run {v.run_id} did not reproduce ({len(v.differences)} differences)")


def cmd_impact(svc: Services, args: argparse.Namespace, out: Output) -> None:
    if svc.replay is None:
        raise CliError("impact needs the models: stichtag models build")
    who = operator(svc, args.tenant)
    since = parse_time(args.since, field="since") if args.since else None
    svc.indexer.catch_up(who.tenant_id)
    runs = svc.replay.impact(who, since=since)
    out.emit(runs, lambda rs: "\n".join(
        f"{r['run_id']} valid_at {r['as_of']['valid_at']}: {r['status'][0]} → {r['status'][1]}; "
        f"-{len(r['citations_removed'])} +{len(r['citations_added'])} citations  {r['question']}"
        for r in rs) or "no recorded answer would change")


def cmd_gaps(svc: Services, args: argparse.Namespace, out: Output) -> None:

    if svc.gaps is None:
        raise CliError("the gap report needs the models: stichtag models build")
    since = parse_time(args.since, field="since") if args.since else None
    groups = svc.gaps.report(operator(svc, args.tenant), since=since)
    out.emit(groups, lambda gs: "\n".join(
        f"{g['count']:>4} × {g['questions'][0]}" + "".join(f"\n       {q}" for q in g["questions"][1:4])
        for g in gs) or "no abstained questions in the period")


def cmd_review(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Support review as the operator (reviewer id ``cli``)."""
    who = operator(svc, args.tenant)
    tz = who.time_zone
    if args.sub == "sample":
        strata = [s.strip() for s in (args.strata or "").split(",") if s.strip()]
        s = svc.review.create_sample(
            who, seed=args.seed, strata=strata, n=args.n,
            run_from=parse_time(args.run_from, field="run_from", tz=tz) if args.run_from else None,
            run_to=parse_time(args.run_to, field="run_to", tz=tz) if args.run_to else None)
        data = {"sample_id": s.sample_id, "seed": s.seed, "strata": s.strata,
                "n_per_stratum": s.n_per_stratum, "population": s.population,
                "items": len(s.items)}
        out.emit(data, lambda d: f"sample {d['sample_id']}: {d['items']} pairs drawn "
                 f"(seed {d['seed']}, n {d['n_per_stratum']} per stratum)" + "".join(
                     f"\n  {k}: population {v}" for k, v in d["population"].items()))
    elif args.sub == "show":
        s = svc.review.sample(who, args.sample_id)
        out.emit({"sample_id": s.sample_id, "seed": s.seed, "strata": s.strata,
                  "population": s.population, "items": s.items}, lambda d: "\n".join(
            f"[{i['item']}] {i['stratum']} · {(i['verdict'] or {}).get('verdict', 'unreviewed')}"
            f"\n  sentence: {i['sentence']}\n  quote:    {i['citation']['quote']}"
            f"\n  source:   {i['citation']['document']} {i['citation']['version_id'][:15]}… "
            f"[{i['citation']['start']}, {i['citation']['end']})" for i in d["items"])
            or "no items")
    elif args.sub == "verdict":
        v = svc.review.record_verdict(who, sample_id=args.sample_id, item=args.item,
                                      verdict=args.verdict, note=args.note,
                                      supersedes=args.supersedes)
        out.emit(v, lambda d: f"verdict {d['verdict_id']} ({d['verdict']}) on item {d['item']}"
                 f", log seq {d['seq']}")
    else:
        r = svc.review.report(who, args.sample_id)

        def human(d: dict[str, Any]) -> str:
            def ci(c: list[float] | None) -> str:
                return f" (95 % CI {c[0]:.2f}-{c[1]:.2f})" if c else ""

            lines = []
            for st in [d["overall"], *d["strata"]]:
                p, s = st["pairs"], st["sentences"]
                lines.append(f"{st['stratum']}: {p['statement']}{ci(p['ci95'])}; "
                             f"{s['statement']}{ci(s['ci95'])}; "
                             f"{st['pairs_unreviewed']} pairs unreviewed")
            lines += [f"  ✗ item {f['item']} {f['verdict']}: run {f['run_id']} "
                      f"{f['evidence_id']} {f['document']} ({f['generator']})"
                      for f in d["failures"]]
            return "\n".join(lines)

        out.emit(r, human)


def cmd_eval(svc: Services, args: argparse.Namespace, out: Output) -> None:
    from app.services.evaluate import corpus_versions, evaluate, load_items, sweep, write_svg

    who = operator(svc, args.tenant)
    if svc.answers is None:
        raise CliError("evaluation needs the models: stichtag models build")
    tz = who.time_zone
    items = load_items(Path(args.file), time_zone=tz,
                       version_of_file=corpus_versions(Path(args.corpus)) if args.corpus else None)
    if args.limit is not None:
        items = items[:args.limit]
    svc.indexer.catch_up(who.tenant_id)
    report = evaluate(svc.answers, who, items, time_zone=tz)
    table = sweep(report.items, thetas=[i / 20 for i in range(21)], taus=[0.0, 0.5, 0.75, 1.0])
    data = {**report.to_dict(), "sweep": table}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                                       encoding="utf-8")
    if args.svg:
        write_svg(table, Path(args.svg))
    out.emit(report.totals, lambda d: "\n".join(
        f"{k}: {v}" for k, v in d.items() if k != "denominators"))


def cmd_serve(settings: Settings, args: argparse.Namespace) -> None:
    import uvicorn

    from app.api.app import create_app
    from app.logging import configure_logging

    configure_logging(settings)
    uvicorn.run(create_app(settings), host=args.host or settings.host,
                port=args.port if args.port is not None else settings.port,
                log_level=settings.log_level, access_log=False)


def _tenant_exists(svc: Services, name: str) -> bool:
    try:
        svc.access.operator(name)
    except NotFound:
        return False
    return True


def cmd_demo(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Create the demo tenant with an admin key and load the bundled demo corpus (once)."""
    if _tenant_exists(svc, args.tenant):
        out.emit({"tenant": args.tenant, "created": False},
                 lambda d: f"demo tenant {d['tenant']!r} exists; new key: stichtag keys create "
                           f"--tenant {d['tenant']} --scopes read,write,audit,admin "
                           f"--clearance secret")
        return
    svc.access.create_tenant(args.tenant, "Europe/Berlin")
    key = create_key(svc, args.tenant, "read,write,audit,admin", "secret", "demo admin", None)
    who = operator(svc, args.tenant)
    stats = ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(who.tenant_id)  # lexical index and embeddings ready before serving
    base = f"http://{svc.settings.host}:{svc.settings.port}"
    data = {"tenant": args.tenant, "created": True, "key": key["key"], "stats": stats,
            "url": base, "examples": demo_examples(base, key["key"])}
    out.emit(data, lambda d: (
        f"demo tenant {d['tenant']!r} loaded ({d['stats']['rows']} manifest rows).\n"
        f"Admin key (shown once, keep it):\n  {d['key']}\n\nServer: {d['url']}  (auditor console "
        f"at {d['url']}/, OpenAPI at {d['url']}/schema)\nTry:\n" + "\n".join(f"  {e}" for e in d["examples"])))


def demo_examples(base: str, key: str) -> list[str]:
    """Three calls that show the bitemporal core on the demo corpus."""
    auth = f'-H "Authorization: Bearer {key}"'
    return [
        "# the surplus declaration in force on 1 June 2022, as known on 1 June 2021 "
        "(the 2022 one was not declared yet):",
        f"curl -s {auth} '{base}/v1/documents/surplus-declaration"
        "?valid_at=2022-06-01&known_at=2021-06-01'",
        "# the underwriting guideline's history on both time axes (note the backdated 2023 version):",
        f"curl -s {auth} '{base}/v1/documents/underwriting-guideline/history'",
        "# a gated answer with pinned citations, as of 1 June 2022:",
        f"curl -s {auth} -H 'Content-Type: application/json' -X POST '{base}/v1/answer' "
        "-d '{\"question\": \"Welcher Höchstrechnungszins gilt für Neugeschäft?\", "
        "\"valid_at\": \"2022-06-01\"}'",
    ]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept separate so the docs can list it)."""
    parser = argparse.ArgumentParser(prog="stichtag", description=__doc__)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)

    tenants = sub.add_parser("tenants", help="manage tenants").add_subparsers(dest="sub", required=True)
    tc = tenants.add_parser("create", help="create a tenant")
    tc.add_argument("name")
    tc.add_argument("--time-zone", default="UTC", help="IANA zone for plain dates (default UTC)")
    tc.set_defaults(handler=cmd_tenants_create)

    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="sub", required=True)
    kc = keys.add_parser("create", help="create a key (printed once)")
    kc.add_argument("--tenant", required=True)
    kc.add_argument("--scopes", default="read", help="comma-separated: read,write,audit,admin")
    kc.add_argument("--clearance", default="internal", help="public|internal|confidential|secret")
    kc.add_argument("--label", default="")
    kc.add_argument("--expires-at")
    kc.set_defaults(handler=cmd_keys_create)
    for name, handler in (("list", cmd_keys_list), ("revoke", cmd_keys_revoke),
                          ("rotate", cmd_keys_rotate)):
        k = keys.add_parser(name, help=f"{name} keys")
        k.add_argument("--tenant", required=True)
        if name != "list":
            k.add_argument("key_id")
        k.set_defaults(handler=handler)

    ing = sub.add_parser("ingest", help="ingest files or a manifest CSV")
    ing.add_argument("--tenant", required=True)
    ing.add_argument("files", nargs="*")
    ing.add_argument("--manifest", help="CSV: tx_time,document,action,valid_from,source,file,note")
    ing.add_argument("--now", action="store_true",
                     help="ignore the manifest's tx_time (record at server time)")
    ing.add_argument("--document", help="document key (default: file name without extension)")
    ing.add_argument("--valid-from")
    ing.add_argument("--valid-to")
    ing.add_argument("--media-type")
    ing.add_argument("--title")
    ing.add_argument("--doc-class", default="document")
    ing.add_argument("--confidentiality", default="internal")
    ing.set_defaults(handler=cmd_ingest)

    hist = sub.add_parser("history", help="a document's assertions on both time axes")
    hist.add_argument("--tenant", required=True)
    hist.add_argument("document")
    hist.set_defaults(handler=cmd_history)

    ch = sub.add_parser("changes", help="knowledge diff: what changed in what we knew "
                                        "between two transaction times")
    ch.add_argument("--tenant", required=True)
    ch.add_argument("--known-from", required=True, help="window start, exclusive")
    ch.add_argument("--known-to", help="window end, inclusive (default now)")
    ch.add_argument("--document", help="only this document key")
    ch.add_argument("--no-diff", action="store_true", help="list assertions without sentence diffs")
    ch.add_argument("--limit", type=int, default=200, help="assertion entries listed at most")
    ch.add_argument("--max-sentences", type=int, default=20,
                    help="sentence changes listed per version pair")
    # Also accepted after the subcommand; SUPPRESS keeps a global --json from being reset.
    ch.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help="machine-readable output")
    ch.set_defaults(handler=cmd_changes)

    get = sub.add_parser("get", help="the version in force as of a Stichtag")
    get.add_argument("--tenant", required=True)
    get.add_argument("document")
    get.add_argument("--valid-at")
    get.add_argument("--known-at")
    get.add_argument("--text", action="store_true", help="print the version text too")
    get.set_defaults(handler=cmd_get)

    search = sub.add_parser("search", help="hybrid search as of a Stichtag")
    search.add_argument("--tenant", required=True)
    search.add_argument("query")
    search.add_argument("--valid-at")
    search.add_argument("--known-at")
    search.add_argument("-k", type=int, default=10)
    search.set_defaults(handler=cmd_search, needs_models=True)

    index = sub.add_parser("index", help="derived indexes").add_subparsers(dest="sub", required=True)
    for name, text in (("rebuild", "recreate the tenant's tantivy index from PostgreSQL"),
                       ("check", "compare the tantivy index with PostgreSQL (exit 2 on differences)"),
                       ("sync", "apply the outbox and embed pending passages now")):
        ix = index.add_parser(name, help=text)
        ix.add_argument("--tenant", required=True)
        ix.set_defaults(handler=cmd_index, needs_models=name != "check")

    ask = sub.add_parser("ask", help="a gated answer with pinned citations, as of a Stichtag")
    ask.add_argument("--tenant", required=True)
    ask.add_argument("question")
    ask.add_argument("--valid-at")
    ask.add_argument("--known-at")
    ask.add_argument("--generator", default="extractive")
    ask.set_defaults(handler=cmd_ask, needs_models=True)

    cal = sub.add_parser("calibrate", help="fit the rerank calibration and propose thresholds")
    cal.add_argument("--tenant", required=True)
    cal.add_argument("file", help="JSONL: question, answerable, valid_at, known_at")
    cal.add_argument("--target-wrong-rate", type=float, default=0.1)
    cal.add_argument("--tau", type=float, default=1.0)
    cal.add_argument("--apply", action="store_true", help="record it as a new threshold version")
    cal.set_defaults(handler=cmd_calibrate, needs_models=True)

    log = sub.add_parser("log", help="the tamper-evident run log").add_subparsers(
        dest="sub", required=True)
    for name, text in (("export", "write the tenant's log as JSON Lines"),
                       ("checkpoint", "print a freshly signed checkpoint")):
        lp = log.add_parser(name, help=text)
        lp.add_argument("--tenant", required=True)
        lp.add_argument("-o", "--output")
        lp.set_defaults(handler=cmd_log)
    lk = log.add_parser("public-key", help="print the checkpoint verification key (PEM)")
    lk.set_defaults(handler=cmd_log)
    lv = log.add_parser("verify", help="verify an export offline (no database needed)")
    lv.add_argument("export")
    lv.add_argument("--public-key", required=True, help="PEM file")
    lv.add_argument("--older-checkpoint", help="a checkpoint taken earlier (signed note)")
    lv.add_argument("--older-public-key",
                    help="PEM file of the key that signed --older-checkpoint (after a key rotation)")
    lv.set_defaults(handler=None, offline_verify=True)

    rp = sub.add_parser("replay", help="recompute a recorded run; exit 2 if it differs")
    rp.add_argument("--tenant", required=True)
    rp.add_argument("run_id")
    rp.set_defaults(handler=cmd_replay, needs_models=True)

    imp = sub.add_parser("impact", help="recorded answers that would now differ (after backdating)")
    imp.add_argument("--tenant", required=True)
    imp.add_argument("--since")
    imp.set_defaults(handler=cmd_impact, needs_models=True)

    gp = sub.add_parser("gaps", help="documentation gaps: abstained questions grouped by topic")
    gp.add_argument("--tenant", required=True)
    gp.add_argument("--since", help="default: the last 30 days")
    gp.set_defaults(handler=cmd_gaps, needs_models=True)

    rv = sub.add_parser("review", help="sampled support review of answer sentences").add_subparsers(
        dest="sub", required=True)
    rs = rv.add_parser("sample", help="draw a reproducible stratified sample of sentence-citation pairs")
    rs.add_argument("--tenant", required=True)
    rs.add_argument("--seed", type=int, required=True)
    rs.add_argument("--strata", help="comma-separated: document,generator,coverage,run_month,asof_year")
    rs.add_argument("-n", type=int, default=20, help="pairs per stratum (default 20)")
    rs.add_argument("--run-from", help="only runs recorded at or after this time")
    rs.add_argument("--run-to", help="only runs recorded before this time")
    rs.set_defaults(handler=cmd_review)
    rsh = rv.add_parser("show", help="a sample's items: sentence, quote, current verdict")
    rsh.add_argument("--tenant", required=True)
    rsh.add_argument("sample_id")
    rsh.set_defaults(handler=cmd_review)
    rvd = rv.add_parser("verdict", help="record a verdict (append-only, logged)")
    rvd.add_argument("--tenant", required=True)
    rvd.add_argument("sample_id")
    rvd.add_argument("item", type=int)
    rvd.add_argument("verdict", help="full | partial | none | contradicts")
    rvd.add_argument("--note")
    rvd.add_argument("--supersedes", help="the item's current verdict id")
    rvd.set_defaults(handler=cmd_review)
    rrp = rv.add_parser("report", help="support rates with counts, denominators and 95 %% CIs")
    rrp.add_argument("--tenant", required=True)
    rrp.add_argument("sample_id")
    rrp.set_defaults(handler=cmd_review)

    ev = sub.add_parser("eval", help="evaluate answers on a labelled as-of question set")
    ev.add_argument("--tenant", required=True)
    ev.add_argument("file", help="JSONL: question, valid_at, known_at, answerable, gold")
    ev.add_argument("--corpus", help="directory that gold.version_file paths are relative to")
    ev.add_argument("--json-out", help="write totals, per-item rows and the sweep as JSON")
    ev.add_argument("--svg", help="write the delivery vs wrong-answer plot")
    ev.add_argument("--limit", type=int, help="evaluate only the first N items")
    ev.set_defaults(handler=cmd_eval, needs_models=True)

    demo = sub.add_parser("demo", help="create the demo tenant and load the demo corpus once")
    demo.add_argument("--tenant", default="demo")
    demo.set_defaults(handler=cmd_demo, needs_models=True)

    models = sub.add_parser("models", help="offline models").add_subparsers(dest="sub", required=True)
    mb = models.add_parser("build", help="build the ONNX models into the data directory")
    mb.set_defaults(handler=None, models=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``stichtag`` console script."""
    args = build_parser().parse_args(argv)
    out = Output(as_json=args.json)
    try:
        settings = load_settings()
        if args.command == "serve":
            cmd_serve(settings, args)
            return 0
        if getattr(args, "offline_verify", False):
            return cmd_log_verify(args, out)
        if getattr(args, "models", False):
            from app.models.build import build_models

            manifests = build_models(settings.models_dir,
                                     progress=None if args.json else lambda m: print(m, file=sys.stderr))
            out.emit([m.name for m in manifests], lambda ms: "models ready: " + ", ".join(ms))
            return 0
        # Only commands that search or embed load the ONNX model.
        svc = bootstrap(settings) if getattr(args, "needs_models", False) else bootstrap(
            settings, embedder=None)
        try:
            args.handler(svc, args, out)
        finally:
            svc.close()
    except (CliError, *USER_ERRORS) as exc:
        print(f"stichtag: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
