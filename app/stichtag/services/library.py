"""The tools a generator may call during one answer run (docs/architecture.md §7): ``read_section``,
``read_document`` and ``list_documents``.

Everything is read as the run reads: the version in force at the run's as-of pair,
within its tenant and its key's clearance (the store filters both, so a document above
the clearance, a foreign one and an unknown one are refused alike). Text comes back as
evidence sentences with run-scoped ids continuing the run's numbering, so the model can
cite what it read and the pipeline cuts every citation from the version, as for
retrieved evidence. A listing returns titles only: nothing on it can become a source.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from stichtag.domain.answer import Evidence
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Gone
from stichtag.domain.generation import LIST_DOCUMENTS, READ_DOCUMENT, READ_SECTION, ToolResult
from stichtag.domain.listing import DOCUMENTS, ListQuestion
from stichtag.domain.quantities import fold
from stichtag.domain.records import AssertionRow, VersionContent
from stichtag.domain.timeutil import format_time
from stichtag.ports import DocumentStore
from stichtag.services.access import Principal
from stichtag.services.citations import VersionCache
from stichtag.services.listing import ListingService

MAX_SENTENCES = 120  # sentences one tool call returns at most (a read is size-bounded)
MAX_CHARS = 24_000  # characters of sentence text one tool call returns at most
MAX_ARGUMENT = 200  # characters of one argument (model output) kept and looked up


class RunLibrary:
    """The library of one run; ``next_eid`` continues the run's evidence numbering."""

    def __init__(self, principal: Principal, *, valid_at: datetime, known_at: datetime,
                 tag: str, first: int, documents: DocumentStore, versions: VersionCache,
                 listings: ListingService | None) -> None:
        self.principal = principal
        self.as_of = AsOf(valid_at=valid_at, known_at=known_at)
        self.tag = tag
        self.next_eid = first
        self.documents = documents
        self.versions = versions
        self.listings = listings

    def call(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """One tool call; what cannot be served is refused with a reason."""
        args = {k: str(v)[:MAX_ARGUMENT] for k, v in arguments.items()
                if k in ("document", "heading", "topic")}
        if name == LIST_DOCUMENTS:
            return self._list(call_id, args)
        if name not in (READ_SECTION, READ_DOCUMENT):
            return ToolResult(call_id=call_id, name=name, arguments=args,
                              refused=f"unknown tool {name[:40]!r}")
        key = args.get("document", "")
        heading = args.get("heading", "") if name == READ_SECTION else None
        if not key or (name == READ_SECTION and not heading):
            return ToolResult(call_id=call_id, name=name, arguments=args,
                              refused="missing argument: document" + (
                                  " and heading" if name == READ_SECTION else ""))
        row = self.documents.assertion_asof(self.principal.tenant_id, key=key,
                                            as_of=self.as_of,
                                            clearance=self.principal.clearance)
        if row is None:
            return ToolResult(call_id=call_id, name=name, arguments=args,
                              refused="no such document in force at this as-of pair")
        content = self._readable(row.version_id)
        evidence, truncated = (self._sentences(row, content, heading) if content is not None
                               else ([], False))
        if not evidence:
            return ToolResult(call_id=call_id, name=name, arguments=args, document=key,
                              version_id=row.version_id,
                              refused="no such section" if content is not None
                              else "the version in force was erased")
        return ToolResult(call_id=call_id, name=name, arguments=args, document=key,
                          version_id=row.version_id, evidence=tuple(evidence),
                          truncated=truncated)

    def _readable(self, version_id: str) -> VersionContent | None:
        """The version's content; None when it was erased (its text is gone)."""
        try:
            return self.versions.get(self.principal, version_id)
        except Gone:
            return None

    def _list(self, call_id: str, args: dict[str, str]) -> ToolResult:
        topic = args.get("topic", "")
        if not topic or self.listings is None:
            return ToolResult(call_id=call_id, name=LIST_DOCUMENTS, arguments=args,
                              refused="missing argument: topic")
        listing = self.listings.listing(
            self.principal, ListQuestion(kind=DOCUMENTS, subject=topic),
            valid_at=self.as_of.valid_at, known_at=self.as_of.known_at)
        return ToolResult(call_id=call_id, name=LIST_DOCUMENTS, arguments=args,
                          titles=tuple((i.document, i.title) for i in listing.items))

    def _sentences(self, row: AssertionRow, content: VersionContent,
                   heading: str | None) -> tuple[list[Evidence], bool]:
        """The version's statement sentences (of the section whose heading contains
        ``heading``, case- and umlaut-folded), bounded, with fresh run-scoped ids."""
        want = fold(heading) if heading is not None else None
        out: list[Evidence] = []
        chars = 0
        for s in content.sentences:
            quote = content.text[s.start:s.end]
            if s.heading_path and quote == s.heading_path[-1]:
                continue  # a heading is context (it is in the path), not a statement
            if want is not None and not any(want in fold(h) for h in s.heading_path[1:]
                                            or s.heading_path):
                continue
            if len(out) == MAX_SENTENCES or chars + len(quote) > MAX_CHARS:
                return out, True
            chars += len(quote)
            out.append(Evidence(
                eid=f"E{self.next_eid}-{self.tag}", document=row.document,
                version_id=row.version_id, start=s.start, end=s.end,
                utf16_start=s.utf16_start, utf16_end=s.utf16_end, quote=quote,
                heading_path=tuple(s.heading_path), valid_from=format_time(row.valid_from)
                or "", valid_to=format_time(row.valid_to), doc_class=row.doc_class,
                score=0.0))
            self.next_eid += 1
        return out, False
