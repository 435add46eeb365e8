"""Reranker adapters against real ONNX graphs.

A tiny BERT-shaped cross-encoder (random fixed-seed weights, a hand-written WordPiece
vocabulary) is built here in a temp dir and loaded only by its directory, the way a
real Hugging Face export would be configured. An independent numpy forward pass of the
same weights on independently computed token ids tells us exactly what the graph was
fed. The bundled e5 pair graph is checked against the stored-vector shortcut.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from stichtag.models.build import PAIR_DESCRIPTION
from stichtag.models.embedder import OnnxEmbedder
from stichtag.models.manifest import (
    ModelIntegrityError,
    ModelManifest,
    file_sha256,
    load_manifest,
    model_hash,
    write_manifest,
)
from stichtag.models.reranker import OnnxCrossEncoder, StoredVectorReranker

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORD_TEXT = """
the an of to in on for and or not is are was were be been has have had with by at from
as that this which who what when where how why it its their his her our your my we they
you he she can may must shall should will would rate interest insurance contract contracts
policy policyholder insurer reserve reserves premium premiums capital risk solvency
actuary actuarial maximum minimum technical new old life health motor claim claims loss
losses year years month day date january december percent value surrender lapse profit
participation mortality table tables provision provisions margin best estimate discount
curve market bond bonds asset assets liability liabilities balance sheet report annual
der die das ein eine einer eines und oder nicht ist sind war waren wird werden wurde hat
haben mit von zu im am auf für bei nach vor über unter aus durch als wie wer wann
wo warum welcher welche welches zins zinssatz höchstzinssatz rechnungszins versicherung
versicherer vertrag verträge versicherungsnehmer rückstellung deckungsrückstellung
prämie beitrag beiträge kapital risiko aktuar jahr jahre monat tag prozent wert
rückkaufswert storno überschuss beteiligung sterbetafel marge bewertung
verordnung gesetz absatz paragraph artikel aufsicht bafin neu neue neuen alt galt gilt
beträgt betrug hoch höher niedrig niedriger berechnet berechnen verwenden darf den einen prämien
"""
WORDS = _WORD_TEXT.split()
DIGITS = list("0123456789")
LETTERS = list("abcdefghijklmnopqrstuvwxyzäöüß")
PUNCT = list(".,;:!?()%§-/")
VOCAB_LIST = SPECIALS + WORDS + DIGITS + PUNCT + LETTERS + ["##" + c for c in LETTERS + DIGITS]
VOCAB = {token: i for i, token in enumerate(VOCAB_LIST)}
CLS, SEP, PAD = VOCAB["[CLS]"], VOCAB["[SEP]"], VOCAB["[PAD]"]
HIDDEN, HEADS, FFN, LAYERS, POSITIONS = 16, 2, 32, 2, 32
EPS = 1e-12


def test_vocabulary_is_a_few_hundred_distinct_tokens() -> None:
    # a duplicate would silently re-map a word to a later id and break the id oracle
    assert len(VOCAB) == len(VOCAB_LIST)
    assert 250 <= len(VOCAB) <= 400


# --------------------------------------------------------------------------- tiny BERT


@dataclass(frozen=True)
class TinyBert:
    """The fixed-seed weights of one tiny cross-encoder, stored [in, out] (x @ W)."""

    w: dict[str, npt.NDArray[np.float32]]
    with_types: bool

    def forward(self, ids: list[int], types: list[int] | None) -> float:
        """Independent float64 numpy forward pass for one unpadded row -> the logit."""
        w = {k: v.astype(np.float64) for k, v in self.w.items()}
        n = len(ids)
        x = w["word"][ids] + w["pos"][:n]
        if self.with_types:
            assert types is not None
            x = x + w["type"][types]
        x = _ln(x, w["emb.g"], w["emb.b"])
        head = HIDDEN // HEADS
        for i in range(LAYERS):
            q, k, v = (x @ w[f"{i}.{p}.w"] + w[f"{i}.{p}.b"] for p in "qkv")
            ctx = np.empty_like(x)
            for h in range(HEADS):
                cols = slice(h * head, (h + 1) * head)
                att = q[:, cols] @ k[:, cols].T / np.sqrt(head)
                att = np.exp(att - att.max(axis=1, keepdims=True))
                ctx[:, cols] = (att / att.sum(axis=1, keepdims=True)) @ v[:, cols]
            x = _ln(x + ctx @ w[f"{i}.o.w"] + w[f"{i}.o.b"], w[f"{i}.ln1.g"], w[f"{i}.ln1.b"])
            mid = x @ w[f"{i}.f1.w"] + w[f"{i}.f1.b"]
            gelu = 0.5 * mid * (1.0 + _erf(mid / np.sqrt(2.0)))
            x = _ln(x + gelu @ w[f"{i}.f2.w"] + w[f"{i}.f2.b"], w[f"{i}.ln2.g"], w[f"{i}.ln2.b"])
        pooled = np.tanh(x[0] @ w["pool.w"] + w["pool.b"])
        return float(pooled @ w["cls.w"][:, 0] + w["cls.b"][0])


def _ln(x: Any, g: Any, b: Any) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * g + b


def _erf(x: Any) -> Any:
    # numpy has no erf; math.erf per element keeps the oracle free of the graph's ops
    return np.vectorize(math.erf)(x)


def _weights(seed: int) -> dict[str, npt.NDArray[np.float32]]:
    rng = np.random.default_rng(seed)

    def rand(*shape: int, scale: float = 0.3) -> npt.NDArray[np.float32]:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "word": rand(len(VOCAB), HIDDEN, scale=1.0),
        "pos": rand(POSITIONS, HIDDEN, scale=0.5),
        # large type rows: the test that type ids reach the graph must be able to fail
        "type": rand(2, HIDDEN, scale=1.0),
        "emb.g": 1.0 + rand(HIDDEN, scale=0.1),
        "emb.b": rand(HIDDEN, scale=0.1),
        "pool.w": rand(HIDDEN, HIDDEN),
        "pool.b": rand(HIDDEN, scale=0.1),
        "cls.w": rand(HIDDEN, 1, scale=1.0),
        "cls.b": rand(1, scale=0.1),
    }
    for i in range(LAYERS):
        for p in "qkvo":
            w[f"{i}.{p}.w"] = rand(HIDDEN, HIDDEN)
            w[f"{i}.{p}.b"] = rand(HIDDEN, scale=0.1)
        w[f"{i}.f1.w"], w[f"{i}.f1.b"] = rand(HIDDEN, FFN), rand(FFN, scale=0.1)
        w[f"{i}.f2.w"], w[f"{i}.f2.b"] = rand(FFN, HIDDEN), rand(HIDDEN, scale=0.1)
        for ln in ("ln1", "ln2"):
            w[f"{i}.{ln}.g"] = 1.0 + rand(HIDDEN, scale=0.1)
            w[f"{i}.{ln}.b"] = rand(HIDDEN, scale=0.1)
    return w


class _G:
    """Minimal graph builder: named initializers, sequentially named node outputs."""

    def __init__(self, weights: dict[str, npt.NDArray[np.float32]]) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits = [numpy_helper.from_array(v, k) for k, v in sorted(weights.items())]
        self.count = 0

    def const(self, name: str, value: Any, dtype: Any) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self.count += 1
        out = f"n{self.count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, name: str) -> str:
        return self.op("Add", self.op("MatMul", x, f"{name}.w"), f"{name}.b")


def _graph(bert: TinyBert) -> onnx.ModelProto:
    g = _G(bert.w)
    i64 = np.int64
    seq = g.op("Shape", "input_ids", start=1, end=2)
    zero = g.const("zero", [0], i64)
    x = g.op("Add", g.op("Gather", "word", "input_ids"), g.op("Slice", "pos", zero, seq, zero))
    if bert.with_types:
        x = g.op("Add", x, g.op("Gather", "type", "token_type_ids"))
    x = g.op("LayerNormalization", x, "emb.g", "emb.b", axis=-1, epsilon=EPS)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    one = g.const("one", np.float32(1), np.float32)
    bias = g.op("Mul", g.op("Sub", mask, one), g.const("big", np.float32(1e4), np.float32))
    bias = g.op("Unsqueeze", bias, g.const("axes12", [1, 2], i64))
    split = g.const("split_shape", [0, 0, HEADS, HIDDEN // HEADS], i64)
    merge = g.const("merge_shape", [0, 0, HIDDEN], i64)
    scale = g.const("scale", np.float32(1 / np.sqrt(HIDDEN // HEADS)), np.float32)
    for i in range(LAYERS):

        def heads(part: str, perm: list[int], x: str = x, i: int = i) -> str:
            return g.op("Transpose", g.op("Reshape", g.dense(x, f"{i}.{part}"), split), perm=perm)

        q, k, v = heads("q", [0, 2, 1, 3]), heads("k", [0, 2, 3, 1]), heads("v", [0, 2, 1, 3])
        att = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        ctx = g.op("MatMul", g.op("Softmax", att, axis=-1), v)
        ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), merge)
        x = g.op("Add", x, g.dense(ctx, f"{i}.o"))
        x = g.op("LayerNormalization", x, f"{i}.ln1.g", f"{i}.ln1.b", axis=-1, epsilon=EPS)
        mid = g.dense(x, f"{i}.f1")
        root2 = g.const(f"root2_{i}", np.float32(np.sqrt(2)), np.float32)
        erf = g.op("Erf", g.op("Div", mid, root2))
        half = g.const(f"half_{i}", np.float32(0.5), np.float32)
        gelu = g.op("Mul", g.op("Mul", mid, g.op("Add", erf, one)), half)
        x = g.op("Add", x, g.dense(gelu, f"{i}.f2"))
        x = g.op("LayerNormalization", x, f"{i}.ln2.g", f"{i}.ln2.b", axis=-1, epsilon=EPS)
    cls = g.op("Gather", x, g.const("cls_index", 0, i64), axis=1)  # [B, H]
    logit = g.dense(g.op("Tanh", g.dense(cls, "pool")), "cls")  # [B, 1]
    inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if bert.with_types else [])
    if bert.with_types:
        out_shape: list[str | int] = ["batch", 1]
    else:
        # the other common export shape: one logit per row as [batch]
        logit = g.op("Reshape", logit, g.const("flat", [-1], i64))
        out_shape = ["batch"]
    g.nodes.append(helper.make_node("Identity", [logit], ["logits"]))
    graph = helper.make_graph(
        g.nodes,
        "tiny_bert_cross_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in inputs],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_shape)],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _tokenizer() -> Tokenizer:
    unknown = "[UNK]"  # a token name, not a secret (ruff S106 reads "token" as a password)
    tok = Tokenizer(models.WordPiece(VOCAB, unk_token=unknown, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", SEP), ("[CLS]", CLS))
    tok.decoder = decoders.WordPiece()
    return tok


def _write_model(root: Path, name: str, bert: TinyBert) -> Path:
    out = root / name
    out.mkdir()
    onnx.save_model(_graph(bert), out / "model.onnx")
    _tokenizer().save(str(out / "tokenizer.json"))
    files = {p.name: file_sha256(p) for p in sorted(out.iterdir())}
    write_manifest(
        out,
        ModelManifest(
            name=name,
            kind="cross-encoder",
            files=files,
            tokenizer="tokenizer.json",
            dims=1,
            max_length=POSITIONS,
            license="test fixture",
            source="random weights, seed in tests/integration/test_reranker.py",
            description="tiny random BERT cross-encoder (test fixture, meaningless scores)",
            query_prefix="",
            passage_prefix="",
        ),
    )
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TinyBert]:
    """A BERT-shaped cross-encoder directory with token_type_ids, and its weights."""
    bert = TinyBert(_weights(1234), with_types=True)
    return _write_model(tmp_path_factory.mktemp("ce"), "tiny-bert", bert), bert


@pytest.fixture(scope="module")
def tiny_untyped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TinyBert]:
    """The same architecture without a token_type_ids input (XLM-R style export)."""
    bert = TinyBert(_weights(99), with_types=False)
    return _write_model(tmp_path_factory.mktemp("ce"), "tiny-untyped", bert), bert


def _word_ids(text: str) -> list[int]:
    """Ids by plain vocabulary lookup: the oracle only uses texts of whole known words."""
    return [VOCAB[word] for word in text.lower().split()]


def _expected(query: str, passage: str) -> tuple[list[int], list[int]]:
    q, p = _word_ids(query), _word_ids(passage)
    ids = [CLS, *q, SEP, *p, SEP]
    return ids, [0] * (len(q) + 2) + [1] * (len(p) + 1)


QUERY = "welcher höchstzinssatz galt für neue verträge"
PASSAGES = [
    "der höchstzinssatz beträgt 0 prozent",
    "die sterbetafel wird nach der verordnung berechnet",
    "the maximum technical interest rate for new contracts",
    "premium",
    "der rechnungszins darf den höchstzinssatz nicht über",
    "surrender value of the policy at the date of the report",
    "die bafin hat die aufsicht über die versicherer und die verträge",
    "reserve",
    "the actuary has a best estimate of the technical provisions and the risk margin",
    "zins",
    "für neue verträge gilt ein höchstzinssatz von 0 prozent im jahr",
    "the insurer can not have a profit",
    "mortality table",
    "der versicherungsnehmer hat einen rückkaufswert",
    "solvency capital of the insurer was at the minimum",
    "die deckungsrückstellung ist nach der verordnung zu berechnen",
    "lapse rate",
    "the discount curve of the market",
    "beiträge und prämien werden im jahr berechnet",
    "what is the maximum rate",
]


# --------------------------------------------------------------------------- drop-in path


def test_graph_receives_type_ids_0_for_query_and_1_for_passage(
    tiny: tuple[Path, TinyBert],
) -> None:
    model_dir, bert = tiny
    ce = OnnxCrossEncoder(model_dir)
    assert ce.input_names == ("input_ids", "attention_mask", "token_type_ids")
    scores = ce.score(QUERY, PASSAGES)
    for passage, score in zip(PASSAGES, scores, strict=True):
        ids, types = _expected(QUERY, passage)
        encoding = ce.encode(QUERY, passage)
        assert (encoding.ids, encoding.type_ids) == (ids, types)
        assert score == pytest.approx(bert.forward(ids, types), abs=1e-5)
        # the same ids with all-zero types give a clearly different logit, so the
        # equality above really pins the type ids the graph was fed
        assert abs(score - bert.forward(ids, [0] * len(ids))) > 1e-3


def test_pair_encoding_is_the_tokenizers_own_pair_template(tiny: tuple[Path, TinyBert]) -> None:
    model_dir, _ = tiny
    ce = OnnxCrossEncoder(model_dir)
    reference = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # punctuation and out-of-vocabulary words exercise the normalizer and ##pieces
    for passage in ["Der Zins (§ 2) beträgt 0,25 %.", "Xylophon-Versicherungen!", ""]:
        ours = ce.encode("Welcher Zins?", passage)
        theirs = reference.encode("Welcher Zins?", passage)
        assert (ours.ids, ours.type_ids) == (theirs.ids, theirs.type_ids)
        assert not ours.truncated


def test_batching_does_not_change_scores(tiny: tuple[Path, TinyBert]) -> None:
    model_dir, _ = tiny
    lengths = {len(_expected(QUERY, p)[0]) for p in PASSAGES}
    assert len(lengths) > 5  # rows are padded differently in the two batchings
    alone = OnnxCrossEncoder(model_dir, batch_size=1).score(QUERY, PASSAGES)
    batched = OnnxCrossEncoder(model_dir, batch_size=16).score(QUERY, PASSAGES)
    assert np.max(np.abs(np.subtract(alone, batched))) < 1e-5


def test_order_is_preserved(tiny: tuple[Path, TinyBert]) -> None:
    model_dir, bert = tiny
    ce = OnnxCrossEncoder(model_dir, batch_size=4)
    forward = ce.score(QUERY, PASSAGES)
    backward = ce.score(QUERY, PASSAGES[::-1])
    assert np.max(np.abs(np.subtract(forward, backward[::-1]))) < 1e-5
    oracle = [bert.forward(*_expected(QUERY, p)) for p in PASSAGES]
    assert len({round(s, 4) for s in oracle}) == len(oracle)  # order is observable
    assert np.max(np.abs(np.subtract(forward, oracle))) < 1e-5


def test_truncation_keeps_the_query_and_respects_max_length(tiny: tuple[Path, TinyBert]) -> None:
    model_dir, bert = tiny
    long_passage = " ".join(WORDS[:60])
    query = "welcher zins galt"
    ce = OnnxCrossEncoder(model_dir, max_length=16)
    encoding = ce.encode(query, long_passage)
    q = _word_ids(query)
    kept = 16 - 3 - len(q)
    ids = [CLS, *q, SEP, *_word_ids(long_passage)[:kept], SEP]
    types = [0] * (len(q) + 2) + [1] * (kept + 1)
    assert (encoding.ids, encoding.type_ids) == (ids, types)
    assert (encoding.query_tokens, encoding.passage_tokens, encoding.truncated) == (3, kept, True)
    (score,) = ce.score(query, [long_passage])
    assert score == pytest.approx(bert.forward(ids, types), abs=1e-5)

    # the manifest limit (the graph's 32 positions) applies without an argument: a row
    # longer than that would make onnxruntime fail on the position Slice/Add
    full = OnnxCrossEncoder(model_dir)
    assert len(full.encode(query, long_passage).ids) == POSITIONS
    assert len(full.score(query, [long_passage, "zins"])) == 2

    # a query that alone fills the budget is cut too, and the passage keeps half
    long_query = " ".join(WORDS[100:120])
    both = ce.encode(long_query, long_passage)
    assert len(both.ids) == 16
    assert (both.query_tokens, both.passage_tokens) == (7, 6)
    assert both.ids[1:8] == _word_ids(long_query)[:7]


def test_max_length_cannot_exceed_the_manifest(tiny: tuple[Path, TinyBert]) -> None:
    model_dir, _ = tiny
    with pytest.raises(ValueError, match="max_length"):
        OnnxCrossEncoder(model_dir, max_length=POSITIONS + 1)


def test_graph_without_token_type_ids_works(tiny_untyped: tuple[Path, TinyBert]) -> None:
    model_dir, bert = tiny_untyped
    ce = OnnxCrossEncoder(model_dir, batch_size=3)
    assert ce.input_names == ("input_ids", "attention_mask")
    scores = ce.score(QUERY, PASSAGES)
    oracle = [bert.forward(_expected(QUERY, p)[0], None) for p in PASSAGES]
    assert np.max(np.abs(np.subtract(scores, oracle))) < 1e-5


def test_wrong_file_hash_is_refused(tiny: tuple[Path, TinyBert], tmp_path: Path) -> None:
    model_dir, _ = tiny
    relabelled = tmp_path / "relabelled"
    shutil.copytree(model_dir, relabelled)
    manifest = load_manifest(relabelled)
    digest = manifest.files["model.onnx"]
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    write_manifest(relabelled, replace(manifest, files={**manifest.files, "model.onnx": wrong}))
    with pytest.raises(ModelIntegrityError, match=r"model\.onnx"):
        OnnxCrossEncoder(relabelled)

    tampered = tmp_path / "tampered"
    shutil.copytree(model_dir, tampered)
    with (tampered / "model.onnx").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ModelIntegrityError, match=r"model\.onnx"):
        OnnxCrossEncoder(tampered)


# --------------------------------------------------------------------------- e5 pair graph

PAIRS = [
    ("Welcher Höchstzinssatz galt 2016?", "Der Höchstzinssatz beträgt 1,25 Prozent."),
    ("Welcher Höchstzinssatz galt 2016?", "Die Kostenquote stieg auf 4,8 %."),
    (
        "Wie wird die Deckungsrückstellung berechnet?",
        "Die Deckungsrückstellung ist"
        " nach versicherungsmathematischen Grundsätzen prospektiv zu berechnen.",
    ),
    ("Wie wird die Deckungsrückstellung berechnet?", "Lapse rates increased sharply."),
    (
        "Wer prüft die Rechnungsgrundlagen?",
        "Der Verantwortliche Aktuar prüft jährlich die Angemessenheit der Rechnungsgrundlagen.",
    ),
    ("Wer prüft die Rechnungsgrundlagen?", "Rückkaufswerte sind nach § 169 VVG zu berechnen."),
    (
        "Was ist die Zinszusatzreserve?",
        "Die Zinszusatzreserve wurde nach der Korridormethode ermittelt.",
    ),
    ("Was ist die Zinszusatzreserve?", "The combined ratio of the motor portfolio was 97.3%."),
    (
        "Welche Sterbetafel gilt für Renten?",
        "Für Rentenversicherungen sind die Sterbetafeln DAV 2004 R zu verwenden.",
    ),
    ("Welche Sterbetafel gilt für Renten?", "Die BaFin kann Auskünfte verlangen."),
    (
        "Wann wird die Rente gezahlt?",
        "Bei Berufsunfähigkeit wird die vereinbarte Rente monatlich im Voraus gezahlt.",
    ),
    ("Wann wird die Rente gezahlt?", "Die Verordnung tritt am Tag nach ihrer Verkündung in Kraft."),
    (
        "What is the maximum technical interest rate?",
        "The maximum technical interest rate for new life insurance contracts is 0.25 percent.",
    ),
    (
        "What is the maximum technical interest rate?",
        "Ab dem 1. Januar 2022 gilt ein Höchstrechnungszins von 0,25 %.",
    ),
    (
        "How are technical provisions calculated?",
        "Technical provisions are the sum of a best estimate and a risk margin.",
    ),
    (
        "How are technical provisions calculated?",
        "Mortality improvements are projected with a cohort-based model.",
    ),
    (
        "Can policyholders surrender their contracts?",
        "Policyholders may surrender their contracts at any time and receive the surrender value.",
    ),
    (
        "Can policyholders surrender their contracts?",
        "Reinsurance recoverables are shown separately on the balance sheet.",
    ),
    (
        "Which discount rate is used?",
        "The discount rate is derived from the EIOPA risk-free interest rate term structure.",
    ),
    ("Which discount rate is used?", "Der Stornoabschlag muss angemessen und beziffert sein."),
    (
        "What does the SCR cover?",
        "The solvency capital requirement covers a one-in-two-hundred-year loss event.",
    ),
    ("What does the SCR cover?", "Die Solvabilitätsquote lag zum Stichtag bei 245 Prozent."),
    (
        "Wie hoch ist der Rechnungszins?",
        "Der Garantiezins eines Vertrags bleibt über die gesamte Laufzeit unverändert.",
    ),
    (
        "Wie hoch ist der Rechnungszins?",
        "Die Abschlusskosten werden über die ersten fünf Vertragsjahre gezillmert.",
    ),
]


@pytest.fixture(scope="module")
def pair_graph(models_dir: Path) -> OnnxCrossEncoder:
    """The bundled e5 pair graph, loaded by directory."""
    return OnnxCrossEncoder(models_dir / "e5-small-pair")


def test_pair_graph_is_labelled_as_cosine(pair_graph: OnnxCrossEncoder, models_dir: Path) -> None:
    assert pair_graph.label == PAIR_DESCRIPTION
    assert "not a trained cross-encoder" in pair_graph.label
    assert pair_graph.model_hash == model_hash(load_manifest(models_dir / "e5-small-pair"))
    assert pair_graph.input_names == ("input_ids", "attention_mask", "token_type_ids")


def test_stored_vectors_agree_with_the_pair_graph(
    pair_graph: OnnxCrossEncoder, models_dir: Path, embedder: OnnxEmbedder
) -> None:
    float_embedder = OnnxEmbedder(models_dir / "e5-small", variant="float", threads=2)
    stored = StoredVectorReranker(float_embedder, pair_graph.manifest)
    assert stored.model_hash == pair_graph.model_hash
    assert stored.label == pair_graph.label
    assert len(PAIRS) >= 20
    graph_scores, vector_scores, int8_scores = [], [], []
    int8 = StoredVectorReranker(embedder, pair_graph.manifest)
    for query, group in _by_query(PAIRS).items():
        graph_scores += pair_graph.score(query, group)
        vector_scores += stored.score(query, float_embedder.embed_passages(group))
        int8_scores += int8.score(query, embedder.embed_passages(group))
    # achieved ~1e-6 (float graph vs float vectors); the bar is the brief's 1e-3
    assert np.max(np.abs(np.subtract(graph_scores, vector_scores))) < 1e-3
    # int8 vectors carry the quantization error (max 0.017, mean 0.005 seen here): the
    # shortcut over int8 vectors is close to, not equal to, the float pair graph
    assert np.max(np.abs(np.subtract(graph_scores, int8_scores))) < 5e-2
    # the scores are not all alike, so agreement is not an accident of a constant
    assert np.ptp(graph_scores) > 0.1


def test_stored_vectors_refuse_a_real_cross_encoder(
    tiny: tuple[Path, TinyBert], embedder: OnnxEmbedder
) -> None:
    with pytest.raises(ValueError, match="not the e5 pair graph"):
        StoredVectorReranker(embedder, load_manifest(tiny[0]))


def _by_query(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for query, passage in pairs:
        grouped.setdefault(query, []).append(passage)
    return grouped
