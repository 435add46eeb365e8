"""The German text analyzer shared by indexing and querying.

Pipeline (tantivy built-ins only, so the same analysis runs inside tantivy when a
document is indexed and here when a query is turned into terms):

1. ``simple`` tokenizer: splits on every character that is not Unicode-alphanumeric, so
   ``§``, ``(1)``, ``"``, ``:`` and ``1,75`` never reach the index as syntax.
2. ``remove_long(100)``: drops garbage tokens (hashes, base64) that are no words;
   German compounds stay well below 100 bytes.
3. ``lowercase``.
4. ``stopword("german")``: the Snowball list (``der``, ``die``, ``und``, ``für``...).
   Runs before stemming and folding because the list is spelled with umlauts. Without it
   a question like "Was gilt für den Höchstzinssatz" would score every passage.
5. ``stemmer("german")``: tantivy's Snowball German is the *german2* variant: it maps
   ``ß`` to ``ss`` and the digraphs ``ae``/``oe``/``ue`` (not after ``q``) to umlauts, then
   folds umlauts to ``a``/``o``/``u``. So "Höchstzinssatz", "Hoechstzinssatz" and
   "hochstzinssatz" all become ``hochstzinssatz``, and "Deckungsrückstellungen" and
   "Deckungsrückstellung" both become ``deckungsruckstell``.
   The stemmer runs *twice*: Snowball strips one inflection ending per pass, so with one
   pass "Zins" -> ``zin`` but "Zinsen"/"Zinses" -> ``zins`` and "Kurs"/"Kurse" miss each
   other — for actuarial text the most important word would not match its own plural.
   The second pass conflates them; the price, measured on a sample, is that a few agent
   nouns merge with their field ("Versicherer" and "Versicherung" -> ``versich``).
6. ``ascii_fold``: catches the remaining accents (``Café`` -> ``cafe``) after the stemmer
   has seen the original letters.

Changing any step changes which terms are in the index; then ``ANALYZER_ID`` must change,
which also changes the schema and forces a rebuild of existing indexes.
"""

from __future__ import annotations

import unicodedata

import tantivy

ANALYZER_ID = "stichtag-de-v1"
"""Name the analyzer is registered under; recorded in run records and in the schema."""

_MAX_TOKEN_BYTES = 100


def build_analyzer() -> tantivy.TextAnalyzer:
    """Build the German analyzer described in the module docstring."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(_MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("german"))
        .filter(tantivy.Filter.stemmer("german"))
        .filter(tantivy.Filter.stemmer("german"))
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


def register(index: tantivy.Index) -> None:
    """Register the analyzer on an index under ``ANALYZER_ID``.

    Tantivy stores only the tokenizer *name* in the schema, so every process that
    opens the index must register it again before writing or searching.
    """
    index.register_tokenizer(ANALYZER_ID, build_analyzer())


class GermanAnalyzer:
    """Turns user text into index terms, exactly as tantivy does for indexed text."""

    def __init__(self) -> None:
        self._analyzer = build_analyzer()

    def terms(self, text: str) -> list[str]:
        """Analyze ``text`` into its terms, in order, duplicates kept."""
        # Stored versions are NFC; queries typed on another system may arrive decomposed
        # (e + combining accent would otherwise split into two tokens).
        return list(self._analyzer.analyze(unicodedata.normalize("NFC", text)))

    def query_terms(self, text: str) -> list[str]:
        """The distinct terms of a query, in first-occurrence order.

        Never raises on user input: any character that is not a letter or digit is a
        separator, and a query of only stop words or punctuation yields ``[]``.
        """
        return list(dict.fromkeys(self.terms(text)))
