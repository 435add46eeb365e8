"""``stichtag db``: the embedded PostgreSQL of this data directory (docs/operations.md,
"The embedded database")."""

from __future__ import annotations

import argparse
import dataclasses

from stichtag.bootstrap import embedded_status, stop_embedded
from stichtag.cli.args import Subparsers, command, group
from stichtag.cli.output import EXIT_ERROR, CliError, Output
from stichtag.config import Settings


def cmd_db(settings: Settings, args: argparse.Namespace) -> int | None:
    """``status`` reads without attaching; ``stop`` refuses while a live process uses it."""
    if settings.database_url:
        raise CliError("db: STICHTAG_DATABASE_URL is set; this node uses an external "
                       "PostgreSQL, which its own operator starts and stops")
    out = Output(as_json=args.json)
    pg_dir = settings.pg_dir
    if args.sub == "status":
        status = embedded_status(pg_dir)
        out.emit(dataclasses.asdict(status), _status_line)
        return None if status.running else EXIT_ERROR
    stopped, users = stop_embedded(pg_dir, force=args.force)
    if users and not args.force:
        raise CliError(f"db stop: in use by process(es) {', '.join(map(str, users))} on "
                       f"{pg_dir}; stop them first, or --force (their connections fail)")
    out.emit({"pg_dir": str(pg_dir), "stopped": stopped, "users": list(users)},
             lambda d: f"{d['pg_dir']}: " + ("stopped" if d["stopped"] else "was not running"))
    return None


def _status_line(data: dict[str, object]) -> str:
    if not data["running"]:
        return f"{data['pg_dir']}: not running"
    users = ", ".join(map(str, data["users"])) or "none"  # type: ignore[call-overload]
    line = f"{data['pg_dir']}: running, postmaster pid {data['pid']}, used by {users}"
    stale = data["stale"]
    return line + (f" (stale entries {', '.join(map(str, stale))})" if stale else "")  # type: ignore[call-overload]


def register(sub: Subparsers) -> None:
    """``db status`` and ``db stop``."""
    db = group(sub, "db", help="the embedded PostgreSQL of this data directory",
               example="stichtag db status\nstichtag db stop")
    status = command(db, "status", help="is it running, and which processes use it "
                                        "(exit 1 when it is not running)",
                     example="stichtag db status --json")
    status.set_defaults(standalone=cmd_db)
    stop = command(db, "stop", help="stop it (refused while a server or command uses it)",
                   example="stichtag db stop\nstichtag db stop --force")
    stop.add_argument("--force", action="store_true",
                      help="stop it even while processes use it")
    stop.set_defaults(standalone=cmd_db)
