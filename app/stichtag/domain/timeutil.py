"""One place to parse and check times: timezone-aware UTC everywhere.

Inputs are RFC 3339 timestamps with an offset, or plain dates (midnight in the tenant's
time zone). A timestamp without an offset is ambiguous and refused: an actuary's
"1 January" must not silently become a different instant on another server.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_STAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:\d{2})?$"
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICRO = timedelta(microseconds=1)


class TimeError(ValueError):
    """A time value that cannot be used; names the field and the reason."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def zone(name: str) -> ZoneInfo:
    """Resolve an IANA zone name or raise TimeError."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TimeError("time_zone", f"unknown time zone {name!r}") from exc


def parse_time(value: str, *, field: str, tz: str = "UTC") -> datetime:
    """Parse an RFC 3339 timestamp (offset required) or a plain date into aware UTC.

    A plain date means midnight at the start of that day in the tenant's zone ``tz``.
    """
    text = value.strip()
    if _DATE.match(text):
        try:
            day = date.fromisoformat(text)
        except ValueError as exc:
            raise TimeError(field, f"not a valid date: {value!r}") from exc
        return datetime(day.year, day.month, day.day, tzinfo=zone(tz)).astimezone(UTC)
    match = _STAMP.match(text)
    if not match:
        raise TimeError(field, f"expected RFC 3339 time with offset or YYYY-MM-DD, got {value!r}")
    if match.group(3) is None:
        raise TimeError(field, f"time {value!r} has no UTC offset; add 'Z' or '+01:00'")
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
    except ValueError as exc:
        raise TimeError(field, f"not a valid time: {value!r}") from exc
    return parsed.astimezone(UTC)


def to_utc(value: datetime, *, field: str = "time") -> datetime:
    """Check that a datetime is aware and return it in UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise TimeError(field, "naive datetime; an offset is required")
    return value.astimezone(UTC)


def format_time(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with 'Z'; None stays None (an open end)."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def to_micros(value: datetime | None, *, infinity: int) -> int:
    """Microseconds since the epoch; an open end (None) maps to ``infinity``."""
    if value is None:
        return infinity
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
