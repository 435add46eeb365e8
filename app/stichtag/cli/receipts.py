"""``stichtag receipt get|verify``: answer receipts (docs/audit.md, "Receipts").

``verify`` needs no server and no database: the receipt, the tenant's public key (from
``stichtag log public-key``) and, to check the quotes, the cited versions' texts — files
in ``--versions DIR`` (any names: each file's blake3 content address is recomputed), or
fetched from the server given by ``--url``/``--key``, which is then trusted for nothing
but bytes whose address it recomputes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group
from stichtag.cli.output import CliError, Output
from stichtag.cli.remote import target
from stichtag.cli.tenants import operator
from stichtag.config import Settings

if TYPE_CHECKING:
    from stichtag.client import Client


def _write(args: argparse.Namespace, receipt: Any) -> None:
    if args.html:
        from stichtag.audit.receipt_html import render_receipt  # noqa: PLC0415

        text = render_receipt(receipt)
    else:
        text = json.dumps(receipt, ensure_ascii=False, indent=1) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        print(text, end="")


def cmd_get(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """A receipt of a recorded answer, as JSON (stdout or ``-o FILE``)."""
    _write(args, svc.receipts.receipt(operator(svc, args.tenant), args.run_id))


def remote_get(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server."""
    import msgspec  # noqa: PLC0415 - only this command

    _write(args, msgspec.to_builtins(api.receipt(args.run_id)))


def _texts(args: argparse.Namespace, wanted: list[str]) -> tuple[list[bytes | str], list[str]]:
    """The texts given or fetched, and the cited versions the server says were erased
    (their quotes can no longer be checked; the receipt's signature and inclusion can)."""
    texts: list[bytes | str] = []
    erased: list[str] = []
    if args.versions:
        texts += [p.read_bytes() for p in sorted(Path(args.versions).iterdir()) if p.is_file()]
    where = target(args)
    if where is not None:
        from stichtag.client import Client, Gone  # noqa: PLC0415 - only with --url

        with Client(*where) as api:
            for v in wanted:
                try:
                    texts.append(api.version(v).text)
                except Gone:
                    erased.append(v)
    return texts, erased


def cmd_verify(settings: Settings, args: argparse.Namespace) -> None:
    """Offline: exit code 1 when the receipt does not verify."""
    from stichtag.audit.receipt import (  # noqa: PLC0415 - only this command
        cited_versions,
        load_versions,
        verify_receipt,
    )
    from stichtag.audit.signing import load_public_key  # noqa: PLC0415

    out = Output(as_json=args.json)
    try:
        receipt = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CliError(f"receipt: not JSON ({exc})") from None
    if not isinstance(receipt, dict):
        raise CliError("receipt: not a JSON object")
    texts, erased = _texts(args, list(cited_versions(receipt)))
    versions = load_versions(texts)
    report = verify_receipt(receipt, load_public_key(Path(args.public_key)),
                            versions=versions)
    data = {"ok": report.ok, "run_id": receipt.get("run_id"), "problems": list(report.problems),
            "quotes_checked": report.quotes_checked,
            "quotes_unchecked": report.quotes_unchecked, "erased_versions": erased}
    out.emit(data, lambda d: ("OK" if d["ok"] else "FAILED") + f": run {d['run_id']}, "
             f"{d['quotes_checked']} quote(s) checked against their versions, "
             f"{d['quotes_unchecked']} not checked (no text given)"
             + (f"; erased on the server: {', '.join(d['erased_versions'])}"
                if d["erased_versions"] else "")
             + "".join(f"\n  problem: {p}" for p in d["problems"]))
    if not report.ok:
        raise CliError(f"receipt: does not verify ({len(report.problems)} problems)")


def register(sub: Subparsers) -> None:
    """``receipt get``, ``receipt verify``."""
    rc = group(sub, "receipt", help="answer receipts that verify offline",
               example="stichtag --url https://kb.example --key stk_… receipt get RUN -o r.json\n"
                       "stichtag receipt verify r.json --public-key log.pem --versions texts/")
    get = command(rc, "get", help="write the receipt of a recorded answer (JSON)",
                  example="stichtag receipt get --tenant acme RUN_ID -o receipt.json")
    add_tenant(get, remote=True)
    get.add_argument("run_id", help="the run id an answer printed")
    get.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
    get.add_argument("--html", action="store_true",
                     help="a printable HTML page of the receipt instead of its JSON")
    get.set_defaults(handler=cmd_get, remote=remote_get)
    ver = command(rc, "verify", help="check a receipt with no server and no database",
                  example="stichtag receipt verify receipt.json --public-key log.pem "
                          "--versions texts/")
    ver.add_argument("file", help="a receipt (GET /v1/runs/{run_id}/receipt)")
    ver.add_argument("--public-key", required=True, metavar="PEM",
                     help="the tenant's log key (stichtag log public-key)")
    ver.add_argument("--versions", metavar="DIR",
                     help="files with the cited versions' texts, to check every quote")
    ver.set_defaults(standalone=cmd_verify, offline=True)
