"""HTML extraction with lxml: the article's text, headings as markdown, tables in order.

lxml (libxml2's HTML parser, BSD) rather than selectolax: DOCX needs lxml for its XML
anyway, libxml2 copes with the broken markup of real pages, and ``getpath`` gives the
element path the layout map stores. The parser never touches the network.

What is kept: the ``<article>`` with the most text, else ``<main>`` (or
``role="main"``), else ``<body>``; minus script/style/noscript/template and other
non-text elements, nav/header/footer/aside/form, anything ``hidden``,
``aria-hidden="true"``, ``display:none`` or ``visibility:hidden``, navigation roles,
and (as Mozilla Readability does) elements whose class/id reads like a sidebar, menu,
comment box or share bar unless it also reads like content.
Headings h1-h6 become ``#`` lines; paragraphs, list items ("- ", "1. "), ``dt``/``dd``,
captions become blank-line separated blocks; each table row becomes ``| a | b |``.
"""

from __future__ import annotations

import re
from typing import Any

import lxml.etree
import lxml.html

from stichtag.extract.builder import TextBuilder
from stichtag.extract.charset import decode_html
from stichtag.extract.errors import ExtractionRefused
from stichtag.extract.limits import MAX_HTML_BYTES
from stichtag.extract.result import Extracted, finish, library_version

__all__ = ["HTML_EXTRACTOR_ID", "extract_html"]

HTML_EXTRACTOR_ID = "html-article-1"
"""Bump on any change to what is kept or how it is written."""

def _words(spaced: str) -> frozenset[str]:
    """A word list written as one whitespace-separated string, for readability."""
    return frozenset(spaced.split())


_DROP = _words("""script style noscript template nav header footer aside form iframe
    object embed canvas svg math button select textarea input label option datalist
    dialog menu audio video map area head title meta link base""")
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = _words("""p div section article main blockquote pre ul ol li dl dt dd figure
    figcaption table thead tbody tfoot tr td th caption address details summary center
    hr body html fieldset legend""") | frozenset(_HEADINGS)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search",
                        "menu", "menubar", "dialog", "alert"})
# Mozilla Readability's "unlikely candidates" and "maybe candidate" patterns.
_UNLIKELY = re.compile(
    r"-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|"
    r"gdpr|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|"
    r"sponsor|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote",
    re.IGNORECASE)
_MAYBE = re.compile(r"and|article|body|column|content|main|mathjax|shadow", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_MAX_DEPTH = 300


def _hidden(el: Any) -> bool:
    """Whether an element is not shown or not content (see the module docstring)."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag.lower() in _DROP or el.get("hidden") is not None:
        return True
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if _HIDDEN_STYLE.search(el.get("style") or ""):
        return True
    if (el.get("role") or "").strip().lower() in _NAV_ROLES:
        return True
    names = f"{el.get('class') or ''} {el.get('id') or ''}"
    return (tag not in ("body", "html", "article", "main", "a") and bool(_UNLIKELY.search(names))
            and not _MAYBE.search(names))


def _root(doc: Any) -> Any:
    """The element holding the article (see the module docstring)."""
    def size(el: Any) -> int:
        return len("".join(el.itertext()))

    articles = [a for a in doc.iter("article") if not _hidden(a)]
    if articles:
        return max(articles, key=size)
    mains = [m for m in doc.iter("main") if not _hidden(m)] + [
        m for m in doc.iter() if isinstance(m.tag, str) and m.get("role") == "main"]
    if mains:
        return max(mains, key=size)
    body = doc.find("body")
    return body if body is not None else doc


class _Walker:
    """Writes the kept tree into a builder, block by block."""

    def __init__(self, builder: TextBuilder, tree: Any, markdown: bool) -> None:
        self.b = builder
        self.tree = tree
        self.markdown = markdown
        self.pieces: list[tuple[str, str]] = []
        self.prefix = ""
        self.headings = 0
        self.tables = 0

    def path(self, el: Any) -> str:
        return str(self.tree.getpath(el)).lstrip("/")

    def inline(self, text: str | None, path: str) -> None:
        """Queue inline text with whitespace collapsed across pieces."""
        if not text:
            return
        text = _SPACE.sub(" ", text)
        at_start = not self.pieces or self.pieces[-1][0].endswith((" ", "\n"))
        if at_start:
            text = text.lstrip(" ")
        if text:
            self.pieces.append((text, path))

    def flush(self, end: str = "\n\n") -> bool:
        """Write the queued paragraph (with its prefix); whether anything was written."""
        pieces, self.pieces = self.pieces, []
        while pieces and not pieces[-1][0].strip():
            pieces.pop()
        if not pieces:
            return False
        last_text, last_path = pieces[-1]
        pieces[-1] = (last_text.rstrip(), last_path)
        first = pieces[0][0]
        if self.markdown and not self.prefix and first.startswith("#"):
            self.b.text("\\")  # a '#' opening a block would become a heading
        self.b.text(self.prefix)
        for text, path in pieces:
            self.b.node(text, path)
        self.b.text(end)
        return True

    def walk(self, el: Any, depth: int = 0) -> None:
        """Write ``el``'s content (its tail is the caller's business)."""
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        path = self.path(el)
        if depth > _MAX_DEPTH:  # pathological nesting: its text as one run
            self.inline(" ".join(el.itertext()), path)
            return
        if tag in _HEADINGS:
            self.flush()
            self.inline_all(el)
            self.prefix = "#" * _HEADINGS[tag] + " " if self.markdown else ""
            self.headings += self.flush()
            self.prefix = ""
            return
        if tag == "table":
            self.flush()
            self.table(el)
            return
        if tag == "br":
            if self.pieces:
                self.pieces[-1] = (self.pieces[-1][0].rstrip(" ") + "\n", self.pieces[-1][1])
            return
        block = tag in _BLOCKS
        if block:
            self.flush()
            if tag == "li":
                self.prefix = self.item_marker(el)
        self.inline(el.text, path)
        for child in el:
            if not isinstance(child.tag, str) or _hidden(child):
                self.inline(child.tail, path)
                continue
            self.walk(child, depth + 1)
            self.inline(child.tail, path)
        if block:
            self.flush()
            self.prefix = ""

    def item_marker(self, li: Any) -> str:
        parent = li.getparent()
        if parent is not None and parent.tag == "ol":
            items = [c for c in parent if c.tag == "li"]
            return f"{items.index(li) + 1}. "
        return "- "

    def inline_all(self, el: Any, depth: int = 0) -> None:
        """All visible text under ``el`` as inline text."""
        if depth > _MAX_DEPTH:
            self.inline(" ".join(el.itertext()), self.path(el))
            return
        self.inline(el.text, self.path(el))
        for child in el:
            if isinstance(child.tag, str) and not _hidden(child):
                self.inline_all(child, depth + 1)
            self.inline(child.tail, self.path(el))

    def table(self, table: Any) -> None:
        rows = [tr for tr in table.iter("tr") if not _hidden(tr)]
        wrote = False
        for tr in rows:
            cells = [c for c in tr if c.tag in ("td", "th") and not _hidden(c)]
            texts = []
            for cell in cells:
                self.inline_all(cell)
                texts.append(self.pieces)
                self.pieces = []
            if not any(t for t in texts):
                continue
            if not self.markdown:
                self.pieces = [p for t in texts for p in (*t, (" ", self.path(tr)))]
                self.flush("\n")
                wrote = True
                continue
            self.b.text("| ")
            for k, pieces in enumerate(texts):
                self.b.text(" | " if k else "")
                for text, path in pieces:
                    self.b.node(text.strip("\n").replace("|", "/"), path)
            self.b.text(" |\n")
            wrote = True
        if wrote:
            self.b.text("\n")
            self.tables += 1


def extract_html(data: bytes, *, media_type: str | None = None) -> Extracted:
    """Extract the article text of an HTML page (see the module docstring)."""
    if len(data) > MAX_HTML_BYTES:
        raise ExtractionRefused("file", f"the HTML page has {len(data)} bytes, more than the "
                                f"limit of {MAX_HTML_BYTES}", limit=True)
    text, codec, source = decode_html(data, media_type)
    empty = "the HTML page has no text (outside navigation, scripts and hidden elements)"
    if not text.strip():
        raise ExtractionRefused("file", empty)
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True,
                                  recover=True, default_doctype=False, huge_tree=True)
    try:
        doc = lxml.html.document_fromstring(text.replace("\x00", ""), parser=parser)
    except (lxml.etree.ParserError, ValueError):
        raise ExtractionRefused("file", empty) from None
    root = _root(doc)
    kept = [el for el in root.iter() if isinstance(el.tag, str)]
    markdown = any(el.tag in _HEADINGS or el.tag in ("table", "li") for el in kept)
    builder = TextBuilder()
    walker = _Walker(builder, doc.getroottree(), markdown)
    try:
        walker.walk(root)
    except RecursionError:
        raise ExtractionRefused("file", "the HTML page nests elements too deeply") from None
    walker.flush()
    out, layout = builder.build()
    out = out.rstrip("\n") + "\n" if out.strip() else out
    lang = doc.get("lang") or ""
    provenance = {
        "extractor_id": HTML_EXTRACTOR_ID,
        "libraries": {"lxml": library_version("lxml"),
                      "libxml2": ".".join(map(str, lxml.etree.LIBXML_VERSION))},
        "charset": codec, "charset_source": source, "root": walker.path(root),
        "headings": walker.headings, "tables": walker.tables, "lang": lang,
        "limits": {"max_bytes": MAX_HTML_BYTES},
    }
    return finish(out, layout=layout, media_type="text/markdown" if markdown else "text/plain",
                  source_media_type="text/html", provenance=provenance, empty_reason=empty)
