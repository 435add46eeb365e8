"""``stichtag serve``: the HTTP server (uvicorn around the Litestar app)."""

from __future__ import annotations

import argparse

from stichtag.cli.args import Subparsers, command
from stichtag.config import Settings


def cmd_serve(settings: Settings, args: argparse.Namespace) -> None:
    """Serve until interrupted; the app builds its services in its lifespan."""
    # The server's dependencies load only for this command, not for every CLI call.
    import uvicorn  # noqa: PLC0415

    from stichtag.api.app import create_app  # noqa: PLC0415

    uvicorn.run(create_app(settings), host=args.host or settings.host,
                port=args.port if args.port is not None else settings.port,
                log_level=settings.log_level, access_log=False)


def register(sub: Subparsers) -> None:
    """``serve``."""
    serve = command(sub, "serve", help="run the HTTP server",
                    example="stichtag serve --host 0.0.0.0 --port 8000\n"
                            "STICHTAG_LOG_FORMAT=json stichtag serve")
    serve.add_argument("--host", help="listen address (default STICHTAG_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default STICHTAG_PORT or 8000)")
    serve.set_defaults(standalone=cmd_serve, log_stream="stdout")
