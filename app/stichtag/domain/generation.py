"""What a generator hands back: a draft, the exact exchanges that produced it, or an error.

A generator (the port is ``stichtag.ports.Generator``) returns a
:class:`~stichtag.domain.answer.Draft` whose markers are unverified; the domain gates decide
what may be shown. The exact bytes sent to and received from a model server go into the
run record, so that replay can verify (not regenerate) an LLM answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from stichtag.domain.answer import Draft, Evidence

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


# Tools a generator may call (chat-completions tool calling, docs/architecture.md §7).
READ_SECTION, READ_DOCUMENT, LIST_DOCUMENTS = "read_section", "read_document", "list_documents"
TOOLS = (READ_SECTION, READ_DOCUMENT, LIST_DOCUMENTS)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """What one tool call returned, as the run record keeps it.

    ``evidence``: sentences of the version in force the generator read (a section or the
    whole document): added to the found set, so markers may cite them, and consulted
    whether or not the answer cites them. ``titles``: (document, title) pairs a listing
    returned: found as a title only, never a source. ``refused``: why nothing came back
    (unknown, not in force, above the clearance and foreign all read alike).
    """

    call_id: str
    name: str
    arguments: dict[str, str]
    document: str | None = None
    version_id: str | None = None
    evidence: tuple[Evidence, ...] = ()
    titles: tuple[tuple[str, str], ...] = ()
    refused: str | None = None
    truncated: bool = False

    def record(self) -> dict[str, object]:
        """The result as the run record holds it (offsets, not text: the version is)."""
        return {"call_id": self.call_id, "name": self.name, "arguments": self.arguments,
                "document": self.document, "version_id": self.version_id,
                "evidence": [{"eid": e.eid, "version_id": e.version_id, "start": e.start,
                              "end": e.end} for e in self.evidence],
                "titles": [list(t) for t in self.titles], "refused": self.refused,
                "truncated": self.truncated}


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """A draft and the exchanges that produced it (empty for a local generator), with
    the results of the tools the generator called, in call order."""

    draft: Draft
    exchanges: list[Exchange] = field(default_factory=list)
    tools: list[ToolResult] = field(default_factory=list)


def opened_documents(tools: Sequence[ToolResult]) -> list[str]:
    """Documents a tool returned in full (``read_document``), in call order."""
    return list(dict.fromkeys(t.document for t in tools if t.name == READ_DOCUMENT
                              and t.evidence and t.document is not None))


def titled_documents(tools: Sequence[ToolResult]) -> list[str]:
    """Documents a listing tool named (title only), in call order."""
    return list(dict.fromkeys(doc for t in tools for doc, _ in t.titles))


def tool_evidence(tools: Sequence[ToolResult]) -> list[Evidence]:
    """Every sentence a tool returned, once, in call order."""
    seen: dict[str, Evidence] = {}
    for t in tools:
        for e in t.evidence:
            seen.setdefault(e.eid, e)
    return list(seen.values())


class GeneratorError(Exception):
    """No usable draft: ``reason`` is TIMEOUT, MALFORMED_OUTPUT or UPSTREAM_ERROR.

    ``exchanges`` keeps every attempt, so a failed run is recorded as fully as a good one.
    """

    def __init__(self, reason: str, detail: str, *, status: int | None = None,
                 exchanges: Sequence[Exchange] = (), tools: Sequence[ToolResult] = ()
                 ) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.status = status
        self.exchanges = list(exchanges)
        self.tools = list(tools)
