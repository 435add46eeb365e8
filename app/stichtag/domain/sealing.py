"""Sealed texts: version text a run record quotes, kept outside the hashed leaf
(docs/audit.md, "Sealed texts").

A run record that quotes a version (an answer's sentences and draft, an LLM's exchanges,
a check run's answer and quotes) is logged with each such string replaced by a
placeholder ``{"sealed": hex(C), "versions": [...]}`` where

    C = SHA-256(salt || UTF-8(text))        salt: 32 random bytes, one per text

and ``versions`` names the versions the text came from. The leaf hashes the record with
its placeholders; the text and its salt live in an erasable table, so erasing a version
deletes them and every leaf, proof and checkpoint stays as it was. The salt keeps a
short or guessable text (a number, a name) from being confirmed by hashing candidates
against C once the text is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

SALT_BYTES = 32
SEALED = "sealed"
VERSIONS = "versions"
ERASED = "erased"


@dataclass(frozen=True, kw_only=True, slots=True)
class SealedText:
    """One text taken out of a record: its commitment, salt, text and source versions."""

    commitment: bytes
    salt: bytes
    text: str
    versions: tuple[str, ...]


def commit(salt: bytes, text: str) -> bytes:
    """SHA-256(salt || UTF-8(text)); the salt must be 32 bytes."""
    if len(salt) != SALT_BYTES:
        raise ValueError(f"a salt has {SALT_BYTES} bytes, not {len(salt)}")
    return hashlib.sha256(salt + text.encode("utf-8")).digest()


def opens(commitment: bytes, salt: bytes, text: str) -> bool:
    """Whether ``salt`` and ``text`` open ``commitment`` (constant-time compare)."""
    try:
        return hmac.compare_digest(commit(salt, text), commitment)
    except ValueError:
        return False


def is_placeholder(value: Any) -> bool:
    """A sealed text as the logged record holds it."""
    return isinstance(value, dict) and set(value) == {SEALED, VERSIONS}


def is_erased_marker(value: Any) -> bool:
    """A sealed text whose text and salt are gone (as a reader sees it)."""
    return isinstance(value, dict) and SEALED in value and ERASED in value


def _strs(values: Any) -> list[str]:
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def record_versions(record: Mapping[str, Any]) -> list[str]:
    """Every version a record names: candidates, evidence, citations, tools, a check's
    quotes and references, and the sources of sealed texts."""
    ids: list[Any] = [c.get("version_id") for c in record.get("candidates") or []]
    ids += [e.get("version_id") for e in record.get("evidence") or []]
    for s in (record.get("result") or {}).get("sentences") or []:
        ids += [c.get("version_id") for c in s.get("citations") or []]
    for t in (record.get("generator") or {}).get("tools") or []:
        ids += [t.get("version_id"), *(e.get("version_id") for e in t.get("evidence") or [])]
    request = record.get("request")
    if isinstance(request, dict):
        ids += [c.get("version_id") for c in request.get("citations") or []
                if isinstance(c, dict)]
    ids += [(r.get("citation") or {}).get("version_id") for r in record.get("references") or []]
    ids += [v for m in _markers(record) for v in _strs(m.get(VERSIONS))]
    return [i for i in dict.fromkeys(ids) if isinstance(i, str)]


def _markers(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if SEALED in value and VERSIONS in value:
            yield value
            return
        for v in value.values():
            yield from _markers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _markers(v)


def _slots(record: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, list[str]]]:
    """(container, key, source versions) of every version text the record holds."""
    every = record_versions(record)
    kind = record.get("kind")
    if kind not in ("answer", "check"):
        return
    for s in (record.get("result") or {}).get("sentences") or []:
        cited = [c.get("version_id") for c in s.get("citations") or []]
        yield s, "text", [v for v in dict.fromkeys(cited) if isinstance(v, str)] or every
    if kind == "check":  # the answer and its quotes came in whole: any version may be in it
        request = record.get("request") or {}
        yield request, "answer", every
        for c in request.get("citations") or []:
            yield c, "quote", every
        return
    generator = record.get("generator") or {}
    eids = {e.get("eid"): e.get("version_id") for e in record.get("evidence") or []}
    for t in generator.get("tools") or []:
        eids.update({e.get("eid"): e.get("version_id") for e in t.get("evidence") or []})
    for s in (generator.get("draft") or {}).get("sentences") or []:
        used = [eids.get(e) for e in s.get("evidence") or []]
        yield s, "text", [v for v in dict.fromkeys(used) if isinstance(v, str)] or every
    for x in generator.get("exchanges") or []:  # they carried the evidence to the model
        yield x.get("request") or {}, "body", every
        yield x.get("response") or {}, "body", every


def seal(record: dict[str, Any], *, salt: Callable[[], bytes] = lambda: secrets.token_bytes(
        SALT_BYTES)) -> tuple[dict[str, Any], list[SealedText]]:
    """Replace the version texts of ``record`` (a fresh JSON value the caller owns; it is
    changed in place and returned) by placeholders; the texts taken out."""
    texts: list[SealedText] = []
    for where, key, versions in list(_slots(record)):
        text = where.get(key)
        if not isinstance(text, str) or not text:
            continue
        s = salt()
        sealed = SealedText(commitment=commit(s, text), salt=s, text=text,
                            versions=tuple(sorted(versions)))
        where[key] = {SEALED: sealed.commitment.hex(), VERSIONS: list(sealed.versions)}
        texts.append(sealed)
    return record, texts


def inline_texts(record: dict[str, Any]) -> int:
    """How many version texts a record holds inside its leaf (written before sealing)."""
    return sum(1 for where, key, _ in _slots(record)
               if isinstance(where.get(key), str) and where.get(key))


def unseal(value: Any, openings: Mapping[str, Mapping[str, str]]) -> Any:
    """A copy of ``value`` with each placeholder replaced by its text from ``openings``
    (commitment hex -> {"salt": hex, "text": ...}); a placeholder without an opening
    becomes the erased marker ``{"sealed", "versions", "erased": true}``."""
    if isinstance(value, dict):
        if is_placeholder(value):
            found = openings.get(str(value[SEALED]))
            if found is not None:
                return found["text"]
            return {**value, ERASED: True}
        return {k: unseal(v, openings) for k, v in value.items()}
    if isinstance(value, list):
        return [unseal(v, openings) for v in value]
    return value


def check_openings(record: Mapping[str, Any], openings: Mapping[str, Any]) -> list[str]:
    """Problems with ``openings`` for ``record``: an opening for no placeholder of the
    record, a malformed one, or one whose salt and text do not give its commitment."""
    placeholders = {str(m[SEALED]) for m in _markers(record)}
    problems = []
    for key, found in openings.items():
        if key not in placeholders:
            problems.append(f"text {key[:16]}… opens no sealed text of the record")
            continue
        try:
            ok = isinstance(found, Mapping) and isinstance(found.get("text"), str) and opens(
                bytes.fromhex(key), bytes.fromhex(str(found.get("salt"))), str(found["text"]))
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"text {key[:16]}… does not open its commitment")
    return problems


def placeholders(record: Mapping[str, Any]) -> list[str]:
    """The commitments (hex) of the sealed texts a logged record holds."""
    return [str(m[SEALED]) for m in _markers(record)]
