"""The ``stichtag`` command for operators and scripts.

Each command group is a module with a ``register(sub)`` that adds its parsers. A command
sets ``handler=(services, args, out) -> exit code | None`` and gets the services from
``bootstrap`` (``needs_models=True`` loads the ONNX embedder), or
``standalone=(settings, args) -> exit code | None`` and runs without them. Commands call
services only; the store and the API stay behind them. With ``--url`` and ``--key`` a
command that also sets ``remote=(api, args, out)`` runs through the typed client against
that server instead (``stichtag.cli.remote``); the others say they need local access.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stichtag.bootstrap import bootstrap
from stichtag.cli import (
    assist,
    audit,
    changes,
    db,
    demo,
    documents,
    erasures,
    evaluate,
    index,
    keys,
    models,
    receipts,
    remote,
    review,
    search,
    serve,
    tenants,
)
from stichtag.cli.args import REMOTE_LINE, Formatter
from stichtag.cli.output import (
    EXIT_CODES,
    EXIT_OK,
    EXPECTED,
    Output,
    UsageError,
    error_line,
    exit_code,
)
from stichtag.config import load_settings
from stichtag.logging import configure_logging

GROUPS = (tenants, keys, documents, erasures, changes, search, index, evaluate, audit, review,
          receipts, demo, models, serve, assist, db)
"""The modules that add commands, in the order ``--help`` lists them."""

EPILOG = ("exit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())
          + "\n\n--json works before or after the command: stichtag --json tenants create acme"
            "\nor stichtag tenants create acme --json. Every command has --help with an "
            "example.\n\nWith --url URL --key KEY before the command (or STICHTAG_URL and "
            "STICHTAG_KEY), get, history, changes, search, ask, replay, impact, gaps, log, "
            "review and ingest FILE run through that server; the key decides the tenant:"
            "\n  stichtag --url https://kb.example --key stk_… ask \"Welcher Zins gilt?\"")


def build_parser(*, remote_line: bool = False) -> argparse.ArgumentParser:
    """The argument parser (kept separate so the docs and tests can walk it);
    ``remote_line`` for a command line with ``--url``/``--key``."""
    token = REMOTE_LINE.set(remote_line)
    try:
        return _parser()
    finally:
        REMOTE_LINE.reset(token)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stichtag", epilog=EPILOG, formatter_class=Formatter,
        description="The stichtag command: a bitemporal knowledge base for operators and "
                    "scripts (results on stdout, errors on stderr).")
    parser.add_argument("--json", action="store_true",
                        help="machine-readable output on stdout (also accepted after the "
                             "command)")
    remote.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in GROUPS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``stichtag`` console script; returns the exit code."""
    try:
        args = build_parser(remote_line=remote.requested(argv)).parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2), printed by argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    try:
        where = remote.target(args)
        if where is not None and not getattr(args, "offline", False):
            code = remote.run(args, *where)
            return EXIT_OK if code is None else int(code)
        if getattr(args, "tenant", "") is None:  # optional only for the remote line
            raise UsageError("--tenant: the tenant to act for is required here (or give "
                             "--url and --key to act through a server)")
        settings = load_settings()
        configure_logging(settings, stream=getattr(args, "log_stream", "stderr"))
        standalone = getattr(args, "standalone", None)
        if standalone is not None:
            code = standalone(settings, args)
        else:
            # Only commands that search or embed load the ONNX model.
            svc = (bootstrap(settings, fail_fast=True) if getattr(args, "needs_models", False)
                   else bootstrap(settings, embedder=None, fail_fast=True))
            try:
                code = args.handler(svc, args, Output(as_json=args.json))
            finally:
                svc.close()
    except EXPECTED as exc:
        print(error_line(exc), file=sys.stderr)
        return exit_code(exc)
    except KeyboardInterrupt:
        print("stichtag: interrupted", file=sys.stderr)
        return 130
    return EXIT_OK if code is None else int(code)
