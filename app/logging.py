"""Structured logs (structlog): JSON in production, readable on a console.

Never log document text, questions or keys at info level (STYLE.md 14).
"""

from __future__ import annotations

import logging

import structlog

from app.config import Settings


def configure_logging(settings: Settings) -> None:
    """Configure structlog and the stdlib root logger once at start-up."""
    level = getattr(logging, settings.log_level.upper(), logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if settings.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=level, format="%(message)s")
