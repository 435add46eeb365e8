"""``stichtag ask --evidence``, ``stichtag check FILE`` and ``stichtag mcp``: answers
written by your own assistant (docs/assistants.md). All three go through a server
(``--url``/``--key`` or ``STICHTAG_URL``/``STICHTAG_KEY``): the evidence and the check
are recorded runs of the key's tenant, and the MCP server is a client of the API.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from stichtag.cli.args import Subparsers, add_as_of, command
from stichtag.cli.output import EXIT_ABSTAINED, EXIT_OK, Output, UsageError
from stichtag.cli.remote import KEY_ENV, URL_ENV, plain, target
from stichtag.config import Settings

if TYPE_CHECKING:
    from stichtag.client import Client

REMOTE_ONLY = (f"needs a server: give --url URL and --key KEY (or {URL_ENV} and "
                f"{KEY_ENV}); see docs/assistants.md")


def remote_evidence(api: Client, args: argparse.Namespace, out: Output) -> int:
    """``ask --evidence``: the gated evidence numbered [n]; exit code 3 when refused."""
    r = api.evidence(args.question, valid_at=args.valid_at, known_at=args.known_at)
    out.emit(plain(r), _evidence_text)
    return EXIT_ABSTAINED if r.status == "abstained" else EXIT_OK


def _evidence_text(d: dict[str, Any]) -> str:
    head = f"{d['status']} run {d['run_id']}"
    if d["reason"]:
        head += (f" ({d['reason']}: observed {d['observed']}, threshold {d['threshold']})\n"
                 f"  next step: {d['next_step']}")
    return "\n".join([head, *(f"[{e['n']}] {e['document']} {e['version_id'][:15]}… "
                              f"{e['start']}-{e['end']}: {e['quote']}"
                              for e in d["evidence"])])


def remote_check(api: Client, args: argparse.Namespace, out: Output) -> int:
    """``check FILE``: the verdict on an answer written elsewhere; exit code 3 when it
    abstains."""
    from stichtag.api import schemas as s  # noqa: PLC0415 - the API's types, remote only

    raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    try:
        body = msgspec.json.decode(raw, type=s.CheckBody)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{args.file}: not a check request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise UsageError(f"{args.file}: not JSON: {exc}") from None
    r = api.check_answer(body.answer, run_id=body.run_id, citations=body.citations,
                         valid_at=args.valid_at or body.valid_at,
                         known_at=args.known_at or body.known_at)
    out.emit(plain(r), _check_text)
    return EXIT_ABSTAINED if r.status == "abstained" else EXIT_OK


def _check_text(d: dict[str, Any]) -> str:
    head = d["status"] + (f" ({d['reason']}: observed {d['observed']}, threshold "
                          f"{d['threshold']})\n  {d['detail']}\n  next step: {d['next_step']}"
                          if d["reason"] else f" (coverage {d['coverage']})")
    lines = [head]
    for sentence in d["sentences"]:
        lines.append(f"- {sentence['text']}")
        lines.extend(f"    [{c['document']} {c['version_id'][:15]}… {c['start']}-{c['end']}]"
                     for c in sentence["citations"])
        lines.extend(f"    ✗ {ref['label']}: {ref['failure']}"
                     for ref in sentence["references"] if not ref["resolved"])
    lines.append(f"run {d['run_id']}")
    return "\n".join(lines)


def local_only(settings: Settings, args: argparse.Namespace) -> int:
    """The local line of a server-only command."""
    del settings
    raise UsageError(f"{args.command}: {REMOTE_ONLY}")


def remote_mcp(api: Client, args: argparse.Namespace, out: Output) -> int:
    """``mcp``: serve MCP on stdin/stdout through an async client of the same server."""
    del api, out
    import anyio  # noqa: PLC0415 - the MCP SDK loads only for this command

    from stichtag.assistant.tools import build_server, fixed  # noqa: PLC0415
    from stichtag.client import AsyncClient  # noqa: PLC0415

    where = target(args)
    assert where is not None  # remote.run calls this only with a server

    async def serve() -> None:
        async with AsyncClient(*where) as client:
            await build_server(fixed(client)).run_stdio_async()

    anyio.run(serve)
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """``check``, ``mcp`` (``ask --evidence`` is an option of ``ask``)."""
    check = command(sub, "check", help="check an answer written elsewhere against the gates",
                    description="Hold an answer written elsewhere to the gates: every "
                                "reference resolved to a cut Fundstelle, coverage against "
                                "tau. FILE is the JSON body of POST /v1/answer/check ('-': "
                                "stdin). An abstention exits with code 3.",
                    example="stichtag check answer.json   # STICHTAG_URL and STICHTAG_KEY set\n"
                            "stichtag check - < answer.json --json")
    check.add_argument("file", metavar="FILE")
    add_as_of(check)
    check.set_defaults(standalone=local_only, remote=remote_check)

    mcp = command(sub, "mcp", help="serve the MCP tools on stdio for a desktop assistant",
                  description="Serve the Model Context Protocol on stdin/stdout (tools ask, "
                              "evidence, check_answer, get_document, document_history, "
                              "search; prompt grounded_answer), each a call to the server "
                              "with the key given.",
                  example="stichtag mcp   # STICHTAG_URL and STICHTAG_KEY set; MCP on stdin/stdout")
    mcp.set_defaults(standalone=local_only, remote=remote_mcp)

