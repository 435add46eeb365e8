"""Two answers to one question at two as-of pairs, and why their cited facts differ.

The diff is per document: what each answer cites of it (version and spans). A document
cited on both sides with the same version and spans is ``unchanged``; cited on both
with another version or other spans ``changed``; cited on one side only ``added`` or
``removed``.

The cause comes from the bitemporal history of the document, never from the text. With
``a`` the first pair and ``b`` the second, three versions in force are read with the
one visibility rule (``stichtag.domain.asof.visible``):

- ``then``  at ``(a.valid_at, a.known_at)``: what the first answer could cite;
- ``cross`` at ``(b.valid_at, a.known_at)``: the second valid date, as known then;
- ``now``   at ``(b.valid_at, b.known_at)``: what the second answer could cite.

``then != cross`` means the law changed between the two valid dates (valid time);
``cross != now`` means what was known about the second valid date changed between the
two known dates (transaction time: a correction, a retraction, a backdated or a later
version), and the assertions that made the difference are named. Both, or neither
(``none``: the same version in force, the answers differ by what retrieval ranked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from stichtag.domain.asof import AsOf, visible
from stichtag.domain.bitemporal import Interval
from stichtag.domain.timeutil import format_time

Kind = Literal["unchanged", "changed", "added", "removed"]
Cause = Literal["valid_time", "transaction_time", "both", "none"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Held:
    """One assertion of a document as the comparison reads it."""

    assertion_id: int
    version_id: str
    valid: Interval
    tx: Interval
    ended: str | None
    """How its transaction time ended: superseded, retracted, corrected; None if open."""
    imported: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Cited:
    """What one answer cites of one document: its version and the cited spans."""

    version_id: str
    spans: frozenset[tuple[int, int]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One document's change between the two answers, with its cause."""

    document: str
    kind: Kind
    cause: Cause
    from_version: str | None
    to_version: str | None
    law: dict[str, Any] | None = None
    """For a valid-time cause: the version in force at each valid date (as known at the
    first known_at), each with the start and end of its validity."""
    knowledge: tuple[dict[str, Any], ...] = ()
    """For a transaction-time cause: the assertions that ended or appeared between the
    two known dates for the second valid date (id, version, how and when)."""
    explanation: str = ""
    diffable: bool = field(default=False)
    """Both sides cite a version, and they differ: a sentence diff applies."""

    def record(self) -> dict[str, Any]:
        """The change as the compare run records it (ids and times, never text)."""
        return {"document": self.document, "kind": self.kind, "cause": self.cause,
                "from_version": self.from_version, "to_version": self.to_version,
                "law": self.law, "knowledge": list(self.knowledge)}


def in_force(rows: Sequence[Held], at: AsOf) -> Held | None:
    """The assertion visible at ``at`` (at most one per document, §3.3)."""
    return next((r for r in rows if visible(tx=r.tx, valid=r.valid, at=at)), None)


def _version(row: Held | None) -> str | None:
    return row.version_id if row is not None else None


def _t(value: datetime | None) -> str | None:
    return format_time(value)


def _validity(row: Held | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"assertion_id": row.assertion_id, "version_id": row.version_id,
            "valid_from": _t(row.valid.start), "valid_to": _t(row.valid.end)}


def _knowledge(cross: Held | None, now: Held | None, b: AsOf) -> tuple[dict[str, Any], ...]:
    """The assertions that made the second valid date read differently: the one known
    then that ended (how, when) and the one known now that appeared (when; backdated
    when its validity starts before its transaction time)."""
    out: list[dict[str, Any]] = []
    if cross is not None and not cross.tx.contains(b.known_at):
        out.append({"assertion_id": cross.assertion_id, "version_id": cross.version_id,
                    "change": cross.ended or "ended", "at": _t(cross.tx.end),
                    "valid_from": _t(cross.valid.start), "valid_to": _t(cross.valid.end)})
    if now is not None and (cross is None or now.assertion_id != cross.assertion_id):
        backdated = now.valid.start < now.tx.start
        out.append({"assertion_id": now.assertion_id, "version_id": now.version_id,
                    "change": "imported" if now.imported else (
                        "backdated" if backdated else "asserted"),
                    "at": _t(now.tx.start), "valid_from": _t(now.valid.start),
                    "valid_to": _t(now.valid.end)})
    return tuple(out)


def cause_of(rows: Sequence[Held], a: AsOf, b: AsOf) -> tuple[Cause, dict[str, Any] | None,
                                                               tuple[dict[str, Any], ...]]:
    """The cause of a difference in one document between ``a`` and ``b``, the law
    change (or None) and the assertions of the knowledge change (or none)."""
    then = in_force(rows, a)
    cross = in_force(rows, AsOf(valid_at=b.valid_at, known_at=a.known_at))
    now = in_force(rows, b)
    law_changed = _version(then) != _version(cross)
    knew_other = _version(cross) != _version(now)
    law = {"from": _validity(then), "to": _validity(cross)} if law_changed else None
    knowledge = _knowledge(cross, now, b) if knew_other else ()
    cause: Cause = ("both" if law_changed and knew_other else "valid_time" if law_changed
                    else "transaction_time" if knew_other else "none")
    return cause, law, knowledge


def _short(version_id: str | None) -> str:
    return "nothing" if version_id is None else f"{version_id[:15]}…"


def explain(document: str, cause: Cause, law: Mapping[str, Any] | None,
            knowledge: Sequence[Mapping[str, Any]]) -> str:
    """One plain sentence per cause, from ids and dates only (never document text)."""
    parts: list[str] = []
    if law is not None:
        old, new = law["from"], law["to"]
        if new is None:
            parts.append(f"the law changed: {document} is not in force at the second "
                         f"valid date (version {_short(old and old['version_id'])} was in "
                         f"force until {old and old['valid_to']})")
        else:
            parts.append(f"the law changed: version {_short(new['version_id'])} of "
                         f"{document} is in force since {new['valid_from']}"
                         + (f", replacing {_short(old['version_id'])}" if old else ""))
    for k in knowledge:
        what = k["change"]
        if what in ("retracted", "corrected", "superseded", "ended"):
            parts.append(f"the knowledge changed: assertion {k['assertion_id']} "
                         f"({_short(k['version_id'])}) of {document} was {what} on {k['at']}")
        else:
            parts.append(f"the knowledge changed: assertion {k['assertion_id']} "
                         f"({_short(k['version_id'])}) of {document} was {what} on "
                         f"{k['at']}, valid from {k['valid_from']}")
    if not parts:
        return (f"{document}: the same version is in force at both pairs; the answers "
                "cite it differently")
    return f"{document}: " + "; ".join(parts)


def compare(cited_from: Mapping[str, Cited], cited_to: Mapping[str, Cited],
            history: Mapping[str, Sequence[Held]], a: AsOf, b: AsOf) -> list[Change]:
    """The per-document diff of two answers' cited facts, in document order."""
    out: list[Change] = []
    for document in sorted(set(cited_from) | set(cited_to)):
        old, new = cited_from.get(document), cited_to.get(document)
        kind: Kind = ("added" if old is None else "removed" if new is None
                      else "unchanged" if old == new else "changed")
        if kind == "unchanged":
            out.append(Change(document=document, kind=kind, cause="none",
                              from_version=old.version_id if old else None,
                              to_version=new.version_id if new else None))
            continue
        cause, law, knowledge = cause_of(history.get(document, ()), a, b)
        out.append(Change(
            document=document, kind=kind, cause=cause,
            from_version=old.version_id if old else None,
            to_version=new.version_id if new else None, law=law, knowledge=knowledge,
            explanation=explain(document, cause, law, knowledge),
            diffable=bool(old and new and old.version_id != new.version_id)))
    return out


def summary(from_status: str, to_status: str, reason: str | None,
            changes: Sequence[Change]) -> str:
    """One line over the whole comparison; a refusal on one side says why."""
    refused = from_status != "abstained" and to_status == "abstained"
    began = from_status == "abstained" and to_status != "abstained"
    causes = [c.explanation for c in changes if c.kind != "unchanged" and c.explanation]
    tail = ("; ".join(causes)) if causes else "no cited fact changed in the history"
    if refused:
        return f"answered then, abstained now ({reason}): {tail}"
    if began:
        return f"abstained then, answered now: {tail}"
    moved = sum(1 for c in changes if c.kind != "unchanged")
    if not moved:
        return "the cited facts are the same at both pairs"
    return f"{moved} cited document(s) differ: {tail}"
