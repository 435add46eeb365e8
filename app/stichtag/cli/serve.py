"""``stichtag serve``: the HTTP server (uvicorn around the Litestar app)."""

from __future__ import annotations

import argparse
import os
import signal
from types import FrameType

from stichtag.cli.args import Subparsers, command
from stichtag.config import Settings, load_settings


def cmd_serve(settings: Settings, args: argparse.Namespace) -> None:
    """Serve until interrupted; the app builds its services in its lifespan.

    With ``--workers N`` (N > 1) uvicorn's supervisor runs N processes on one listening
    socket and restarts one that dies. This process starts the embedded PostgreSQL and
    migrates first, so the workers only attach to a running, current database; each
    worker then claims a slot on the node (app/stichtag/api/ledger.py).

    On SIGINT or SIGTERM it stops the embedded PostgreSQL it attached to, unless another
    process on the same data directory still uses it (docs/operations.md, "The embedded
    database").
    """
    # uvicorn re-raises the signal that stopped it once it has shut down; with the default
    # SIGTERM disposition the process then dies without running ``finally`` or atexit,
    # and the embedded PostgreSQL would outlive it. As SystemExit it unwinds instead.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _serve(settings, args)
    finally:
        from stichtag.bootstrap import release_database  # noqa: PLC0415

        release_database(settings)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _serve(settings: Settings, args: argparse.Namespace) -> None:
    # The server's dependencies load only for this command, not for every CLI call.
    import uvicorn  # noqa: PLC0415

    if args.metrics_listen is not None:
        # the workers of --workers read their settings from the environment
        os.environ["STICHTAG_METRICS_LISTEN"] = args.metrics_listen
        settings = load_settings()

    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    workers = args.workers if args.workers is not None else settings.workers
    if workers <= 1:
        from stichtag.api.app import create_app  # noqa: PLC0415

        uvicorn.run(create_app(settings), host=host, port=port,
                    log_level=settings.log_level, access_log=False)
        return
    from stichtag.bootstrap import prepare_database  # noqa: PLC0415

    prepare_database(settings)  # held by this process until the workers are gone
    uvicorn.run("stichtag.api.app:app_from_environment", factory=True, workers=workers,
                host=host, port=port, log_level=settings.log_level, access_log=False)


def register(sub: Subparsers) -> None:
    """``serve``."""
    serve = command(sub, "serve", help="run the HTTP server",
                    example="stichtag serve --host 0.0.0.0 --port 8000\n"
                            "stichtag serve --workers 2 --metrics-listen 127.0.0.1:9108\n"
                            "STICHTAG_LOG_FORMAT=json stichtag serve")
    serve.add_argument("--host", help="listen address (default STICHTAG_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default STICHTAG_PORT or 8000)")
    serve.add_argument("--metrics-listen", metavar="HOST:PORT",
                       help="the operator's /metrics listener (default STICHTAG_METRICS_LISTEN "
                            "or 127.0.0.1:9108; off: none); the public one answers 404 there")
    serve.add_argument("--workers", type=_workers,
                       help="server processes on this node (default STICHTAG_WORKERS or 1); "
                            "limits and queues hold for the node as a whole")
    serve.set_defaults(standalone=cmd_serve, log_stream="stdout")


def _workers(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from exc
    if not 1 <= value <= 32:
        raise argparse.ArgumentTypeError(f"must be between 1 and 32, got {value}")
    return value
