"""Server-Sent Events, framed and interpreted as browsers do.

Theory of operation
-------------------
The rules are those of the WHATWG HTML standard, "event stream
interpretation": lines end with CRLF, LF or CR; one UTF-8 byte order mark at
the very start is skipped; a line starting with ``:`` is a comment; otherwise
the text before the first ``:`` names a field and the rest, minus one leading
space, is its value (no colon: the whole line is the name, the value is empty).
``data`` appends its value and a newline to the data buffer, ``event`` sets the
event type, ``id`` (unless it contains NUL) sets the last event ID, ``retry``
(only ASCII digits) sets the reconnection time; other fields are ignored. A
blank line dispatches: with an empty data buffer nothing is emitted, otherwise
the one trailing newline is removed and an event is emitted. Event type and
data reset after every blank line; the last event ID does not, so every event
carries the ID most recently set.

:class:`SSEDecoder` is sans-I/O: ``feed(bytes)`` returns the events completed
by those bytes. It works on whole *blocks* (the lines between blank lines)
with bytes and str methods (``find``, ``split``), never character by character:

1. The decoder buffers the bytes of the block in progress, which always start
   at the beginning of a line. A new chunk is searched (from one byte before
   it, for terminators split across chunks) for the last blank line, which is
   one of ``\\n\\n``, ``\\n\\r`` or ``\\r\\r`` (``\\r\\n`` is one line end), plus
   the LF of a CRLF that follows. Everything up to it is a *region* of
   complete blocks. If the region ends with a CR at the very end of the input,
   an LF at the start of the next chunk belongs to that CR and is skipped.
2. The region is decoded in one ``decode`` call, which validates UTF-8 and
   gives the exact offset of the first bad byte. Line ends are ASCII, so a
   region never splits a character.
3. A region with only LF line ends (or only CRLF) is cut with ``split`` on
   ``"\\n\\n"`` (or ``"\\r\\n\\r\\n"``); byte offsets come from the lengths of the
   pieces (of the text when it is ASCII, else of the bytes split the same
   way). A block that is one ``data: `` line becomes an event directly. Other
   blocks, and regions mixing line-end styles, go through the general
   per-line interpretation.

Offsets are absolute byte offsets in the stream (the BOM included), so an
event's ``offset`` points at its first line and an error at the bad byte.

Errors are fatal: the decoder keeps the first :class:`DecodeError` and raises
it from every later call. Events completed before the problem are returned
first; the error is then raised by the next ``feed`` or by ``close``, so no
event is lost and every split of the same input behaves the same.

An event (from its first line to the end of its last line, line ends between
its lines included) larger than ``max_event_bytes`` is an error, raised before
the decoder buffers more of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Final, NamedTuple

from agentproto._core.errors import DecodeError, UsageError, chained

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEDecoder", "SSEEvent", "encode_sse"]

DEFAULT_MAX_EVENT_BYTES: Final = 64 * 1024 * 1024
"""Default largest event :class:`SSEDecoder` accepts, in bytes."""

_BOM: Final = b"\xef\xbb\xbf"
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")
_TEXT_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_LF: Final = 0x0A
_CR: Final = 0x0D
_new_tuple: Final = tuple.__new__
_FRAME_OVERHEAD: Final = len("data: ") + len("\n\n")


class SSEEvent(NamedTuple):
    """One dispatched Server-Sent Event.

    Attributes:
        data: the data buffer, ``data`` lines joined with ``"\\n"``.
        event: the event type, or ``None`` when no (or an empty) ``event``
            field was given (a browser would call it ``"message"``).
        id: the last event ID at dispatch time (it persists across events, as
            a browser's ``lastEventId``); ``None`` until the stream sets one.
        retry: the reconnection time in milliseconds given in this event's
            block, if any.
        offset: byte offset in the stream of the event's first line.

    A named tuple: immutable, and cheap to build for every event of a stream.
    """

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    offset: int = 0


_make_event: Final = partial(_new_tuple, SSEEvent)


class SSEDecoder:
    """Incremental Server-Sent Events decoder: bytes in, :class:`SSEEvent` out.

    Feed it the response body in chunks of any size, then call :meth:`close`
    at the end of the stream::

        decoder = SSEDecoder()
        for chunk in response.iter_bytes():
            for event in decoder.feed(chunk):
                handle(event)
        decoder.close()
    """

    def __init__(
        self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, strict_end: bool = True
    ) -> None:
        """Create a decoder for one stream.

        Args:
            max_event_bytes: the largest event accepted, in bytes.
            strict_end: whether :meth:`close` raises when the stream ends inside
                an event; when false the unfinished event is discarded silently,
                as a browser does.

        Raises:
            UsageError: ``max_event_bytes`` is not a positive integer.
        """
        if not isinstance(max_event_bytes, int) or max_event_bytes < 1:
            raise UsageError("sse.invalid-limit", "max_event_bytes must be a positive integer")
        self._max = max_event_bytes
        self._strict_end = strict_end
        self._buf = bytearray()  # the block in progress, starting at a line start
        self._base = 0  # stream offset of _buf[0] (or of the next byte fed)
        self._at_start = True  # the BOM check is still to be done
        self._skip_lf = False  # the input so far ended with a CR that ended a block
        self._last_id: str | None = None
        self._retry: int | None = None
        self._error: DecodeError | None = None
        self._closed = False
        self._fast: _DataRegion | None = None  # feed_data: the events not built yet

    @property
    def last_event_id(self) -> str | None:
        """The last event ID set by the stream (``None`` if none was)."""
        return self._last_id

    @property
    def retry(self) -> int | None:
        """The latest reconnection time the stream asked for, in milliseconds."""
        return self._retry

    @property
    def buffered(self) -> int:
        """Number of bytes held for the event in progress."""
        return len(self._buf)

    @property
    def in_comment(self) -> bool:
        """Whether the bytes held end inside a comment line (``: keep-alive``).

        A consumer that treats a comment cut off at the end of the stream as
        complete (it can carry no event) ends that line before :meth:`close`.
        """
        buf = self._buf
        start = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
        return buf[start : start + 1] == b":"

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Decode the next bytes of the stream.

        Args:
            chunk: any number of bytes, split anywhere.

        Returns:
            The events completed by ``chunk``, in order.

        Raises:
            DecodeError: invalid UTF-8 (``offset`` of the first bad byte), or an
                event larger than ``max_event_bytes`` (``offset`` of its start).
                When events precede the problem in this chunk they are returned
                and the error is raised by the next call.
            UsageError: the decoder was closed.
        """
        kept = self._error  # not narrowing self._error: _region may set it (mypyc trusts that)
        if kept is not None:
            raise kept
        if self._closed:
            raise UsageError("sse.closed", "feed() called after close()")
        data = self._start(chunk)
        if not data:
            return []
        if data.find(b"\n") < 0 and data.find(b"\r") < 0:
            return self._grow(data)
        region = self._complete_blocks(data)
        if region is None:
            return self._check_tail([])
        if region[-1] == _CR and not self._buf:
            self._skip_lf = True
        base = self._base
        self._base = base + len(region)
        events: list[SSEEvent] = []
        self._region(region, base, events)
        if self._error is not None:
            self._buf.clear()
            if not events and self._fast in (None, _LAZY):  # none held back by feed_data
                raise self._error
            return events
        return self._check_tail(events)

    def feed_data(
        self, chunk: bytes | bytearray | memoryview
    ) -> tuple[list[str], Callable[[], list[SSEEvent]]]:
        """:meth:`feed`, returning the events' data and a function giving the events
        (which, in the common stream of lone ``data:`` lines, builds them only then).

        Raises:
            DecodeError, UsageError: as :meth:`feed` does.
        """
        self._fast = _LAZY
        try:
            events = self.feed(chunk)
            fast = self._fast
        finally:
            self._fast = None
        if fast is _LAZY or fast is None:
            return list(map(_data, events)), partial(list, events)
        return fast.datas, fast.events

    def _start(self, chunk: bytes | bytearray | memoryview) -> bytes:
        """The bytes of ``chunk`` left to decode (``b""``: nothing yet).

        Drops the LF of a CRLF split across chunks and, at the start of the
        stream, the byte order mark (held back while it may be incomplete).
        """
        data = chunk if isinstance(chunk, bytes) else bytes(chunk)
        if data and self._skip_lf:
            self._skip_lf = False
            if data[0] == _LF:
                self._base += 1
                data = data[1:]
        if data and self._at_start:
            buf = self._buf
            head = bytes(buf) + data
            if len(head) < len(_BOM) and _BOM.startswith(head):
                buf[:] = head
                return b""
            self._at_start = False
            buf.clear()
            if head.startswith(_BOM):
                self._base += len(_BOM)
                head = head[len(_BOM) :]
            data = head
        return data

    def _grow(self, data: bytes) -> list[SSEEvent]:
        """No line end in ``data``: nothing completes, the event in progress grows."""
        buf = self._buf
        if len(buf) + len(data) > self._max and len(buf.lstrip(b"\r\n")) + len(data) > self._max:
            return self._fail([], "SSE event larger than max_event_bytes", self._tail_start())
        buf += data
        return []

    def _complete_blocks(self, data: bytes) -> bytes | None:
        """The complete blocks the buffer and ``data`` hold, taken out of the buffer.

        ``None`` when no block completes (``data`` is then buffered).
        """
        buf = self._buf
        if buf:
            search = len(buf) - 1
            buf += data
            end = _block_end(buf, search)
            if end < 0:
                return None
            region = bytes(memoryview(buf)[:end])
            del buf[:end]
            return region
        end = _block_end(data, 0)
        if end < 0:
            buf += data
            return None
        if end == len(data):
            return data
        buf += memoryview(data)[end:]
        return data[:end]

    def close(self) -> list[SSEEvent]:
        """Signal the end of the stream.

        An event without its dispatching blank line is never emitted (as in a
        browser); ``retry`` fields on its complete lines still take effect.

        Returns:
            The events still to be delivered (always empty: ``feed`` delivers
            every complete event), for symmetry with ``feed``.

        Raises:
            DecodeError: with ``strict_end``, the stream ended inside an event
                (an incomplete line, or ``data`` lines not yet dispatched);
                ``offset`` is where that event started. Also any error kept
                from an earlier call.
        """
        if self._error is not None:
            raise self._error
        if self._closed:
            return []
        self._closed = True
        tail = bytes(self._buf)
        start = self._tail_start()
        self._buf.clear()
        if not tail:
            return []
        unfinished = tail[-1] not in (_LF, _CR)
        text = tail.decode("utf-8", "replace")  # only field names and digits matter here
        for line in _TEXT_LINE_END.split(text)[:-1]:  # complete lines only
            if not line or line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if name == "data":
                unfinished = True
            elif name == "retry":
                retry = _retry_value(value[1:] if value[:1] == " " else value)
                if retry is not None:
                    self._retry = retry
        if unfinished and self._strict_end:
            self._error = DecodeError("stream ended inside an SSE event", offset=start)
            raise self._error
        return []

    # --- internals -----------------------------------------------------------

    def _tail_start(self) -> int:
        """Stream offset of the first line of the event in progress."""
        buf = self._buf
        return self._base + len(buf) - len(buf.lstrip(b"\r\n"))

    def _fail(self, events: list[SSEEvent], message: str, offset: int) -> list[SSEEvent]:
        """Record a fatal error; raise it now unless events must be delivered first."""
        self._error = DecodeError(message, offset=offset)
        self._buf.clear()
        if not events and self._fast in (None, _LAZY):  # none held back by feed_data
            raise self._error
        return events

    def _check_tail(self, events: list[SSEEvent]) -> list[SSEEvent]:
        """Enforce ``max_event_bytes`` on the event in progress."""
        buf = self._buf
        if len(buf) > self._max and len(buf.strip(b"\r\n")) > self._max:
            return self._fail(events, "SSE event larger than max_event_bytes", self._tail_start())
        return events

    def _region(self, region: bytes, base: int, out: list[SSEEvent]) -> None:
        """Interpret a run of complete blocks starting at stream offset ``base``."""
        try:
            text = region.decode("utf-8")
        except UnicodeDecodeError as exc:
            good = _block_end(region[: exc.start], 0)
            if good > 0:
                self._region(region[:good], base, out)
            if self._error is None:
                self._error = DecodeError(
                    f"invalid UTF-8 in SSE stream ({exc.reason})", offset=base + exc.start
                )
            return
        if b"\r" not in region:
            self._split_blocks(text, region, base, "\n", out)
        elif region.count(b"\r\n") == region.count(b"\r") == region.count(b"\n"):
            self._split_blocks(text, region, base, "\r\n", out)
        else:
            self._scan_blocks(region, base, out)

    def _split_blocks(
        self, text: str, region: bytes, base: int, line_sep: str, out: list[SSEEvent]
    ) -> None:
        """Interpret a region whose line ends are all ``line_sep``.

        ``text`` is ``region`` decoded; byte sizes come from ``text`` itself
        when it is ASCII, else from splitting ``region`` the same way.
        """
        if line_sep == "\n" and len(region) <= self._max and text.startswith("data: "):
            # the common stream: every block one `data: ...` line. Split on the block
            # separator, then trim the ends (slicing the text first would copy it all;
            # one piece may be both ends), check that no other line end is left (the
            # joined pieces: one memchr pass), then build the events without a loop.
            datas = text.split("\n\ndata: ")
            datas[0] = datas[0][6:]
            datas[-1] = datas[-1][:-2]
            if "\n" not in "".join(datas):
                raw = None if len(text) == len(region) else region  # sizes from bytes
                lazy = _DataRegion(datas, raw, base, self._last_id)
                if self._fast is _LAZY:  # feed_data: built when asked for
                    self._fast = lazy
                else:
                    out.extend(lazy.events())
                return
        block_sep = line_sep + line_sep
        blocks = text.split(block_sep)
        if len(text) == len(region):
            sizes = map(len, blocks)
        else:
            sizes = map(len, region.split(block_sep.encode()))
        check = len(region) > self._max
        step = len(block_sep)
        line_step = len(line_sep)
        first = line_sep[0]
        last_id = self._last_id
        append = out.append
        offset = base
        for block, size in zip(blocks, sizes, strict=True):
            start = offset
            offset += size + step
            if not block:
                continue
            if block[0] == first:  # an extra blank line
                block = block[line_step:]
                if not block:
                    continue
                start += line_step
                size -= line_step
            if check and size > self._max:
                self._last_id = last_id
                self._error = DecodeError("SSE event larger than max_event_bytes", offset=start)
                return
            if block.startswith("data: ") and line_sep not in block:  # the common shape
                # tuple.__new__ skips the keyword handling of the generated __new__
                append(_new_tuple(SSEEvent, (block[6:], None, last_id, None, start)))
            else:
                last_id = self._dispatch(block.split(line_sep), start, last_id, out)
        self._last_id = last_id

    def _scan_blocks(self, region: bytes, base: int, out: list[SSEEvent]) -> None:
        """Interpret a (valid UTF-8) region with mixed line ends, line by line."""
        last_id = self._last_id
        lines: list[str] = []
        first = 0  # region offset of the block's first line
        content_end = 0  # region offset of the end of its last line
        pos = 0
        for match in _LINE_END.finditer(region):
            line_end = match.start()
            if line_end > pos:
                if not lines:
                    first = pos
                lines.append(region[pos:line_end].decode("utf-8"))
                content_end = line_end
            elif lines:  # a blank line ends the block
                if content_end - first > self._max:
                    self._last_id = last_id
                    self._error = DecodeError(
                        "SSE event larger than max_event_bytes", offset=base + first
                    )
                    return
                last_id = self._dispatch(lines, base + first, last_id, out)
                lines = []
            pos = match.end()
        self._last_id = last_id

    def _dispatch(
        self, lines: list[str], offset: int, last_id: str | None, out: list[SSEEvent]
    ) -> str | None:
        """Interpret the non-blank lines of one block; return the last event ID."""
        data: list[str] | None = None
        event_type = ""
        retry: int | None = None
        for line in lines:
            if not line or line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                if data is None:
                    data = [value]
                else:
                    data.append(value)
            elif name == "event":
                event_type = value
            elif name == "id":
                if "\0" not in value:
                    last_id = value
            elif name == "retry":
                retry = _retry_value(value)
                if retry is not None:
                    self._retry = retry
        if data is not None:  # the fields in order: data, event, id, retry, offset
            out.append(SSEEvent("\n".join(data), event_type or None, last_id, retry, offset))
        return last_id


class _DataRegion:
    """The events of a region of lone ``data:`` lines, built when needed."""

    __slots__ = ("base", "datas", "last_id", "raw")

    def __init__(self, datas: list[str], raw: bytes | None, base: int, last_id: str | None):
        self.datas = datas
        self.raw = raw  # the region's bytes, unless it is ASCII (sizes are then lengths)
        self.base = base
        self.last_id = last_id

    def events(self) -> list[SSEEvent]:
        raw = self.raw
        sizes = map(len, self.datas if raw is None else raw[6:-2].split(b"\n\ndata: "))
        starts = accumulate(map(_FRAME_OVERHEAD.__add__, sizes), initial=self.base)
        none = repeat(None)
        return list(map(_make_event, zip(self.datas, none, repeat(self.last_id), none, starts)))


_LAZY: Final = _DataRegion([], None, 0, None)  # feed_data running: keep the region lazy
_data: Final = itemgetter(0)  # SSEEvent.data


def _block_end(data: bytes | bytearray, start: int) -> int:
    """End of the last blank line in ``data`` (searching from ``start``), or -1.

    ``data`` starts at the beginning of a line, so every ``\\n\\n``, ``\\n\\r``
    and ``\\r\\r`` is a line end followed by an empty line.
    """
    end = data.rfind(b"\n\n", start)
    if data.find(b"\r", start) >= 0:
        end = max(end, data.rfind(b"\r\r", start), data.rfind(b"\n\r", start))
    if end < 0:
        return -1
    end += 2
    if data[end - 1] == _CR and end < len(data) and data[end] == _LF:
        end += 1
    return end


def _retry_value(value: str) -> int | None:
    """The reconnection time of a ``retry`` value, if it is all ASCII digits."""
    if not (value.isascii() and value.isdigit()):  # isdigit is false when empty
        return None
    try:
        return int(value)
    except ValueError:  # more digits than int() converts
        return None


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise chained(UsageError("sse.invalid-text", f"{what} contains a lone surrogate"), None)


def encode_sse(
    data: str | bytes,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Encode one event.

    Args:
        data: the event's data. Each of its lines (split at CRLF, LF or CR)
            becomes one ``data:`` line, so the decoded data has LF line ends.
            ``bytes`` are taken to be UTF-8 already (such as JSON from
            :func:`agentproto._core.json.codec.dumps`) and are not re-encoded.
        event: the event type; ``None`` or ``""`` writes no ``event`` field.
        id: the event ID; ``""`` resets the last event ID.
        retry: the reconnection time to ask for, in milliseconds.

    Returns:
        The event's lines, each ending with LF, and the blank line that
        dispatches it.

    Raises:
        UsageError: ``event`` or ``id`` contains a line break, ``id`` contains
            NUL (a receiver would ignore it), ``retry`` is not a non-negative
            integer, or text contains a lone surrogate.
    """
    raw = _utf8(data, "data") if isinstance(data, str) else bytes(data)
    if raw.find(b"\n") < 0 and raw.find(b"\r") < 0:
        body = b"data: " + raw + b"\n\n"
    else:
        body = b"".join([b"data: " + line + b"\n" for line in _LINE_END.split(raw)]) + b"\n"
    if not event and id is None and retry is None:
        return body
    head = bytearray()
    if event:
        if "\n" in event or "\r" in event:
            raise UsageError("sse.invalid-event", "event type must not contain a line break")
        head += b"event: " + _utf8(event, "event type") + b"\n"
    if id is not None:
        if "\n" in id or "\r" in id or "\0" in id:
            raise UsageError("sse.invalid-id", "event ID must not contain a line break or NUL")
        head += b"id: " + _utf8(id, "event ID") + b"\n"
    if retry is not None:
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            raise UsageError("sse.invalid-retry", "retry must be a non-negative integer")
        head += b"retry: %d\n" % retry
    return bytes(head) + body
