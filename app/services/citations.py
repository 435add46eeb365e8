"""Citation resolution: the quote with context from the immutable version, and where that
sentence stands in the document's current version (unchanged, moved, changed, removed)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from app.domain.errors import Invalid, NotFound
from app.domain.prepared import sentence_hash
from app.domain.reanchor import Anchor, Located, reanchor
from app.services.access import Principal
from app.store.pg import PgStore
from app.store.rows import SentenceRow, VersionContent
from app.store.sqlfiles import query

CONTEXT_CHARS = 240


class VersionCache:
    """Immutable versions, assembled once: safe to cache by (tenant, version id).

    Clearance is checked by the store on every miss *and* by the caller on every hit
    (``DocumentService.version`` semantics), so the cache never widens what a key sees.
    """

    def __init__(self, store: PgStore, capacity: int = 256) -> None:
        self.store = store
        self.capacity = capacity
        self._items: OrderedDict[tuple[UUID, str], VersionContent] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, principal: Principal, version_id: str) -> VersionContent:
        """The version's content, or NotFound when it is unknown or above clearance."""
        key = (principal.tenant_id, version_id)
        with self._lock:
            cached = self._items.get(key)
            if cached is not None:
                self._items.move_to_end(key)
        if cached is not None and self.store.version_visible(
                principal.tenant_id, version_id=version_id, clearance=principal.clearance):
            return cached
        content = self.store.version_content(principal.tenant_id, version_id=version_id,
                                             clearance=principal.clearance)
        if content is None:
            raise NotFound("version")
        with self._lock:
            self._items[key] = content
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return content


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """A resolved citation and its standing in the current version."""

    document: str
    version_id: str
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    quote: str
    heading_path: list[str]
    context_before: str
    context_after: str
    current_version_id: str | None
    anchor: Anchor
    current_utf16: tuple[int, int] | None


class CitationService:
    """Resolve ``(version_id, start, end)`` citations."""

    def __init__(self, store: PgStore, versions: VersionCache) -> None:
        self.store = store
        self.versions = versions

    def resolve(self, principal: Principal, *, version_id: str, start: int, end: int) -> Resolution:
        """The quote, its context, and its anchor in the document's current version."""
        principal.require("read")
        content = self.versions.get(principal, version_id)
        sentence = _sentence_at(content, start, end)
        with self.store.tx(principal.tenant_id) as conn:
            docs = [r[0] for r in conn.execute(query("version_document"), {
                "version_id": version_id, "clearance": principal.clearance})]
            if not docs:
                raise NotFound("version")
            current = conn.execute(query("document_current_version"), {
                "key": docs[0], "now": datetime.now(UTC),
                "clearance": principal.clearance}).fetchone()
        quote = content.text[start:end]
        current_id = current[0] if current else None
        anchor = Anchor(status="removed", target=None, similarity=0.0)
        current_u16 = None
        if current_id is not None:
            now = self.versions.get(principal, current_id)
            located = [Located(start=s.start, end=s.end, text=now.text[s.start:s.end], hash=s.hash)
                       for s in now.sentences]
            anchor = reanchor(quote, sentence_hash(quote), start, located,
                              same_version=current_id == version_id)
            if anchor.target is not None:
                hit = next(s for s in now.sentences if s.start == anchor.target.start)
                current_u16 = (hit.utf16_start, hit.utf16_end)
        return Resolution(
            document=docs[0], version_id=version_id, start=start, end=end,
            utf16_start=sentence.utf16_start, utf16_end=sentence.utf16_end, quote=quote,
            heading_path=list(sentence.heading_path),
            context_before=content.text[max(0, start - CONTEXT_CHARS):start],
            context_after=content.text[end:end + CONTEXT_CHARS], current_version_id=current_id,
            anchor=anchor, current_utf16=current_u16)


def _sentence_at(content: VersionContent, start: int, end: int) -> SentenceRow:
    """Citations are whole sentences of the version; anything else is refused."""
    for s in content.sentences:
        if s.start == start and s.end == end:
            return s
    if not (0 <= start < end <= len(content.text)):
        raise Invalid("start", f"must satisfy 0 <= start < end <= {len(content.text)}")
    raise Invalid("start", "start and end must be the offsets of one sentence of the version")
