"""Tests of agentproto._core.sse: Server-Sent Events decoded as browsers do."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core import sse
from agentproto._core.errors import AgentProtoError, DecodeError, UsageError
from agentproto._core.sse import SSEDecoder, SSEEvent, encode_sse

BOM = b"\xef\xbb\xbf"

# --- helpers ------------------------------------------------------------------


def feed_all(chunks: Iterable[bytes | bytearray | memoryview], **options: object) -> list[SSEEvent]:
    """Decode a stream given as chunks, close included."""
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.close()
    return events


def decode(data: bytes, **options: object) -> list[SSEEvent]:
    """Decode a whole stream in one chunk."""
    return feed_all([data], **options)


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def strip(events: Iterable[SSEEvent]) -> list[tuple[str, str | None, str | None, int | None]]:
    """The events without offsets."""
    return [(e.data, e.event, e.id, e.retry) for e in events]


def ev(
    data: str,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> tuple[str, str | None, str | None, int | None]:
    return (data, event, id, retry)


# --- the public surface -------------------------------------------------------


def test_public_names() -> None:
    """The module exports exactly its documented API."""
    assert sorted(sse.__all__) == [
        "DEFAULT_MAX_EVENT_BYTES",
        "SSEDecoder",
        "SSEEvent",
        "encode_sse",
    ]


def test_event_is_frozen() -> None:
    """SSEEvent is an immutable value."""
    event = SSEEvent(data="x", offset=3)
    with pytest.raises(AttributeError):
        event.data = "y"  # type: ignore[misc]
    assert event == SSEEvent(data="x", event=None, id=None, retry=None, offset=3)


# --- field parsing ------------------------------------------------------------


def test_data_line_makes_an_event() -> None:
    """A data line then a blank line dispatches one event with that data."""
    assert decode(b"data: hello\n\n") == [SSEEvent(data="hello", offset=0)]


def test_one_space_after_colon_is_removed() -> None:
    """Exactly one space after the colon is dropped; none or more are kept as value."""
    assert strip(decode(b"data:x\n\ndata:  x\n\ndata: \n\n")) == [ev("x"), ev(" x"), ev("")]


def test_data_lines_join_with_newline() -> None:
    """Several data lines join with LF; only the final LF is removed."""
    assert strip(decode(b"data: a\ndata: b\ndata:\n\n")) == [ev("a\nb\n")]
    assert strip(decode(b"data\ndata\n\n")) == [ev("\n")]


def test_line_without_colon_is_field_with_empty_value() -> None:
    """A line without a colon is a field name with an empty value."""
    assert strip(decode(b"data\n\n")) == [ev("")]
    assert strip(decode(b"event\ndata: x\n\n")) == [ev("x")]


def test_comments_are_ignored() -> None:
    """Lines starting with a colon are comments, also alone in a block."""
    stream = b": keep-alive\n\n:\ndata: a\n: inside\ndata: b\n\n"
    assert strip(decode(stream)) == [ev("a\nb")]


def test_unknown_fields_are_ignored() -> None:
    """Fields other than data, event, id and retry are ignored; names are case-sensitive."""
    assert strip(decode(b"foo: bar\nData: no\ndata: yes\n\n")) == [ev("yes")]


def test_block_without_data_dispatches_nothing_and_resets_type() -> None:
    """A blank line with an empty data buffer emits nothing and resets the event type."""
    assert strip(decode(b"event: x\n\ndata: y\n\n")) == [ev("y")]


def test_event_type() -> None:
    """The event field sets the type of the next event only; an empty one means none."""
    stream = b"event: delta\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n"
    assert strip(decode(stream)) == [ev("1", "delta"), ev("2"), ev("3")]


def test_last_event_id_persists_and_resets() -> None:
    """An id persists across events until set again; an empty id resets it to empty."""
    stream = b"data: a\n\nid: 1\ndata: b\n\ndata: c\n\nid\ndata: d\n\n"
    decoder = SSEDecoder()
    events = decoder.feed(stream)
    assert [e.id for e in events] == [None, "1", "1", ""]
    assert decoder.last_event_id == ""


def test_id_only_block_sets_last_event_id() -> None:
    """A block with an id and no data updates the id later events carry."""
    assert strip(decode(b"id: 7\n\ndata: x\n\n")) == [ev("x", id="7")]


def test_id_with_nul_is_ignored() -> None:
    """An id containing NUL is ignored."""
    assert strip(decode(b"id: 1\n\nid: a\0b\ndata: x\n\n")) == [ev("x", id="1")]


def test_retry_only_with_ascii_digits() -> None:
    """retry takes effect only when its value is all ASCII digits."""
    decoder = SSEDecoder()
    stream = (
        b"retry: 1500\ndata: a\n\n"
        b"retry: 15x\ndata: b\n\n"
        b"retry:\ndata: c\n\n"
        b"retry: \xd9\xa1\ndata: d\n\n"  # ARABIC-INDIC DIGIT ONE is not ASCII
        b"retry: " + b"9" * 5000 + b"\ndata: e\n\n"
    )
    events = decoder.feed(stream)
    assert [e.retry for e in events] == [1500, None, None, None, None]
    assert decoder.retry == 1500


def test_retry_without_data_still_sets_reconnection_time() -> None:
    """A block with only retry changes the reconnection time and emits nothing."""
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 42\n\n") == []
    assert decoder.retry == 42


def test_non_ascii_field_values() -> None:
    """Field values are UTF-8 text."""
    stream = "event: ünïcode\nid: ключ\ndata: 😀 日本\n\n".encode()
    assert strip(decode(stream)) == [ev("😀 日本", "ünïcode", "ключ")]


def test_only_cr_and_lf_end_lines() -> None:
    """U+2028, U+0085 and other Unicode breaks are data, not line ends."""
    stream = "data: a\u2028b\x85c\x0bd\x0ce\n\n".encode()
    assert strip(decode(stream)) == [ev("a\u2028b\x85c\x0bd\x0ce")]


# --- line ends ----------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_every_line_end_style(end: bytes) -> None:
    """LF, CR and CRLF all end lines."""
    stream = end.join([b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert strip(decode(stream)) == [ev("a\nb", "e"), ev("c")]


def test_mixed_line_ends() -> None:
    """Line-end styles may be mixed within a stream and within an event."""
    stream = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r: x\ndata: e\n\r"
    assert strip(decode(stream)) == [ev("a\nb\nc"), ev("d"), ev("e")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and an LF starting the next are a single line end."""
    chunks = [b"data: a\r", b"\ndata: b\r\n\r", b"\ndata: c\r\n\r", b"\n"]
    assert strip(feed_all(chunks)) == [ev("a\nb"), ev("c")]


def test_event_dispatches_at_a_final_cr() -> None:
    """A blank line ended by CR dispatches at once, before the next chunk shows an LF."""
    decoder = SSEDecoder()
    assert strip(decoder.feed(b"data: a\r\r")) == [ev("a")]
    assert decoder.feed(b"\n") == []  # the LF of the CRLF that ended the blank line
    assert strip(decoder.feed(b"data: b\n\n")) == [ev("b")]
    assert decoder.close() == []


def test_lf_after_cr_is_skipped_only_once() -> None:
    """After a CR-ended blank line, one LF is absorbed; a second LF is another blank line."""
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\r")
    assert decoder.feed(b"\n\ndata: b\n\n") == [SSEEvent(data="b", offset=11)]


# --- byte order mark ----------------------------------------------------------


def test_bom_is_skipped_at_start() -> None:
    """A UTF-8 BOM at the very start is skipped; offsets still count it."""
    assert decode(BOM + b"data: x\n\n") == [SSEEvent(data="x", offset=3)]


def test_bom_split_across_chunks() -> None:
    """A BOM split over several chunks is still recognised."""
    assert feed_all([b"\xef", b"\xbb", b"\xbfdata: x\n\n"]) == [SSEEvent(data="x", offset=3)]


def test_only_one_bom_is_skipped() -> None:
    """A second BOM is part of the first line, which then names an unknown field."""
    assert decode(BOM + BOM + b"data: x\n\ndata: y\n\n") == [SSEEvent(data="y", offset=15)]


def test_bom_later_in_stream_is_not_skipped() -> None:
    """A BOM after the start is ordinary text."""
    assert strip(decode(b"data: a\n\n" + BOM + b"data: b\n\n")) == [ev("a")]


def test_stream_of_only_a_bom() -> None:
    """A stream holding only a BOM has no events and ends cleanly."""
    assert decode(BOM) == []


# --- offsets ------------------------------------------------------------------


def test_offsets_point_at_first_line_of_each_event() -> None:
    """Each event's offset is the byte offset of its block's first line."""
    stream = "data: é\n\n\n: c\nid: 1\ndata: x\r\n\r\ndata: y\n\n".encode()
    events = decode(stream)
    assert [e.offset for e in events] == [0, stream.index(b": c"), stream.index(b"data: y")]
    assert [e.offset for e in feed_all(byte_by_byte(stream))] == [e.offset for e in events]


# --- UTF-8 ----------------------------------------------------------------------


def test_multibyte_character_split_across_chunks() -> None:
    """Characters split between chunks decode correctly."""
    stream = "data: 😀é日\n\n".encode()
    assert strip(feed_all(byte_by_byte(stream))) == [ev("😀é日")]


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf0\x9f\x98"])
def test_invalid_utf8_reports_absolute_offset(bad: bytes) -> None:
    """Invalid UTF-8 raises DecodeError at the stream offset of the bad sequence."""
    stream = b"data: ok\n\ndata: x" + bad + b"\n\n"
    expected = stream.index(bad)
    for chunks in ([stream], byte_by_byte(stream), [stream[:12], stream[12:]]):
        decoder = SSEDecoder()
        events: list[SSEEvent] = []
        with pytest.raises(DecodeError) as info:
            for chunk in chunks:
                events += decoder.feed(chunk)
            decoder.close()
        assert info.value.offset == expected
        assert strip(events) == [ev("ok")]


def test_invalid_utf8_in_comment_is_an_error() -> None:
    """The whole stream must be UTF-8, comments included."""
    with pytest.raises(DecodeError) as info:
        decode(b": \xff\ndata: x\n\n")
    assert info.value.offset == 2


def test_events_before_an_error_are_delivered_then_error_is_raised() -> None:
    """Events completed before a bad byte in the same chunk are returned; the next call raises."""
    decoder = SSEDecoder()
    events = decoder.feed(b"data: a\n\ndata: b\n\ndata: \xff\n\n")
    assert strip(events) == [ev("a"), ev("b")]
    with pytest.raises(DecodeError) as info:
        decoder.feed(b"data: c\n\n")
    assert info.value.offset == 24
    with pytest.raises(DecodeError):  # errors are sticky
        decoder.close()


# --- end of stream --------------------------------------------------------------


def test_final_event_without_blank_line_is_an_error_by_default() -> None:
    """A stream ending inside an event raises DecodeError from close(), at the event's start."""
    decoder = SSEDecoder()
    assert strip(decoder.feed(b"data: a\n\ndata: b\n")) == [ev("a")]
    with pytest.raises(DecodeError, match="inside an SSE event") as info:
        decoder.close()
    assert info.value.offset == 9


def test_truncation_offset_skips_leading_blank_lines() -> None:
    """The truncation error points at the unfinished event's first line, not at blank lines."""
    with pytest.raises(DecodeError) as info:
        decode(b"\n\ndata: b")
    assert info.value.offset == 2


def test_incomplete_line_at_end_is_an_error() -> None:
    """A stream ending in the middle of a line raises DecodeError from close()."""
    for tail in (b"data: b", b": comm", b"x"):
        with pytest.raises(DecodeError):
            decode(b"data: a\n\n" + tail)


def test_lenient_end_discards_the_unfinished_event() -> None:
    """With strict_end=False an unfinished final event is silently discarded."""
    assert strip(decode(b"data: a\n\ndata: b\n", strict_end=False)) == [ev("a")]
    assert strip(decode(b"data: a\n\ndata: b", strict_end=False)) == [ev("a")]


def test_complete_lines_without_data_end_cleanly() -> None:
    """A stream ending after complete comment or id lines (nothing to dispatch) is not truncated."""
    assert strip(decode(b"data: a\n\n: bye\n")) == [ev("a")]
    decoder = SSEDecoder()
    decoder.feed(b"retry: 99\n")
    assert decoder.close() == []
    assert decoder.retry == 99


def test_close_is_idempotent_and_feed_after_close_is_usage_error() -> None:
    """close() may be repeated; feed() after close() is the caller's error."""
    decoder = SSEDecoder()
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(UsageError):
        decoder.feed(b"data: x\n\n")


def test_empty_chunks_are_harmless() -> None:
    """Empty chunks change nothing."""
    assert strip(feed_all([b"", b"data: a", b"", b"\n\n", b""])) == [ev("a")]


def test_accepts_bytearray_and_memoryview() -> None:
    """Chunks may be any bytes-like object."""
    assert strip(feed_all([bytearray(b"data: a\n"), memoryview(b"\n")])) == [ev("a")]


# --- size limit -----------------------------------------------------------------


def test_limit_is_inclusive() -> None:
    """An event of exactly max_event_bytes passes; one byte more is a DecodeError."""
    limit = 100
    exact = b"data: " + b"x" * (limit - 6)
    assert len(decode(exact + b"\n\n", max_event_bytes=limit)) == 1
    assert len(feed_all(byte_by_byte(exact + b"\r\n\r\n"), max_event_bytes=limit)) == 1
    with pytest.raises(DecodeError, match="max_event_bytes") as info:
        decode(b"data: a\n\n" + exact + b"x\n\n", max_event_bytes=limit)
    assert info.value.offset == 9


def test_limit_counts_all_lines_of_the_event() -> None:
    """The limit applies to the whole event, comments and line ends between its lines included."""
    block = b": c\ndata: a\ndata: b"  # 19 bytes
    assert len(decode(block + b"\n\n", max_event_bytes=19)) == 1
    with pytest.raises(DecodeError):
        decode(block + b"\n\n", max_event_bytes=18)
    with pytest.raises(DecodeError):
        decode(block.replace(b"\n", b"\r") + b"\n\r\n", max_event_bytes=18)
    assert len(decode(block.replace(b"\n", b"\r") + b"\n\r\n", max_event_bytes=19)) == 1


def test_oversized_event_fails_before_buffering_more() -> None:
    """Feeding an endless event, the buffer never exceeds the limit and DecodeError comes."""
    limit = 1000
    decoder = SSEDecoder(max_event_bytes=limit)
    decoder.feed(b"data: ")
    with pytest.raises(DecodeError):
        for _ in range(10_000):
            decoder.feed(b"x" * 7)
            assert decoder.buffered <= limit
    assert decoder.buffered == 0


@settings(max_examples=50)
@given(st.data())
def test_buffer_bounded_by_limit_plus_one_chunk(data: st.DataObject) -> None:
    """Whatever the chunking, the buffer stays within limit plus one chunk until the error."""
    limit = data.draw(st.integers(min_value=8, max_value=300), label="limit")
    line = b"data: " + b"y" * 20 + data.draw(st.sampled_from([b"\n", b"\r", b"\r\n"]))
    stream = b"data: ok\n\n" + line * (limit // 10 + 10) + b"\n"
    decoder = SSEDecoder(max_event_bytes=limit)
    events: list[SSEEvent] = []
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40), label="cuts")
    with pytest.raises(DecodeError) as info:
        for chunk in split_at(stream, cuts):
            events += decoder.feed(chunk)
            assert decoder.buffered <= limit + len(chunk)
        decoder.close()
    assert info.value.offset == 10
    assert strip(events) == [ev("ok")]


def test_invalid_limit_is_usage_error() -> None:
    """A non-positive limit is refused."""
    with pytest.raises(UsageError):
        SSEDecoder(max_event_bytes=0)


# --- encode_sse -----------------------------------------------------------------


def test_encode_single_line() -> None:
    """One line of data becomes one data line and a blank line."""
    assert encode_sse('{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_sse(b'{"a":1}') == b'data: {"a":1}\n\n'


def test_encode_multi_line_and_fields() -> None:
    """Multi-line data becomes several data lines; event, id and retry come first."""
    encoded = encode_sse("a\r\nb\rc\n", event="ev", id="7", retry=100)
    assert encoded == b"event: ev\nid: 7\nretry: 100\ndata: a\ndata: b\ndata: c\ndata: \n\n"
    assert strip(decode(encoded)) == [ev("a\nb\nc\n", "ev", "7", 100)]
    assert encode_sse(b"x\ny") == b"data: x\ndata: y\n\n"


def test_encode_empty_data() -> None:
    """Empty data still makes an event."""
    assert strip(decode(encode_sse(""))) == [ev("")]


def test_encode_empty_id_resets() -> None:
    """An empty id is written, since it resets the last event ID."""
    assert encode_sse("x", id="") == b"id: \ndata: x\n\n"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "a\nb"},
        {"event": "a\rb"},
        {"id": "a\nb"},
        {"id": "a\0b"},
        {"retry": -1},
        {"retry": True},
        {"id": "\ud800"},
    ],
)
def test_encode_rejects_fields_that_would_break_framing(kwargs: dict[str, object]) -> None:
    """Fields with line breaks, an id with NUL and a negative retry are the caller's error."""
    with pytest.raises(UsageError):
        encode_sse("x", **kwargs)  # type: ignore[arg-type]
    assert issubclass(UsageError, AgentProtoError)


def test_encode_rejects_lone_surrogate_data() -> None:
    """Text that is not encodable as UTF-8 is the caller's error, not a UnicodeError."""
    with pytest.raises(UsageError):
        encode_sse("\udc80")


# --- property tests ---------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_field_text = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=8
)
_id_text = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\0"), max_size=6
)
_data_text = (
    st.lists(
        st.sampled_from(["a", "é", "😀", "日", " ", ":", "\n", "\r", "\r\n", "\u2028", "{", '"']),
        max_size=10,
    ).map("".join)
    | _text
)

_block = st.one_of(
    st.tuples(
        st.just("event"),
        _data_text,
        st.none() | _field_text,
        st.none() | _id_text,
        st.none() | st.integers(0, 10**6),
        st.lists(_field_text, max_size=2),
    ),
    st.tuples(st.just("id"), _id_text),
    st.tuples(st.just("comment"), _field_text),
    st.tuples(st.just("blank")),
)


@attrs.frozen
class _Stream:
    data: bytes
    events: list[SSEEvent]


@st.composite
def streams(draw: st.DrawFn) -> _Stream:
    """A random valid stream and the events a browser would dispatch from it."""
    out = bytearray()
    events: list[SSEEvent] = []
    last_id: str | None = None
    previous_end = b"\n"

    def put(line: str) -> None:
        nonlocal previous_end
        ends = [b"\n", b"\r", b"\r\n"]
        if not line and previous_end == b"\r":
            ends.remove(b"\n")  # CR then LF would be one line end, not a blank line
        end = draw(st.sampled_from(ends))
        out.extend(line.encode() + end)
        previous_end = end

    def field(name: str, value: str) -> str:
        if value.startswith(" ") or draw(st.booleans()):
            return f"{name}: {value}"
        return f"{name}:{value}"

    if draw(st.booleans()):
        out.extend(BOM)
    for block in draw(st.lists(_block, max_size=6)):
        start = len(out)
        if block[0] == "event":
            _, data, event, ident, retry, comments = block
            lines = [field("data", part) for part in re.split(r"\r\n|\r|\n", data)]
            extra = [":" + text for text in comments]
            if event is not None:
                extra.append(field("event", event))
            if ident is not None:
                extra.append(field("id", ident))
                last_id = ident
            if retry is not None:
                extra.append(f"retry: {retry}")
            for line in extra:
                lines.insert(draw(st.integers(0, len(lines))), line)
            for line in lines:
                put(line)
            put("")
            joined = "\n".join(re.split(r"\r\n|\r|\n", data))
            events.append(
                SSEEvent(data=joined, event=event or None, id=last_id, retry=retry, offset=start)
            )
        elif block[0] == "id":
            put(field("id", block[1]))
            put("")
            last_id = block[1]
        elif block[0] == "comment":
            put(":" + block[1])
            put("")
        else:
            put("")
    return _Stream(bytes(out), events)


@given(streams())
def test_stream_decodes_to_the_events_it_encodes(stream: _Stream) -> None:
    """A random stream (BOM, comments, CR/LF/CRLF, non-ASCII) decodes to its events, offsets too."""
    assert decode(stream.data) == stream.events


@given(streams())
def test_byte_by_byte_equals_whole(stream: _Stream) -> None:
    """Feeding one byte at a time yields exactly the events of feeding the whole stream."""
    assert feed_all(byte_by_byte(stream.data)) == stream.events


@given(streams(), st.lists(st.integers(0, 2000), max_size=20))
def test_random_chunks_equal_whole(stream: _Stream, cuts: list[int]) -> None:
    """Feeding random chunk splits yields exactly the events of feeding the whole stream."""
    cuts = [cut % (len(stream.data) + 1) for cut in cuts]
    assert feed_all(split_at(stream.data, cuts)) == stream.events


@given(
    st.lists(
        st.tuples(_text, st.none() | _field_text, st.none() | _id_text, st.none() | st.integers(0)),
        max_size=5,
    ),
    st.lists(st.integers(0, 2000), max_size=10),
)
def test_encode_sse_round_trips(
    items: list[tuple[str, str | None, str | None, int | None]], cuts: list[int]
) -> None:
    """encode_sse output decodes back to the same events, data line ends normalised to LF."""
    stream = b"".join(
        encode_sse(data, event=event, id=ident, retry=retry) for data, event, ident, retry in items
    )
    expected = []
    last_id = None
    for data, event, ident, retry in items:
        last_id = ident if ident is not None else last_id
        normalised = "\n".join(re.split(r"\r\n|\r|\n", data))
        expected.append(ev(normalised, event or None, last_id, retry))
    cuts = [cut % (len(stream) + 1) for cut in cuts]
    assert strip(feed_all(split_at(stream, cuts))) == expected


@given(streams(), st.data())
def test_invalid_byte_offset_is_exact_for_any_split(stream: _Stream, data: st.DataObject) -> None:
    """An invalid byte anywhere is reported at its exact offset, however the input is split."""
    position = data.draw(st.integers(0, len(stream.data)), label="position")
    # Insert only between characters: never inside a multi-byte sequence.
    while position < len(stream.data) and stream.data[position] & 0xC0 == 0x80:
        position += 1
    corrupt = stream.data[:position] + b"\xff" + stream.data[position:] + b"\n\n"
    cuts = data.draw(st.lists(st.integers(0, len(corrupt)), max_size=10), label="cuts")
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    with pytest.raises(DecodeError) as info:
        for chunk in split_at(corrupt, cuts):
            events += decoder.feed(chunk)
        decoder.close()
    assert info.value.offset == position
    # Exactly the events whose blank line ends before the bad byte come out first.
    assert events == SSEDecoder().feed(corrupt[:position])


# --- feed_data: the data first, the events when asked for ---------------------------


def _run(data: bytes, cuts: Sequence[int], lazy: bool, **options: object) -> list[object]:
    """Per call, what it gave (events with offsets, and their data) or the error it raised."""
    decoder = SSEDecoder(**options)  # type: ignore[arg-type]
    out: list[object] = []
    for chunk in split_at(data, cuts):
        try:
            if lazy:
                texts, events = decoder.feed_data(chunk)
                out.append((texts, events()))
            else:
                got = decoder.feed(chunk)
                out.append(([e.data for e in got], got))
        except DecodeError as exc:
            out.append(("error", str(exc), exc.offset))
    return out


_BLOCKS = st.sampled_from(
    [
        b'data: {"a":1}\n\n',
        b"data: \xc3\xa9t\xc3\xa9\n\n",
        b"data: x\ndata: y\n\n",
        b"event: e\ndata: z\n\n",
        b"id: 7\n\n",
        b": keep-alive\n\n",
        b"data: crlf\r\n\r\n",
        b"data: " + b"L" * 40 + b"\n\n",
        b"data: bad \xff\n\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCKS, max_size=12), st.lists(st.integers(0, 400), max_size=6))
def test_feed_data_gives_what_feed_gives(blocks: list[bytes], cuts: list[int]) -> None:
    """Data, events, offsets and errors (and the call raising them) are those of feed."""
    data = b"".join(blocks)
    cuts = [c for c in cuts if c <= len(data)]
    for limit in (30, 10_000):
        assert _run(data, cuts, True, max_event_bytes=limit) == _run(
            data, cuts, False, max_event_bytes=limit
        )


def test_feed_data_builds_common_events_only_when_asked() -> None:
    """A chunk of lone data lines gives its data at once; the events come from the function."""
    decoder = SSEDecoder()
    texts, events = decoder.feed_data(b"data: a\n\ndata: b\n\n")
    assert texts == ["a", "b"]
    assert events() == [SSEEvent("a", None, None, None, 0), SSEEvent("b", None, None, None, 9)]


def test_feed_data_defers_an_oversized_event_after_common_ones() -> None:
    """Events completed before an oversized one are returned; the next call raises."""
    decoder = SSEDecoder(max_event_bytes=20)
    texts, _ = decoder.feed_data(b"data: a\n\ndata: " + b"x" * 40)
    assert texts == ["a"]
    with pytest.raises(DecodeError, match="max_event_bytes"):
        decoder.feed_data(b"")
