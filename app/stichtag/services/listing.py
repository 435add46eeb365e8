"""List answers: questions about the collection, answered from the catalogue and the
bitemporal history (docs/architecture.md §7, app/stichtag/domain/listing.py).

"Which documents on topic X?" lists the documents in force at valid_at (as known at
known_at) whose retrieved passages carry every content word of the topic; "which
versions of D were in force in 2019?" lists D's assertions known at known_at whose valid
range meets the window. Both read only what the key's clearance and tenant allow: the
store and the indexes filter by them, as for every other read.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

from stichtag.domain.answer import ANSWERED, GateDecision
from stichtag.domain.asof import AsOf
from stichtag.domain.aspect_support import Support
from stichtag.domain.list_intent import learned_list_question
from stichtag.domain.listing import (
    DOCUMENTS,
    LISTING,
    ListedItem,
    Listing,
    ListQuestion,
    item,
    list_question,
    on_topic,
    subject_matches,
    versions_in_window,
)
from stichtag.domain.provenance import derive
from stichtag.domain.retrieval import Hit
from stichtag.domain.timeutil import parse_time
from stichtag.ports import DocumentStore
from stichtag.services.access import Principal
from stichtag.services.answer_result import AnswerResult
from stichtag.services.assess import Assessment, hit_text
from stichtag.services.search import SearchService
from stichtag.services.thresholds import Thresholds

CANDIDATES = 40  # passages retrieved for a topic; their documents are the candidates
COLLECTION = 200  # documents a question about the whole collection lists at most


class ListingService:
    """The catalogue and history reads behind list answers."""

    def __init__(self, search: SearchService, documents: DocumentStore) -> None:
        self.search = search
        self.documents = documents

    def recognise(self, principal: Principal, question: str, *, valid_at: datetime,
                  known_at: datetime) -> ListQuestion | None:
        """The list question ``question`` asks, or None for a content question: the
        whole-question patterns first, then the learned rule over the question's query
        vector (docs/semantics.md, "List questions by meaning"). The vector is the one
        retrieval reads from the search service's cache, so a content question is embedded
        once; without an embedder only the patterns decide.

        A question only the learned rule takes is a list question when it would list
        something at the as-of pair (a document its subject names, documents on its
        topic): otherwise it stays a content question, which may abstain, rather than an
        empty list."""
        asked = list_question(question)
        embedder = self.search.embedder
        if asked is not None or embedder is None:
            return asked
        learned = learned_list_question(question, self.search.query_vector(question).tolist(),
                                        embedder.model_hash)
        if learned is None:
            return None
        if learned.kind == DOCUMENTS:
            found = bool(self.listing(principal, learned, valid_at=valid_at,
                                      known_at=known_at).items)
        else:
            found = self._document(principal, learned.subject, valid_at=valid_at,
                                   known_at=known_at) is not None
        return learned if found else None

    def listing(self, principal: Principal, question: ListQuestion, *, valid_at: datetime,
                known_at: datetime) -> Listing:
        """The documents or versions ``question`` asks for, in a deterministic order."""
        if question.kind == DOCUMENTS and not question.subject:  # the whole collection
            return Listing(kind=question.kind, subject="", window=None,
                           items=tuple(self._collection(principal, valid_at=valid_at,
                                                        known_at=known_at)))
        if question.kind == DOCUMENTS:
            return Listing(kind=question.kind, subject=question.subject, window=None,
                           items=tuple(self._on_topic(principal, question.subject,
                                                      valid_at=valid_at, known_at=known_at)))
        window = None
        if question.years is not None:
            first, last = question.years
            zone = principal.time_zone
            window = (parse_time(f"{first:04d}-01-01", field="question", tz=zone),
                      parse_time(f"{last + 1:04d}-01-01", field="question", tz=zone))
        key = self._document(principal, question.subject, valid_at=valid_at,
                             known_at=known_at)
        rows = (self.documents.history(principal.tenant_id, key=key,
                                       clearance=principal.clearance) if key else [])
        return Listing(kind=question.kind, subject=question.subject, window=window,
                       items=tuple(versions_in_window(rows, known_at=known_at,
                                                      window=window)))

    def _collection(self, principal: Principal, *, valid_at: datetime,
                    known_at: datetime) -> list[ListedItem]:
        """Every document in force at the as-of pair within the clearance, by key (at most
        COLLECTION)."""
        rows = self.documents.in_force(principal.tenant_id,
                                       as_of=AsOf(valid_at=valid_at, known_at=known_at),
                                       clearance=principal.clearance, limit=COLLECTION)
        return [item(r) for r in rows]

    def _on_topic(self, principal: Principal, topic: str, *, valid_at: datetime,
                  known_at: datetime) -> list[ListedItem]:
        """Documents in force whose title and retrieved passages carry every content word
        of the topic (``on_topic``), in the order retrieval ranked them."""
        hits, _, _ = self.search.retrieve(principal, topic, valid_at=valid_at,
                                          known_at=known_at, k=CANDIDATES)
        texts: dict[str, list[str]] = {}
        first: dict[str, Hit] = {}
        for hit in hits:
            first.setdefault(hit.document, hit)
            texts.setdefault(hit.document, [hit.title or ""]).append(hit_text(hit))
        return [ListedItem(document=h.document, version_id=h.version_id,
                           assertion_id=h.assertion_id, title=h.title or h.document,
                           valid_from=h.valid_from, valid_to=h.valid_to)
                for doc, h in first.items() if on_topic(topic, texts[doc])]

    def _document(self, principal: Principal, name: str, *, valid_at: datetime,
                  known_at: datetime) -> str | None:
        """The key of the document ``name`` names: the key itself, a retrieved document
        whose key or title is the name (case, umlauts, spaces ignored), or else the first
        retrieved one whose key and title carry every content word of the name ("the
        guideline", "Annahmerichtlinie" for "Annahmerichtlinie Berufsunfähigkeits…")."""
        low = name.casefold()
        for key in dict.fromkeys((name, low, low.replace(" ", "-"), low.replace(" ", ""))):
            if self.documents.history(principal.tenant_id, key=key,
                                      clearance=principal.clearance):
                return key
        hits, _, _ = self.search.retrieve(principal, name, valid_at=valid_at,
                                          known_at=known_at, k=CANDIDATES)
        exact = next((h.document for h in hits if subject_matches(name, h.document, h.title)),
                     None)
        return exact or next((h.document for h in hits
                              if on_topic(name, [h.document.replace("-", " "), h.title or ""])),
                             None)


def list_answer(listings: ListingService, principal: Principal, asked: ListQuestion, *,
                thresholds: Thresholds, generator: str, run_id: uuid.UUID, valid_at: datetime,
                known_at: datetime) -> AnswerResult:
    """A list answer: the catalogue's items as links, status answered, no sentence
    citations and an empty source line (nothing listed was read); an empty list is
    answered too, and reported as a documentation gap (``nothing_listed``)."""
    started = time.perf_counter()
    listing = listings.listing(principal, asked, valid_at=valid_at, known_at=known_at)
    gate = GateDecision(gate=LISTING, passed=True, threshold=None, observed=None,
                        detail=f"{len(listing.items)} {listing.kind} listed for "
                               f"{listing.subject!r} from the catalogue; none read, so no "
                               "source line")
    return AnswerResult(
        run_id=run_id, valid_at=valid_at, known_at=known_at, status=ANSWERED, reason=None,
        next_step=None, failed=None, gates=[gate], sentences=[], coverage=None, gaps=[],
        evidence=[], cited=set(),
        provenance=derive([], [], listed=[i.document for i in listing.items]),
        resolutions=[], generator=generator, thresholds=thresholds,
        assessment=Assessment(aspects=[], in_force_passages=0,
                              in_force=Support(covered=(), uncovered=()), candidates=[],
                              pooled=None),
        listing=listing,
        timings_ms={"listing": round((time.perf_counter() - started) * 1000, 3)})
