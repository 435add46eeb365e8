"""Citation resolution: the quote with context from the immutable version, and where that
sentence stands in the document's current version (unchanged, moved, changed, removed)."""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from stichtag.domain.errors import Gone, Invalid, NotFound
from stichtag.domain.fundstelle import Citation, utf16_units
from stichtag.domain.prepared import sentence_hash
from stichtag.domain.reanchor import Anchor, Located, reanchor
from stichtag.domain.records import AssertionRow, SentenceRow, VersionContent, VersionText
from stichtag.domain.selectors import QuoteMatch, TextQuote, find_quote, quote_context
from stichtag.domain.timeutil import format_time
from stichtag.ports import Clock, DocumentStore
from stichtag.services.access import Principal
from stichtag.services.erasure import gone_or_missing
from stichtag.services.sources import SourceService

CONTEXT_CHARS = 240


class VersionCache:
    """Immutable versions, assembled once: safe to cache by (tenant, version id).

    Clearance is checked by the store on every miss *and* by the caller on every hit
    (``DocumentService.version`` semantics), so the cache never widens what a key sees.
    """

    def __init__(self, store: DocumentStore, capacity: int = 256) -> None:
        self.store = store
        self.capacity = capacity
        self._items: OrderedDict[tuple[UUID, str], VersionContent] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, principal: Principal, version_id: str) -> VersionContent:
        """The version's content; NotFound when it is unknown or above clearance, Gone
        when it was erased."""
        return self.get_many(principal, [version_id])[version_id]

    def get_many(self, principal: Principal, version_ids: Sequence[str]
                 ) -> dict[str, VersionContent]:
        """Several versions with one clearance check for all cached ones (one read);
        NotFound when any is unknown or above clearance, Gone when one was erased."""
        wanted = list(dict.fromkeys(version_ids))
        out: dict[str, VersionContent] = {}
        with self._lock:
            for vid in wanted:
                cached = self._items.get((principal.tenant_id, vid))
                if cached is not None:
                    self._items.move_to_end((principal.tenant_id, vid))
                    out[vid] = cached
        if out:
            allowed = self.store.readable_versions(principal.tenant_id, list(out),
                                                   clearance=principal.clearance)
            for vid in [v for v in out if v not in allowed]:
                self.forget(principal.tenant_id, vid)  # erased meanwhile (another node)
                raise gone_or_missing(self.store, principal, vid)
        for vid in wanted:
            if vid in out:
                continue
            content = self.store.version_content(principal.tenant_id, version_id=vid,
                                                 clearance=principal.clearance)
            if content is None:
                raise gone_or_missing(self.store, principal, vid)
            out[vid] = content
            with self._lock:
                self._items[(principal.tenant_id, vid)] = content
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
        return out

    def excerpts(self, principal: Principal, windows: Sequence[tuple[str, int, int]]
                 ) -> dict[str, VersionText]:
        """What lies around (version id, start, end) windows: a cached version whole, any
        other only the blocks that overlap its windows (one read for all of them, no
        assembly of the whole version, nothing cached). NotFound as ``get_many``."""
        wanted = list(dict.fromkeys(w[0] for w in windows))
        out: dict[str, VersionText] = {}
        with self._lock:
            for vid in wanted:
                cached = self._items.get((principal.tenant_id, vid))
                if cached is not None:
                    self._items.move_to_end((principal.tenant_id, vid))
                    out[vid] = cached
        missing = [w for w in windows if w[0] not in out]
        if not missing:
            return out | self.get_many(principal, list(out))  # one clearance read
        read = self.store.version_excerpts(principal.tenant_id, missing,
                                           clearance=principal.clearance,
                                           also_check=list(out))
        if read is None:
            raise NotFound("version")
        return out | read

    def forget(self, tenant_id: UUID, version_id: str) -> None:
        """Drop a version from the cache (it was erased)."""
        with self._lock:
            self._items.pop((tenant_id, version_id), None)


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """A resolved citation, its context, and its standing in the current version."""

    citation: Citation
    context_before: str
    context_after: str
    current_version_id: str | None
    anchor: Anchor
    current: Citation | None
    """Where the sentence stands in the current version (moved, unchanged, changed)."""


@dataclass(frozen=True, kw_only=True)
class QuoteAnchor:
    """Where a TextQuoteSelector was found in the document's current version.

    ``match`` is None when the quote is in no form in it (or nothing is in force);
    ``current`` is then None too.
    """

    document: str
    current_version_id: str | None
    match: QuoteMatch | None
    current: Citation | None


class CitationService:
    """Resolve ``(version_id, start, end)`` citations."""

    def __init__(self, store: DocumentStore, versions: VersionCache, clock: Clock, *,
                 sources: SourceService | None = None) -> None:
        self.store = store
        self.versions = versions
        self.clock = clock
        # page and boxes of PDF-sourced citations (docs/extraction.md, "How the server uses it")
        self.sources = sources

    def resolve(self, principal: Principal, *, version_id: str, start: int, end: int) -> Resolution:
        """The quote, its context, and its anchor in the document's current version."""
        principal.require("read")
        content = self.versions.get(principal, version_id)
        sentence = _sentence_at(content, start, end)
        docs = self.store.version_documents(principal.tenant_id, version_id=version_id,
                                            clearance=principal.clearance)
        if not docs:
            raise NotFound("version")
        document = docs[0]
        current_id = self.store.current_version(principal.tenant_id, key=document,
                                                now=self.clock.now(),
                                                clearance=principal.clearance)
        history = self.store.history(principal.tenant_id, key=document,
                                     clearance=principal.clearance)
        quote = content.text[start:end]
        anchor = Anchor(status="removed", target=None, similarity=0.0)
        current = None
        now = self._current_content(principal, current_id)
        if now is None:
            current_id = None
        if current_id is not None and now is not None:
            located = [Located(start=s.start, end=s.end, text=now.text[s.start:s.end], hash=s.hash)
                       for s in now.sentences]
            anchor = reanchor(quote, sentence_hash(quote), start, located,
                              same_version=current_id == version_id)
            if anchor.target is not None:
                hit = next(s for s in now.sentences if s.start == anchor.target.start)
                current = _citation(document, current_id, hit, now.text, history)
        cited = _citation(document, version_id, sentence, content.text, history)
        if self.sources is not None:
            # Both ends on their pages: a new edition of a PDF reflows the sentence.
            placed = self.sources.place(principal, [cited] + ([current] if current else []))
            cited, current = placed[0], (placed[1] if current else None)
        return Resolution(
            citation=cited,
            context_before=content.text[max(0, start - CONTEXT_CHARS):start],
            context_after=content.text[end:end + CONTEXT_CHARS], current_version_id=current_id,
            anchor=anchor, current=current)

    def anchor(self, principal: Principal, *, quote: TextQuote, source: str | None = None,
               document: str | None = None, near: int | None = None) -> QuoteAnchor:
        """Find a TextQuoteSelector in the current version of the document of version
        ``source`` (or of ``document``): exact, then by prefix and suffix, then fuzzy."""
        principal.require("read")
        if source is not None:
            self.versions.get(principal, source)  # NotFound when unknown or above clearance
            docs = self.store.version_documents(principal.tenant_id, version_id=source,
                                                clearance=principal.clearance)
            if not docs:
                raise NotFound("version")
            if document is not None and document not in docs:
                raise Invalid("document", "is not a document of the source version")
            document = document or docs[0]
        if document is None:
            raise Invalid("source", "give the source version or the document")
        current_id = self.store.current_version(principal.tenant_id, key=document,
                                                now=self.clock.now(),
                                                clearance=principal.clearance)
        now_content = self._current_content(principal, current_id)
        if now_content is None:
            current_id = None
        if current_id is None or now_content is None:
            if source is None and not self.store.history(principal.tenant_id, key=document,
                                                         clearance=principal.clearance):
                raise NotFound("document")
            return QuoteAnchor(document=document, current_version_id=None, match=None,
                               current=None)
        now = now_content
        match = find_quote(now.text, quote, [(s.start, s.end) for s in now.sentences],
                           near=near)
        if match is None:
            return QuoteAnchor(document=document, current_version_id=current_id, match=None,
                               current=None)
        history = self.store.history(principal.tenant_id, key=document,
                                     clearance=principal.clearance)
        cited = _span(document, current_id, match.start, match.end, now.text,
                      heading_path=_heading_at(now, match.start), history=history)
        if self.sources is not None:
            cited = self.sources.place(principal, [cited])[0]
        return QuoteAnchor(document=document, current_version_id=current_id, match=match,
                           current=cited)

    def _current_content(self, principal: Principal,
                         current_id: str | None) -> VersionContent | None:
        """The current version's content; None when nothing is in force or the version
        in force was erased (a citation's anchor then finds nothing to point at)."""
        if current_id is None:
            return None
        try:
            return self.versions.get(principal, current_id)
        except Gone:
            return None


def _heading_at(content: VersionContent, start: int) -> Sequence[str]:
    """The heading path of the sentence that holds ``start`` (none: the text's start)."""
    at = bisect.bisect_right(content.sentences, start, key=lambda s: s.start) - 1
    return content.sentences[at].heading_path if at >= 0 else ()


def _citation(document: str, version_id: str, sentence: SentenceRow, text: str,
              history: Sequence[AssertionRow]) -> Citation:
    """The citation of a sentence with the valid range of the version's first assertion."""
    return _span(document, version_id, sentence.start, sentence.end, text,
                 heading_path=sentence.heading_path, history=history,
                 utf16=(sentence.utf16_start, sentence.utf16_end))


def _span(document: str, version_id: str, start: int, end: int, text: str, *,
          heading_path: Sequence[str], history: Sequence[AssertionRow],
          utf16: tuple[int, int] | None = None) -> Citation:
    """The citation of ``text[start:end]`` of a version, with its quote context."""
    row = next((a for a in history if a.version_id == version_id), None)
    if row is None:  # the version is visible, so some assertion of it is in the history
        raise NotFound("version")
    if utf16 is None:
        before = utf16_units(text[:start])
        utf16 = (before, before + utf16_units(text[start:end]))
    prefix, suffix = quote_context(text, start, end)
    return Citation(document=document, version_id=version_id, start=start, end=end,
                    utf16_start=utf16[0], utf16_end=utf16[1], quote=text[start:end],
                    heading_path=tuple(heading_path), prefix=prefix, suffix=suffix,
                    valid_from=format_time(row.valid_from) or "",
                    valid_to=format_time(row.valid_to))


def _sentence_at(content: VersionContent, start: int, end: int) -> SentenceRow:
    """Citations are whole sentences of the version; anything else is refused."""
    for s in content.sentences:
        if s.start == start and s.end == end:
            return s
    if not (0 <= start < end <= len(content.text)):
        raise Invalid("start", f"must satisfy 0 <= start < end <= {len(content.text)}")
    raise Invalid("start", "start and end must be the offsets of one sentence of the version")
