"""Bodies of the run-log routes (``stichtag.api.log``): a module apart from the
controller, so that the client imports them without Litestar."""

from __future__ import annotations

import msgspec


class CheckpointOut(msgspec.Struct):
    """A signed checkpoint (C2SP signed note) and the key that verifies it."""

    checkpoint: str
    size: int
    root: str
    public_key: str


class InclusionOut(msgspec.Struct):
    """RFC 9162 inclusion proof of leaf ``seq`` in the tree of ``size`` leaves."""

    seq: int
    size: int
    leaf_hash: str
    proof: list[str]
    checkpoint: str


class ConsistencyOut(msgspec.Struct):
    """RFC 9162 consistency proof between two tree sizes."""

    old: int
    new: int
    proof: list[str]
    checkpoint: str
