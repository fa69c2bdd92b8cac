"""Tests of agentproto._core.json.codec: JSON with depth, UTF-8 and big-integer care."""

from __future__ import annotations

import enum
import json
import math
import re
import tracemalloc
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.errors import AgentProtoError, DecodeError, SchemaError
from agentproto._core.json import codec as jsonutil
from agentproto._core.json.codec import (
    DEFAULT_MAX_DEPTH,
    dumps,
    dumps_sorted,
    has_digit_run,
    loads,
    may_hold_rounded_int,
)
from tests.jsonsame import same_json
from tests.strategies import any_json


def nested(depth: int) -> bytes:
    """An array nested ``depth`` levels deep."""
    return b"[" * depth + b"]" * depth


# --- loads ----------------------------------------------------------------------


def test_public_names() -> None:
    """The module exports exactly its documented API."""
    assert sorted(jsonutil.__all__) == [
        "DEFAULT_MAX_DEPTH",
        "dumps",
        "dumps_sorted",
        "has_digit_run",
        "loads",
        "may_hold_rounded_int",
    ]


@given(any_json)
def test_loads_inverts_dumps(value: Any) -> None:
    """Any JSON value survives dumps then loads, types included, from bytes and from text."""
    encoded = dumps(value)
    assert same_json(loads(encoded), value)
    assert same_json(loads(encoded.decode("utf-8")), value)


def test_loads_matches_stdlib_on_text() -> None:
    """Non-ASCII text, escapes and numbers parse as the JSON standard says."""
    doc = '{"é":"😀\\u00e9\\n","n":[-0,1.5e3,true,null]}'
    assert same_json(loads(doc), json.loads(doc))
    assert same_json(loads(doc.encode()), json.loads(doc))


def test_malformed_json_is_decode_error_with_position() -> None:
    """Malformed JSON raises DecodeError naming orjson's message and the byte offset."""
    with pytest.raises(DecodeError) as info:
        loads(b'{"a": 1,}')
    assert "trailing comma" in str(info.value)
    assert info.value.offset == 7
    assert isinstance(info.value, AgentProtoError)
    assert isinstance(info.value, ValueError)


def test_error_position_is_in_bytes_for_non_ascii_input() -> None:
    """The position of a syntax error counts UTF-8 bytes, not characters."""
    for doc in ('{"éé": x}', '{"éé": x}'.encode()):
        with pytest.raises(DecodeError) as info:
            loads(doc)
        assert info.value.offset == '{"éé": '.encode().__len__()


def test_offset_is_added_to_positions() -> None:
    """The ``offset`` argument shifts every reported position."""
    with pytest.raises(DecodeError) as info:
        loads(b"[1,,2]", offset=1000)
    assert info.value.offset == 1003


@pytest.mark.parametrize(
    ("doc", "bad"),
    [
        (b'"\xff"', 1),
        (b'["ok", "\xc3\xa9", "\xe2\x82"]', 14),  # an incomplete sequence
        (b"\x80", 0),
        (b'{"a": "\xed\xa0\x80"}', 7),  # an encoded surrogate is not UTF-8
    ],
)
def test_invalid_utf8_offset_is_exact(doc: bytes, bad: int) -> None:
    """Invalid UTF-8 raises DecodeError at the offset of the first invalid byte."""
    with pytest.raises(DecodeError, match="UTF-8") as info:
        loads(doc, offset=10)
    assert info.value.offset == 10 + bad


@given(st.text(max_size=20), st.text(max_size=20), st.binary(min_size=1, max_size=3))
def test_invalid_utf8_offset_property(before: str, after: str, junk: bytes) -> None:
    """Wherever an invalid byte sits in a string, its exact offset is reported."""
    bad = b"\xff" + junk
    prefix = b'["' + json.dumps(before)[1:-1].encode()
    doc = prefix + bad + json.dumps(after)[1:-1].encode() + b'"]'
    with pytest.raises(DecodeError) as info:
        loads(doc)
    assert info.value.offset == len(prefix)


def test_lone_surrogate_in_text_is_decode_error() -> None:
    """A str holding a lone surrogate is not UTF-8 and raises DecodeError at its byte offset."""
    with pytest.raises(DecodeError) as info:
        loads('["é", "\ud800"]')
    assert info.value.offset == len('["é", "'.encode())


@pytest.mark.parametrize("doc", [b"NaN", b"[Infinity]", b"-Infinity", b"[1e400]", b"-1e999"])
def test_non_finite_numbers_are_rejected(doc: bytes) -> None:
    """NaN, Infinity and numbers overflowing a double are not JSON numbers."""
    with pytest.raises(DecodeError):
        loads(doc)


@pytest.mark.parametrize(
    "literal",
    [
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "1" + "0" * 400,
        "-" + "9" * 1000,
    ],
)
def test_big_integers_are_exact(literal: str) -> None:
    """Integers of any size parse exactly (orjson alone would turn them into floats)."""
    for doc in (f'{{"n":[{literal}]}}', f'{{"n":[{literal}]}}'.encode()):
        value = loads(doc)
        assert value == {"n": [int(literal)]}
        assert type(value["n"][0]) is int


def test_big_integer_with_an_error_is_still_an_error() -> None:
    """A document with a huge integer and a real error still fails."""
    with pytest.raises(DecodeError):
        loads(b"[1" + b"0" * 400 + b", 1e400]")
    with pytest.raises(DecodeError):
        loads(b"[1" + b"0" * 400 + b', "\\ud800"]')
    with pytest.raises(DecodeError):
        loads(b"[1" + b"0" * 400 + b",]")


def test_digit_runs_in_strings_parse_normally() -> None:
    """Long digit runs inside strings (which trigger the exact path) change nothing."""
    doc = b'{"id":"12345678901234567890123","x":1.5,"n":[1,2]}'
    assert same_json(loads(doc), json.loads(doc))


def test_depth_limit_is_inclusive() -> None:
    """Nesting exactly ``max_depth`` deep parses; one more level raises DecodeError."""
    assert loads(nested(DEFAULT_MAX_DEPTH)) is not None
    with pytest.raises(DecodeError, match="deeper than 512") as info:
        loads(nested(DEFAULT_MAX_DEPTH + 1))
    assert info.value.offset == DEFAULT_MAX_DEPTH
    assert loads(nested(5), max_depth=5) == [[[[[]]]]]
    with pytest.raises(DecodeError):
        loads(nested(6), max_depth=5)
    assert loads(b"1", max_depth=0) == 1
    with pytest.raises(DecodeError):
        loads(b"[]", max_depth=0)


def test_depth_counts_objects_and_arrays() -> None:
    """Objects and arrays both count as a nesting level."""
    doc = b'{"a":[{"b":[1]}]}'
    assert loads(doc, max_depth=4) == {"a": [{"b": [1]}]}
    with pytest.raises(DecodeError) as info:
        loads(doc, max_depth=3)
    assert info.value.offset == doc.index(b"[1")


@pytest.mark.parametrize("depth", [100_000, 2000, 1025, 1024, 600])
def test_deep_nesting_is_decode_error_not_recursion_error(depth: int) -> None:
    """Very deep nesting raises DecodeError, never RecursionError, at any depth."""
    for doc in (b"[" * depth, nested(depth), b'{"a":' * depth):
        with pytest.raises(DecodeError):
            loads(doc)


def test_depth_limit_above_orjsons_is_still_safe() -> None:
    """A limit above what the parser can nest still yields DecodeError, not RecursionError."""
    with pytest.raises(DecodeError):
        loads(nested(5000), max_depth=10_000)


def test_brackets_inside_strings_do_not_count() -> None:
    """Brackets in strings, with escaped quotes and backslashes, are not nesting."""
    inner = '[["\\"[[[[[", "\\\\", "]]]\\\\\\"{{{{"]]'
    doc = ("[" + inner + "," + json.dumps("[" * 600) + "]").encode()
    assert loads(doc, max_depth=3) == json.loads(doc)


def test_many_shallow_containers_are_not_too_deep() -> None:
    """A long but shallow document passes the precise depth scan."""
    doc = dumps([{"a": [i]} for i in range(2000)])
    assert len(loads(doc)) == 2000


def test_depth_error_offset_after_strings() -> None:
    """The depth error names the offset of the first bracket over the limit, strings skipped."""
    doc = b'["x\\"[[[", ' + b'"\\\\", ' + b"[" * 4 + b"]" * 4 + b"]"
    with pytest.raises(DecodeError) as info:
        loads(doc, max_depth=3)
    assert info.value.offset == doc.index(b"[[[[") + 2


@pytest.mark.parametrize("window", [1, 2, 3, 5, 16, 64, 1 << 16])
def test_depth_scan_across_windows(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The precise scan goes window by window: strings holding brackets and escaped quotes
    that span a window's end are skipped, the depth carries over, and the offset is the
    document's."""
    monkeypatch.setattr(jsonutil, "_SCAN_WINDOW", window)
    shallow = ["[[[" + '\\"' + "[{" * 9, "\\"] * 3 + [{"a": [[i]]} for i in range(30)]
    body = dumps(shallow)[:-1] + b',"]]",' + b"[" * 5
    doc = body + b"]" * 5 + b"]"
    assert len(loads(doc, max_depth=6)) == len(shallow) + 2
    with pytest.raises(DecodeError) as info:
        loads(doc, max_depth=5)
    assert info.value.offset == len(body) - 1


def test_depth_scan_memory_is_bounded_by_a_window() -> None:
    """Scanning a long shallow document costs a few times its size, not the many small
    pieces between its quotes (over twenty times its size when split at once)."""
    doc = dumps([{"op": "add", "path": f"/k{i}", "value": i} for i in range(100_000)])
    tracemalloc.start()
    try:
        assert jsonutil._depth_failure(doc, 512) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(doc)


def test_empty_and_trailing_content_are_errors() -> None:
    """An empty document and content after the document are malformed."""
    for doc in (b"", b"   ", b"{} x", b"\xef\xbb\xbf{}"):
        with pytest.raises(DecodeError):
            loads(doc)


# --- dumps ----------------------------------------------------------------------


def test_dumps_is_compact_ordered_utf8() -> None:
    """dumps writes no spaces, keeps key order and writes non-ASCII as UTF-8."""
    assert dumps({"b": 1, "a": [True, None, "é😀"]}) == '{"b":1,"a":[true,null,"é😀"]}'.encode()


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**400, -(10**50)])
def test_dumps_big_integers_exactly(number: int) -> None:
    """Integers beyond 64 bits encode exactly, through the standard library."""
    encoded = dumps({"a": [number, "é"]})
    assert encoded == f'{{"a":[{number},"é"]}}'.encode()
    assert loads(encoded) == {"a": [number, "é"]}


def test_dumps_sorted_is_a_key_for_equal_values_and_exact_and_bounded() -> None:
    """Sorted keys whatever the member order, integers beyond 64 bits exact and nesting
    beyond orjson's limit encoded (orjson alone raises TypeError on both), NaN refused."""
    assert dumps_sorted({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'
    assert dumps_sorted({"b": 2**70, "a": 1}) == b'{"a":1,"b":%d}' % 2**70
    value: Any = {"b": 0, "a": 1}
    for _ in range(400):
        value = [value]
    assert dumps_sorted(value) == b"[" * 400 + b'{"a":1,"b":0}' + b"]" * 400
    with pytest.raises(SchemaError):
        dumps_sorted({"a": float("nan")})


def test_dumps_deep_values_beyond_orjsons_limit() -> None:
    """Values nesting deeper than orjson encodes (254) but within the parse limit round-trip."""
    value: Any = []
    for _ in range(400):
        value = [value]
    assert loads(dumps(value)) == value


@pytest.mark.parametrize(
    ("value", "location"),
    [
        ({"a": [1, {"b/c~": float("nan")}]}, "/a/1/b~1c~0"),
        ([float("inf")], "/0"),
        ({"x": float("-inf")}, "/x"),
        ({"big": 2**70, "bad": float("nan")}, "/bad"),
    ],
)
def test_dumps_rejects_non_finite_floats(value: Any, location: str) -> None:
    """Non-finite floats are not JSON: SchemaError at their pointer (orjson would write null)."""
    with pytest.raises(SchemaError) as info:
        dumps(value)
    assert info.value.keyword == "type"
    assert info.value.location == location


def test_dumps_keeps_real_nulls() -> None:
    """A document with null and finite floats is not mistaken for one with NaN."""
    assert dumps({"a": None, "b": 1.5, "c": "null"}) == b'{"a":null,"b":1.5,"c":"null"}'


@dataclass
class _Point:
    x: int


@pytest.mark.parametrize(
    ("value", "location"),
    [
        ({"a": {1, 2}}, "/a"),
        ({"a": [b"bytes"]}, "/a/0"),
        ({1: "x"}, ""),
        ({"p": _Point(1)}, "/p"),
        ({"t": datetime(2024, 1, 1)}, "/t"),
        ({"s": "\ud800"}, "/s"),
        ({"big": 2**70, "bad": object()}, "/bad"),
    ],
)
def test_dumps_rejects_values_that_are_not_json(value: Any, location: str) -> None:
    """Values that are not JSON raise SchemaError (keyword "type") at their pointer."""
    with pytest.raises(SchemaError) as info:
        dumps(value)
    assert info.value.keyword == "type"
    assert info.value.location == location


def test_dumps_rejects_circular_values() -> None:
    """A value that contains itself raises SchemaError, not RecursionError."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SchemaError):
        dumps(loop)


class _Colour(enum.Enum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 3


def test_dumps_enums_and_uuids_also_in_the_fallback() -> None:
    """Enums encode as their value and UUIDs as strings, with or without big integers."""
    ident = uuid.UUID(int=7)
    small = dumps([_Colour.RED, _Size.BIG, ident])
    big = dumps([_Colour.RED, _Size.BIG, ident, 2**64])
    assert small == f'["red",3,"{ident}"]'.encode()
    assert big == f'["red",3,"{ident}",{2**64}]'.encode()


@given(any_json)
def test_dumps_matches_stdlib_compact_output(value: Any) -> None:
    """dumps encodes the same JSON value as the standard library (floats may be spelled apart)."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    encoded = dumps(value)
    assert same_json(json.loads(encoded), json.loads(expected))
    outside_strings = encoded.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[0::2]
    assert not any(b" " in piece or b"\n" in piece for piece in outside_strings)


def test_floats_round_trip() -> None:
    """Floats survive dumps and loads bit for bit."""
    for number in (0.1, -0.0, 1e308, 5e-324, math.pi):
        assert loads(dumps(number)) == number
        assert math.copysign(1.0, loads(dumps(number))) == math.copysign(1.0, number)


def test_exact_ints_false_skips_only_the_big_integer_look() -> None:
    """exact_ints=False parses with orjson alone (big integers become floats); depth is checked."""
    big = b'{"n": 123456789012345678901234567890}'
    assert has_digit_run(big)
    assert loads(big)["n"] == 123456789012345678901234567890
    assert isinstance(loads(big, exact_ints=False)["n"], float)
    assert not has_digit_run(b'{"n": 1234567890123456789.5e3, "m": "x"}'.replace(b"9.", b"."))
    with pytest.raises(DecodeError):
        loads(b"[" * 600 + b"]" * 600, exact_ints=False)


_DIGITS_AND_SEPARATORS = bytes(b"0123456789a ,"[i % 13] for i in range(256))
_digit_text = st.binary(max_size=120).map(lambda raw: raw.translate(_DIGITS_AND_SEPARATORS))


@settings(max_examples=500)
@given(_digit_text, st.integers(0, 2000), st.integers(15, 24), st.integers(1, 40))
def test_has_digit_run_agrees_with_a_full_search(
    text: bytes, at: int, run: int, copies: int
) -> None:
    """The sampled look for 19 digits in a row answers exactly as a search of every byte."""
    long = text * copies  # past a few hundred bytes the look samples
    for data in (text, long, long[:at] + b"7" * run + long[at:]):
        assert has_digit_run(data) == (re.search(rb"[0-9]{19}", data) is not None)


def test_has_digit_run_in_a_buffer_dense_with_digits() -> None:
    """Many near misses (18-digit runs) neither hide a real run nor invent one."""
    near = b",".join([b"123456789012345678"] * 500)
    assert not has_digit_run(near)
    assert has_digit_run(near + b",1234567890123456789")
    assert has_digit_run(b"1234567890123456789," + near)


# --- integers orjson rounds, found in the parsed value ---------------------------------

_wide_ints = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**40]),
)
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | _wide_ints
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="0123456789ab", max_size=25),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(_json_values)
def test_every_integer_orjson_rounds_is_flagged(value: Any) -> None:
    """Whatever orjson parses differently from the exact parser is flagged: a value
    that is not flagged lost nothing."""
    text = json.dumps(value)
    fast = orjson.loads(text)
    if json.dumps(fast) != json.dumps(json.loads(text)):
        assert may_hold_rounded_int(fast), text


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("[18446744073709551615, -9223372036854775808]", False),  # the edges orjson keeps
        ('{"a": [18446744073709551616]}', True),
        ('{"a": {"b": -9223372036854775809}}', True),
        ("1e19", True),  # a float that large: re-parsed, and stays a float
        ('{"a": 9.2e18, "b": "12345678901234567890123"}', False),  # digits in a string
    ],
)
def test_rounded_integers_are_looked_for_at_any_depth(text: str, flagged: bool) -> None:
    assert may_hold_rounded_int(orjson.loads(text)) is flagged


def _on_a_deep_stack(frames: int, call: Any) -> Any:
    """``call()`` with ``frames`` more frames on the stack (as in a deep caller)."""
    return call() if frames == 0 else _on_a_deep_stack(frames - 1, call)


@pytest.mark.parametrize("leaf", [0, 2.0**64, [[{"a": -(2.0**63)}]]])
def test_rounded_integers_are_looked_for_without_recursion(leaf: Any) -> None:
    """A value nested as deep as the parser allows, or far deeper from Python, is walked
    without RecursionError, from a caller with a deep stack too (it was two frames a
    level: 510 levels failed in the fuzzer's harness)."""
    for depth in (DEFAULT_MAX_DEPTH, 5_000):
        value = [1, "s", {"x": None}]
        value.append(leaf)
        for _ in range(depth):
            value = [value]
        found = _on_a_deep_stack(300, lambda v=value: may_hold_rounded_int(v))
        assert found is (leaf != 0)
