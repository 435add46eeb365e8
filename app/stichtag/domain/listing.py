"""Questions about the collection itself, answered from the catalogue, not from text.

"Welche Dokumente zum Thema Überschussbeteiligung gibt es?" and "Welche Fassungen der
DeckRV galten 2019?" ask what the knowledge base holds; their answer is a list of
documents or versions with links, and the versions in force in a window are data (the
bitemporal history), not sentences. Nothing on such a list was read, so a list answer has
an empty source line (stichtag.domain.provenance).

Detection is deliberately conservative and deterministic: a whole-question pattern in
German or English, nothing fuzzy. A question that merely mentions documents ("Welche
Dokumente braucht die Annahme?") is a content question and goes through the gates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stichtag.domain.bitemporal import Interval
from stichtag.domain.german_terms import analyze, term
from stichtag.domain.quantities import content_words
from stichtag.domain.records import AssertionRow
from stichtag.domain.timeutil import format_time

DOCUMENTS, VERSIONS = "documents", "versions"
LISTING = "listing"
"""The gate name a list answer records (what was listed, how many)."""
NOTHING_LISTED = "nothing_listed"
"""Why a list answer that names nothing is a documentation gap (GET /v1/gaps)."""

_END = r"\s*[?.!]?\s*$"
_YEARS = (r"(?:(?:im\s+jahr|in|im|during)\s+)?(?P<y1>\d{4})"
          r"(?:\s*(?:-|–|bis|to|and|und)\s*(?P<y2>\d{4}))?")
_EXIST_DE = r"(?:gibt\s+es|existieren|liegen\s+vor|sind\s+vorhanden|haben\s+wir)"
_ABOUT_DE = r"(?:zum\s+thema|zu\s+dem\s+thema|zum|zur|zu|über|ueber)"
_EXIST_EN = r"(?:are\s+there|exist|do\s+you\s+have|do\s+we\s+have)"
_ABOUT_EN = r"(?:on|about|regarding|concerning)(?:\s+the\s+topic(?:\s+of)?)?"
_DOCS_DE = r"^welche\s+(?:dokumente|unterlagen|quellen)\s+"
_DOCS_EN = r"^(?:which|what)\s+documents\s+"
# The existence verb is required ("gibt es", "are there"): without it, "Welche Unterlagen
# zur Antragsprüfung sind einzureichen?" would be taken for a catalogue question.
_DOC_PATTERNS = (
    re.compile(_DOCS_DE + _EXIST_DE + r"\s+" + _ABOUT_DE + r"\s+(?P<topic>.+?)" + _END, re.I),
    re.compile(_DOCS_DE + _ABOUT_DE + r"\s+(?P<topic>.+?)\s+" + _EXIST_DE + _END, re.I),
    re.compile(_DOCS_EN + _EXIST_EN + r"\s+" + _ABOUT_EN + r"\s+(?P<topic>.+?)" + _END,
               re.I),
    re.compile(_DOCS_EN + _ABOUT_EN + r"\s+(?P<topic>.+?)\s+" + _EXIST_EN + _END, re.I),
    re.compile(r"^list\s+(?:all\s+)?(?:the\s+)?documents\s+" + _ABOUT_EN
               + r"\s+(?P<topic>.+?)" + _END, re.I),
)
_VERSION_PATTERNS = (
    # Welche Fassungen der DeckRV galten 2019? / ... waren 2016 bis 2019 in Kraft?
    re.compile(r"^welche\s+(?:fassungen|versionen)\s+(?:der|des|von|vom)\s+(?P<doc>.+?)\s+"
               r"(?:galten|gelten|galt|gilt|waren|sind)\s+(?:" + _YEARS + r")?"
               r"(?:\s*in\s+kraft)?" + _END, re.I),
    re.compile(r"^welche\s+(?:fassungen|versionen)\s+(?:der|des|von|vom)\s+(?P<doc>.+?)\s+"
               r"gibt\s+es" + _END, re.I),
    # Which versions of the DeckRV were in force in 2019?
    re.compile(r"^(?:which|what)\s+versions\s+of\s+(?:the\s+)?(?P<doc>.+?)\s+(?:were|was|are|"
               r"is)\s+(?:in\s+force|valid|applicable|in\s+effect)(?:\s+" + _YEARS + r")?"
               + _END, re.I),
    re.compile(r"^(?:which|what)\s+versions\s+of\s+(?:the\s+)?(?P<doc>.+?)\s+(?:exist|are\s+"
               r"there)" + _END, re.I),
)
_MAX_SUBJECT = 80  # characters: a longer "topic" is a sentence, not a catalogue question


@dataclass(frozen=True, kw_only=True, slots=True)
class ListQuestion:
    """A question about the collection: the documents on a topic in force at valid_at,
    or the versions of one document (in force in the years ``years``, both inclusive;
    None: every version known at known_at)."""

    kind: str
    subject: str
    years: tuple[int, int] | None = None


def list_question(question: str) -> ListQuestion | None:
    """The list question ``question`` asks, or None for a content question."""
    text = " ".join(question.split())  # the subject keeps the question's spelling
    for pattern in _VERSION_PATTERNS:
        m = pattern.match(text)
        if m and _subject(m["doc"]):
            y1 = m.groupdict().get("y1")
            y2 = m.groupdict().get("y2") or y1
            years = (int(y1), int(y2)) if y1 and y2 else None
            if years and years[0] > years[1]:
                return None
            return ListQuestion(kind=VERSIONS, subject=_subject(m["doc"]), years=years)
    for pattern in _DOC_PATTERNS:
        m = pattern.match(text)
        if m and _subject(m["topic"]):
            return ListQuestion(kind=DOCUMENTS, subject=_subject(m["topic"]))
    return None


def _subject(raw: str) -> str:
    words = raw.strip(" \"'„“”»«").split()
    return " ".join(words) if 0 < len(" ".join(words)) <= _MAX_SUBJECT else ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ListedItem:
    """One listed document version: its assertion's valid range as known at known_at."""

    document: str
    version_id: str
    assertion_id: int
    title: str
    valid_from: datetime
    valid_to: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Listing:
    """A list answer: what was asked and the items, in order."""

    kind: str
    subject: str
    window: tuple[datetime, datetime] | None
    items: tuple[ListedItem, ...]

    def record(self) -> dict[str, Any]:
        """The listing as the run record holds it (replay recomputes and compares it)."""
        return {"kind": self.kind, "subject": self.subject,
                "window": ([format_time(self.window[0]), format_time(self.window[1])]
                           if self.window else None),
                "items": [{"document": i.document, "version_id": i.version_id,
                           "assertion_id": i.assertion_id, "valid_from":
                           format_time(i.valid_from), "valid_to": format_time(i.valid_to)}
                          for i in self.items]}


def item(row: AssertionRow) -> ListedItem:
    """The listed form of an assertion (a missing title falls back to the key)."""
    return ListedItem(document=row.document, version_id=row.version_id,
                      assertion_id=row.assertion_id, title=row.title or row.document,
                      valid_from=row.valid_from, valid_to=row.valid_to)


def versions_in_window(rows: Iterable[AssertionRow], *, known_at: datetime,
                       window: tuple[datetime, datetime] | None) -> list[ListedItem]:
    """The assertions known at ``known_at`` whose valid range meets ``[start, end)`` of
    the window (all known ones without a window), oldest valid_from first.

    Known at ``known_at`` is the transaction-time half of the visibility rule (§3.2);
    meeting the window replaces "contains valid_at" by overlap, so a version in force for
    one day of the window is listed and one that ended when it began is not.
    """
    span = Interval(start=window[0], end=window[1]) if window else None
    out = [item(r) for r in rows
           if Interval(start=r.tx_from, end=r.tx_to).contains(known_at)
           and (span is None or Interval(start=r.valid_from, end=r.valid_to).overlaps(span))]
    return sorted(out, key=lambda i: (i.valid_from, i.assertion_id))


def subject_matches(subject: str, *names: str | None) -> bool:
    """Whether a document named ``names`` (key, title) is the one ``subject`` names:
    equal after folding case, umlauts, spaces and hyphens ("DeckRV" = "deckrv")."""
    want = _squash(subject)
    return bool(want) and any(n is not None and _squash(n) == want for n in names)


_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})
_MIN_PIECE = 4  # letters of a compound part (as for salience's decompounding)
_FUGEN = ("es", "en", "s", "n")


def on_topic(topic: str, texts: Iterable[str]) -> bool:
    """Whether ``texts`` (one document's title and retrieved passages) carry every content
    word of ``topic``, the way the lexical index matches (``german_terms``).

    A word is carried when its index term occurs inside some term of the texts, or, for
    a compound, when a split into two parts of at least four letters (a Fugen element
    allowed on the first) has both parts' terms inside terms of the texts:
    "Überschussbeteiligung" is carried by "Überschussdeklaration … Beteiligung".
    """
    terms = frozenset(t for text in texts for t in analyze(text))
    words = content_words(topic)
    return bool(words) and bool(terms) and all(_carried(w, terms) for w in words)


def _inside(t: str | None, terms: frozenset[str]) -> bool:
    return t is not None and any(t in x for x in terms)


def _carried(word: str, terms: frozenset[str]) -> bool:
    if _inside(term(word), terms):
        return True
    for i in range(_MIN_PIECE, len(word) - _MIN_PIECE + 1):
        head, tail = word[:i], word[i:]
        heads = [head] + [head[: -len(f)] for f in _FUGEN
                          if head.endswith(f) and len(head) - len(f) >= _MIN_PIECE]
        if _inside(term(tail), terms) and any(_inside(term(h), terms) for h in heads):
            return True
    return False


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold().translate(_FOLD))
