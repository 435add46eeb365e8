"""Embedder adapter: an e5-style ONNX embedding model run by onnxruntime.

Replayability rule: with ``variant="int8"`` the activation scales of the dynamically
quantized MatMuls are computed per batch, so a vector depends on what it was batched
with (padding included). Queries are therefore always embedded alone (batch of one,
no padding), which makes a query vector a pure function of (model hash, text).
Passages are batched for throughput and must be stored once embedded: the stored
vector, not a recomputation, is the record.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from stichtag.models.manifest import ModelManifest, load_manifest, model_hash, verify_files

Variant = Literal["float", "int8"]
_MODEL_FILES: dict[str, str] = {"float": "model.onnx", "int8": "model.int8.onnx"}
READ_CHARS_PER_TOKEN = 16
"""Texts are cut to ``max_length * READ_CHARS_PER_TOKEN`` characters before tokenizing."""
BATCH_TOKENS = 4096
"""Padded tokens per passage batch (rows x the longest row): the work of a batch stays
about constant, so short passages go in wide batches and long ones in narrow ones."""
TOKENIZE_SLICE = 256
"""Passages tokenized at once: the tokenizer's own threads stay busy, while its full
``Encoding`` objects exist for one slice only."""
BATCH_TOKEN_PAIRS = 1 << 19
"""Rows x width^2 per passage batch: attention memory grows with the square of the width.
Two rows of 512 tokens; eight of them (4,096 tokens) grew onnxruntime's arena, which
keeps what it once held, by ~0.3 GB, a third of the indexer's memory budget."""


def session_options(threads: int) -> ort.SessionOptions:
    """Bounded onnxruntime threading: ``threads`` inside an op, one op at a time."""
    if threads < 1:
        raise ValueError("threads must be >= 1")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return options


class OnnxEmbedder:
    """Text -> L2-normalized vectors with a model directory built by ``build_models``."""

    def __init__(
        self,
        model_dir: Path,
        *,
        variant: Variant = "int8",
        threads: int = 2,
        batch_size: int = 256,
        batch_tokens: int = BATCH_TOKENS,
        batch_token_pairs: int = BATCH_TOKEN_PAIRS,
    ) -> None:
        """Load and verify the model; raises if a file hash differs from the manifest.

        A passage batch holds at most ``batch_size`` rows, ``batch_tokens`` padded
        tokens and ``batch_token_pairs`` rows x width^2 (a single longer passage still
        makes a batch of one).
        """
        if variant not in _MODEL_FILES:
            raise ValueError(f"variant must be 'float' or 'int8', not {variant!r}")
        if min(batch_size, batch_tokens, batch_token_pairs) < 1:
            raise ValueError("batch_size, batch_tokens and batch_token_pairs must be >= 1")
        manifest = load_manifest(model_dir)
        if manifest.kind != "embedding":
            raise ValueError(f"{model_dir} holds a {manifest.kind} model, not an embedding model")
        model_file = _MODEL_FILES[variant]
        if model_file not in manifest.files:
            raise ValueError(f"model {manifest.name!r} has no {variant} variant ({model_file})")
        # hashing ~200 MB once per start is the price of an honest model_hash
        verify_files(model_dir, manifest)
        self._manifest = manifest
        self._variant = variant
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._batch_pairs = batch_token_pairs
        self._tokenizer = Tokenizer.from_file(str(model_dir / manifest.tokenizer))
        self._tokenizer.enable_truncation(manifest.max_length)
        # The tokenizer truncates only *after* tokenizing all of its input (and keeps the
        # rest as overflow encodings): a 6 MB one-sentence passage cost 20 s and 1.1 GB.
        # The model reads max_length tokens; a token of this vocabulary covers far fewer
        # than READ_CHARS_PER_TOKEN characters, so the cut changes no real text's vector.
        self._max_chars = manifest.max_length * READ_CHARS_PER_TOKEN
        self._tokenizer.no_padding()
        self._session = ort.InferenceSession(
            str(model_dir / model_file),
            sess_options=session_options(threads),
            providers=["CPUExecutionProvider"],
        )
        self._pad_id = self._tokenizer.token_to_id("<pad>")
        if self._pad_id is None:
            raise ValueError(f"tokenizer of {manifest.name!r} has no <pad> token")

    @property
    def manifest(self) -> ModelManifest:
        """The verified manifest of the loaded model."""
        return self._manifest

    @property
    def dims(self) -> int:
        """Width of the returned vectors."""
        return self._manifest.dims

    @property
    def model_hash(self) -> str:
        """Identity of the model bytes *and* the graph in use: the float and int8 graphs
        give different vectors, so embeddings and run records must tell them apart."""
        return f"{model_hash(self._manifest)}:{self._variant}"

    @property
    def variant(self) -> Variant:
        """``float`` or ``int8``; part of what a replay must match."""
        return self._variant

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed queries one per batch (see the replayability rule in the module doc)."""
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            encoding = self._tokenizer.encode(self._manifest.query_prefix
                                              + text[: self._max_chars])
            out[i] = self._run([encoding.ids])[0]
        return out

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages in batches of similar length; rows follow the input order."""
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for rows, vectors in self.embed_batches(texts):
            out[rows] = vectors
        return out

    def embed_batches(self, texts: Sequence[str]
                      ) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
        """Embed passages batch by batch: ``(input positions, their vectors)`` per batch.

        The texts are sorted by token length (padding is wasted compute) and cut into
        batches within the token budgets (see ``__init__``). The stable sort keeps the
        batching a deterministic function of the input list, which is what makes an int8
        vector reproducible from the same list (see the module doc).
        """
        if not texts:
            return
        prefix = self._manifest.passage_prefix
        ids: list[npt.NDArray[np.int64]] = []
        # An ``Encoding`` also holds the token strings, offsets and masks: ~180 bytes per
        # token, 49 MiB for a round of 2,048 law passages of 600 characters (measured).
        # Only the ids are kept; a slice's encodings are dropped before the next is made.
        for start in range(0, len(texts), TOKENIZE_SLICE):
            encodings = self._tokenizer.encode_batch(
                [prefix + t[: self._max_chars] for t in texts[start:start + TOKENIZE_SLICE]])
            ids.extend(np.asarray(e.ids, dtype=np.int64) for e in encodings)
            del encodings
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for chunk in self._plan(order, [len(row) for row in ids]):
            yield chunk, self._run([ids[i] for i in chunk])

    def _plan(self, order: list[int], lengths: list[int]) -> Iterator[list[int]]:
        # ``order`` is ascending in length, so a batch's last row is its widest.
        chunk: list[int] = []
        for i in order:
            rows, width = len(chunk) + 1, lengths[i]
            if chunk and (rows > self._batch_size or rows * width > self._batch_tokens
                          or rows * width * width > self._batch_pairs):
                yield chunk
                chunk = []
            chunk.append(i)
        if chunk:
            yield chunk

    def _run(self, rows: Sequence[npt.NDArray[np.int64] | list[int]]
             ) -> npt.NDArray[np.float32]:
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, tokens in enumerate(rows):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        (vectors,) = self._session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})
        return np.asarray(vectors, dtype=np.float32)
