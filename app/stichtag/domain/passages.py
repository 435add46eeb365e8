"""Passages: the retrieval units — a few consecutive sentences of one section of a version.

A passage never crosses a section (heading) boundary and holds at most ``MAX_CHARS``
characters of sentences (about 100-150 e5 tokens, where embedding cost is still linear;
docs/architecture.md §6). A longer single sentence is a passage of its own. The text that is
embedded carries the section's heading path as context, and passages are keyed by the
hash of that text: an unchanged section of a new version yields identical passages,
whose embeddings are reused instead of recomputed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import blake3

MAX_CHARS = 600
PATH_SEPARATOR = " › "
_LABEL = re.compile(r"^\(\d+[a-z]?\)$")


@dataclass(frozen=True, kw_only=True, slots=True)
class SentenceSpan:
    """A sentence of a version with absolute code-point offsets and its heading path."""

    start: int
    end: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Passage:
    """Consecutive sentences ``[first, first + count)`` spanning ``[start, end)``."""

    ordinal: int
    first_sentence: int
    n_sentences: int
    start: int
    end: int
    heading_path: tuple[str, ...]
    embed_text: str
    hash: bytes


def section_of(path: tuple[str, ...]) -> tuple[str, ...]:
    """The section a sentence belongs to: its heading path without an Absatz label."""
    if path and _LABEL.match(path[-1]):
        return path[:-1]
    return path


def embed_text(section: tuple[str, ...], body: str) -> str:
    """What the embedding model reads: heading context, then the sentences."""
    context = PATH_SEPARATOR.join(section)
    return f"{context}\n{body}" if context else body


def build_passages(text: str, sentences: Sequence[SentenceSpan],
                   *, max_chars: int = MAX_CHARS) -> list[Passage]:
    """Group sentences into passages (deterministic; depends only on the section's text)."""
    passages: list[Passage] = []
    group: list[int] = []

    def flush() -> None:
        if not group:
            return
        first, last = sentences[group[0]], sentences[group[-1]]
        section = section_of(first.heading_path)
        content = embed_text(section, text[first.start:last.end])
        passages.append(Passage(
            ordinal=len(passages), first_sentence=group[0], n_sentences=len(group),
            start=first.start, end=last.end, heading_path=first.heading_path,
            embed_text=content, hash=blake3.blake3(content.encode("utf-8")).digest()))
        group.clear()

    for index, sentence in enumerate(sentences):
        if group:
            head = sentences[group[0]]
            same_section = section_of(head.heading_path) == section_of(sentence.heading_path)
            fits = sentence.end - head.start <= max_chars
            if not (same_section and fits):
                flush()
        group.append(index)
    flush()
    return passages


def passage_body(stored: str, heading_path: tuple[str, ...]) -> str:
    """The sentences of a passage (``text[start:end]``) from its stored embed text."""
    context = PATH_SEPARATOR.join(section_of(heading_path))
    return stored[len(context) + 1:] if context else stored
