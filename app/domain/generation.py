"""What a generator hands back: a draft, the exact exchanges that produced it, or an error.

A generator (the port is ``app.ports.Generator``) returns a
:class:`~app.domain.answer.Draft` whose markers are unverified; the domain gates decide
what may be shown. The exact bytes sent to and received from a model server go into the
run record, so that replay can verify (not regenerate) an LLM answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.domain.answer import Draft

# GeneratorError reasons.
TIMEOUT = "timeout"
MALFORMED_OUTPUT = "malformed_output"
UPSTREAM_ERROR = "upstream_error"


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratorRequest:
    """One request as sent: URL, the exact JSON body, and which attempt it was (1-based).

    Credentials are deliberately not part of it: run records must never hold keys.
    """

    url: str
    body: str
    attempt: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratorResponse:
    """What came back for one request: HTTP status and raw body, or the transport error."""

    status: int | None
    body: str | None
    error: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Exchange:
    """A request and its outcome, in the order they happened."""

    request: GeneratorRequest
    response: GeneratorResponse


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """A draft and the exchanges that produced it (empty for a local generator)."""

    draft: Draft
    exchanges: list[Exchange] = field(default_factory=list)


class GeneratorError(Exception):
    """No usable draft: ``reason`` is TIMEOUT, MALFORMED_OUTPUT or UPSTREAM_ERROR.

    ``exchanges`` keeps every attempt, so a failed run is recorded as fully as a good one.
    """

    def __init__(self, reason: str, detail: str, *, status: int | None = None,
                 exchanges: Sequence[Exchange] = ()) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.status = status
        self.exchanges = list(exchanges)
