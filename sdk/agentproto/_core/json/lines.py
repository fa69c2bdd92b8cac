"""JSON Lines (NDJSON): one JSON document per line.

Theory of operation
-------------------
A line ends with LF; one CR before it is dropped, so CRLF input works. Lines
that are empty or hold only spaces and tabs are skipped (they still count for
line numbers). Every other line is one document, parsed by the rules of
:func:`agentproto._core.json.codec.loads`: invalid UTF-8, malformed JSON and
nesting deeper than ``max_depth`` are :class:`DecodeError` carrying the 1-based
``line`` and the absolute byte ``offset`` of the problem in the stream. This is
the one line reader of the SDK: AG-UI's JSON Lines transport and ACP's
JSON-RPC stdio framing both read through it.

:class:`JSONLinesDecoder` is sans-I/O and works in two steps. Framing
(:meth:`~JSONLinesDecoder.push`, :meth:`~JSONLinesDecoder.end`) finds the last
LF of a chunk with one ``rfind``; everything before it is a run of complete
lines, cut with one ``BytesIO.readlines`` (each keeps its LF, which JSON reads as
whitespace) and queued; the rest waits in a buffer for its
LF. The run is also searched once for a long digit run
(:func:`~agentproto._core.json.codec.has_digit_run`): only when it holds one does
each of its lines pay the look for integers beyond 64 bits. Decoding
(:meth:`~JSONLinesDecoder.documents`) takes the queued lines one at a time,
so a caller that stops (an error of its own) finds the rest still queued.

A line (its bytes before the LF) longer than ``max_line_bytes`` is an error,
found before the decoder buffers more of it; its bytes are dropped up to its
LF, where reading resumes. At the end of input a final line without LF is
still a document (NDJSON allows it), but if it does not parse the stream was
evidently cut short, and the error says so.

Two error policies sit on the same reader. :meth:`~JSONLinesDecoder.documents`
raises for a bad line after moving past it, so a caller may go on with the
next line (ACP's reader does). :meth:`~JSONLinesDecoder.feed` and
:meth:`~JSONLinesDecoder.close` make errors fatal and kept: documents decoded
before the problem in the same chunk are returned first, and the error is
raised by the next call, so every split of the same input yields the same
documents.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import BytesIO
from typing import Any, Final

import attrs
import orjson

from agentproto._core.errors import DecodeError, UsageError, chained
from agentproto._core.json.codec import (
    DEFAULT_MAX_DEPTH,
    NOT_BRACKETS,
    Failure,
    dumps,
    finish,
    has_digit_run,
    loads_located,
    recover,
)

__all__ = ["DEFAULT_MAX_LINE_BYTES", "JSONLine", "JSONLinesDecoder", "encode_jsonl"]

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Default longest line :class:`JSONLinesDecoder` accepts, in bytes."""

_BLANK: Final = b" \t\r"  # JSON whitespace (LF ends the line)
_TOO_LONG: Final = "line longer than max_line_bytes"
_loads_fast: Final = orjson.loads
_ORJSON_FAILURES: Final = (orjson.JSONDecodeError, RecursionError)


@attrs.frozen(kw_only=True)
class JSONLine:
    """One decoded line.

    Attributes:
        value: the line's JSON document as plain Python values.
        line: 1-based line number in the stream.
        offset: byte offset in the stream where the line starts.
    """

    value: Any
    line: int
    offset: int


def _orjson_failure(raw: bytes) -> Exception:
    """orjson's error for a document it refuses (the one the LF-ended line raised)."""
    try:
        orjson.loads(raw)
    except _ORJSON_FAILURES as exc:
        return exc
    raise AssertionError("a line that failed parses without its LF")  # pragma: no cover


class _Mark:
    """A queue entry that is not a plain line.

    ``kind`` is ``"long"`` (a line over the limit: an error, then ``size``
    bytes are passed over), ``"gap"`` (the rest of a long line, ``size`` bytes
    with its LF) or ``"tail"`` (the final line without LF, ``raw``).
    """

    __slots__ = ("kind", "raw", "size")

    def __init__(self, kind: str, size: int, raw: bytes = b"") -> None:
        self.kind = kind
        self.size = size
        self.raw = raw


class JSONLinesDecoder:
    """Incremental JSON Lines decoder: bytes in, :class:`JSONLine` out.

    Feed it the stream in chunks of any size, then call :meth:`close`, which
    returns the final line if it had no newline::

        decoder = JSONLinesDecoder()
        for chunk in chunks:
            for line in decoder.feed(chunk):
                handle(line.value)
        for line in decoder.close():
            handle(line.value)

    A caller with its own error policy uses the two steps instead:
    :meth:`push` (and :meth:`end`) to add bytes, :meth:`documents` to decode
    what they completed, calling it again after a :class:`DecodeError` to go
    on with the next line.
    """

    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        """Create a decoder for one stream.

        Args:
            max_line_bytes: the longest line accepted, in bytes, LF excluded.
            max_depth: the deepest nesting accepted in a document (default
                :data:`~agentproto._core.json.codec.DEFAULT_MAX_DEPTH`).

        Raises:
            UsageError: a limit is not a positive integer.
        """
        if not isinstance(max_line_bytes, int) or max_line_bytes < 1:
            raise UsageError("jsonl.invalid-limit", "max_line_bytes must be a positive integer")
        if not isinstance(max_depth, int) or max_depth < 0:
            raise UsageError("jsonl.invalid-limit", "max_depth must be a non-negative integer")
        self._max = max_line_bytes
        self._max_depth = max_depth
        self._buf = bytearray()  # the line in progress
        self._skipped = -1  # bytes dropped so far of a long line in progress; -1: none
        self._queue: list[Any] = []  # complete lines (bytes) and marks, not decoded yet
        self._next = 0  # index in _queue of the next entry to decode
        self._exact = False  # a queued line may hold an integer beyond 64 bits
        self._line = 0  # number of the last line decoded
        self._offset = 0  # stream offset of the next queued line
        self._ended = False
        self._error: DecodeError | None = None  # the fatal error of feed() and close()

    @property
    def buffered(self) -> int:
        """Number of bytes held for the line in progress."""
        return len(self._buf)

    @property
    def queued(self) -> int:
        """Number of complete lines waiting for :meth:`documents`."""
        return len(self._queue) - self._next

    @property
    def ended(self) -> bool:
        """Whether the end of input was signalled (:meth:`end` or :meth:`close`)."""
        return self._ended

    # ---- the simple interface: errors are fatal ------------------------------------------

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[JSONLine]:
        """Decode the next bytes of the stream.

        Args:
            chunk: any number of bytes, split anywhere.

        Returns:
            The documents of the lines completed by ``chunk``, in order.

        Raises:
            DecodeError: a line is not UTF-8, not JSON, too deep or too long.
                When documents precede the problem in this chunk they are
                returned and the error is raised by the next call.
            UsageError: the decoder was closed.
        """
        if self._error is not None:
            raise self._error
        self.push(chunk)
        return self._collect()

    def close(self) -> list[JSONLine]:
        """Signal the end of the stream.

        Returns:
            The document of a final line that had no newline, if there is one.

        Raises:
            DecodeError: the final line without newline is not a valid document
                (the stream was truncated), or an error kept from earlier.
        """
        if self._error is not None:
            raise self._error
        self.end()
        return self._collect()

    def _collect(self) -> list[JSONLine]:
        """Decode every queued line; keep the first error, raised now or by the next call."""
        out: list[JSONLine] = []
        append = out.append
        try:
            for value, line, offset in self.documents():
                append(JSONLine(value=value, line=line, offset=offset))
        except DecodeError as error:
            self._error = error
            self._buf.clear()
            self._queue = []
            self._next = 0
            self._skipped = -1
            if not out:
                raise
        return out

    # ---- the two steps -------------------------------------------------------------------

    def push(self, chunk: bytes | bytearray | memoryview) -> None:
        """Add the next bytes of the stream; the lines they complete wait for :meth:`documents`.

        Args:
            chunk: any number of bytes, split anywhere.

        Raises:
            UsageError: the end of input was already signalled.
        """
        if self._ended:
            raise UsageError("jsonl.closed", "feed() called after close()")
        if not isinstance(chunk, bytes):
            chunk = bytes(chunk)
        if self._skipped >= 0:
            first = chunk.find(b"\n")
            if first < 0:
                self._skipped += len(chunk)
                return
            self._enqueue([_Mark("gap", self._skipped + first + 1)], False)
            self._skipped = -1
            chunk = chunk[first + 1 :]
        buf = self._buf
        last = chunk.rfind(b"\n")
        if last < 0:
            if len(buf) + len(chunk) > self._max:
                self._start_long(len(buf) + len(chunk))
            else:
                buf += chunk
            return
        if buf:
            buf += memoryview(chunk)[: last + 1]
            region = bytes(buf)
            buf.clear()
        else:
            region = chunk if last + 1 == len(chunk) else chunk[: last + 1]
        self._split(region)
        rest = len(chunk) - last - 1
        if rest > self._max:
            self._start_long(rest)
        elif rest:
            buf += memoryview(chunk)[last + 1 :]

    def end(self) -> None:
        """Signal the end of input: a final line without LF waits for :meth:`documents`.

        Calling it again does nothing.
        """
        if self._ended:
            return
        self._ended = True
        self._skipped = -1
        line = bytes(self._buf)
        self._buf.clear()
        if line[-1:] == b"\r":
            line = line[:-1]
        if line.strip(_BLANK):
            self._enqueue([_Mark("tail", len(line), line)], True)

    def documents(self) -> Iterator[tuple[Any, int, int]]:
        """Decode the queued lines, in order, blank ones skipped.

        Do not :meth:`push` while iterating: the lines pushed may be left for
        the next call.

        Yields:
            ``(value, line, offset)`` for each document: its plain JSON value,
            its 1-based line number, the stream offset where its line starts.

        Raises:
            DecodeError: the next line is bad (with its ``line`` and the
                ``offset`` of the problem). The decoder has moved past it:
                calling again goes on with the following line.
        """
        queue = self._queue
        index = self._next
        line = self._line
        offset = self._offset
        twice_depth = 2 * self._max_depth
        loads = _loads_fast
        mark = _Mark
        while index < len(queue):
            raw = queue[index]
            index += 1
            start = offset
            if type(raw) is mark:
                offset += raw.size
                if raw.kind != "gap":  # a gap ends a line already counted
                    line += 1
                self._next, self._line, self._offset = index, line, offset
                if raw.kind != "gap":
                    yield self._marked(raw, line, start), line, start
                continue
            line += 1
            size = len(raw)  # the line's bytes and its LF
            offset += size
            self._next, self._line, self._offset = index, line, offset
            try:
                value = loads(raw)
            except _ORJSON_FAILURES:
                raw = raw[:-1]  # explained as the line's own bytes, without its LF
                if not raw.strip(_BLANK):
                    continue
                value = self._failed(raw, line, start)
            else:
                # a valid document of n bytes nests at most n / 2 deep, and at most half
                # as deep as its number of brackets (one pass); only then is it scanned
                if self._exact or (
                    size > twice_depth and len(raw.translate(None, NOT_BRACKETS)) > twice_depth
                ):
                    value = self._checked(raw, value, line, start)
            yield value, line, start
        if self._next == len(self._queue) and self._queue is queue:
            self._queue = []
            self._next = 0
            self._exact = False

    # ---- internals -----------------------------------------------------------------------

    def _split(self, region: bytes) -> None:
        """Queue the complete lines of ``region`` (it ends with LF), each with its LF.

        ``BytesIO.readlines`` finds each LF with ``memchr``, where ``bytes.split`` tests
        every byte: on the long lines of an ACP stream that is half the cost. A JSON
        document may end with whitespace, so the LF stays on the line.
        """
        lines: list[Any] = BytesIO(region).readlines()
        limit = self._max + 1  # the longest line, with its LF
        if len(region) > limit:
            lines = [raw if len(raw) <= limit else _Mark("long", len(raw)) for raw in lines]
        self._enqueue(lines, has_digit_run(region))

    def _enqueue(self, entries: list[Any], exact: bool) -> None:
        if self._next == len(self._queue):
            self._queue = entries
            self._next = 0
            self._exact = exact
        else:
            self._queue.extend(entries)
            self._exact = self._exact or exact

    def _start_long(self, size: int) -> None:
        """The line in progress is over the limit: report it, drop its bytes up to its LF."""
        self._buf.clear()
        self._enqueue([_Mark("long", 0)], False)
        self._skipped = size

    def _marked(self, mark: _Mark, line: int, start: int) -> Any:
        """The document of the final line without LF; raises for a long line."""
        if mark.kind == "long":
            raise DecodeError(_TOO_LONG, offset=start, line=line)
        try:
            return loads_located(mark.raw, self._max_depth)
        except Failure as failure:
            error = DecodeError(
                f"stream truncated: final line has no newline and is not valid JSON"
                f" ({failure.message})",
                offset=start + failure.pos,
                line=line,
            )
            raise chained(error, None)

    def _failed(self, raw: bytes, line: int, start: int) -> Any:
        """The value of a line (without its LF) orjson refused (an integer beyond a
        double), or its error."""
        try:
            return recover(raw, self._max_depth, _orjson_failure(raw))
        except Failure as failure:
            raise chained(DecodeError(failure.message, offset=start + failure.pos, line=line), None)

    def _checked(self, raw: bytes, value: Any, line: int, start: int) -> Any:
        """``value`` once its depth is checked and its big integers made exact."""
        try:
            return finish(raw, raw, value, self._max_depth, self._exact)
        except Failure as failure:
            raise chained(DecodeError(failure.message, offset=start + failure.pos, line=line), None)


def encode_jsonl(value: Any) -> bytes:
    """Encode one line.

    Args:
        value: a JSON value, encoded with :func:`agentproto._core.json.codec.dumps`;
            or ``bytes`` (``bytearray``, ``memoryview``) holding one JSON
            document already encoded, used as is.

    Returns:
        The document followed by LF.

    Raises:
        SchemaError: ``value`` is not JSON.
        UsageError: pre-encoded bytes contain a newline.
    """
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if raw.partition(b"\n")[1]:  # partition: see jsonutil.dumps
            raise UsageError("jsonl.newline", "an encoded document must not contain a newline")
        return raw + b"\n"
    return dumps(value) + b"\n"
