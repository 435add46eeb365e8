"""``stichtag index``: the tenant's derived indexes (tantivy and the embeddings) against
PostgreSQL, the source of truth."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import msgspec

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group
from stichtag.cli.output import CliError, Output
from stichtag.cli.tenants import operator
from stichtag.domain.errors import IndexBusy

if TYPE_CHECKING:
    from stichtag.client import Client


def cmd_index(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Rebuild, check or catch up; ``check`` exits 1 when the index differs."""
    who = operator(svc, args.tenant)
    if args.sub == "rebuild":
        try:
            seq = svc.indexer.rebuild(who.tenant_id)
        except IndexBusy as exc:
            raise CliError(f"index rebuild: {exc}; a server on this data directory writes "
                           "it: stop the server, rebuild, start it again") from exc
        svc.indexer.embed_pending(who.tenant_id)
        data: dict[str, Any] = {"tenant": args.tenant, "rebuilt": True, "applied_seq": seq}
    elif args.sub == "check":
        data = {"tenant": args.tenant, **svc.indexer.check(who.tenant_id)}
    else:
        with StageBar(enabled=not args.json) as bar:
            svc.indexer.sync_lexical(who.tenant_id, progress=bar.update)
            embedded = svc.indexer.embed_pending(who.tenant_id, progress=bar.update)
        status = svc.indexer.status(who.tenant_id)
        data = {"tenant": args.tenant, "outbox_seq": status.outbox_seq,
                "lexical_seq": status.lexical_seq, "embedded": embedded,
                "pending_embeddings": status.pending_embeddings}
    out.emit(data, lambda d: ", ".join(f"{k} {v}" for k, v in d.items() if k != "sample"))
    if args.sub == "check" and data["differences"]:
        raise CliError(f"index: differs from the database in {data['differences']} "
                       "documents (stichtag index rebuild recreates it)")


class StageBar:
    """One progress bar per stage (outbox rows, then embeddings) with the rate and an
    ETA, on stderr when it is a terminal; nothing otherwise (a log or a pipe gets the
    result line only)."""

    def __init__(self, *, enabled: bool) -> None:
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        if enabled and sys.stderr.isatty():
            from rich.console import Console  # noqa: PLC0415 (only for a person watching)
            from rich.progress import (  # noqa: PLC0415
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("{task.description:<10}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("ETA"), TimeRemainingColumn(),
                                 # stdout carries the result line (or JSON) for pipes
                                 console=Console(stderr=True))

    def __enter__(self) -> Self:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` in ``stage`` (the indexer's progress callback)."""
        if self._bar is None:
            return
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = self._bar.add_task(stage, total=total)
        self._bar.update(task, completed=done, total=total)


def register(sub: Subparsers) -> None:
    """``index rebuild|check|sync``."""
    index = group(sub, "index", help="derived indexes",
                  example="stichtag index check --tenant acme")
    for name, text in (("rebuild", "recreate the tenant's tantivy index from PostgreSQL"),
                       ("check", "compare the tantivy index with PostgreSQL "
                                 "(exit 1 on differences)"),
                       ("sync", "apply the outbox and embed pending passages now")):
        ix = command(index, name, help=text, example=f"stichtag index {name} --tenant acme")
        add_tenant(ix)
        ix.set_defaults(handler=cmd_index, needs_models=name != "check")
    st = command(index, "status", help="outbox head, lexical position, embeddings pending "
                                       "(through --url: the server's view, with the rate)",
                 example="stichtag index status --tenant acme\n"
                         "stichtag --url http://127.0.0.1:8000 --key stk_… index status")
    add_tenant(st, remote=True)
    st.set_defaults(handler=cmd_index_status, needs_models=True, remote=remote_index_status)


def cmd_index_status(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """The tenant's index status as this process sees it (no rate: one look)."""
    report = svc.index_status.status(operator(svc, args.tenant))
    _status(out, dataclasses.asdict(report))


def remote_index_status(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server (its replica, its rate)."""
    _status(out, msgspec.to_builtins(api.index_status()))


def _status(out: Output, data: dict[str, Any]) -> None:
    def line(d: dict[str, Any]) -> str:
        state = "complete" if d["complete"] else "filling"
        eta = f", about {d['eta_seconds']:.0f} s left" if d["eta_seconds"] else ""
        rate = f" at {d['embed_rate']}/s" if d["embed_rate"] else ""
        return (f"{state}: {d['pending_embeddings']} passages to embed{rate}{eta}; "
                f"lexical at {d['lexical_seq']} of {d['outbox_seq']}")
    out.emit(data, line)
