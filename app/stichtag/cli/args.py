"""Building the command tree the same way everywhere: each command takes ``--json``
after its name as well as before, has ``--help`` with an example, and reads the as-of
pair in the tenant's time zone.
"""

from __future__ import annotations

import argparse
import contextvars
import textwrap
from datetime import datetime
from typing import Any

from stichtag.bootstrap import Services
from stichtag.domain.asof import AsOf, as_of_pair
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.services.access import Principal

Subparsers = Any
"""``argparse._SubParsersAction`` (private in typeshed's sense; the parsers come from
``add_subparsers``)."""

_JSON = argparse.ArgumentParser(add_help=False)
# SUPPRESS: without a value after the subcommand, the global --json stays as given.
_JSON.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="machine-readable output on stdout (also accepted before the command)")


class Formatter(argparse.HelpFormatter):
    """Wraps prose line by line and keeps indented lines (example commands) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            indent + line if not line or line.startswith(" ")
            else textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
            for line in text.splitlines())


def _sentence(text: str) -> str:
    """A help phrase as a description: capitalised, a full stop, argparse's ``%%`` undone."""
    text = text.replace("%%", "%")
    return text[:1].upper() + text[1:] + "."


def command(sub: Subparsers, name: str, *, help: str, example: str,
            description: str | None = None) -> argparse.ArgumentParser:
    """A command (or command group) named ``name`` with ``--json`` and an example.

    ``example`` is one or more command lines; the epilog shows them verbatim.
    """
    lines = "\n".join(f"  {line}" if line else "" for line in example.strip().splitlines())
    return sub.add_parser(  # type: ignore[no-any-return]
        name, help=help, description=description or _sentence(help),
        epilog=f"example{'s' if len(example.strip().splitlines()) > 1 else ''}:\n{lines}",
        formatter_class=Formatter, parents=[_JSON])


def group(sub: Subparsers, name: str, *, help: str, example: str) -> Subparsers:
    """A command group whose subcommands are required."""
    parser = command(sub, name, help=help, example=example)
    return parser.add_subparsers(dest="sub", required=True, metavar="COMMAND")


REMOTE_LINE = contextvars.ContextVar("REMOTE_LINE", default=False)
"""True while the parser for a ``--url`` command line is built: no command requires
``--tenant`` then, so an operator command reaches the "needs local access" message."""


def add_tenant(parser: argparse.ArgumentParser, *, remote: bool = False) -> None:
    """``--tenant NAME``: the tenant the operator acts for. A command that also runs
    through ``--url`` (``remote``) takes it optionally: there the key decides the tenant,
    and the local handler asks for it (``stichtag.cli.tenants.operator``)."""
    if remote or REMOTE_LINE.get():
        parser.add_argument("--tenant", metavar="NAME",
                            help="the tenant to act for (stichtag tenants create NAME); "
                                 "required unless --url/--key name a server")
    else:
        parser.add_argument("--tenant", required=True, metavar="NAME",
                            help="the tenant to act for (stichtag tenants create NAME)")


def add_as_of(parser: argparse.ArgumentParser) -> None:
    """``--valid-at`` and ``--known-at`` (both default to now)."""
    parser.add_argument("--valid-at", metavar="TIME",
                        help="the Stichtag: what was in force then (default now; plain dates "
                             "are midnight in the tenant's time zone)")
    parser.add_argument("--known-at", metavar="TIME",
                        help="as the system knew it then (default now)")


def optional_time(who: Principal, raw: str | None, *, field: str) -> datetime | None:
    """An optional time argument, plain dates in the tenant's zone."""
    return parse_time(raw, field=field, tz=who.time_zone) if raw else None


def as_of(svc: Services, who: Principal, args: argparse.Namespace) -> AsOf:
    """The as-of pair of a read: ``--valid-at`` and ``--known-at``, each default now; a
    ``--known-at`` after now is read as now (docs/architecture.md §3.7)."""
    return as_of_pair(valid_at=optional_time(who, args.valid_at, field="valid_at"),
                      known_at=optional_time(who, args.known_at, field="known_at"),
                      now=svc.clock.now())


def as_of_json(at: AsOf) -> dict[str, str | None]:
    """The as-of pair a read used, as printed; ``known_at_requested`` only when the
    requested ``known_at`` lay after now and was read as now."""
    out = {"valid_at": format_time(at.valid_at), "known_at": format_time(at.known_at)}
    if at.requested_known_at is not None:
        out["known_at_requested"] = format_time(at.requested_known_at)
    return out
