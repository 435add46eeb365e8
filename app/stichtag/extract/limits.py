"""Bounds on what one extraction may cost, in one place so the docs can quote them.

Each limit exceeded refuses the document (``ExtractionRefused(limit=True)``, an HTTP 413
later) instead of degrading silently: a truncated version would be cited as if whole.
"""

from __future__ import annotations

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""Largest document accepted at all (any format)."""

MAX_SECONDS = 60.0
"""Wall-time budget for one document; checked between pages and every 4,096 glyphs."""

MAX_PDF_PAGES = 2_000
"""Pages beyond this refuse the PDF (the long test script has 117)."""

MAX_TEXT_CHARS = 20_000_000
"""Extracted code points per document; far beyond any law or contract."""

MAX_HTML_BYTES = 16 * 1024 * 1024
"""Largest HTML page parsed."""

MAX_DOCX_UNCOMPRESSED = 256 * 1024 * 1024
"""Sum of the declared uncompressed sizes of all DOCX zip members."""

MAX_DOCX_RATIO = 200
"""Largest compression ratio of one member; zip bombs reach thousands."""

MAX_DOCX_MEMBERS = 10_000
"""Members in a DOCX zip; Word writes a few dozen."""

MAX_CHARS_PER_PAGE = 200_000
"""Glyphs on one PDF page; real pages hold a few thousand."""
