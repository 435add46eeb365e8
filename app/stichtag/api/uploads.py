"""The two forms of ``POST /v1/documents/{key}/versions`` become one IngestRequest.

* **JSON**: an ``IngestBody`` (``text``, or ``text_base64`` with its ``media_type``).
* **Raw upload**: the file itself is the request body with its own ``Content-Type``
  (``application/pdf``, ``text/html; charset=…``, DOCX, ``text/markdown``,
  ``text/plain``); the other fields are query parameters, the PDF password a header.
  ``application/octet-stream`` — and ``application/x-www-form-urlencoded``, which is
  what ``curl --data-binary @report.pdf`` sends — mean "look at the bytes".

A body is JSON when its Content-Type says so, or when it has none (or curl's
form-urlencoded default) and starts with ``{``: a JSON request that forgot its header
must not be stored as a text document. Query fields with a JSON body are refused (400),
so no field can arrive twice with two values.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from litestar.exceptions import ValidationException

from stichtag.api import convert
from stichtag.api.deps import optional_time
from stichtag.api.schemas import IngestBody
from stichtag.domain.extraction import DOCX, HTML, PDF, base_media_type
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest

UPLOAD_TYPES = (PDF, HTML, DOCX, "text/markdown", "text/plain", "application/octet-stream")
"""Raw-upload Content-Types the OpenAPI document lists (others are refused by name)."""
PASSWORD_HEADER = "Stichtag-Document-Password"  # noqa: S105 - a header's name, not a secret
_SNIFF = frozenset({"", "application/octet-stream", "application/x-www-form-urlencoded"})


@dataclass(frozen=True, kw_only=True, slots=True)
class UploadFields:
    """The ingest fields of a raw upload, from its query parameters and headers."""

    valid_from: str | None = None
    valid_to: str | None = None
    title: str | None = None
    doc_class: str | None = None
    confidentiality: str | None = None
    tx_time: str | None = None
    source: str | None = None
    password: str | None = None

    def given(self) -> list[str]:
        """Names of the query fields present (the password header excepted)."""
        return [name for name in ("valid_from", "valid_to", "title", "doc_class",
                                  "confidentiality", "tx_time", "source")
                if getattr(self, name) is not None]


def is_json(body: bytes, content_type: str | None) -> bool:
    """Whether the request is the JSON form (see the module docstring)."""
    kind = base_media_type(content_type or "")
    if kind == "application/json" or kind.endswith("+json"):
        return True
    return kind in ("", "application/x-www-form-urlencoded") and body.lstrip()[:1] == b"{"


def ingest_request(who: Principal, body: bytes, content_type: str | None,
                   fields: UploadFields) -> IngestRequest:
    """The use case's request from either form."""
    if is_json(body, content_type):
        extra = fields.given()
        if extra:
            raise ValidationException(
                f"{extra[0]}: give the fields in the JSON body, not as query parameters",
                extra=[{"key": name, "message": "not allowed with a JSON body (query "
                        "parameters are for raw uploads)"} for name in extra])
        return _from_json(who, _decode(body), password_header=fields.password)
    kind = base_media_type(content_type or "")
    return IngestRequest(
        text=body, media_type=None if kind in _SNIFF else (content_type or "").strip(),
        valid_from=optional_time(who, fields.valid_from, field="valid_from"),
        valid_to=optional_time(who, fields.valid_to, field="valid_to"),
        title=fields.title, doc_class=fields.doc_class or "document",
        confidentiality=fields.confidentiality or "internal",
        tx_time=optional_time(who, fields.tx_time, field="tx_time"), source=fields.source,
        text_field="body", password=fields.password)


def _decode(body: bytes) -> IngestBody:
    try:
        return msgspec.json.decode(body, type=IngestBody)
    except msgspec.ValidationError as exc:
        # The shape Litestar gives its own body errors: app/stichtag/api/errors.py names the field.
        raise ValidationException(str(exc), extra=[
            {"key": "data", "message": str(exc), "source": "body"}]) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ValidationException("Malformed JSON", extra=[
            {"key": "body", "message": f"not a JSON object: {str(exc)[:120]}"}]) from None


def _from_json(who: Principal, data: IngestBody, *, password_header: str | None) -> IngestRequest:
    return IngestRequest(
        text=convert.body_text(data.text, data.text_base64), media_type=data.media_type,
        valid_from=optional_time(who, data.valid_from, field="valid_from"),
        valid_to=optional_time(who, data.valid_to, field="valid_to"),
        title=data.title, doc_class=data.doc_class, confidentiality=data.confidentiality,
        tx_time=optional_time(who, data.tx_time, field="tx_time"), source=data.source,
        text_field="text" if data.text is not None else "text_base64",
        password=data.password if data.password is not None else password_header)

