"""A version ready to store: normalized text cut into deduplicable blocks with sentences.

Everything here is derived from the normalized text by the versioned segmenter, so the
store can keep each distinct block once per tenant and a version as a list of block ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import blake3

from stichtag.domain.passages import Passage, SentenceSpan, build_passages
from stichtag.domain.segment import SEGMENTER_ID, heading_paths, split_blocks
from stichtag.domain.text import Utf16Map, utf16_len, version_id

MEDIA_TYPES = ("text/markdown", "text/plain")
SENTENCE_HASH_BYTES = 16


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedBlock:
    """One block (paragraph or heading) with sentence spans relative to its start."""

    hash: bytes
    text: str
    kind: str
    level: int
    title: str | None
    label: str | None
    len_cp: int
    len_u16: int
    sent_starts: tuple[int, ...]
    sent_ends: tuple[int, ...]
    sent_u16_starts: tuple[int, ...]
    sent_u16_ends: tuple[int, ...]
    sent_hashes: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedVersion:
    """A normalized version: its content address, blocks and per-block heading paths."""

    version_id: str
    text: str
    media_type: str
    segmenter_id: str
    blocks: tuple[PreparedBlock, ...]
    paths: tuple[tuple[str, ...], ...]
    len_cp: int
    len_u16: int
    passages: tuple[Passage, ...]
    passage_u16: tuple[tuple[int, int], ...]

    @property
    def n_sentences(self) -> int:
        """Number of sentences over all blocks."""
        return sum(len(b.sent_starts) for b in self.blocks)


def sentence_hash(sentence: str) -> bytes:
    """The 16-byte blake3 hash that identifies an unchanged sentence across versions."""
    return blake3.blake3(sentence.encode("utf-8")).digest(length=SENTENCE_HASH_BYTES)


def block_hash(text: str, media_type: str) -> bytes:
    """Blocks are keyed by segmenter and media type too: both change their sentences."""
    material = f"{SEGMENTER_ID}\x00{media_type}\x00{text}".encode()
    return blake3.blake3(material).digest()


def prepare(text: str, media_type: str) -> PreparedVersion:
    """Cut normalized ``text`` into blocks and sentences (the caller normalized it)."""
    raw_blocks = split_blocks(text, media_type)
    blocks: list[PreparedBlock] = []
    for b in raw_blocks:
        body = text[b.start:b.end]
        u16 = Utf16Map(body)
        starts = tuple(s for s, _ in b.sentences)
        ends = tuple(e for _, e in b.sentences)
        blocks.append(PreparedBlock(
            hash=block_hash(body, media_type), text=body, kind=b.kind, level=b.level,
            title=b.title, label=b.label, len_cp=len(body), len_u16=utf16_len(body),
            sent_starts=starts, sent_ends=ends,
            sent_u16_starts=tuple(u16.to_utf16(s) for s in starts),
            sent_u16_ends=tuple(u16.to_utf16(e) for e in ends),
            sent_hashes=b"".join(sentence_hash(body[s:e]) for s, e in b.sentences),
        ))
    paths = heading_paths(raw_blocks)
    spans = [SentenceSpan(start=b.start + s, end=b.start + e, heading_path=path)
             for b, path in zip(raw_blocks, paths, strict=True) for s, e in b.sentences]
    passages = build_passages(text, spans)
    u16 = Utf16Map(text)
    return PreparedVersion(
        version_id=version_id(text), text=text, media_type=media_type,
        segmenter_id=SEGMENTER_ID, blocks=tuple(blocks), paths=tuple(paths),
        len_cp=len(text), len_u16=utf16_len(text), passages=tuple(passages),
        passage_u16=tuple((u16.to_utf16(p.start), u16.to_utf16(p.end)) for p in passages),
    )
