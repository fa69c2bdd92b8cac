"""JSON-RPC 2.0 over newline-delimited JSON: framing, shape checks, encoding."""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.errors import DecodeError, SchemaError, UsageError
from agentproto.acp._protocol import jsonrpc as _jsonrpc
from agentproto.acp._protocol.jsonrpc import (
    InvalidMessage,
    Message,
    MessageReader,
    Notification,
    Request,
    Response,
    encode_batch,
    encode_message,
    iter_messages,
    parse_message,
    read_message,
    read_messages,
)

# --- strategies --------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
ids = st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5)
methods = st.text(max_size=12)
params = (
    st.none()
    | st.lists(json_values, max_size=3)
    | st.dictionaries(st.text(max_size=4), json_values, max_size=3)
)
errors = st.fixed_dictionaries(
    {"code": st.integers(-(2**31), 2**31 - 1), "message": st.text(max_size=8)},
    optional={"data": json_values},
)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Request, ids, methods, params),
    st.builds(Notification, methods, params),
    st.builds(Response, ids, json_values),
    st.builds(Response, ids | st.none(), st.none(), errors),
)


def events(reader: MessageReader, chunks: Iterable[bytes]) -> list[Any]:
    """Everything a tolerant caller sees: messages with their lines, and errors.

    After an error the caller calls again (``feed(b"")`` or ``close()``) while the reader has
    something pending, as the documentation allows.
    """
    seen: list[Any] = []

    def call(first: Callable[[], list[Message]], again: Callable[[], list[Message]]) -> None:
        step = first
        while True:
            try:
                seen.extend((message, message.line) for message in step())
            except DecodeError as err:
                seen.append(("error", err.line, err.offset, str(err)))
            step = again
            if not reader.pending:
                return

    for chunk in chunks:
        call(functools.partial(reader.feed, chunk), functools.partial(reader.feed, b""))
    call(reader.close, reader.close)
    return seen


def split(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets."""
    points = sorted({0, len(data), *(min(cut, len(data)) for cut in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}'
NOTIFICATION = b'{"jsonrpc":"2.0","method":"session/update","params":{"update":{"x":"\xc3\xa9"}}}'
RESULT = b'{"jsonrpc":"2.0","id":"r-1","result":{"stopReason":"end_turn"}}'
ERROR = b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}'

# --- parse_message -----------------------------------------------------------------------------


def test_parse_each_kind() -> None:
    """A message with method and id is a request, without id a notification, else a response."""
    assert parse_message(orjson.loads(REQUEST)) == Request(1, "session/prompt", {"sessionId": "s"})
    assert parse_message(orjson.loads(NOTIFICATION)) == Notification(
        "session/update", {"update": {"x": "é"}}
    )
    assert parse_message(orjson.loads(RESULT)) == Response("r-1", {"stopReason": "end_turn"})
    assert parse_message(orjson.loads(ERROR)) == Response(
        2, error={"code": -32601, "message": "Method not found"}
    )


def test_parse_records_line() -> None:
    """``parse_message`` records the line it is given on the message."""
    assert parse_message({"jsonrpc": "2.0", "method": "m"}, line=7).line == 7
    assert parse_message({"jsonrpc": "2.0", "method": "m"}).line == 0


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            {"jsonrpc": "2.0", "method": "m", "params": [1, 2]},
            Notification("m", [1, 2]),
            id="list-params",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "method": "m", "params": None},
            Notification("m"),
            id="null-params-is-absent",
        ),
        pytest.param({"jsonrpc": "2.0", "id": 0, "method": ""}, Request(0, ""), id="no-params"),
        pytest.param(
            {"jsonrpc": "2.0", "id": "", "result": None}, Response("", None), id="null-result"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
            Response(None, error={"code": -32700, "message": "Parse error"}),
            id="error-with-null-id",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "data": None, "x": 1}},
            Response(1, error={"code": 1, "message": "m", "data": None, "x": 1}),
            id="error-kept-whole",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "method": "m", "extra": 1},
            Notification("m"),
            id="unknown-member-ignored",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": -(2**63), "method": "m"},
            Request(-(2**63), "m"),
            id="int64-min",
        ),
    ],
)
def test_parse_accepts(obj: Any, expected: Message) -> None:
    """Shapes JSON-RPC 2.0 and ACP v2 allow are accepted."""
    assert parse_message(obj) == expected


def test_parse_keeps_values_as_given() -> None:
    """``params``, ``result`` and ``error`` are the decoded objects themselves, not copies."""
    body = {"a": [1]}
    notification = parse_message({"jsonrpc": "2.0", "method": "m", "params": body})
    assert isinstance(notification, Notification)
    assert notification.params is body
    response = parse_message({"jsonrpc": "2.0", "id": 1, "result": body})
    assert isinstance(response, Response)
    assert response.result is body


SHAPE_VIOLATIONS = [
    pytest.param([], "type", "", id="array"),
    pytest.param("x", "type", "", id="string"),
    pytest.param(None, "type", "", id="null"),
    pytest.param({"method": "m"}, "required", "", id="missing-jsonrpc"),
    pytest.param({"jsonrpc": "1.0", "method": "m"}, "const", "/jsonrpc", id="jsonrpc-1.0"),
    pytest.param({"jsonrpc": 2.0, "method": "m"}, "const", "/jsonrpc", id="jsonrpc-number"),
    pytest.param({"jsonrpc": None, "method": "m"}, "const", "/jsonrpc", id="jsonrpc-null"),
    pytest.param({"jsonrpc": "2.0", "method": 1}, "type", "/method", id="method-number"),
    pytest.param({"jsonrpc": "2.0", "method": None, "id": 1}, "type", "/method", id="method-null"),
    pytest.param({"jsonrpc": "2.0", "method": "m", "id": True}, "type", "/id", id="id-bool"),
    pytest.param({"jsonrpc": "2.0", "method": "m", "id": 1.0}, "type", "/id", id="id-float"),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "id": None}, "type", "/id", id="request-id-null"
    ),
    pytest.param({"jsonrpc": "2.0", "method": "m", "id": [1]}, "type", "/id", id="id-array"),
    pytest.param({"jsonrpc": "2.0", "method": "m", "id": {}}, "type", "/id", id="id-object"),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "id": 2**63}, "format", "/id", id="id-over-int64"
    ),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "params": "x"}, "type", "/params", id="params-string"
    ),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "params": 1}, "type", "/params", id="params-number"
    ),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "params": False}, "type", "/params", id="params-bool"
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "method": "m", "result": 1}, "oneOf", "", id="method-and-result"
    ),
    pytest.param(
        {"jsonrpc": "2.0", "method": "m", "error": {}}, "oneOf", "", id="method-and-error"
    ),
    pytest.param({"jsonrpc": "2.0", "id": 1}, "required", "", id="no-method-no-result"),
    pytest.param({"jsonrpc": "2.0"}, "required", "", id="only-jsonrpc"),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "m"}},
        "oneOf",
        "",
        id="result-and-error",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "result": 1, "error": None},
        "oneOf",
        "",
        id="result-and-null-error",
    ),
    pytest.param({"jsonrpc": "2.0", "result": 1}, "required", "", id="response-without-id"),
    pytest.param(
        {"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}},
        "required",
        "",
        id="error-without-id",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": None, "result": 1}, "type", "/id", id="result-with-null-id"
    ),
    pytest.param({"jsonrpc": "2.0", "id": True, "result": 1}, "type", "/id", id="response-id-bool"),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "m"}},
        "type",
        "/id",
        id="error-id-float",
    ),
    pytest.param({"jsonrpc": "2.0", "id": 1, "error": None}, "type", "/error", id="error-null"),
    pytest.param({"jsonrpc": "2.0", "id": 1, "error": "boom"}, "type", "/error", id="error-string"),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"message": "m"}},
        "required",
        "/error",
        id="error-no-code",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1}},
        "required",
        "/error",
        id="error-no-message",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "m"}},
        "type",
        "/error/code",
        id="code-string",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
        "type",
        "/error/code",
        id="code-bool",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600.0, "message": "m"}},
        "type",
        "/error/code",
        id="code-float",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 2**31, "message": "m"}},
        "format",
        "/error/code",
        id="code-over-int32",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": None}},
        "type",
        "/error/message",
        id="message-null",
    ),
]


@pytest.mark.parametrize(("obj", "keyword", "location"), SHAPE_VIOLATIONS)
def test_parse_rejects_shape_violation(obj: Any, keyword: str, location: str) -> None:
    """Every JSON-RPC shape violation is a SchemaError naming the keyword and JSON Pointer."""
    with pytest.raises(SchemaError) as info:
        parse_message(obj)
    assert (info.value.keyword, info.value.location) == (keyword, location)


@pytest.mark.parametrize(("obj", "keyword", "location"), SHAPE_VIOLATIONS)
def test_reader_reports_shape_violation_with_line(obj: Any, keyword: str, location: str) -> None:
    """On a stream, a shape violation is a DecodeError for its line, chained to the SchemaError."""
    if isinstance(obj, list):
        obj = [obj] if obj else obj  # on a line, an array is a batch: wrap it as a member
        keyword, location = ("minItems", "") if not obj else (keyword, "/0" + location)
    data = REQUEST + b"\n\n" + orjson.dumps(obj) + b"\n"
    reader = MessageReader()
    assert reader.feed(data) == [Request(1, "session/prompt", {"sessionId": "s"})]
    with pytest.raises(DecodeError) as info:
        reader.close()
    err = info.value
    assert err.line == 3
    assert "line 3" in str(err)
    assert keyword in str(err)
    assert isinstance(err.__cause__, SchemaError)
    assert (err.__cause__.keyword, err.__cause__.location) == (keyword, location)


@settings(max_examples=300)
@given(json_values)
def test_parse_raises_only_schema_errors(obj: Any) -> None:
    """Any JSON value either parses or raises SchemaError, never another exception."""
    with contextlib.suppress(SchemaError):
        parse_message(obj)


@settings(max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
        st.sampled_from(["2.0", 1, None, True, 1.5, "m", [], {}, {"code": 1, "message": "m"}]),
    )
)
def test_parse_of_near_messages_raises_only_schema_errors(obj: dict[str, Any]) -> None:
    """Objects built from message members parse or raise SchemaError, and parse back the same."""
    try:
        message = parse_message(obj)
    except SchemaError:
        return
    assert parse_message(orjson.loads(encode_message(message))) == message


# --- Message classes ---------------------------------------------------------------------------


def test_line_is_not_part_of_equality() -> None:
    """Two messages that differ only in their source line are equal and hash alike."""
    assert Request(1, "m", line=3) == Request(1, "m")
    assert hash(Notification("m", line=1)) == hash(Notification("m", line=2))
    assert Response(1, 2, line=5) == Response(1, 2)
    assert Request(1, "m") != Request(2, "m")


def test_messages_are_frozen() -> None:
    """Messages are immutable values."""
    message = Request(1, "m")
    with pytest.raises(AttributeError):
        message.id = 2  # type: ignore[misc]


# --- encode_message ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "line"),
    [
        pytest.param(
            Request(1, "m", {"a": 1}),
            b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}\n',
            id="request",
        ),
        pytest.param(
            Request("x", "m"), b'{"jsonrpc":"2.0","id":"x","method":"m"}\n', id="request-no-params"
        ),
        pytest.param(
            Notification("n", [1]),
            b'{"jsonrpc":"2.0","method":"n","params":[1]}\n',
            id="notification",
        ),
        pytest.param(
            Notification("n"), b'{"jsonrpc":"2.0","method":"n"}\n', id="notification-no-params"
        ),
        pytest.param(Response(1), b'{"jsonrpc":"2.0","id":1,"result":null}\n', id="null-result"),
        pytest.param(
            Response(1, {"ok": True}),
            b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n',
            id="result",
        ),
        pytest.param(
            Response(None, error={"code": -32700, "message": "Parse error"}),
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n',
            id="error",
        ),
    ],
)
def test_encode_is_compact_and_ordered(message: Message, line: bytes) -> None:
    """A message encodes as one compact line: jsonrpc, id, method, params or result/error."""
    assert encode_message(message) == line
    [decoded] = read_messages(line)
    assert decoded == message
    assert decoded.line == 1


@pytest.mark.parametrize("line", [REQUEST, NOTIFICATION, RESULT, ERROR])
def test_canonical_line_round_trips_byte_for_byte(line: bytes) -> None:
    """A line already in canonical form decodes and encodes back to the same bytes."""
    [message] = read_messages(line + b"\n")
    assert encode_message(message) == line + b"\n"


@settings(max_examples=300)
@given(st.lists(messages, max_size=6))
def test_round_trip(batch: list[Message]) -> None:
    """Encoding messages and reading the bytes back gives the same messages, one per line."""
    data = b"".join(encode_message(message) for message in batch)
    decoded = read_messages(data)
    assert decoded == batch
    assert [message.line for message in decoded] == list(range(1, len(batch) + 1))


@pytest.mark.parametrize(
    ("message", "keyword"),
    [
        pytest.param(Response(1, 1, {"code": 1, "message": "m"}), "oneOf", id="result-and-error"),
        pytest.param(Request(True, "m"), "type", id="bool-id"),
        pytest.param(Request(1, "m", "x"), "type", id="string-params"),
        pytest.param(Notification(1), "type", id="method-number"),  # type: ignore[arg-type]
        pytest.param(Response(None, 1), "type", id="result-with-null-id"),
        pytest.param(Response(1, error={"code": 1}), "required", id="error-without-message"),
        pytest.param(Request(1, "m", {"x": {1, 2}}), "type", id="not-json"),
        pytest.param(Request(1, "m", {1: 2}), "type", id="non-string-key"),
    ],
)
def test_encode_rejects_what_parse_would_reject(message: Message, keyword: str) -> None:
    """Encoding never emits a line the reader would reject; it raises SchemaError instead."""
    with pytest.raises(SchemaError) as info:
        encode_message(message)
    assert info.value.keyword == keyword


def test_encode_rejects_non_messages() -> None:
    """Encoding something that is not a message is the caller's mistake: UsageError."""
    with pytest.raises(UsageError):
        encode_message({"jsonrpc": "2.0", "method": "m"})  # type: ignore[arg-type]


# --- framing -----------------------------------------------------------------------------------


def test_messages_carry_their_line_numbers() -> None:
    """Each message records the 1-based line it came from; blank lines count."""
    data = REQUEST + b"\n\n   \n" + NOTIFICATION + b"\n\t\n" + RESULT + b"\n"
    assert [message.line for message in read_messages(data)] == [1, 4, 6]


def test_crlf_line_endings() -> None:
    """A carriage return before the newline is dropped; blank CRLF lines are skipped."""
    data = REQUEST + b"\r\n\r\n" + NOTIFICATION + b"\r\n" + ERROR + b"\r\n"
    assert read_messages(data) == read_messages(data.replace(b"\r\n", b"\n"))
    assert [message.line for message in read_messages(data)] == [1, 3, 4]


def test_last_line_without_newline_is_read_on_close() -> None:
    """A final line without newline waits in the reader until close()."""
    reader = MessageReader()
    assert reader.feed(REQUEST) == []
    assert reader.feed(b"\n" + RESULT) == [Request(1, "session/prompt", {"sessionId": "s"})]
    assert reader.close() == [Response("r-1", {"stopReason": "end_turn"})]
    assert reader.close() == []


def test_empty_and_blank_input() -> None:
    """Input with no messages, blank lines only or no bytes at all, yields nothing."""
    assert read_messages(b"") == []
    assert read_messages(b"\n\r\n \t \n  ") == []


def test_feed_after_close_is_a_usage_error() -> None:
    """Feeding a closed reader is the caller's mistake."""
    reader = MessageReader()
    reader.close()
    with pytest.raises(UsageError):
        reader.feed(b"")


def test_byte_by_byte_equals_whole() -> None:
    """Feeding one byte at a time gives the same messages as feeding everything at once."""
    data = REQUEST + b"\r\n" + NOTIFICATION + b"\n\n[" + RESULT + b"," + ERROR + b"]\n"
    whole = events(MessageReader(), [data])
    assert events(MessageReader(), [data[i : i + 1] for i in range(len(data))]) == whole
    assert [item[1] for item in whole] == [1, 2, 4, 4]


STREAM_WITH_ERRORS = b"".join(
    [
        REQUEST + b"\r\n",
        b"\n",
        b'{"jsonrpc":"2.0","method":"\xc3\xa9",}\n',  # bad JSON after a multi-byte character
        NOTIFICATION + b"\n",
        b'{"jsonrpc":"2.0","method":"\xff"}\n',  # bad UTF-8
        b"[]\n",  # empty batch
        b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":true,"method":"b"}]\n',
        b'"just a string"\n',
        b"[" + RESULT + b"," + ERROR + b"]\r\n",
        b'{"jsonrpc":"1.0","method":"old"}',
    ]
)


@settings(max_examples=300)
@given(st.lists(st.integers(0, len(STREAM_WITH_ERRORS)), max_size=12))
def test_random_chunks_equal_whole(cuts: list[int]) -> None:
    """Feeding a stream in random chunks gives the same messages and errors as feeding it whole."""
    whole = events(MessageReader(), [STREAM_WITH_ERRORS])
    assert events(MessageReader(), split(STREAM_WITH_ERRORS, cuts)) == whole


@settings(max_examples=300)
@given(batch=st.lists(messages, max_size=5), data=st.data())
def test_random_chunks_of_random_messages(batch: list[Message], data: st.DataObject) -> None:
    """For any messages, any chunking of their lines yields them, each with its line number."""
    stream = b"".join(encode_message(message).replace(b"\n", b"\r\n") for message in batch)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    assert events(MessageReader(), split(stream, cuts)) == [
        (message, line) for line, message in enumerate(batch, start=1)
    ]


def test_errors_keep_stream_order_and_reader_continues() -> None:
    """Messages before a bad line come first, then its error, then reading goes on."""
    seen = events(MessageReader(), [STREAM_WITH_ERRORS])
    kinds = [item[0] if item[0] == "error" else type(item[0]).__name__ for item in seen]
    lines = [item[1] for item in seen]
    assert kinds == [
        "Request",
        "error",
        "Notification",
        "error",
        "error",
        "error",
        "error",
        "Response",
        "Response",
        "error",
    ]
    assert lines == [1, 3, 4, 5, 6, 7, 8, 9, 9, 10]


def test_error_after_messages_is_raised_by_the_next_call() -> None:
    """A call returns the messages before a bad line; the next call raises for that line."""
    reader = MessageReader()
    messages_first = reader.feed(REQUEST + b"\nnot json\n" + RESULT + b"\n")
    assert messages_first == [Request(1, "session/prompt", {"sessionId": "s"})]
    assert reader.pending
    with pytest.raises(DecodeError) as info:
        reader.feed(b"")
    assert info.value.line == 2
    assert reader.feed(b"") == [Response("r-1", {"stopReason": "end_turn"})]
    assert not reader.pending


def test_error_first_is_raised_at_once() -> None:
    """When the bad line comes first, the call that completes it raises."""
    reader = MessageReader()
    assert reader.feed(b"{") == []
    with pytest.raises(DecodeError) as info:
        reader.feed(b"\n" + REQUEST + b"\n")
    assert info.value.line == 1
    assert reader.feed(b"") == [Request(1, "session/prompt", {"sessionId": "s"})]


def test_invalid_json_names_line_and_byte_offset() -> None:
    """Invalid JSON is a DecodeError naming the line and the stream offset of the problem."""
    bad = b'{"jsonrpc": "\xc3\xa9\xc3\xa9", x}'
    data = REQUEST + b"\n" + bad + b"\n"
    with pytest.raises(DecodeError) as info:
        read_messages(data)
    assert info.value.line == 2
    assert info.value.offset == len(REQUEST) + 1 + bad.index(b"x")
    assert "line 2" in str(info.value)
    assert "invalid JSON" in str(info.value)


def test_invalid_utf8_names_line_and_byte_offset() -> None:
    """Bytes that are not UTF-8 are a DecodeError naming the line and the bad byte's offset."""
    bad = b'{"jsonrpc":"2.0","method":"caf\xc3"}'
    data = b"\n" + bad + b"\n"
    with pytest.raises(DecodeError) as info:
        read_messages(data)
    assert info.value.line == 2
    assert info.value.offset == 1 + bad.index(b"\xc3")
    assert "UTF-8" in str(info.value)


def test_utf8_character_split_across_chunks() -> None:
    """A multi-byte character split between two chunks is decoded once the line is complete."""
    reader = MessageReader()
    cut = NOTIFICATION.index(b"\xc3") + 1
    assert reader.feed(NOTIFICATION[:cut]) == []
    assert reader.feed(NOTIFICATION[cut:] + b"\n") == [
        Notification("session/update", {"update": {"x": "é"}})
    ]


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=20), max_size=6))
def test_arbitrary_bytes_raise_only_decode_errors(chunks: list[bytes]) -> None:
    """Whatever bytes arrive, the reader returns messages or raises DecodeError, nothing else."""
    events(MessageReader(), chunks)


def test_deeply_nested_json_is_a_decode_error() -> None:
    """JSON nested beyond the decoder's limit is a DecodeError, not a RecursionError."""
    with pytest.raises(DecodeError):
        read_messages(
            b'{"jsonrpc":"2.0","method":"m","params":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
        )


# --- batches -----------------------------------------------------------------------------------


def test_batch_members_come_out_in_order_with_the_line() -> None:
    """A JSON array on one line is a batch: its members come out in order, all with that line."""
    data = NOTIFICATION + b"\n[" + REQUEST + b"," + RESULT + b"," + ERROR + b"]\n"
    decoded = read_messages(data)
    assert [type(message) for message in decoded] == [Notification, Request, Response, Response]
    assert [message.line for message in decoded] == [1, 2, 2, 2]


def test_empty_batch_is_an_error() -> None:
    """An empty array is not a valid batch."""
    with pytest.raises(DecodeError) as info:
        read_messages(b"[]\n")
    assert info.value.line == 1
    assert "batch" in str(info.value)


def test_bad_batch_member_rejects_the_whole_line() -> None:
    """A batch with a bad member is rejected whole; the error names the member's index."""
    reader = MessageReader()
    with pytest.raises(DecodeError) as info:
        reader.feed(b"[" + REQUEST + b',{"jsonrpc":"2.0","method":"m","params":7}]\n')
    cause = info.value.__cause__
    assert isinstance(cause, SchemaError)
    assert (cause.keyword, cause.location) == ("type", "/1/params")
    assert "/1/params" in str(info.value)
    assert reader.close() == []


def test_nested_batch_is_rejected() -> None:
    """A batch member that is itself an array is not a message."""
    with pytest.raises(DecodeError) as info:
        read_messages(b"[[" + REQUEST + b"]]\n")
    cause = info.value.__cause__
    assert isinstance(cause, SchemaError)
    assert (cause.keyword, cause.location) == ("type", "/0")


def test_read_message_answers_each_value_without_raising() -> None:
    """``read_message`` returns the message, or an InvalidMessage with the error (its
    location under the member's) and the line; it never raises."""
    assert read_message(orjson.loads(REQUEST), line=3) == Request(
        1, "session/prompt", {"sessionId": "s"}
    )
    invalid = read_message(17, line=2, location="/4")
    assert isinstance(invalid, InvalidMessage) and invalid.id is None and invalid.line == 2
    assert (invalid.error.keyword, invalid.error.location) == ("type", "/4")
    error = invalid.decode_error(offset=9)
    assert (error.line, error.offset) == (2, 9) and error.__cause__ is invalid.error
    assert "/4" in str(error)


@pytest.mark.parametrize(
    ("value", "ident"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "m"}, 5),
        ({"jsonrpc": "2.0", "id": "x", "method": 7}, "x"),
        ({"jsonrpc": "2.0", "id": 3}, 3),  # neither a call nor a response: its id is read
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, None),  # not an id
        ({"jsonrpc": "2.0", "id": 2**63, "method": "m"}, None),  # beyond int64
        ({"jsonrpc": "2.0", "id": 1.0, "method": "m"}, None),
        ({"jsonrpc": "2.0", "method": 7}, None),
        ({"jsonrpc": "2.0", "id": 4, "result": 1, "error": {}}, None),  # shaped as a response
        ({"jsonrpc": "2.0", "id": 4, "error": {"code": "x"}}, None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "m"}], None),
        (None, None),
    ],
)
def test_an_invalid_message_carries_the_id_to_answer_it_with(value: Any, ident: Any) -> None:
    """The id of an invalid call is read when it is a valid id; a response's never is."""
    invalid = read_message(value)
    assert isinstance(invalid, InvalidMessage) and invalid.id == ident
    assert invalid == InvalidMessage.of(value, invalid.error)


def test_encode_batch_writes_one_array_line() -> None:
    """``encode_batch`` writes the members as ``encode_message`` does, in one array line that
    reads back as the same messages; an empty batch or a bad member is refused."""
    batch = [Request(1, "m", {"a": 1}), Notification("n"), Response("r", None)]
    data = encode_batch(batch)
    assert data.count(b"\n") == 1
    assert data == b"[" + b",".join(encode_message(m)[:-1] for m in batch) + b"]\n"
    assert read_messages(data) == batch
    with pytest.raises(SchemaError) as empty:
        encode_batch([])
    assert empty.value.keyword == "minItems"
    with pytest.raises(SchemaError):
        encode_batch([Request(True, "m")])  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        encode_batch([object()])  # type: ignore[list-item]


# --- iter_messages / read_messages -------------------------------------------------------------


def test_iter_messages_yields_messages_before_the_error() -> None:
    """``iter_messages`` yields every message before a bad line, then raises for it."""
    iterator = iter_messages([REQUEST + b"\n" + NOTIFICATION + b"\n{bad\n" + RESULT + b"\n"])
    assert next(iterator) == Request(1, "session/prompt", {"sessionId": "s"})
    assert next(iterator) == Notification("session/update", {"update": {"x": "é"}})
    with pytest.raises(DecodeError) as info:
        next(iterator)
    assert info.value.line == 3


def test_iter_messages_takes_lines_or_chunks() -> None:
    """``iter_messages`` accepts lines as read from a pipe and arbitrary chunks alike."""
    data = REQUEST + b"\n" + NOTIFICATION + b"\n" + RESULT
    by_line = list(iter_messages(data.splitlines(keepends=True)))
    by_chunk = list(iter_messages([data[:5], data[5:100], data[100:]]))
    assert by_line == by_chunk == read_messages(data)
    assert len(by_line) == 3


# --- public names ------------------------------------------------------------------------------


def test_public_names() -> None:
    """The module exports exactly its public API."""
    assert sorted(_jsonrpc.__all__) == [
        "InvalidMessage",
        "Message",
        "MessageReader",
        "Notification",
        "Request",
        "Response",
        "encode_batch",
        "encode_message",
        "iter_messages",
        "parse_message",
        "read_message",
        "read_messages",
    ]


# --- one JSON parser and line reader with AG-UI ------------------------------------------------


def _deep_params(depth: int) -> bytes:
    """A notification line whose whole document nests exactly ``depth`` levels."""
    inner = b"[" * (depth - 2) + b"]" * (depth - 2)
    return b'{"jsonrpc":"2.0","method":"m","params":{"a":' + inner + b"}}\n"


def test_big_integers_stay_exact() -> None:
    """Integers beyond 64 bits in params are read and written exactly (10**25 stays 10**25)."""
    line = b'{"jsonrpc":"2.0","method":"m","params":{"_meta":{"n":10000000000000000000000000}}}\n'
    [message] = read_messages(line)
    assert message == Notification("m", {"_meta": {"n": 10**25}})
    assert encode_message(message) == line
    [response] = read_messages(b'{"jsonrpc":"2.0","id":1,"result":[-100000000000000000000000]}\n')
    assert response == Response(1, [-(10**23)])


def test_depth_limit_is_the_one_agui_input_has() -> None:
    """The default depth limit is _core's: the limit passes, one more level is refused by name."""
    from agentproto._core.json.codec import DEFAULT_MAX_DEPTH
    from agentproto.agui import Consumer

    assert read_messages(_deep_params(DEFAULT_MAX_DEPTH))[0].method == "m"
    too_deep = _deep_params(DEFAULT_MAX_DEPTH + 1)
    with pytest.raises(DecodeError) as acp:
        read_messages(too_deep)
    assert f"deeper than {DEFAULT_MAX_DEPTH} levels" in str(acp.value)
    assert (acp.value.line, acp.value.offset) == (1, too_deep.index(b"[") + DEFAULT_MAX_DEPTH - 2)
    consumer = Consumer(transport="jsonl")
    with pytest.raises(DecodeError) as agui:
        consumer.feed_bytes(too_deep)
        consumer.close()
    assert str(agui.value) == str(acp.value)


def test_limits_are_configurable() -> None:
    """max_depth and max_line_bytes are the reader's to set; bad limits are usage errors."""
    reader = MessageReader(max_depth=3)
    with pytest.raises(DecodeError, match="deeper than 3 levels"):
        reader.feed(_deep_params(4))
    assert reader.feed(_deep_params(3))[0].method == "m"
    with pytest.raises(UsageError):
        MessageReader(max_depth=-1)
    with pytest.raises(UsageError):
        MessageReader(max_line_bytes=0)


def test_a_line_over_the_limit_is_an_error_and_reading_goes_on() -> None:
    """A line longer than max_line_bytes is refused by number; the next line is read."""
    reader = MessageReader(max_line_bytes=len(REQUEST))
    long_line = b'{"jsonrpc":"2.0","method":"m","params":["' + b"x" * 200 + b'"]}\n'
    seen = events(reader, [REQUEST + b"\n" + long_line[:50], long_line[50:] + RESULT + b"\n"])
    assert seen[0] == (Request(1, "session/prompt", {"sessionId": "s"}), 1)
    assert seen[1][:3] == ("error", 2, len(REQUEST) + 1)
    assert "max_line_bytes" in seen[1][3]
    assert seen[2] == (Response("r-1", {"stopReason": "end_turn"}), 3)


def test_steps_for_a_folding_consumer() -> None:
    """push/end, documents, messages and notification_params read what feed/close read."""
    data = NOTIFICATION + b"\n\n[" + REQUEST + b"]\n" + b"not json\n" + RESULT
    reader = MessageReader()
    reader.push(data)
    reader.end()
    assert reader.closed
    taken: list[Any] = []
    with pytest.raises(DecodeError) as info:
        for value, line, offset in reader.documents():
            taken.append((line, offset, reader.messages(value, line, offset)))
    assert info.value.line == 4
    for value, line, offset in reader.documents():
        taken.append((line, offset, reader.messages(value, line, offset)))
    assert [(line, offset) for line, offset, _ in taken] == [
        (1, 0),
        (3, len(NOTIFICATION) + 2),
        (5, data.index(RESULT)),
    ]
    assert [messages for _, _, messages in taken] == [
        read_messages(NOTIFICATION),
        read_messages(REQUEST),
        read_messages(RESULT),
    ]
    with pytest.raises(UsageError):
        reader.push(b"")


@pytest.mark.parametrize(
    ("obj", "params"),
    [
        ({"jsonrpc": "2.0", "method": "m", "params": {"a": 1}}, {"a": 1}),
        ({"jsonrpc": "2.0", "method": "other", "params": {}}, None),
        ({"jsonrpc": "2.0", "method": "m", "params": [1]}, None),
        ({"jsonrpc": "2.0", "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}, None),
        ({"jsonrpc": "1.0", "method": "m", "params": {}}, None),
        ({"jsonrpc": "2.0", "method": "m", "params": {}, "result": 1}, None),
        ([{"jsonrpc": "2.0", "method": "m", "params": {}}], None),
        ("m", None),
    ],
)
def test_notification_params_recognises_only_the_plain_notification(
    obj: Any, params: dict[str, Any] | None
) -> None:
    """The recogniser answers exactly when the value is Notification(method, object params)."""
    assert MessageReader.notification_params(obj, "m") == params
    if params is not None:
        assert MessageReader.messages(obj, 1) == [Notification("m", params)]


def test_shape_errors_carry_the_line_offset() -> None:
    """A line that is JSON but not JSON-RPC is located by its line and its offset."""
    with pytest.raises(DecodeError) as info:
        read_messages(REQUEST + b"\n" + b'{"jsonrpc":"1.0","method":"x"}\n')
    assert (info.value.line, info.value.offset) == (2, len(REQUEST) + 1)
