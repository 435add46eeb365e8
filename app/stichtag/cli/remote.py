"""``stichtag --url URL --key KEY …``: the reading and auditing commands through the typed
client (``stichtag.client``) against a server, instead of the database on this machine.

A command that can run remotely sets ``remote=(api, args, out) -> exit code | None`` next
to its local handler and prints the same data the same way (``--json`` and the human
view). The key decides the tenant, its scopes and its clearance, so ``--tenant`` is not
given. The operator commands (tenants, keys, index, models, migrate, serve, demo, a
manifest ingest, …) need the database or the models here and say so; ``log verify``
needs neither and runs offline either way.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from stichtag.cli.output import CliError, Output, UsageError

if TYPE_CHECKING:
    from stichtag.client import ApiError

URL_ENV, KEY_ENV = "STICHTAG_URL", "STICHTAG_KEY"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url`` and ``--key`` (before the command)."""
    parser.add_argument("--url", metavar="URL",
                        help=f"run the command through the server at URL (env {URL_ENV}); "
                             "reads, search, ask, history, changes, replay, log and review")
    parser.add_argument("--key", metavar="KEY",
                        help=f"the API key for --url (env {KEY_ENV}); it decides the tenant")


def requested(argv: Sequence[str] | None) -> bool:
    """Whether the command line (or the environment) names a server."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_arguments(pre)
    known, _ = pre.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    return bool(known.url or known.key or os.environ.get(URL_ENV) or os.environ.get(KEY_ENV))


def target(args: argparse.Namespace) -> tuple[str, str] | None:
    """The server and key to use, or None for the local database."""
    url = args.url or os.environ.get(URL_ENV) or None
    key = args.key or os.environ.get(KEY_ENV) or None
    if url is None and key is None:
        return None
    if url is None or key is None:
        missing = "--url" if url is None else "--key"
        raise UsageError(f"{missing}: a remote command needs both --url URL and --key KEY "
                         f"(or {URL_ENV} and {KEY_ENV})")
    return url, key


def command_name(args: argparse.Namespace) -> str:
    """``log export``, ``tenants create``, ``ask``: what the person typed."""
    sub = getattr(args, "sub", None)
    return f"{args.command} {sub}" if sub else str(args.command)


def run(args: argparse.Namespace, url: str, key: str) -> int | None:
    """Run the parsed command against ``url`` with ``key``."""
    handler = getattr(args, "remote", None)
    if handler is None:
        raise UsageError(
            f"{command_name(args)}: needs local access (the database and models on this "
            f"machine) and does not run through --url; run it where the server runs, "
            f"without --url/--key ({URL_ENV}/{KEY_ENV} unset)")
    if getattr(args, "tenant", None):
        raise UsageError("--tenant: with --url the key decides the tenant; leave --tenant out")
    # Imported here: the local commands start without httpx and the API's types.
    import httpx  # noqa: PLC0415

    from stichtag.client import ApiError, Client  # noqa: PLC0415

    try:
        with Client(url, key) as api:
            code: int | None = handler(api, args, Output(as_json=args.json))
            return code
    except ApiError as exc:
        raise CliError(describe(exc)) from None
    except httpx.TransportError as exc:
        raise CliError(f"url: cannot reach {url} ({type(exc).__name__}: {exc})") from None
    except httpx.InvalidURL as exc:
        raise UsageError(f"url: {exc}") from None


def describe(exc: ApiError) -> str:
    """A problem as ``<field>: <reason>``; its title and status when it names no field
    (``not found (http 404): …``)."""
    p = exc.problem
    text = (f"{exc.field}: {exc.reason}" if exc.field
            else f"{p.title.lower()} (http {p.status}): {p.detail or p.title}")
    return " ".join(text.split())


def plain(struct: Any) -> Any:
    """A response Struct as the dicts and lists the local commands print."""
    return msgspec.to_builtins(struct)


def as_of(struct: Any) -> dict[str, str | None]:
    """The as-of pair a read used, as ``stichtag.cli.args.as_of_json`` prints it."""
    out: dict[str, str | None] = {"valid_at": struct.valid_at, "known_at": struct.known_at}
    if struct.known_at_requested is not None:
        out["known_at_requested"] = struct.known_at_requested
    return out
