"""Store rows to public Structs."""

from __future__ import annotations

import base64
import binascii

from app.api.schemas import Assertion, KeyInfo, Sentence
from app.domain.bitemporal import CONFIDENTIALITY
from app.domain.errors import Invalid
from app.domain.timeutil import format_time, parse_time
from app.store.rows import AssertionRow, KeyRow, SentenceRow


def iso(value: object) -> str:
    """Format a non-null time."""
    out = format_time(value)  # type: ignore[arg-type]
    assert out is not None
    return out


def assertion(row: AssertionRow) -> Assertion:
    """A public assertion."""
    return Assertion(
        assertion_id=row.assertion_id, document=row.document, version_id=row.version_id,
        valid_from=iso(row.valid_from), valid_to=format_time(row.valid_to),
        tx_from=iso(row.tx_from), tx_to=format_time(row.tx_to), title=row.title,
        doc_class=row.doc_class, confidentiality=CONFIDENTIALITY[row.confidentiality],
        provenance=row.provenance, ended=row.ended, ended_reason=row.ended_reason)


def sentence(row: SentenceRow) -> Sentence:
    """A public sentence."""
    return Sentence(start=row.start, end=row.end, utf16_start=row.utf16_start,
                    utf16_end=row.utf16_end, hash=row.hash.hex(),
                    heading_path=list(row.heading_path))


def key_info(row: KeyRow) -> KeyInfo:
    """A key without its secret hash."""
    return KeyInfo(key_id=row.key_id, scopes=list(row.scopes),
                   clearance=CONFIDENTIALITY[row.clearance], label=row.label,
                   created_at=iso(row.created_at), expires_at=format_time(row.expires_at),
                   revoked_at=format_time(row.revoked_at), rotated_from=row.rotated_from)


def optional_time(value: str | None, *, field: str, tz: str):  # type: ignore[no-untyped-def]
    """Parse an optional time field."""
    return None if value is None else parse_time(value, field=field, tz=tz)


def body_text(text: str | None, text_base64: str | None) -> str | bytes:
    """Exactly one of ``text`` or ``text_base64`` (raw bytes, checked as UTF-8 later)."""
    if (text is None) == (text_base64 is None):
        raise Invalid("text", "give exactly one of text or text_base64")
    if text is not None:
        return text
    assert text_base64 is not None
    try:
        return base64.b64decode(text_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid("text_base64", "not valid base64") from exc
