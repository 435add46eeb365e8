"""The Fundstelle: where a quote stands in an exact version, and the values built on it.

One value object carries the citation fields (document, version, code-point and UTF-16
offsets, quote, heading path, and the quote's prefix and suffix for W3C selectors). A
:class:`Citation` adds the asserted validity of the version; evidence
(``stichtag.domain.answer.Evidence``) and retrieval hits (``stichtag.domain.retrieval.Hit``) extend
it, and the API's citation schema is converted from it in one place
(``stichtag.api.convert.citation``). The construction checks what can be checked without the
text, so a mis-cut span fails here rather than in an auditor's hands.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from stichtag.domain.layout import Region


def utf16_units(s: str) -> int:
    """Length of ``s`` in UTF-16 code units (astral characters count twice)."""
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def instant(value: str, what: str) -> datetime:
    """Parse an RFC 3339 time or date; a naive value is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{what}: not an RFC 3339 time: {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, kw_only=True, slots=True)
class Fundstelle:
    """``quote == text[start:end]`` of version ``version_id`` of ``document``.

    Offsets are code points into the normalized text; ``utf16_*`` are the same span for
    JavaScript clients. The caller cuts ``quote`` from the version text.
    """

    document: str
    version_id: str
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    quote: str
    heading_path: tuple[str, ...]
    prefix: str = ""
    """Up to ``selectors.CONTEXT`` code points of the text right before the quote (the
    TextQuoteSelector's ``prefix``), cut from the version with the quote."""
    suffix: str = ""
    """The same after the quote."""

    def __post_init__(self) -> None:
        """Reject spans that cannot be the quote's place in any text."""
        if not 0 <= self.start <= self.end or self.end - self.start != len(self.quote):
            raise ValueError(f"[{self.start}, {self.end}) does not fit the quote")
        if self.utf16_end - self.utf16_start != utf16_units(self.quote) or self.utf16_start < 0:
            raise ValueError(f"[{self.start}, {self.end}): UTF-16 span does not fit the quote")
        if len(self.prefix) > self.start:
            raise ValueError(f"[{self.start}, {self.end}): a prefix longer than the text before")

    def place(self) -> Fundstelle:
        """Only the Fundstelle fields (drops what a subclass adds)."""
        return Fundstelle(document=self.document, version_id=self.version_id,
                          start=self.start, end=self.end, utf16_start=self.utf16_start,
                          utf16_end=self.utf16_end, quote=self.quote,
                          heading_path=self.heading_path, prefix=self.prefix,
                          suffix=self.suffix)


@dataclass(frozen=True, kw_only=True, slots=True)
class Citation(Fundstelle):
    """A Fundstelle with the valid range of the assertion it was found through.

    ``valid_from``/``valid_to`` are RFC 3339 strings (``valid_to`` None = open end).
    ``regions`` says where the quote sits in the version's original document: for a
    PDF-sourced version one region per page touched (page, page size, one box per line);
    empty for versions ingested as text, and until the citation is placed
    (``stichtag.services.sources.SourceService.place``).
    """

    valid_from: str
    valid_to: str | None
    regions: tuple[Region, ...] = ()

    def __post_init__(self) -> None:
        """Check the span and that both ends are times."""
        Fundstelle.__post_init__(self)  # zero-argument super() breaks under slots=True
        instant(self.valid_from, "valid_from")
        if self.valid_to is not None:
            instant(self.valid_to, "valid_to")

    def citation(self) -> Citation:
        """Only the public citation fields, copied verbatim (nothing recomputed)."""
        return Citation(document=self.document, version_id=self.version_id, start=self.start,
                        end=self.end, utf16_start=self.utf16_start, utf16_end=self.utf16_end,
                        quote=self.quote, heading_path=self.heading_path,
                        prefix=self.prefix, suffix=self.suffix,
                        valid_from=self.valid_from, valid_to=self.valid_to,
                        regions=self.regions)
