"""Model manifests: what a model directory holds, and proof that it still holds exactly that.

Every model directory carries ``manifest.json``. Its file hashes pin the bytes a run used;
``model_hash`` condenses them into the single value stored in each run record, so a
replay can tell "same model" from "similar model".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, cast, get_args

MANIFEST_FILE = "manifest.json"
ModelKind = Literal["embedding", "cross-encoder"]
_HEX = frozenset("0123456789abcdef")


class ModelManifestError(ValueError):
    """A manifest is missing, malformed, or names files it must not name."""


class ModelIntegrityError(RuntimeError):
    """A model file is missing or its bytes differ from the manifest's hash."""


@dataclass(frozen=True, kw_only=True)
class ModelManifest:
    """Description of one offline model directory (written as ``manifest.json``)."""

    name: str
    """Directory and display name, e.g. ``e5-small``."""
    kind: ModelKind
    """``embedding`` (text -> vector) or ``cross-encoder`` ((query, passage) -> one logit)."""
    files: dict[str, str]
    """File name (relative to the model directory) -> lowercase hex sha256."""
    tokenizer: str
    """Name of the ``tokenizers`` JSON file among ``files``."""
    dims: int
    """Embedding width; 1 for a cross-encoder (one logit)."""
    max_length: int
    """Token limit the tokenizer truncates to, special tokens included."""
    license: str
    source: str
    """Where the weights come from, pinned (package, version, file hash, converter)."""
    description: str
    query_prefix: str
    """Text prepended to queries before tokenizing (``query: `` for e5)."""
    passage_prefix: str

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, so equal manifests are equal bytes."""
        return json.dumps(asdict(self), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def manifest_from_dict(raw: object) -> ModelManifest:
    """Validate a decoded ``manifest.json`` object and build the manifest."""
    if not isinstance(raw, dict):
        raise ModelManifestError("manifest must be a JSON object")
    fields = set(ModelManifest.__dataclass_fields__)
    if set(raw) != fields:
        missing, extra = sorted(fields - set(raw)), sorted(set(raw) - fields)
        raise ModelManifestError(f"manifest fields differ: missing {missing}, unexpected {extra}")
    for key in fields - {"files", "dims", "max_length"}:
        if not isinstance(raw[key], str):
            raise ModelManifestError(f"manifest field {key!r} must be a string")
    if raw["kind"] not in get_args(ModelKind):
        kinds = get_args(ModelKind)
        raise ModelManifestError(f"manifest kind {raw['kind']!r} is not one of {kinds}")
    for key in ("dims", "max_length"):
        value = raw[key]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ModelManifestError(f"manifest field {key!r} must be a positive integer")
    files = raw["files"]
    if not isinstance(files, dict) or not files:
        raise ModelManifestError("manifest 'files' must be a non-empty object")
    for name, digest in files.items():
        _check_file_name(name)
        if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX:
            raise ModelManifestError(f"manifest hash for {name!r} is not a lowercase sha256 hex")
    if raw["tokenizer"] not in files:
        raise ModelManifestError(f"tokenizer {raw['tokenizer']!r} is not among the hashed files")
    return ModelManifest(
        name=raw["name"],
        kind=cast(ModelKind, raw["kind"]),
        files=dict(files),
        tokenizer=raw["tokenizer"],
        dims=raw["dims"],
        max_length=raw["max_length"],
        license=raw["license"],
        source=raw["source"],
        description=raw["description"],
        query_prefix=raw["query_prefix"],
        passage_prefix=raw["passage_prefix"],
    )


def _check_file_name(name: object) -> None:
    # a manifest is data read from disk: it must not point outside its own directory
    if not isinstance(name, str) or not name:
        raise ModelManifestError("manifest file names must be non-empty strings")
    path = PurePosixPath(name)
    if path.is_absolute() or "\\" in name or any(p in ("..", ".") for p in path.parts):
        raise ModelManifestError(f"manifest file name {name!r} leaves the model directory")


def write_manifest(model_dir: Path, manifest: ModelManifest) -> Path:
    """Write ``manifest.json`` into ``model_dir`` and return its path."""
    path = model_dir / MANIFEST_FILE
    path.write_text(manifest.to_json(), encoding="utf-8")
    return path


def load_manifest(model_dir: Path) -> ModelManifest:
    """Read and validate ``model_dir/manifest.json``."""
    path = model_dir / MANIFEST_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelManifestError(f"no {MANIFEST_FILE} in {model_dir}") from None
    except json.JSONDecodeError as exc:
        raise ModelManifestError(f"{path} is not valid JSON: {exc}") from exc
    return manifest_from_dict(raw)


def file_sha256(path: Path) -> str:
    """Lowercase hex sha256 of a file, read in chunks (model files are ~100 MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify_files(model_dir: Path, manifest: ModelManifest) -> None:
    """Raise ``ModelIntegrityError`` unless every listed file exists with its hash."""
    for name, expected in sorted(manifest.files.items()):
        path = model_dir / name
        if not path.is_file():
            raise ModelIntegrityError(
                f"model {manifest.name!r}: file {name!r} is missing from {model_dir}; "
                "rebuild with `stichtag models build`"
            )
        actual = file_sha256(path)
        if actual != expected:
            raise ModelIntegrityError(
                f"model {manifest.name!r}: file {name!r} has sha256 {actual}, the manifest "
                f"says {expected}; the file was altered or replaced - rebuild with "
                "`stichtag models build`"
            )


def model_hash(manifest: ModelManifest) -> str:
    """sha256 over the sorted file hashes (one per line): the model's identity in run records.

    Only the bytes count, not file names or descriptive fields, so relabelling a manifest
    does not make an identical model look different.
    """
    joined = "\n".join(sorted(manifest.files.values()))
    return hashlib.sha256(joined.encode("ascii")).hexdigest()
