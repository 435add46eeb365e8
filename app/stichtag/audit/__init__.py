"""Tamper evidence for the run log: checkpoint signing and the offline export verifier.

The pure parts (Merkle tree, canonical JSON, checkpoint text) live in ``stichtag.domain``;
this package adds the Ed25519 key handling and the verifier that reads an export.
"""
