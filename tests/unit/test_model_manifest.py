"""Model manifests: round trip, validation, file verification and the model hash."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from stichtag.models.manifest import (
    MANIFEST_FILE,
    ModelIntegrityError,
    ModelManifest,
    ModelManifestError,
    file_sha256,
    load_manifest,
    manifest_from_dict,
    model_hash,
    verify_files,
    write_manifest,
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def model_dir(tmp_path: Path) -> tuple[Path, ModelManifest]:
    contents = {"model.onnx": b"graph bytes", "tokenizer.json": b'{"model": {}}'}
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    manifest = ModelManifest(
        name="e5-small",
        kind="embedding",
        files={name: _sha(data) for name, data in contents.items()},
        tokenizer="tokenizer.json",
        dims=384,
        max_length=512,
        license="MIT",
        source="test",
        description="a test model",
        query_prefix="query: ",
        passage_prefix="passage: ",
    )
    write_manifest(tmp_path, manifest)
    return tmp_path, manifest


def test_round_trip(model_dir: tuple[Path, ModelManifest]) -> None:
    path, manifest = model_dir
    assert load_manifest(path) == manifest
    verify_files(path, manifest)


def test_json_is_canonical(model_dir: tuple[Path, ModelManifest]) -> None:
    _, manifest = model_dir
    shuffled = replace(manifest, files=dict(reversed(list(manifest.files.items()))))
    assert shuffled.to_json() == manifest.to_json()
    assert json.loads(manifest.to_json()) == asdict(manifest)


def test_file_sha256_matches_hashlib(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # more than one read chunk
    (tmp_path / "blob").write_bytes(data)
    assert file_sha256(tmp_path / "blob") == _sha(data)


def test_changed_file_is_named(model_dir: tuple[Path, ModelManifest]) -> None:
    path, manifest = model_dir
    (path / "model.onnx").write_bytes(b"graph bytez")
    with pytest.raises(ModelIntegrityError, match=r"'model\.onnx' has sha256 .* says "):
        verify_files(path, manifest)


def test_missing_file_is_named(model_dir: tuple[Path, ModelManifest]) -> None:
    path, manifest = model_dir
    (path / "tokenizer.json").unlink()
    with pytest.raises(ModelIntegrityError, match=r"'tokenizer\.json' is missing"):
        verify_files(path, manifest)


def test_model_hash_is_sha256_of_sorted_file_hashes(model_dir: tuple[Path, ModelManifest]) -> None:
    _, manifest = model_dir
    hashes = sorted(manifest.files.values())
    assert model_hash(manifest) == _sha("\n".join(hashes).encode())


def test_model_hash_ignores_labels_but_not_bytes(model_dir: tuple[Path, ModelManifest]) -> None:
    _, manifest = model_dir
    relabelled = replace(manifest, name="other", description="same bytes")
    assert model_hash(relabelled) == model_hash(manifest)
    changed = replace(manifest, files={**manifest.files, "model.onnx": _sha(b"other graph")})
    assert model_hash(changed) != model_hash(manifest)


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ModelManifestError, match=r"no manifest\.json"):
        load_manifest(tmp_path)


def test_invalid_json(tmp_path: Path) -> None:
    (tmp_path / MANIFEST_FILE).write_text("{not json")
    with pytest.raises(ModelManifestError, match="not valid JSON"):
        load_manifest(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "reranker"}, "kind"),
        ({"dims": 0}, "dims"),
        ({"max_length": True}, "max_length"),
        ({"license": None}, "license"),
        ({"files": {}}, "non-empty"),
        ({"files": {"../escape.onnx": "0" * 64, "tokenizer.json": "0" * 64}}, "leaves"),
        ({"files": {"/abs.onnx": "0" * 64, "tokenizer.json": "0" * 64}}, "leaves"),
        ({"files": {"tokenizer.json": "ABC"}}, "sha256"),
        ({"tokenizer": "other.json"}, "not among"),
        ({"extra": 1}, "unexpected"),
    ],
)
def test_rejects_malformed(
    model_dir: tuple[Path, ModelManifest], change: dict[str, object], message: str
) -> None:
    _, manifest = model_dir
    raw = {**asdict(manifest), **change}
    with pytest.raises(ModelManifestError, match=message):
        manifest_from_dict(raw)


def test_rejects_missing_field(model_dir: tuple[Path, ModelManifest]) -> None:
    _, manifest = model_dir
    raw = asdict(manifest)
    del raw["passage_prefix"]
    with pytest.raises(ModelManifestError, match="missing \\['passage_prefix'\\]"):
        manifest_from_dict(raw)
