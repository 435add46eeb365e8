"""GDPR erasure (Art. 17) in an append-only store: blank what a version says, keep what it is.

``erase`` removes a version's text, sentences' text, passages, vectors, lexical documents
and original files, and keeps its id (the content hash), the sentence hashes and offsets,
its assertions and every run record, so the Merkle log, its proofs and the replays stay
verifiable (docs/operations.md, "GDPR erasure"). One unit of work holds it all: the
erasure's record is appended to the tenant's run log, the erasure row refers to that
leaf, and the database's ``erase_version`` (migrations/0011_erasure.sql)
blanks the content only because that row exists; the outbox tells the lexical index to
drop the version's documents.

``reapply`` makes erasures survive a restore: the erasure records of the run log (the
database's own, or those of a log export taken after the backup) are applied again,
idempotently.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from stichtag.domain.errors import Gone, Invalid, NotFound
from stichtag.domain.records import Erasure, ErasureTarget
from stichtag.domain.sealing import is_erased_marker, record_versions
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.ports import Clock, DocumentStore, Transactions, UnitOfWork
from stichtag.services.access import Principal
from stichtag.services.runlog import RunLog

MAX_REASON = 2000
VERSION_ID = re.compile(r"^b3:[0-9a-f]{64}$")


@dataclass(frozen=True, kw_only=True)
class ErasureResult:
    """An erasure and what it touched; ``created`` is False when it had happened before."""

    erasure: Erasure
    created: bool
    documents: tuple[str, ...] = ()
    assertion_ids: tuple[int, ...] = ()
    blanked: dict[str, int] = field(default_factory=dict)


def erasure_record(erasure: Erasure) -> dict[str, Any]:
    """The erasure as the API, the CLI and a 410 answer show it (who, when, why; the
    content hash that stays)."""
    return {"version_id": erasure.version_id, "content_hash": erasure.version_id,
            "erased_at": format_time(erasure.erased_at), "erased_by": erasure.key_id,
            "reason": erasure.reason, "log_seq": erasure.seq, "run_id": str(erasure.run_id)}


def gone_or_missing(store: DocumentStore, principal: Principal, version_id: str,
                    what: str = "version") -> Exception:
    """The error for a version whose text cannot be read: Gone with its erasure record,
    else NotFound (unknown, foreign and above clearance stay indistinguishable)."""
    found = store.erasures(principal.tenant_id, [version_id], clearance=principal.clearance)
    if version_id in found:
        return Gone(found[version_id])
    return NotFound(what)


class ErasureService:
    """Erase versions and re-apply logged erasures, for one principal at a time."""

    def __init__(self, store: DocumentStore, runlog: RunLog, units: Transactions,
                 clock: Clock, *, forget: Callable[[UUID, str], None] | None = None,
                 on_write: Callable[[UUID], None] | None = None) -> None:
        self.store = store
        self.runlog = runlog
        self.units = units
        self.clock = clock
        self.forget = forget  # drops the version from in-process caches
        self.on_write = on_write  # wakes the lexical index (it follows the outbox)

    def erase(self, principal: Principal, version_id: str, *, reason: str) -> ErasureResult:
        """Erase a version (admin scope); idempotent: a second call returns the first
        erasure with ``created`` False and changes nothing."""
        principal.require("admin")
        reason = _reason(reason)
        if not VERSION_ID.match(version_id):
            raise NotFound("version")
        with self.units.unit(principal.tenant_id) as uow:
            target = uow.erasure.target(version_id, clearance=principal.clearance)
            if target is None:
                raise NotFound("version")
            result = None if target.erased else self._erase(uow, principal, target, reason)
        if result is None:
            return ErasureResult(erasure=self._existing(principal, version_id), created=False)
        self._after(principal, version_id)
        return result

    def erasure(self, principal: Principal, version_id: str) -> Erasure | None:
        """The erasure of a version the key may see, if it was erased."""
        return self.store.erasures(principal.tenant_id, [version_id],
                                   clearance=principal.clearance).get(version_id)

    def logged(self, principal: Principal) -> list[dict[str, Any]]:
        """The erasure records of the tenant's run log, oldest first (admin scope)."""
        principal.require("admin")
        with self.units.unit(principal.tenant_id) as uow:
            return uow.erasure.logged()

    def reapply(self, principal: Principal,
                records: Iterable[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Apply erasure records again (admin scope), idempotently: the run log's own
        (``records`` None) or those read from a log export taken after a backup.

        A version that is not erased yet (the database was restored from a dump older
        than its erasure) is erased now, with the recorded reason and a reference to the
        recorded erasure; an erased one is blanked again (nothing when nothing came
        back); a version the database does not hold is reported ``absent``.
        """
        principal.require("admin")
        todo = self.logged(principal) if records is None else list(records)
        out: list[dict[str, Any]] = []
        for record in todo:
            if record.get("kind") != "erasure" or not isinstance(record.get("version_id"), str):
                continue
            version_id = record["version_id"]
            with self.units.unit(principal.tenant_id) as uow:
                target = uow.erasure.target(version_id, clearance=principal.clearance)
                if target is None:
                    out.append({"version_id": version_id, "status": "absent"})
                    continue
                if target.erased:
                    blanked = uow.erasure.blank(version_id)
                    if any(blanked.values()):
                        uow.erasure.queue(target.assertion_ids)
                    out.append({"version_id": version_id, "blanked": blanked,
                                "status": "reblanked" if any(blanked.values()) else "erased"})
                    if any(blanked.values()):
                        self._after(principal, version_id)
                    continue
                reapplied = {k: record.get(k) for k in ("erased_at", "key_id")}
                result = self._erase(uow, principal, target, _reason(str(record.get("reason"))),
                                     reapplied=reapplied)
            self._after(principal, version_id)
            out.append({"version_id": version_id, "status": "reapplied",
                        "blanked": result.blanked, "log_seq": result.erasure.seq})
        return out

    # -- inside -------------------------------------------------------------------------

    def _erase(self, uow: UnitOfWork, principal: Principal, target: ErasureTarget,
               reason: str, *, reapplied: dict[str, Any] | None = None) -> ErasureResult:
        """Log leaf, erasure row, blanking and outbox rows, in the caller's unit of work."""
        run_id = uuid.uuid4()
        now = self.clock.now()
        record: dict[str, Any] = {
            "kind": "erasure", "run_id": str(run_id), "tenant": str(principal.tenant_id),
            "version_id": target.version_id,
            "content_hash": target.version_id, "documents": list(target.documents),
            "assertion_ids": list(target.assertion_ids), "reason": reason,
            "key_id": principal.key_id, "erased_at": format_time(now),
            "kept": ["version_id", "sentence_hashes", "offsets", "assertions", "run_records"]}
        if reapplied is not None:
            record["reapplies"] = reapplied
        seq, _ = self.runlog.append(uow, principal.tenant_id, run_id=run_id, kind="erasure",
                                    key_id=principal.key_id, record=record)
        erasure = Erasure(version_id=target.version_id, run_id=run_id, seq=seq,
                          key_id=principal.key_id, reason=reason,
                          erased_at=parse_time(record["erased_at"], field="erased_at"))
        uow.erasure.record(erasure)
        blanked = uow.erasure.blank(target.version_id)
        uow.erasure.queue(target.assertion_ids)
        return ErasureResult(erasure=erasure, created=True, documents=target.documents,
                             assertion_ids=target.assertion_ids, blanked=blanked)

    def _existing(self, principal: Principal, version_id: str) -> Erasure:
        found = self.erasure(principal, version_id)
        if found is None:  # erased, but not visible to this key: as if unknown
            raise NotFound("version")
        return found

    def _after(self, principal: Principal, version_id: str) -> None:
        if self.forget is not None:
            self.forget(principal.tenant_id, version_id)
        if self.on_write is not None:
            self.on_write(principal.tenant_id)


def _reason(reason: str) -> str:
    text = reason.strip()
    if not text:
        raise Invalid("reason", "an erasure needs a reason (it is kept in the run log)")
    if len(text) > MAX_REASON:
        raise Invalid("reason", f"at most {MAX_REASON} characters")
    return text


def version_ids_of(record: dict[str, Any]) -> Sequence[str]:
    """Every version a run record relied on: candidates, evidence, citations, tool
    results, a check's quotes, and the sources of its sealed texts."""
    return record_versions(record)


REDACTED = "[erased]"


def redact(record: dict[str, Any], erased: Mapping[str, Erasure]) -> dict[str, Any]:
    """A copy of a run record as a reader sees it after erasures (``GET /v1/runs/{id}``).

    A sealed text whose text and salt were deleted (docs/audit.md, "Sealed texts") shows
    its commitment and names the erasures of its versions. A record from before sealing
    holds the text inside its leaf: its sentences citing erased versions, its draft
    sentences and its LLM exchanges are shown as ``[erased]`` here, and the text stays
    in the stored record and the log export (docs/operations.md, "GDPR erasure")."""
    out: dict[str, Any] = _name_erasures(copy.deepcopy(record), erased)
    eids = {e.get("eid") for e in out.get("evidence", []) if e.get("version_id") in erased}
    texts: set[str] = set()
    for s in (out.get("result") or {}).get("sentences") or []:
        if isinstance(s.get("text"), str) and any(
                c.get("version_id") in erased for c in s.get("citations", [])):
            texts.add(s["text"])
            s["text"] = REDACTED
    generator = out.get("generator") or {}
    for s in (generator.get("draft") or {}).get("sentences") or []:
        if isinstance(s.get("text"), str) and eids.intersection(s.get("evidence", [])):
            texts.add(s["text"])
            s["text"] = REDACTED
    if eids and any(isinstance((x.get("request") or {}).get("body"), str)
                    for x in generator.get("exchanges") or []):
        generator["exchanges"] = [{"redacted": REDACTED} for _ in generator["exchanges"]]
    texts.discard("")
    return _replace(out, sorted(texts, key=len, reverse=True))  # type: ignore[no-any-return]


def _name_erasures(value: Any, erased: Mapping[str, Erasure]) -> Any:
    """Each erased sealed text, its ``erased`` flag replaced by the erasures that removed
    it (an erasure the reader may not see is left out, the flag stays true)."""
    if is_erased_marker(value):
        named = [erasure_record(erased[v]) for v in value.get("versions") or [] if v in erased]
        return {**value, "erased": named or True}
    if isinstance(value, dict):
        return {k: _name_erasures(v, erased) for k, v in value.items()}
    if isinstance(value, list):
        return [_name_erasures(v, erased) for v in value]
    return value


def _replace(value: Any, texts: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: _replace(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, texts) for v in value]
    if isinstance(value, str) and texts:
        for text in texts:
            value = value.replace(text, REDACTED)
    return value
