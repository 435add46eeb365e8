"""Decoding HTML bytes the way a browser would, minus the guessing.

Order (after the WHATWG encoding sniffing algorithm, without its statistical step):
a byte-order mark; the ``charset`` parameter of the declared media type; a
``<meta charset>`` or ``<meta http-equiv="Content-Type" content="...charset=...">`` in
the first 4 KiB; then strict UTF-8; then windows-1252, the web's legacy default, which
decodes every byte. Labels the web treats as windows-1252 (latin1, iso-8859-1, ascii)
are read as windows-1252, as browsers do.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_html"]

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
_META = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)
_PARAM = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
_WINDOWS_1252 = frozenset({"latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1", "ascii",
                           "us-ascii", "iso_8859-1", "cp819", "ibm819", "windows-1252",
                           "cp1252", "x-cp1252"})
_PRESCAN = 4096


def _codec(label: str) -> str | None:
    """The Python codec for a charset label, or None if unknown."""
    label = label.strip().lower()
    if label in _WINDOWS_1252:
        return "cp1252"
    if label in ("utf-16", "utf-16le", "utf-16be"):
        return None  # a meta tag cannot honestly declare UTF-16: the bytes would not read
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def decode_html(data: bytes, media_type: str | None) -> tuple[str, str, str]:
    """(text, codec used, where it came from: bom/declared/meta/utf-8/fallback)."""
    for bom, bom_codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(bom_codec, errors="replace"), bom_codec, "bom"
    candidates: list[tuple[str | None, str]] = []
    if media_type:
        m = _PARAM.search(media_type)
        if m:
            candidates.append((_codec(m.group(1)), "declared"))
    m2 = _META.search(data[:_PRESCAN])
    if m2:
        candidates.append((_codec(m2.group(1).decode("ascii", "replace")), "meta"))
    for found, source in candidates:
        if found is not None:
            return data.decode(found, errors="replace"), found, source
    try:
        return data.decode("utf-8"), "utf-8", "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "cp1252", "fallback"
