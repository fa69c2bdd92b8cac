"""Recorded AG-UI streams: detect a recording's format and fold it, sans I/O.

Theory of operation. A recording is a whole byte string whose format is read
from its content: a conformance stream file (a JSON object with ``stream``,
and maybe ``input``), a JSON array of events, JSON Lines, or Server-Sent
Events. :func:`detect_recording` parses array and conformance files with the
SDK's one JSON parser (:mod:`agentproto._core.json.codec`), as the streams are:
integers of any size stay exact, and an event may nest
:data:`~agentproto._core.json.codec.DEFAULT_MAX_DEPTH` levels in every format.
:func:`replay` then runs every format through the same
:class:`~agentproto.agui.Consumer` pipeline as live traffic (JSON Lines and SSE
as bytes, in chunks; arrays event by event), so a verdict here is the verdict
a client would reach.

A file that cannot be replayed at all (a broken JSON array, a conformance
``input`` that is not an object, a JSON scalar) gives a :class:`Recording`
whose ``error`` says why and, for an array, which event (``error_index``).
Reading files and printing belong to the command line (:mod:`agentproto.cli`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

import attrs

from agentproto._core.errors import AgentProtoError, DecodeError, SchemaError
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH, loads
from agentproto.agui._consume.consumer import Consumer

__all__ = ["Recording", "Result", "bare_message", "detect_recording", "error_index", "replay"]

Format = Literal["sse", "jsonl", "array", "conformance"]

_CHUNK = 64 * 1024
_SCALAR_HEADS = frozenset(b'"-0123456789tfn')
# a string (maybe unterminated) or one structural character of JSON
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{},]', re.S)


@attrs.frozen
class Recording:
    """A recorded stream, its detected format, and the run input it starts from.

    ``error`` is set when the file cannot be replayed at all; ``error_index``
    is then the 0-based index of the event it is about, when there is one.
    """

    name: str
    data: bytes
    format: Format
    events: list[Any] | None = None  # decoded events, for array and conformance files
    run_input: dict[str, Any] | None = None
    error: AgentProtoError | None = None
    error_index: int | None = None


@attrs.frozen
class Result:
    """What replaying a recording produced."""

    consumer: Consumer
    error: AgentProtoError | None
    delivered: int


def _element_at(data: bytes, offset: int) -> int | None:
    """0-based index of the top-level array element in which byte ``offset`` lies.

    Only the bytes before ``offset`` are scanned (the error path of a file).
    """
    depth = index = 0
    for token in _TOKEN.finditer(data, 0, offset):
        char = token.group()[:1]
        if char in (b"[", b"{"):
            depth += 1
        elif char in (b"]", b"}"):
            depth -= 1
        elif char == b"," and depth == 1:
            index += 1
    return index if depth >= 1 else None


def _stream_element_at(data: bytes, offset: int) -> int | None:
    """0-based index of the element of a conformance file's ``stream`` array in which
    byte ``offset`` lies; ``None`` when it lies elsewhere."""
    depth = index = 0
    key, inside = b"", False
    for token in _TOKEN.finditer(data, 0, offset):
        text = token.group()
        if text[:1] == b'"':
            if depth == 1:  # a member's key, or a value: an array's key is the string before it
                key = text
        elif text in (b"[", b"{"):
            depth += 1
            if depth == 2:
                inside, index = text == b"[" and key == b'"stream"', 0
        elif text in (b"]", b"}"):
            depth -= 1
            inside = inside and depth >= 2
        elif text == b"," and depth == 2 and inside:
            index += 1
    return index if inside else None


def bare_message(error: DecodeError) -> str:
    """The message of ``error`` without the ``(line L, byte B)`` its constructor appends."""
    if error.offset is None and error.line is None:
        return str(error)
    return str(error).rsplit(" (", 1)[0]


def _located(error: DecodeError, data: bytes, message: str | None = None) -> DecodeError:
    """``error`` with the line of its offset, for a document read whole."""
    offset = error.offset or 0
    line = data.count(b"\n", 0, offset) + 1
    return DecodeError(message or bare_message(error), offset=offset, line=line)


def _file_error(exc: DecodeError, data: bytes, max_depth: int) -> DecodeError:
    """The error of a file parsed whole, located; nesting too deep is about an event."""
    too_deep = str(exc).startswith("JSON nests deeper")
    message = f"an event nests deeper than {max_depth} levels" if too_deep else None
    return _located(exc, data, message)


def _array(name: str, data: bytes, max_depth: int) -> Recording:
    """A JSON array of events: the events sit one level below the array."""
    try:
        events = loads(data, max_depth=max_depth + 1)
    except DecodeError as exc:
        error = _file_error(exc, data, max_depth)
        index = _element_at(data, error.offset or 0)
        return Recording(name, data, "array", error=error, error_index=index)
    return Recording(name, data, "array", events=events)


def _run_input(stream: list[Any], run_input: Any) -> dict[str, Any] | SchemaError:
    """The run input of a conformance file, completed from its ``RUN_STARTED``."""
    if run_input is not None and not isinstance(run_input, dict):
        kind = type(run_input).__name__
        return SchemaError("type", "/input", f"the run input must be an object, not {kind}")
    started = next(
        (e for e in stream if isinstance(e, dict) and e.get("type") == "RUN_STARTED"), {}
    )
    return {
        "threadId": started.get("threadId", "t"),
        "runId": started.get("runId", "r"),
        "messages": [],
        **(run_input or {}),
    }


def _object(name: str, data: bytes, max_depth: int) -> Recording:
    """A conformance file, or JSON Lines (whose reader says what is wrong with it)."""
    try:
        value = loads(data, max_depth=max_depth + 2)
    except DecodeError as exc:
        first_line = data.split(b"\n", 1)[0]
        index = _stream_element_at(data, exc.offset or 0)
        one_line = (exc.offset or 0) <= len(first_line) or _parses(first_line, max_depth)
        if index is None and one_line:
            return Recording(name, data, "jsonl")
        error = _file_error(exc, data, max_depth)
        return Recording(name, data, "conformance", error=error, error_index=index)
    if isinstance(value, dict) and isinstance(value.get("stream"), list):
        run_input = _run_input(value["stream"], value.get("input"))
        if isinstance(run_input, SchemaError):
            return Recording(name, data, "conformance", error=run_input)
        return Recording(name, data, "conformance", events=value["stream"], run_input=run_input)
    return Recording(name, data, "jsonl")


def _parses(text: bytes, max_depth: int) -> bool:
    try:
        loads(text, max_depth=max_depth)
    except DecodeError:
        return False
    return True


def detect_recording(name: str, data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Recording:
    """Read the format of a recording from its content; parse array and conformance files.

    Events are held to ``max_depth``, as in JSON Lines and SSE: the whole file
    may nest one level deeper (an array) or two (a conformance file's object
    and its ``stream``).

    Args:
        name: how the recording is named in reports.
        data: the whole recording.
        max_depth: the deepest nesting an event may have.

    Returns:
        The recording; its ``error`` is set when it cannot be replayed at all.
    """
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    head = start[:1]
    if head == b"[":
        return _array(name, data, max_depth)
    if head == b"{":
        return _object(name, data, max_depth)
    if head and head[0] in _SCALAR_HEADS and _parses(start, max_depth):
        error = SchemaError(
            "type",
            "",
            "a recording is SSE, JSON Lines, a JSON array or a JSON object, "
            "not a single JSON value",
        )
        return Recording(name, data, "jsonl", error=error)
    return Recording(name, data, "sse")


def _chunks(data: bytes) -> Iterator[tuple[int, bytes]]:
    for start in range(0, len(data), _CHUNK):
        yield start + min(_CHUNK, len(data) - start), data[start : start + _CHUNK]


def replay(recording: Recording, progress: Callable[[int], None] | None = None) -> Result:
    """Run a recording through the consumer pipeline, up to its end or a fatal error.

    Args:
        recording: what :func:`detect_recording` returned.
        progress: called with the number of bytes fed so far, after each chunk
            of an SSE or JSON Lines recording.

    Returns:
        The consumer, the fatal error (``None`` without one) and how many events
        were delivered.
    """
    transport: Literal["sse", "jsonl"] = "jsonl" if recording.format == "jsonl" else "sse"
    delivered = 0
    if recording.error is not None:
        return Result(Consumer(), recording.error, 0)
    try:
        consumer = Consumer(run_input=recording.run_input, transport=transport)
    except AgentProtoError as exc:  # a malformed run input in a conformance file
        return Result(Consumer(), exc, 0)
    try:
        if recording.events is not None:
            for event in recording.events:
                delivered += len(consumer.feed_json(event))
        else:
            for done, chunk in _chunks(recording.data):
                delivered += len(consumer.feed_bytes(chunk))
                if progress is not None:
                    progress(done)
        delivered += len(consumer.close())
    except AgentProtoError as exc:
        return Result(consumer, exc, delivered)
    return Result(consumer, None, delivered)


def error_index(recording: Recording, result: Result) -> int | None:
    """The 0-based index of the event the fatal error of ``result`` is about.

    A decoding error is about the event being read (not yet counted); any other
    error about the last event read. ``None`` when no event is concerned (the
    run input, or a stream with no event at all).
    """
    if result.error is None:
        return None
    if recording.error is not None:
        return recording.error_index
    read = result.consumer.events_read
    if isinstance(result.error, DecodeError):
        return read
    return read - 1 if read else None
