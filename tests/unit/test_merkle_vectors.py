"""The published transparency-dev RFC 6962 vectors: valid proofs verify, mutated ones fail.

The vectors live outside the repository, in ``../shared/vectors/rfc6962/`` next to the
checkout (see its README.md: one JSON case per file, base64 hashes, ``wantErr``).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from stichtag.domain.merkle import verify_consistency, verify_inclusion

VECTORS = Path(__file__).resolve().parents[2].parent / "shared" / "vectors" / "rfc6962"
EXPECTED_CASES = {"inclusion": 98, "consistency": 98}


def _cases() -> list[Path]:
    if not VECTORS.is_dir():
        return []
    return sorted(p for kind in EXPECTED_CASES for p in (VECTORS / kind).rglob("*.json"))


CASES = _cases()


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _verifies(kind: str, case: dict[str, Any]) -> bool:
    # A missing proof is JSON null in the vectors (Go's nil slice): the empty proof.
    proof = [_b64(node) for node in case["proof"] or []]
    if kind == "inclusion":
        return verify_inclusion(
            _b64(case["leafHash"]), case["leafIdx"], case["treeSize"], proof, _b64(case["root"])
        )
    return verify_consistency(
        case["size1"], case["size2"], _b64(case["root1"]), _b64(case["root2"]), proof
    )


def test_all_vectors_are_present() -> None:
    if not CASES:
        pytest.skip(f"RFC 6962 vectors not found at {VECTORS}")
    counts = {
        kind: sum(1 for p in CASES if p.relative_to(VECTORS).parts[0] == kind)
        for kind in EXPECTED_CASES
    }
    assert counts == EXPECTED_CASES
    wanted = [json.loads(p.read_text())["wantErr"] for p in CASES]
    # Both outcomes occur, so neither "always True" nor "always False" could pass.
    assert wanted.count(False) >= 10
    assert wanted.count(True) >= 100


@pytest.mark.parametrize(
    "path",
    CASES or [None],
    ids=[str(p.relative_to(VECTORS)) for p in CASES] or ["vectors-missing"],
)
def test_vector(path: Path | None) -> None:
    if path is None:
        pytest.skip(f"RFC 6962 vectors not found at {VECTORS}")
    case = json.loads(path.read_text())
    kind = path.relative_to(VECTORS).parts[0]
    assert _verifies(kind, case) is not case["wantErr"], case["desc"]
