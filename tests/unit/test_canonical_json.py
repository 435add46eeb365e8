"""RFC 8785 canonical JSON: the RFC's own examples, and agreement with the rfc8785 package."""

from __future__ import annotations

import enum
import json
import math
import struct
from decimal import Decimal

import pytest
import rfc8785
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from stichtag.domain.canonical_json import (
    CanonicalJSONError,
    canonicalize,
    format_number,
    parse_json,
)

# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "expected"), APPENDIX_B)
def test_appendix_b_numbers(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert format_number(value) == expected
    assert canonicalize(value) == expected.encode()


def test_rfc_example_with_numbers_strings_and_literals() -> None:
    # RFC 8785 §3.2.2's example input, written as JSON and parsed as a client would.
    source = r"""{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"""
    expected = (
        '{"literals":[null,true,false],'
        '"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonicalize(json.loads(source)) == expected.encode("utf-8")


def test_rfc_example_of_property_sorting_by_utf16_code_units() -> None:
    # RFC 8785 §3.2.3: the emoji (a surrogate pair, D83D DE00) sorts before U+FB33,
    # although its code point is larger.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = [k for k in json.loads(canonicalize(value))]
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_string_escapes() -> None:
    assert canonicalize('\b\f\n\r\t"\\/') == b'"\\b\\f\\n\\r\\t\\"\\\\/"'
    assert canonicalize("\x00\x1f\x7f") == b'"\\u0000\\u001f\x7f"'
    assert canonicalize("\u2028ä\U0001d11e") == '"\u2028ä\U0001d11e"'.encode()


class Level(enum.IntEnum):
    PUBLIC = 0


def test_literals_and_integers() -> None:
    assert canonicalize([None, True, False, 0, -1, 2**53 - 1, -(2**53 - 1)]) == (
        b"[null,true,false,0,-1,9007199254740991,-9007199254740991]"
    )
    assert canonicalize({"level": Level.PUBLIC}) == b'{"level":0}'
    assert canonicalize(()) == b"[]"
    assert canonicalize({}) == b"{}"
    assert canonicalize(-0.0) == b"0"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "not allowed"),
        (math.inf, "not allowed"),
        ([-math.inf], "not allowed"),
        ({1: "x"}, "keys must be strings"),
        ({None: "x"}, "keys must be strings"),
        ({"a": {("t",): 1}}, "keys must be strings"),
        (2**53, "outside"),
        (-(2**53), "outside"),
        ("\ud800", "lone surrogate"),
        ({"\udfff": 1}, "lone surrogate"),
        (b"bytes", "not a JSON value"),
        ({1, 2}, "not a JSON value"),
        (Decimal("1.5"), "not a JSON value"),
    ],
)
def test_values_without_a_canonical_form_are_refused(value: object, message: str) -> None:
    with pytest.raises(CanonicalJSONError, match=message):
        canonicalize(value)


# Strings that stress escaping and UTF-16 ordering: controls, quotes, the edges of the
# surrogate range (U+D7FF, U+E000), the top of the BMP and astral characters.
EDGE_CHARS = [
    "\x00", "\x1f", "\x7f", '"', "\\", "/", "\u2028", "\ud7ff", "\ue000", "\uffef",
    "\uffff", "\U00010000", "\U0001f600", "\U0010ffff", "ä", "ß", "€", "§",
]  # fmt: skip
texts = st.text(
    alphabet=st.one_of(st.sampled_from(EDGE_CHARS), st.characters(exclude_categories=["Cs"])),
    max_size=12,
)
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(0, 2**64 - 1)
    .map(lambda bits: struct.unpack(">d", bits.to_bytes(8, "big"))[0])
    .filter(math.isfinite),
    st.sampled_from([-0.0, 5e-324, 1e21, 1e-7, 1e-6, 123456789012345680000.0]),
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53 - 1), 2**53 - 1),
        floats,
        texts,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(texts, children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(json_values)
@example({"\ue000": 1, "\U00010000": 2})
@example([1e22, 1e21, 1e-6, 1e-7, -0.0])
def test_agrees_with_the_rfc8785_package(value: object) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_form_is_a_fixed_point(value: object) -> None:
    once = canonicalize(value)
    assert canonicalize(parse_json(once)) == once


def test_parse_json_reads_numbers_as_doubles_and_refuses_ambiguity() -> None:
    assert parse_json("[10000000000000000, 9007199254740991, -0]") == [1e16, 2**53 - 1, 0]
    assert isinstance(parse_json("9007199254740993"), float)
    with pytest.raises(CanonicalJSONError, match="duplicate"):
        parse_json('{"a": 1, "a": 1}')
    with pytest.raises(CanonicalJSONError, match="NaN"):
        parse_json("[NaN]")
    with pytest.raises(ValueError):
        parse_json("[1,]")


@settings(max_examples=1500, deadline=None)
@given(floats)
def test_numbers_round_trip_exactly(value: float) -> None:
    text = format_number(value)
    assume(value != 0)
    assert float(text) == value
    assert text == rfc8785.dumps(value).decode()
