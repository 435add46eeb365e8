"""Citation resolution: the quote with context from the immutable version, and where that
sentence stands in the document's current version (unchanged, moved, changed, removed)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from app.domain.errors import Invalid, NotFound
from app.domain.fundstelle import Citation
from app.domain.prepared import sentence_hash
from app.domain.reanchor import Anchor, Located, reanchor
from app.domain.records import AssertionRow, SentenceRow, VersionContent
from app.domain.timeutil import format_time
from app.ports import Clock, DocumentStore
from app.services.access import Principal
from app.services.sources import SourceService

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
        """The version's content, or NotFound when it is unknown or above clearance."""
        return self.get_many(principal, [version_id])[version_id]

    def get_many(self, principal: Principal, version_ids: Sequence[str]
                 ) -> dict[str, VersionContent]:
        """Several versions with one clearance check for all cached ones (one read);
        NotFound when any is unknown or above clearance."""
        wanted = list(dict.fromkeys(version_ids))
        out: dict[str, VersionContent] = {}
        with self._lock:
            for vid in wanted:
                cached = self._items.get((principal.tenant_id, vid))
                if cached is not None:
                    self._items.move_to_end((principal.tenant_id, vid))
                    out[vid] = cached
        if out:
            allowed = self.store.visible_versions(principal.tenant_id, list(out),
                                                  clearance=principal.clearance)
            if len(allowed) < len(out):
                raise NotFound("version")
        for vid in wanted:
            if vid in out:
                continue
            content = self.store.version_content(principal.tenant_id, version_id=vid,
                                                 clearance=principal.clearance)
            if content is None:
                raise NotFound("version")
            out[vid] = content
            with self._lock:
                self._items[(principal.tenant_id, vid)] = content
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
        return out


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


class CitationService:
    """Resolve ``(version_id, start, end)`` citations."""

    def __init__(self, store: DocumentStore, versions: VersionCache, clock: Clock, *,
                 sources: SourceService | None = None) -> None:
        self.store = store
        self.versions = versions
        self.clock = clock
        self.sources = sources  # page and boxes of PDF-sourced citations (issue #20)

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
        if current_id is not None:
            now = self.versions.get(principal, current_id)
            located = [Located(start=s.start, end=s.end, text=now.text[s.start:s.end], hash=s.hash)
                       for s in now.sentences]
            anchor = reanchor(quote, sentence_hash(quote), start, located,
                              same_version=current_id == version_id)
            if anchor.target is not None:
                hit = next(s for s in now.sentences if s.start == anchor.target.start)
                current = _citation(document, current_id, hit, anchor.target.text, history)
        cited = _citation(document, version_id, sentence, quote, history)
        if self.sources is not None:
            # Both ends on their pages: a new edition of a PDF reflows the sentence.
            placed = self.sources.place(principal, [cited] + ([current] if current else []))
            cited, current = placed[0], (placed[1] if current else None)
        return Resolution(
            citation=cited,
            context_before=content.text[max(0, start - CONTEXT_CHARS):start],
            context_after=content.text[end:end + CONTEXT_CHARS], current_version_id=current_id,
            anchor=anchor, current=current)


def _citation(document: str, version_id: str, sentence: SentenceRow, quote: str,
              history: Sequence[AssertionRow]) -> Citation:
    """The citation of a sentence with the valid range of the version's first assertion."""
    row = next((a for a in history if a.version_id == version_id), None)
    if row is None:  # the version is visible, so some assertion of it is in the history
        raise NotFound("version")
    return Citation(document=document, version_id=version_id, start=sentence.start,
                    end=sentence.end, utf16_start=sentence.utf16_start,
                    utf16_end=sentence.utf16_end, quote=quote,
                    heading_path=tuple(sentence.heading_path),
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
