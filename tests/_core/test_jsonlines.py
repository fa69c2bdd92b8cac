"""Tests of agentproto._core.json.lines: JSON Lines decoded incrementally."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.errors import DecodeError, SchemaError, UsageError
from agentproto._core.json import lines as jsonlines
from agentproto._core.json.codec import loads
from agentproto._core.json.lines import JSONLine, JSONLinesDecoder, encode_jsonl
from tests.jsonsame import same_json
from tests.strategies import any_json

# --- helpers ------------------------------------------------------------------


def feed_all(chunks: Iterable[bytes | bytearray | memoryview], **options: int) -> list[JSONLine]:
    """Decode a stream given as chunks, close included."""
    decoder = JSONLinesDecoder(**options)
    out: list[JSONLine] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    out += decoder.close()
    return out


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def values(lines: Iterable[JSONLine]) -> list[Any]:
    return [line.value for line in lines]


# --- the public surface -------------------------------------------------------


def test_public_names() -> None:
    """The module exports exactly its documented API."""
    assert sorted(jsonlines.__all__) == [
        "DEFAULT_MAX_LINE_BYTES",
        "JSONLine",
        "JSONLinesDecoder",
        "encode_jsonl",
    ]


def test_line_is_frozen() -> None:
    """JSONLine is an immutable value."""
    line = JSONLine(value=1, line=1, offset=0)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        line.value = 2  # type: ignore[misc]


# --- framing --------------------------------------------------------------------


def test_each_line_is_a_document_with_number_and_offset() -> None:
    """Every line is one document, numbered from 1, with the byte offset of its start."""
    stream = '{"a":1}\n["é"]\n3\n'.encode()
    assert feed_all([stream]) == [
        JSONLine(value={"a": 1}, line=1, offset=0),
        JSONLine(value=["é"], line=2, offset=8),
        JSONLine(value=3, line=3, offset=15),
    ]


def test_crlf_line_ends() -> None:
    """A CR before the LF is dropped."""
    assert values(feed_all([b'{"a":1}\r\n[2]\r\n'])) == [{"a": 1}, [2]]


def test_blank_lines_are_skipped_but_counted() -> None:
    """Empty and whitespace-only lines are skipped; line numbers still count them."""
    lines = feed_all([b"\n  \t \n\r\n1\n \n2\n"])
    assert [(line.value, line.line, line.offset) for line in lines] == [(1, 4, 8), (2, 6, 12)]


def test_final_line_without_newline_is_a_document() -> None:
    """A last line without LF is still parsed at close()."""
    decoder = JSONLinesDecoder()
    assert values(decoder.feed(b'1\n{"a":')) == [1]
    assert decoder.feed(b"2}") == []
    assert decoder.close() == [JSONLine(value={"a": 2}, line=2, offset=2)]


def test_final_blank_line_without_newline_is_nothing() -> None:
    """Trailing whitespace after the last LF is not a document."""
    assert values(feed_all([b"1\n  \r"])) == [1]


def test_truncated_final_line_is_decode_error() -> None:
    """A final line without LF that is not valid JSON means the stream was truncated."""
    decoder = JSONLinesDecoder()
    decoder.feed(b'1\n{"a": [1, 2')
    with pytest.raises(DecodeError, match="truncated") as info:
        decoder.close()
    assert info.value.line == 2
    assert info.value.offset is not None and info.value.offset >= 2


def test_close_is_idempotent_and_feed_after_close_is_usage_error() -> None:
    """close() may be repeated; feed() after close() is the caller's error."""
    decoder = JSONLinesDecoder()
    decoder.feed(b"1")
    assert values(decoder.close()) == [1]
    assert decoder.close() == []
    with pytest.raises(UsageError):
        decoder.feed(b"2\n")


def test_accepts_bytearray_and_memoryview() -> None:
    """Chunks may be any bytes-like object."""
    assert values(feed_all([bytearray(b"[1"), memoryview(b"]\n")])) == [[1]]


# --- errors -----------------------------------------------------------------------


def test_malformed_line_error_has_line_and_absolute_offset() -> None:
    """A malformed line raises DecodeError with its line number and the stream offset."""
    decoder = JSONLinesDecoder()
    out = decoder.feed(b'{"ok":1}\n{"bad":,}\n')
    assert values(out) == [{"ok": 1}]
    with pytest.raises(DecodeError) as info:
        decoder.close()
    assert info.value.line == 2
    assert info.value.offset == 9 + 7


@pytest.mark.parametrize("document", [b'{"a":', b"[1,2", b"nul", b'"abc', b'{"a" 1}', b"1 2"])
def test_a_malformed_line_is_explained_as_the_document_alone(document: bytes) -> None:
    """Its LF plays no part: the message and offset are those of the line's own bytes."""
    with pytest.raises(DecodeError) as alone:
        loads(document)
    with pytest.raises(DecodeError) as in_stream:
        feed_all([b"[0]\n" + document + b"\n[1]\n"])
    assert in_stream.value.line == 2
    assert in_stream.value.offset == 4 + (alone.value.offset or 0)
    assert str(in_stream.value).startswith(str(alone.value).split(" (")[0])


def test_invalid_utf8_offset_is_exact() -> None:
    """Invalid UTF-8 raises DecodeError at the absolute offset of the bad byte, any split."""
    stream = b'"ok"\n["a", "\xff"]\n'
    for chunks in ([stream], byte_by_byte(stream)):
        with pytest.raises(DecodeError, match="UTF-8") as info:
            feed_all(chunks)
        assert info.value.offset == stream.index(b"\xff")
        assert info.value.line == 2


def test_deep_line_is_decode_error() -> None:
    """A line nesting deeper than max_depth raises DecodeError, never RecursionError."""
    with pytest.raises(DecodeError, match="deeper") as info:
        feed_all([b"1\n" + b"[" * 100_000 + b"\n"])
    assert info.value.line == 2
    assert info.value.offset == 2 + 512
    with pytest.raises(DecodeError):
        feed_all([b"[[[]]]\n"], max_depth=2)


def test_documents_before_an_error_are_delivered_first() -> None:
    """Documents before a bad line in the same chunk are returned; the next call raises."""
    decoder = JSONLinesDecoder()
    assert values(decoder.feed(b"1\n2\nnope\n3\n")) == [1, 2]
    with pytest.raises(DecodeError) as info:
        decoder.feed(b"4\n")
    assert info.value.line == 3
    with pytest.raises(DecodeError):  # errors are sticky
        decoder.close()


def test_non_finite_numbers_are_rejected() -> None:
    """NaN and Infinity are not JSON."""
    for line in (b"NaN\n", b"[Infinity]\n", b"1e999\n"):
        with pytest.raises(DecodeError):
            feed_all([line])


def test_big_integers_are_exact() -> None:
    """Integers beyond 64 bits keep their exact value."""
    assert values(feed_all([b"[18446744073709551616]\n"])) == [[2**64]]


# --- size limit -----------------------------------------------------------------


def test_line_limit_is_inclusive() -> None:
    """A line of exactly max_line_bytes passes; one byte more is a DecodeError."""
    line = b'"' + b"x" * 98 + b'"'
    assert values(feed_all([line + b"\n"], max_line_bytes=100)) == ["x" * 98]
    assert values(feed_all(byte_by_byte(line + b"\n"), max_line_bytes=100)) == ["x" * 98]
    assert values(feed_all([line], max_line_bytes=100)) == ["x" * 98]
    with pytest.raises(DecodeError, match="max_line_bytes") as info:
        feed_all([b"1\n" + line + b" \n"], max_line_bytes=100)
    assert (info.value.line, info.value.offset) == (2, 2)


def test_oversized_line_fails_before_buffering_more() -> None:
    """Feeding an endless line, the buffer never exceeds the limit and DecodeError comes."""
    decoder = JSONLinesDecoder(max_line_bytes=1000)
    with pytest.raises(DecodeError):
        for _ in range(10_000):
            decoder.feed(b"[1,2,3,")
            assert decoder.buffered <= 1000
    assert decoder.buffered == 0


@settings(max_examples=50)
@given(st.integers(min_value=4, max_value=300), st.lists(st.integers(0, 5000), max_size=40))
def test_buffer_bounded_by_limit_plus_one_chunk(limit: int, cuts: list[int]) -> None:
    """Whatever the chunking, the buffer stays within the limit until the error."""
    stream = b"[1]\n" + b"[" + b"1," * (limit + 10) + b"1]\n"
    decoder = JSONLinesDecoder(max_line_bytes=limit)
    out: list[JSONLine] = []
    with pytest.raises(DecodeError) as info:
        for chunk in split_at(stream, [cut % (len(stream) + 1) for cut in cuts]):
            out += decoder.feed(chunk)
            assert decoder.buffered <= limit
        decoder.close()
    assert (info.value.line, info.value.offset) == (2, 4)
    assert values(out) == [[1]]


def test_invalid_limits_are_usage_errors() -> None:
    """Non-positive limits are refused."""
    with pytest.raises(UsageError):
        JSONLinesDecoder(max_line_bytes=0)
    with pytest.raises(UsageError):
        JSONLinesDecoder(max_depth=-1)


# --- encode_jsonl ---------------------------------------------------------------


def test_encode_value_and_bytes() -> None:
    """Values are encoded compactly; pre-encoded bytes are used as they are; LF ends each."""
    assert encode_jsonl({"a": [1, "é"]}) == '{"a":[1,"é"]}\n'.encode()
    assert encode_jsonl(b'{"a": 1}') == b'{"a": 1}\n'
    assert encode_jsonl("text\nwith newline") == b'"text\\nwith newline"\n'


def test_encode_rejects_newline_in_bytes_and_non_json() -> None:
    """Pre-encoded bytes with a newline, and values that are not JSON, are refused."""
    with pytest.raises(UsageError):
        encode_jsonl(b"{\n}")
    with pytest.raises(SchemaError):
        encode_jsonl({"a": {1, 2}})


# --- properties -------------------------------------------------------------------

_line_end = st.sampled_from([b"\n", b"\r\n"])
_blank = st.sampled_from([b"", b" ", b"\t ", b"  \r"])


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[JSONLine]]:
    """A random JSON Lines stream and its documents."""
    out = bytearray()
    expected: list[JSONLine] = []
    items = draw(st.lists(st.one_of(any_json.map(lambda v: ("doc", v)), _blank), max_size=8))
    for index, item in enumerate(items):
        number = index + 1
        start = len(out)
        last = index == len(items) - 1
        end = b"" if last and draw(st.booleans()) else draw(_line_end)
        if isinstance(item, tuple):
            encoded = json.dumps(item[1], ensure_ascii=False) if draw(st.booleans()) else None
            raw = encoded.encode() if encoded is not None else encode_jsonl(item[1])[:-1]
            out += raw + end
            expected.append(JSONLine(value=item[1], line=number, offset=start))
        else:
            out += item + (end or b"\n")
    return bytes(out), expected


def assert_same(got: list[JSONLine], expected: list[JSONLine]) -> None:
    assert [(line.line, line.offset) for line in got] == [(e.line, e.offset) for e in expected]
    assert all(same_json(g.value, e.value) for g, e in zip(got, expected, strict=True))


@given(streams())
def test_stream_decodes_to_its_documents(stream: tuple[bytes, list[JSONLine]]) -> None:
    """A random stream decodes to its documents with their line numbers and offsets."""
    assert_same(feed_all([stream[0]]), stream[1])


@given(streams())
def test_byte_by_byte_equals_whole(stream: tuple[bytes, list[JSONLine]]) -> None:
    """Feeding one byte at a time yields exactly the documents of feeding the whole stream."""
    assert_same(feed_all(byte_by_byte(stream[0])), stream[1])


@given(streams(), st.lists(st.integers(0, 5000), max_size=20))
def test_random_chunks_equal_whole(stream: tuple[bytes, list[JSONLine]], cuts: list[int]) -> None:
    """Feeding random chunk splits yields exactly the documents of feeding the whole stream."""
    data = stream[0]
    assert_same(feed_all(split_at(data, [cut % (len(data) + 1) for cut in cuts])), stream[1])


# --- the two steps: push / end / documents ---------------------------------------


def test_documents_moves_past_a_bad_line() -> None:
    """documents() raises for a bad line and, called again, goes on with the next one."""
    decoder = JSONLinesDecoder()
    decoder.push(b'1\n{"bad":,}\n\n3\n4')
    decoder.end()
    seen: list[Any] = []
    with pytest.raises(DecodeError) as info:
        seen += decoder.documents()
    assert (info.value.line, info.value.offset) == (2, 2 + 7)
    assert decoder.queued == 3
    seen += decoder.documents()
    assert seen == [(1, 1, 0), (3, 4, 13), (4, 5, 15)]
    assert decoder.queued == 0


def test_lines_wait_when_the_caller_stops() -> None:
    """Lines a caller has not taken yet stay queued, in order, with their numbers."""
    decoder = JSONLinesDecoder()
    decoder.push(b"1\n2\n3\n")
    documents = decoder.documents()
    assert next(documents) == (1, 1, 0)
    del documents
    decoder.push(b"4\n")
    assert list(decoder.documents()) == [(2, 2, 2), (3, 3, 4), (4, 4, 6)]


def test_a_long_line_is_passed_over_and_reading_resumes() -> None:
    """After a line over the limit, the next line decodes with its own number and offset."""
    stream = b"[1]\n" + b"[" + b"1," * 60 + b"1]\n" + b"[2]\n"
    long_end = stream.index(b"\n", 4) + 1
    for chunks in ([stream], byte_by_byte(stream), split_at(stream, [6, 30, 90])):
        decoder = JSONLinesDecoder(max_line_bytes=50)
        seen: list[Any] = []
        errors: list[tuple[int | None, int | None]] = []
        for chunk in chunks:
            decoder.push(chunk)
            assert decoder.buffered <= 50
            try:
                seen += decoder.documents()
            except DecodeError as error:
                errors.append((error.line, error.offset))
                seen += decoder.documents()
        decoder.end()
        seen += decoder.documents()
        assert errors == [(2, 4)]
        assert seen == [([1], 1, 0), ([2], 3, long_end)]


def test_chunks_without_long_digit_runs_still_read_big_integers_exactly() -> None:
    """The look for big integers is per chunk: a chunk holding one reads it exactly."""
    decoder = JSONLinesDecoder()
    out = decoder.feed(b"[1]\n[123456789012345678901234567]\n")
    out += decoder.feed(b"[2]\n[10000000000000000000000000]")
    out += decoder.close()
    assert values(out) == [[1], [123456789012345678901234567], [2], [10**25]]


def test_depth_check_of_long_lines_is_exact() -> None:
    """A long line holding many shallow brackets passes; a long deep line does not."""
    shallow = b"[" + b",".join([b"[]"] * 2000) + b"]\n"
    assert len(values(feed_all([shallow], max_depth=2))[0]) == 2000
    deep = b"[" * 3 + b'"' + b"x" * 2000 + b'"' + b"]" * 3 + b"\n"
    with pytest.raises(DecodeError, match="deeper than 2 levels"):
        feed_all([deep], max_depth=2)
