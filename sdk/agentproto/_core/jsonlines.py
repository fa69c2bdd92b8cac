"""JSON Lines (NDJSON): one JSON document per line.

Theory of operation
-------------------
A line ends with LF; one CR before it is dropped, so CRLF input works. Lines
that are empty or hold only spaces and tabs are skipped (they still count for
line numbers). Every other line is one document, parsed by
:func:`agentproto._core.jsonutil.loads` rules: invalid UTF-8, malformed JSON
and nesting deeper than ``max_depth`` are :class:`DecodeError` carrying the
1-based ``line`` and the absolute byte ``offset`` of the problem in the stream.

:class:`JSONLinesDecoder` is sans-I/O. ``feed(bytes)`` finds the last LF of the
chunk with one ``rfind``; everything before it is a run of complete lines, cut
with one ``split``. The rest waits in a buffer for its LF. At ``close()`` a
final line without LF is still a document (NDJSON allows it), but if it does
not parse the stream was evidently cut short, and the error says so.

A line (its bytes before the LF) longer than ``max_line_bytes`` is an error,
raised before the decoder buffers more of it.

Errors are fatal and kept: documents decoded before the problem in the same
chunk are returned first, and the error is raised by the next call (``feed`` or
``close``), so every split of the same input yields the same documents.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from agentproto._core.errors import DecodeError, UsageError
from agentproto._core.jsonutil import DEFAULT_MAX_DEPTH, _Failure, _loads, dumps

__all__ = ["DEFAULT_MAX_LINE_BYTES", "JSONLine", "JSONLinesDecoder", "encode_jsonl"]

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Default longest line :class:`JSONLinesDecoder` accepts, in bytes."""

_BLANK: Final = b" \t\r"  # JSON whitespace (LF ends the line)


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
            max_depth: the deepest nesting accepted in a document.

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
        self._base = 0  # stream offset of the line in progress
        self._line = 0  # number of complete lines so far
        self._error: DecodeError | None = None
        self._closed = False

    @property
    def buffered(self) -> int:
        """Number of bytes held for the line in progress."""
        return len(self._buf)

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
        if self._closed:
            raise UsageError("jsonl.closed", "feed() called after close()")
        if not isinstance(chunk, bytes):
            chunk = bytes(chunk)
        buf = self._buf
        last = chunk.rfind(b"\n")
        if last < 0:
            if len(buf) + len(chunk) > self._max:
                return self._fail([], "line longer than max_line_bytes", self._base)
            buf += chunk
            return []
        if buf:
            buf += memoryview(chunk)[: last + 1]
            region = bytes(buf)
            buf.clear()
        else:
            region = chunk if last + 1 == len(chunk) else chunk[: last + 1]
        out = self._lines(region)
        if self._error is not None:
            if not out:
                raise self._error
            return out
        rest = len(chunk) - last - 1
        if rest > self._max:
            return self._fail(out, "line longer than max_line_bytes", self._base)
        if rest:
            buf += memoryview(chunk)[last + 1 :]
        return out

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
        if self._closed:
            return []
        self._closed = True
        line = bytes(self._buf)
        self._buf.clear()
        if line[-1:] == b"\r":
            line = line[:-1]
        if not line.strip(_BLANK):
            return []
        number = self._line + 1
        try:
            value = _loads(line, self._max_depth)
        except _Failure as failure:
            self._error = DecodeError(
                f"stream truncated: final line has no newline and is not valid JSON"
                f" ({failure.message})",
                offset=self._base + failure.pos,
                line=number,
            )
            raise self._error from None
        self._line = number
        return [JSONLine(value=value, line=number, offset=self._base)]

    def _fail(self, out: list[JSONLine], message: str, offset: int) -> list[JSONLine]:
        """Record a fatal error; raise it now unless documents must be delivered first."""
        self._error = DecodeError(message, offset=offset, line=self._line + 1)
        self._buf.clear()
        if not out:
            raise self._error
        return out

    def _lines(self, region: bytes) -> list[JSONLine]:
        """Parse a run of complete lines (``region`` ends with LF)."""
        out: list[JSONLine] = []
        append = out.append
        lines = region.split(b"\n")
        lines.pop()  # the empty piece after the final LF
        check = len(region) > self._max
        max_depth = self._max_depth
        number = self._line
        offset = self._base
        for line in lines:
            number += 1
            start = offset
            offset += len(line) + 1
            if check and len(line) > self._max:
                self._error = DecodeError(
                    "line longer than max_line_bytes", offset=start, line=number
                )
                break
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line.strip(_BLANK):
                continue
            try:
                value = _loads(line, max_depth)
            except _Failure as failure:
                self._error = DecodeError(failure.message, offset=start + failure.pos, line=number)
                break
            append(JSONLine(value=value, line=number, offset=start))
        self._line = number
        self._base = offset
        return out


def encode_jsonl(value: Any) -> bytes:
    """Encode one line.

    Args:
        value: a JSON value, encoded with :func:`agentproto._core.jsonutil.dumps`;
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
        if b"\n" in raw:
            raise UsageError("jsonl.newline", "an encoded document must not contain a newline")
        return raw + b"\n"
    return dumps(value) + b"\n"
