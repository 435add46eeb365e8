"""RFC 8785 JSON Canonicalization Scheme (JCS).

Run records are hashed into the Merkle log as their canonical JSON, so any tool that
implements RFC 8785 recomputes the same leaf hashes from the same record. The rules:

* objects: members sorted by their names compared as UTF-16 code unit sequences;
* strings: only ``"``, ``\\`` and U+0000..U+001F are escaped (``\\b \\f \\n \\r \\t`` by their
  short forms, the rest as ``\\u00xx`` in lowercase hex); everything else is literal UTF-8;
* numbers: the ECMAScript Number-to-String form of the IEEE 754 double;
* no whitespace anywhere.

Values outside I-JSON (RFC 7493), which RFC 8785 builds on, are refused with
``CanonicalJSONError``: NaN and infinities, integers beyond ±(2**53 - 1) (they would
not survive a round trip through a double), lone surrogates, non-string keys.

``parse_json`` reads JSON text with the same number model, so that
``canonicalize(parse_json(canonicalize(v)))`` gives back the same bytes.
"""

from __future__ import annotations

import json
import math
import re

MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer that every IEEE 754 double consumer reads back exactly."""


class CanonicalJSONError(ValueError):
    """The value cannot be expressed in RFC 8785 canonical JSON."""


_ESCAPES: dict[int, str] = {c: f"\\u{c:04x}" for c in range(0x20)}
_ESCAPES.update(
    {
        ord("\b"): "\\b",
        ord("\f"): "\\f",
        ord("\n"): "\\n",
        ord("\r"): "\\r",
        ord("\t"): "\\t",
        ord('"'): '\\"',
        ord("\\"): "\\\\",
    }
)


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def _string(s: str) -> str:
    # Most strings need no escape; a C-speed search avoids the slower translate.
    if _NEEDS_ESCAPE.search(s) is None:
        return '"' + s + '"'
    return '"' + s.translate(_ESCAPES) + '"'


def format_number(x: float) -> str:
    """Serialize a finite double the way ECMAScript's Number::toString does (RFC 8785 §3.2.2.3).

    ``repr`` already yields the shortest digit string that round-trips, choosing the one
    closest to the exact value as ECMAScript requires; only its layout differs.
    """
    if not math.isfinite(x):
        raise CanonicalJSONError(f"{x!r} is not allowed in JSON (RFC 8785 §3.2.2.3)")
    if x == 0:
        return "0"  # covers -0.0, which ECMAScript also prints as "0"
    text = float.__repr__(x)
    if "e" not in text:
        # Python prints 1e-4 <= |x| < 1e16 positionally with the same shortest digits as
        # ECMAScript (which does so for 1e-7 < |x| < 1e21); only "1.0" differs from "1".
        return text[:-2] if text.endswith(".0") else text
    if x < 0:
        return "-" + format_number(-x)
    mantissa, _, exp = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    significant = digits.lstrip("0")
    # n: the decimal point position, so that value = 0.<significant> * 10**n.
    n = len(int_part) + (int(exp) if exp else 0) - (len(digits) - len(significant))
    return _layout(significant.rstrip("0"), n)


def _layout(s: str, n: int) -> str:
    """ECMAScript's layout of the digits ``s`` with the value ``0.s * 10**n``."""
    k = len(s)
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = s if k == 1 else s[0] + "." + s[1:]
    return f"{head}e{sign}{abs(e)}"


def _utf16_key(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly like the code unit sequences RFC 8785
    # §3.2.3 sorts by; "surrogatepass" defers lone surrogates to the final UTF-8 check.
    return key.encode("utf-16-be", "surrogatepass")


def _emit(obj: object, out: list[str]) -> None:
    # The common JSON types first; bool (an int subclass) and the rest go below.
    if isinstance(obj, str):
        out.append(_string(obj))
    elif isinstance(obj, dict):
        _emit_object(obj, out)
    elif isinstance(obj, float):
        out.append(format_number(obj))
    elif isinstance(obj, list | tuple):
        _emit_array(obj, out)
    else:
        _emit_other(obj, out)


def _emit_array(items: list[object] | tuple[object, ...], out: list[str]) -> None:
    sep = "["
    for value in items:
        out.append(sep)
        _emit(value, out)
        sep = ","
    out.append("[]" if sep == "[" else "]")


def _emit_other(obj: object, out: list[str]) -> None:
    # bool before int: True is an int in Python but a literal in JSON.
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        if not -MAX_SAFE_INTEGER <= obj <= MAX_SAFE_INTEGER:
            raise CanonicalJSONError(
                f"integer {obj} is outside ±(2**53 - 1) and would lose precision as a double"
            )
        out.append(int.__repr__(obj))  # int.__repr__: IntEnum members print their names
    else:
        raise CanonicalJSONError(f"{type(obj).__name__} is not a JSON value")


def _emit_object(obj: dict[object, object], out: list[str]) -> None:
    keys: list[str] = []
    ascii_only = True
    for key in obj:
        if not isinstance(key, str):
            raise CanonicalJSONError(f"object keys must be strings, got {type(key).__name__}")
        keys.append(key)
        ascii_only = ascii_only and key.isascii()
    # For ASCII (indeed for any BMP text below U+E000) code point order is UTF-16 order;
    # str.isascii is O(1), so the common case skips encoding every key.
    keys.sort(key=None if ascii_only else _utf16_key)
    sep = "{"
    for key in keys:
        out.append(sep)
        out.append(_string(key))
        out.append(":")
        _emit(obj[key], out)
        sep = ","
    out.append("{}" if sep == "{" else "}")


def canonicalize(obj: object) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON value.

    Accepts dict (str keys), list, tuple, str, int, float, bool and None, nested freely.
    Raises ``CanonicalJSONError`` for anything that has no canonical form.
    """
    out: list[str] = []
    _emit(obj, out)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalJSONError(
            "string contains a lone surrogate (U+D800..U+DFFF), which is not valid Unicode"
        ) from exc


def _reject_constant(name: str) -> object:
    raise CanonicalJSONError(f"{name} is not valid JSON")


def _number_from_integer_text(text: str) -> int | float:
    # JSON numbers are doubles (I-JSON). A canonical double such as 1e16 is written
    # "10000000000000000"; beyond 2**53 only the double reading is faithful.
    value = int(text)
    return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else float(text)


def _unique_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # Duplicate names are ambiguous (parsers disagree on which one wins): refuse them.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise CanonicalJSONError(f"duplicate member name {key!r}")
            seen.add(key)
    return obj


def parse_json(text: str | bytes) -> object:
    """Parse JSON text under the RFC 8785 / I-JSON number model.

    Integers beyond ±(2**53 - 1) become doubles, ``NaN``/``Infinity`` and duplicate
    member names are refused with ``CanonicalJSONError``; syntax errors raise
    ``json.JSONDecodeError`` (a ``ValueError``) as usual.
    """
    return json.loads(
        text,
        object_pairs_hook=_unique_object,
        parse_constant=_reject_constant,
        parse_int=_number_from_integer_text,
    )
