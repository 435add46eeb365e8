"""The Clock adapter: the machine's wall clock in aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    """``now()`` is ``datetime.now(UTC)``."""

    def now(self) -> datetime:
        """The current instant."""
        return datetime.now(UTC)
