"""Storing a version as deduplicated blocks, heading paths and passages; reassembling it.

A version is stored once per tenant as a list of block ids (each distinct block once),
its heading paths and its passage placements. Reading reassembles the text and the
absolute sentence offsets from the blocks.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Sequence
from typing import Any

import blake3
from psycopg import Connection
from psycopg.rows import class_row

from stichtag.domain.errors import Conflict
from stichtag.domain.prepared import SENTENCE_HASH_BYTES, PreparedVersion
from stichtag.domain.records import SentenceRow, VersionContent, VersionExcerpt, VersionRow
from stichtag.store.sqlfiles import query


def store_version(conn: Connection[Any], version: PreparedVersion) -> bool:
    """Store a version and its new blocks; False when it was already stored."""
    existing = conn.cursor(row_factory=class_row(VersionRow)).execute(
        query("version_get"), {"version_id": version.version_id}).fetchone()
    if existing is not None:
        erased = conn.execute(query("version_is_erased"),
                              {"version_id": version.version_id}).fetchone()
        if erased is not None and erased[0]:
            raise Conflict("text", "this text was erased from this tenant (GDPR erasure) "
                                   "and is not stored again")
        if existing.media_type != version.media_type:
            raise Conflict("media_type", f"this text is stored as {existing.media_type}")
        return False
    block_ids = _store_blocks(conn, version)
    passage_paths = [p.heading_path for p in version.passages]
    path_ids = _store_paths(conn, [*version.paths, *passage_paths])
    passage_ids = _store_passages(conn, version)
    starts, u16_starts, sentence_starts = block_starts(version)
    conn.execute(query("version_insert"), {
        "version_id": version.version_id, "media_type": version.media_type,
        "segmenter_id": version.segmenter_id, "block_ids": block_ids,
        "path_ids": path_ids[:len(version.paths)], "len_cp": version.len_cp,
        "len_u16": version.len_u16, "n_sentences": version.n_sentences,
        "passage_ids": passage_ids,
        "passage_starts": [p.start for p in version.passages],
        "passage_ends": [p.end for p in version.passages],
        "passage_u16_starts": [u for u, _ in version.passage_u16],
        "passage_u16_ends": [u for _, u in version.passage_u16],
        "passage_path_ids": path_ids[len(version.paths):],
        "block_starts": starts, "block_u16_starts": u16_starts,
        "block_sentence_starts": sentence_starts,
    })
    return True


def block_starts(version: PreparedVersion) -> tuple[list[int], list[int], list[int]]:
    """Where each block starts in the version: code point, UTF-16 unit, first sentence."""
    starts: tuple[list[int], list[int], list[int]] = ([], [], [])
    cp = u16 = n = 0
    for b in version.blocks:
        starts[0].append(cp)
        starts[1].append(u16)
        starts[2].append(n)
        cp, u16, n = cp + b.len_cp, u16 + b.len_u16, n + len(b.sent_starts)
    return starts


def _next_id(conn: Connection[Any], name: str) -> int:
    """The tenant's next id of a table (migration 0010): the caller's write holds the
    tenant's clock lock, so the ids from it up are free until the write commits; a
    duplicate would still be refused by the primary key."""
    row = conn.execute(query(name)).fetchone()
    assert row is not None
    return int(row[0])


def _store_blocks(conn: Connection[Any], version: PreparedVersion) -> list[int]:
    hashes = list(dict.fromkeys(b.hash for b in version.blocks))
    known = dict(conn.execute(query("blocks_by_hash"), {"hashes": hashes}).fetchall())
    missing = [b for b in {b.hash: b for b in version.blocks}.values() if b.hash not in known]
    if missing:
        # COPY would be faster, but PostgreSQL refuses COPY FROM under row-level
        # security; executemany runs in pipeline mode, one round trip per batch.
        first = _next_id(conn, "blocks_next_id")
        with conn.cursor() as cur:
            cur.executemany(query("block_insert"), [{
                "block_id": first + i, "hash": b.hash, "text": b.text, "kind": b.kind,
                "level": b.level, "title": b.title, "label": b.label, "len_cp": b.len_cp,
                "len_u16": b.len_u16, "sent_starts": list(b.sent_starts),
                "sent_ends": list(b.sent_ends), "sent_u16_starts": list(b.sent_u16_starts),
                "sent_u16_ends": list(b.sent_u16_ends), "sent_hashes": b.sent_hashes,
            } for i, b in enumerate(missing)])
        known.update({b.hash: first + i for i, b in enumerate(missing)})
    return [known[b.hash] for b in version.blocks]


def _store_passages(conn: Connection[Any], version: PreparedVersion) -> list[int]:
    """Store new distinct passages (embedding pending); ids in the version's order."""
    distinct = {p.hash: p for p in version.passages}
    known = dict(conn.execute(query("passages_by_hash"),
                              {"hashes": list(distinct)}).fetchall())
    missing = [p for h, p in distinct.items() if h not in known]
    if missing:
        first = _next_id(conn, "passages_next_id")
        with conn.cursor() as cur:
            cur.executemany(query("passage_insert"), [
                {"passage_id": first + i, "hash": p.hash, "text": p.embed_text}
                for i, p in enumerate(missing)])
        known.update({p.hash: first + i for i, p in enumerate(missing)})
    return [known[p.hash] for p in version.passages]


def _store_paths(conn: Connection[Any], paths: Sequence[tuple[str, ...]]) -> list[int]:
    def key(path: tuple[str, ...]) -> bytes:
        return blake3.blake3("\x1f".join(path).encode("utf-8")).digest()

    distinct = {key(p): p for p in paths}
    known = dict(conn.execute(query("paths_by_hash"), {"hashes": list(distinct)}).fetchall())
    missing = [(h, p) for h, p in distinct.items() if h not in known]
    if missing:
        first = _next_id(conn, "paths_next_id")
        with conn.cursor() as cur:
            cur.executemany(query("path_insert"), [
                {"path_id": first + i, "hash": h, "path": list(p)}
                for i, (h, p) in enumerate(missing)])
        known.update({h: first + i for i, (h, _) in enumerate(missing)})
    return [known[key(p)] for p in paths]


def block_sentences(b: dict[str, Any], *, cp: int, u16: int, first: int) -> list[SentenceRow]:
    """A stored block's sentences with absolute offsets (the block starts at code point
    ``cp``, UTF-16 unit ``u16``) and ordinals from ``first`` on."""
    hashes = b["sent_hashes"]
    return [SentenceRow(
        ordinal=first + k, start=cp + s, end=cp + e, utf16_start=u16 + us, utf16_end=u16 + ue,
        hash=bytes(hashes[k * SENTENCE_HASH_BYTES:(k + 1) * SENTENCE_HASH_BYTES]),
        heading_path=tuple(b["path"]))
        for k, (s, e, us, ue) in enumerate(zip(b["sent_starts"], b["sent_ends"],
                                               b["sent_u16_starts"], b["sent_u16_ends"],
                                               strict=True))]


def assemble(version: VersionRow, blocks: Sequence[dict[str, Any]]) -> VersionContent:
    """Rebuild text and absolute sentence offsets from a version's stored blocks."""
    out = io.StringIO()
    sentences: list[SentenceRow] = []
    cp = u16 = 0
    for b in blocks:
        out.write(b["text"])
        sentences += block_sentences(b, cp=cp, u16=u16, first=len(sentences))
        cp += b["len_cp"]
        u16 += b["len_u16"]
    return VersionContent(version=version, text=out.getvalue(), sentences=tuple(sentences))


def blocks_around(starts: Sequence[int], windows: Sequence[tuple[int, int]]) -> list[int]:
    """Indexes of the blocks (given their starts, ascending) that overlap any window
    [lo, hi): from the block holding ``lo`` up to the last one starting before ``hi``."""
    picked: set[int] = set()
    for lo, hi in windows:
        i = max(0, bisect.bisect_right(starts, lo) - 1)
        while i < len(starts) and starts[i] < hi:
            picked.add(i)
            i += 1
    return sorted(picked)


def assemble_excerpt(layout: dict[str, Any], picked: Sequence[int],
                     blocks: dict[tuple[int, int], dict[str, Any]]) -> VersionExcerpt:
    """An excerpt from a version's layout row, the block indexes picked, and the block
    rows by (block id, path id). Consecutive blocks join into one piece, so a cut across
    a block boundary reads as in the whole text; sentences keep their ordinals."""
    pieces: list[tuple[int, list[str]]] = []
    sentences: list[SentenceRow] = []
    previous = -2
    for i in picked:
        b = blocks[layout["block_ids"][i], layout["path_ids"][i]]
        cp, u16 = layout["block_starts"][i], layout["block_u16_starts"][i]
        if i == previous + 1:
            pieces[-1][1].append(b["text"])
        else:
            pieces.append((cp, [b["text"]]))
        previous = i
        sentences += block_sentences(b, cp=cp, u16=u16,
                                     first=layout["block_sentence_starts"][i])
    return VersionExcerpt(version_id=layout["version_id"], length=layout["len_cp"],
                          pieces=tuple((start, "".join(texts)) for start, texts in pieces),
                          sentences=tuple(sentences))
