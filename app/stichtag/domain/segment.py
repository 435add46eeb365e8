"""Blocks, sentences and heading paths for German legal and actuarial text.

A text is cut into *blocks* (paragraphs, headings, Absätze) that partition it
exactly, and each block into *sentences*, the citation unit. Two properties
carry the store's deduplication and must never be traded for cleverness:

* a block's sentences depend only on the block's own text and media type, and
* a block boundary depends only on the line it sits on and the line before,
  so an edit in one paragraph never moves the boundaries of another.

Any change to these rules changes stored offsets: bump SEGMENTER_ID.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["SEGMENTER_ID", "Block", "heading_paths", "segment_block", "split_blocks"]

SEGMENTER_ID: str = "de-legal-1"

# Parameters ("; charset=utf-8") and case do not change what the text is.
_MARKDOWN = frozenset({"text/markdown", "text/x-markdown"})

# ATX heading: up to three spaces of indent, 1-6 marks, then a space or tab.
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]")
# In text/plain a run of '#' opening a line is not a heading, but it is still a
# line of its own (the gii dumps put "## § 1 Titel" right before the text).
_HASH_LINE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
# Absatz marker "(1)", "(2a)" opening a line.
_LABEL = re.compile(r"[ \t]{0,3}(\(\d{1,3}[a-z]{0,2}\))(?=\s|$)")

# Line openers that begin a new sentence even inside hard-wrapped prose:
# enumeration items ("1.", "2a.", "1.2.", "1)", "a)", "aa)", "IV.", bullets -, *, +,
# bullet, en and em dash) and Absatz markers. Pandoc escapes a wrapped
# "18\. Juni", so "18\." is prose.
_ITEM = (
    r"(?:\d{1,3}[a-z]?\.(?:\d{1,3}\.)*|\d{1,3}[a-z]?\)|[a-z]{1,3}\)|[IVX]{1,5}\."
    r"|[-*+\u2022\u2013\u2014])"
)
_OPENER = rf"[ \t]*(?:{_ITEM}|\(\d{{1,3}}[a-z]{{0,2}}\))(?=[ \t]|$)"
# Markdown also keeps table rows, raw HTML and pandoc title lines apart.
_HARD_LINE_MD = re.compile(rf"\n(?={_OPENER}| {{0,3}}[|<%])", re.MULTILINE)
_HARD_LINE_PLAIN = re.compile(rf"\n(?={_OPENER}| {{0,3}}#{{1,6}}(?:[ \t]|$))", re.MULTILINE)
_EVERY_LINE = re.compile(r"\n")
_BULLETS = "-*+\u2022\u2013\u2014"
# Enumeration items run into the prose in the gii dumps ("unterliegen
# 1.Versicherungsunternehmen ...,2.Versicherungs-Holdinggesellschaften ... und5.Pensionsfonds");
# each item starts a sentence, as it would on a line of its own.
_INLINE_ITEM = re.compile(r"\d{1,3}([a-z]?)\.(?=([^\W\d_]))")

# Typographic quotes, named by code point so they survive any editor.
_QUOTES = "\u201c\u201d\u201e\u2018\u2019\u201a\u00ab\u00bb"
# A sentence-end candidate: terminator, closing quotes/brackets, whitespace,
# and (captured, not consumed) the first character of what follows.
_TERMINATOR = re.compile(rf"([.!?])([.!?)\]\"'{_QUOTES}]*)\s+(?=(\S))")
_NEXT_WORD = re.compile(r"[^\W\d_]+")
_OPENING = frozenset(f"\"'([\u00a7{_QUOTES}")


def _words(spaced: str) -> frozenset[str]:
    """A word list written as one whitespace-separated string, for readability."""
    return frozenset(spaced.split())


# Never a sentence end before an uppercase word (compared in lower case).
_ABBREVIATIONS = _words(
    """abs abschn abzgl abl amtl anh anl anm aufl ausschl az banz begr bek beschl betr bgbl
    bl bspw bst buchst bzgl bzw ca dipl dr drs einschl evtl ff gbl gem ggf ggfs hrsg hs
    halbs inkl insb insbes jg jh lfd lit max min mind mio mrd mtl nachw nr nrn prof rdn
    rdnr rgbl rn rz sog std str tsd tz uabs unterabs urt vgl ziff zit zzgl zzt
    approx cf co corp inc jr ltd mr mrs ms para paras sec secs sr st vs
    jan feb mär mrz apr jun jul aug sep sept okt oct nov dez dec"""
)
# Abbreviations only before a number ("Art. 3", "No. 5"); elsewhere they are words.
_NUMBER_ABBREVIATIONS = _words("alt art bd fig kap no nos pos pp tab vol")
# Abbreviations that also close sentences ("... Beiträge usw. Die Frist ...").
_FINAL_ABBREVIATIONS = _words("etc usf usw")
# An ordinal "31." stays inside the sentence before these words.
_ORDINAL_NOUNS = _words(
    """januar jänner februar märz april mai juni juli august september oktober november
    dezember abschnitt unterabschnitt kapitel teil titel buch halbsatz alternative
    lebensjahr lebensjahres lebensjahrs arbeitstag arbeitstages arbeitstags kalenderjahr
    kalenderjahres kalenderjahrs geschäftsjahr geschäftsjahres geschäftsjahrs quartal
    quartals halbjahr halbjahres kalendermonat kalendermonats monat monats mal stelle
    stufe senat auflage jahrhundert versicherungsjahr versicherungsjahres werktag werktages
    werktags tag tages tags woche jahr jahres jahrs"""
)
_ROMAN = _words("i ii iii iv v vi vii viii ix x xi xii xiii xiv xv xvi xvii xviii xix xx")


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """A contiguous slice ``text[start:end]`` with its sentences.

    ``sentences`` are ``[start, end)`` offsets relative to ``start``.
    """

    start: int
    end: int
    kind: Literal["heading", "text"]
    level: int
    title: str | None
    label: str | None
    sentences: tuple[tuple[int, int], ...]


def _is_markdown(media_type: str) -> bool:
    """Whether ``media_type`` names markdown, ignoring parameters and case."""
    return media_type.split(";", 1)[0].strip().lower() in _MARKDOWN


def _heading_title(line: str) -> tuple[int, int, int] | None:
    """(level, title start, title end) of a markdown heading line, else None."""
    m = _HEADING.match(line)
    if m is None:
        return None
    rest = line[m.end(1) :]
    title = rest.strip()
    if not title:
        return None
    start = m.end(1) + len(rest) - len(rest.lstrip())
    return len(m.group(1)), start, start + len(title)


def _standalone(line: str, markdown: bool) -> bool:
    """Whether the line always forms a block of its own (plus trailing blanks)."""
    if markdown:
        return _heading_title(line) is not None
    return _HASH_LINE.match(line) is not None


def split_blocks(text: str, media_type: str) -> list[Block]:
    """Partition ``text`` into blocks with their sentences.

    A block ends before a non-blank line that follows a blank line, that is or
    follows a heading (markdown) or '#' line (plain), or that opens with an
    Absatz marker. Blank lines stay with the block before them; leading blank
    lines join the first block, so no block is whitespace only unless the whole
    text is.
    """
    markdown = _is_markdown(media_type)
    starts: list[int] = [0]
    offset = 0
    seen_text = False
    prev_blank = False
    prev_alone = False
    for line in text.split("\n"):
        blank = not line.strip()
        if not blank:
            alone = _standalone(line, markdown)
            if seen_text and (prev_blank or prev_alone or alone or _LABEL.match(line) is not None):
                starts.append(offset)
            seen_text = True
            prev_alone = alone
        prev_blank = blank
        offset += len(line) + 1
    if not text:
        return []
    bounds = [*starts, len(text)]
    return [
        _make_block(text, bounds[i], bounds[i + 1], markdown, media_type)
        for i in range(len(starts))
    ]


def _make_block(text: str, start: int, end: int, markdown: bool, media_type: str) -> Block:
    """Describe ``text[start:end]``: kind, level, title, label and sentences."""
    body = text[start:end]
    first = _first_line(body)
    heading = _heading_title(first) if markdown else None
    sentences = segment_block(body, media_type)
    if heading is not None:
        level, t0, t1 = heading
        return Block(
            start=start,
            end=end,
            kind="heading",
            level=level,
            title=first[t0:t1],
            label=None,
            sentences=sentences,
        )
    m = _LABEL.match(first)
    return Block(
        start=start,
        end=end,
        kind="text",
        level=0,
        title=None,
        label=m.group(1) if m else None,
        sentences=sentences,
    )


def _first_line(body: str) -> str:
    """The first non-blank line of ``body`` (empty if there is none)."""
    for line in body.split("\n"):
        if line.strip():
            return line
    return ""


def segment_block(block_text: str, media_type: str) -> tuple[tuple[int, int], ...]:
    """Sentence spans ``[start, end)`` of one block, relative to the block.

    Depends on nothing but the arguments. A markdown heading block yields the
    heading text without its marks; other text is cut at hard line breaks
    (enumeration items, table rows, ...) and at sentence ends, then trimmed.
    """
    markdown = _is_markdown(media_type)
    lead = len(block_text) - len(block_text.lstrip())
    line_start = block_text.rfind("\n", 0, lead) + 1
    line_end = block_text.find("\n", lead)
    line_end = len(block_text) if line_end < 0 else line_end
    first = block_text[line_start:line_end]
    spans: list[tuple[int, int]] = []
    body_from = 0
    heading = _heading_title(first) if markdown else None
    if heading is not None:
        spans.append((line_start + heading[1], line_start + heading[2]))
        body_from = line_end
    cuts = _cuts(block_text, body_from, line_start, first, markdown)
    bounds = [body_from, *cuts, len(block_text)]
    body: list[tuple[int, int]] = []
    for i in range(len(bounds) - 1):
        items = _inline_items(block_text, bounds[i], bounds[i + 1])
        for raw_start, raw_end in _sentence_ends(block_text, bounds[i], bounds[i + 1], items):
            s, e = _trim(block_text, raw_start, raw_end)
            if s < e:
                body.append((s, e))
    return (*spans, *_absorb_strays(block_text, body))


def _absorb_strays(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Fold one-character sentences other than bullets into a neighbour.

    A lone "j" or "A" is an artefact (a table cell, a split after "Foo."), not
    something anyone would cite; a block holding nothing else keeps it.
    """
    out: list[tuple[int, int]] = []
    carry: int | None = None
    for s, e in spans:
        if carry is not None:
            out.append((carry, e))  # a leading stray joins the sentence after it
            carry = None
        elif e - s > 1 or text[s] in _BULLETS:
            out.append((s, e))
        elif out:
            out[-1] = (out[-1][0], e)
        else:
            carry = s
    if carry is not None:
        out.append((carry, carry + 1))
    return out


def _cuts(text: str, start: int, line_start: int, first: str, markdown: bool) -> list[int]:
    """Offsets after ``start`` where a line begins that must begin a sentence."""
    if markdown:
        # Front matter (or a thematic break) opening the block: one line each.
        pattern = _EVERY_LINE if first.strip() == "---" else _HARD_LINE_MD
        return [m.end() for m in pattern.finditer(text, start)]
    cuts: list[int] = []
    # A '#' line in plain text is a sentence of its own: cut after it too.
    for p in [line_start, *(m.end() for m in _HARD_LINE_PLAIN.finditer(text, start))]:
        if p > start:
            cuts.append(p)
        if _HASH_LINE.match(text, p):
            end = text.find("\n", p)
            if end > 0:
                cuts.append(end)
    return sorted(set(cuts))


def _inline_items(text: str, start: int, end: int) -> list[int]:
    """Offsets of enumeration items glued into the prose, e.g. ",2.Unfall"."""
    found: list[int] = []
    for m in _INLINE_ITEM.finditer(text, start, end):
        before = text[m.start() - 1] if m.start() > start else " "
        glued_to_word = before.islower() and not m.group(1) and m.group(2).isupper()
        if before.isspace() or before in ",;:.)" or glued_to_word:
            found.append(m.start())
    return found


def _sentence_ends(text: str, start: int, end: int, items: list[int]) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` (one piece between hard breaks) at sentence ends.

    ``items`` are offsets of inline enumeration items; each begins a sentence.
    """
    spans: list[tuple[int, int]] = []
    current = start
    pending = iter(items)
    item = next(pending, end)
    for m in _TERMINATOR.finditer(text, start, end):
        while item <= m.start():
            if item > current:
                spans.append((current, item))
                current = item
            item = next(pending, end)
        if _is_sentence_end(text, current, m):
            spans.append((current, m.end(2)))
            current = m.end()
    while item < end:
        if item > current:
            spans.append((current, item))
            current = item
        item = next(pending, end)
    spans.append((current, end))
    return spans


def _is_sentence_end(text: str, sentence_start: int, m: re.Match[str]) -> bool:
    """Decide whether terminator match ``m`` ends the sentence begun at sentence_start."""
    following = m.group(3)
    if not (following.isupper() or following.isdigit() or following in _OPENING):
        return False
    if m.group(1) != ".":
        return True
    dot = m.start(1)
    if m.group(2).startswith(".") or (dot and text[dot - 1] == "\\"):
        return False  # an ellipsis, or a markdown-escaped dot: 18\. Juni
    word_start = dot
    while word_start > sentence_start and text[word_start - 1].isalnum():
        word_start -= 1
    if word_start == dot:
        return True  # "(Prämie).", "1,75 %."
    nxt = _NEXT_WORD.match(text, m.end())
    return _ends_after_word(
        text[word_start:dot].lower(),
        following,
        nxt.group().lower() if nxt else "",
        at_start=not text[sentence_start:word_start].strip(),
    )


def _ends_after_word(word: str, following: str, next_word: str, *, at_start: bool) -> bool:
    """Whether "<word>. <following...>" ends a sentence; ``word`` is lower case."""
    if word in _ABBREVIATIONS:
        verdict = False
    elif word in _FINAL_ABBREVIATIONS:
        verdict = True
    elif word in _NUMBER_ABBREVIATIONS:
        verdict = not (following.isdigit() or next_word in _ROMAN)
    elif len(word) == 1 and word.isalpha():
        verdict = False  # initials and "z. B.", "i. V. m.", "e.g."
    elif word[0].isdigit():
        # "1." opening an item, or an ordinal: "31. Dezember", "67. Lebensjahres".
        verdict = not (at_start or next_word in _ORDINAL_NOUNS)
    else:
        verdict = not (at_start and word in _ROMAN)  # "II. Abschnitt"
    return verdict


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return start, start
    s = start + len(piece) - len(piece.lstrip())
    return s, s + len(stripped)


def heading_paths(blocks: Sequence[Block]) -> list[tuple[str, ...]]:
    """One path per block: enclosing heading titles by level, then the Absatz label.

    A level-n heading replaces every open heading of level >= n and closes the
    current Absatz; a labelled block opens one that unlabelled followers
    (enumeration items, continuation paragraphs) inherit.
    """
    stack: list[tuple[int, str]] = []
    label: str | None = None
    paths: list[tuple[str, ...]] = []
    for block in blocks:
        if block.kind == "heading" and block.title is not None:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            label = None
            paths.append(tuple(title for _, title in stack))
            continue
        if block.label is not None:
            label = block.label
        titles = tuple(title for _, title in stack)
        paths.append((*titles, label) if label is not None else titles)
    return paths
