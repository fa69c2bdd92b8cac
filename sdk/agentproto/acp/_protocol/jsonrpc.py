"""JSON-RPC 2.0 messages over newline-delimited JSON (ACP's stdio framing).

Theory of operation
-------------------
ACP peers exchange JSON-RPC 2.0 messages, one JSON text per line, over a byte
stream (usually the agent process's stdin/stdout). This module works at the
dict level and does no I/O:

* :func:`parse_message` checks the JSON-RPC shape of one decoded object: a
  :class:`Request`, :class:`Notification` or :class:`Response` (plain JSON inside).
* :class:`MessageReader` is the incremental decoder: :meth:`~MessageReader.feed`
  takes chunks split anywhere (inside a line, a multi-byte character, a CRLF)
  and returns the messages of the lines completed so far; :meth:`~MessageReader.close`
  ends the input, a last line without a newline included. Feeding the same
  bytes whole or in any chunks yields the same messages and the same errors.
* :func:`encode_message` is the inverse: one compact line per message.

Framing and JSON are those of the SDK's one line reader
(:class:`~agentproto._core.json.lines.JSONLinesDecoder`, the reader AG-UI's JSON
Lines use too): lines end in ``\\n``, a trailing ``\\r`` is dropped, lines
holding only JSON whitespace are skipped; nesting deeper than ``max_depth``
(:data:`~agentproto._core.json.codec.DEFAULT_MAX_DEPTH` by default) and lines
longer than ``max_line_bytes`` are errors; integers of any size stay exact,
also in ``encode_message`` output.

Batches. A line holding an array is a JSON-RPC batch. The decoder
(:meth:`MessageReader.feed`, :func:`read_messages`) yields its members in order,
all with that line's number, and reports a batch with a bad member, or an empty
one, as one bad line: a decoder only says whether the stream is well formed. A
peer answers more finely (JSON-RPC 2.0 section 6), and does so member by member:
:func:`read_message` never raises, it returns an :class:`InvalidMessage` for a
value that is not a message, carrying the id to answer it with (the value's own
``id`` when that is readable, see :class:`InvalidMessage`). The sans-I/O
endpoint (:mod:`agentproto.acp._rpc.endpoint`) reads lines that way and answers
a batch with one array. :func:`encode_batch` writes a batch as one line.

Errors: a bad line raises :class:`~agentproto._core.errors.DecodeError` with its
1-based ``line`` and the stream ``offset`` of the bad byte or JSON (else of the
line); a shape violation chains the :class:`~agentproto._core.errors.SchemaError`
of :func:`parse_message`, whose keyword and location the message repeats.
Messages before a bad line are never lost: a call returns the messages that
precede the bad line and the *next* call raises for it (at once when it comes
first). After an error the reader goes on with the following line, so a
tolerant caller may catch the error and keep calling.

Shape rules, those of JSON-RPC 2.0 as ACP v2's schema narrows them:
``jsonrpc`` is ``"2.0"``; an ``id`` is a string or an int64 (never a boolean
or a float; ACP forbids ``null`` except in an error response whose request id
could not be read); ``params``, when present, is an object or array, and
``null`` reads as absent; a response has exactly one of ``result`` (any JSON,
``null`` included) and ``error`` (an object with an int32 ``code`` and a
string ``message``, kept whole). Members JSON-RPC does not define are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, TypeAlias

import attrs

from agentproto._core.errors import DecodeError, SchemaError, UsageError
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH, dumps
from agentproto._core.json.lines import DEFAULT_MAX_LINE_BYTES, JSONLinesDecoder

__all__ = [
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

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_ABSENT: Any = object()


@attrs.frozen
class Request:
    """A JSON-RPC request: a call that expects a :class:`Response` with its ``id``.

    Attributes:
        id: the request id, a string or an integer.
        method: the method name.
        params: the parameters (a dict or list), ``None`` when absent.
        line: 1-based line the message was read from; ``0`` when built by hand.
            Not part of equality.
    """

    id: int | str
    method: str
    params: Any = None
    line: int = attrs.field(default=0, eq=False, kw_only=True)


@attrs.frozen
class Notification:
    """A JSON-RPC notification: a call without ``id`` that gets no response.

    Attributes:
        method: the method name.
        params: the parameters (a dict or list), ``None`` when absent.
        line: 1-based line the message was read from; ``0`` when built by hand.
            Not part of equality.
    """

    method: str
    params: Any = None
    line: int = attrs.field(default=0, eq=False, kw_only=True)


@attrs.frozen
class Response:
    """A JSON-RPC response: the ``result`` or the ``error`` of a request.

    It is an error response when ``error`` is not ``None``, else a success
    whose ``result`` may be any JSON value, ``None`` (JSON ``null``) included.

    Attributes:
        id: the id of the request answered; ``None`` only in an error response
            to a request whose id could not be read.
        result: the result of a success response.
        error: the error object (``code``, ``message``, optional ``data``).
        line: 1-based line the message was read from; ``0`` when built by hand.
            Not part of equality.
    """

    id: int | str | None
    result: Any = None
    error: dict[str, Any] | None = None
    line: int = attrs.field(default=0, eq=False, kw_only=True)


Message: TypeAlias = Request | Notification | Response
"""Any JSON-RPC message."""


@attrs.frozen
class InvalidMessage:
    """A JSON value found where a message belongs (a line, a batch member) that is not
    a JSON-RPC message: what :func:`read_message` returns instead of raising.

    Attributes:
        id: the id to answer it with: the value's ``id`` when it is a valid id (a
            string or an int64) and the value is not shaped as a response (it has
            ``method``, or neither ``result`` nor ``error``), else ``None``. A
            response is never answered with its own id: that id is one of ours, and
            the peer would take the error for the answer to its request of that id.
        error: why it is not a message; the location is inside the value.
        line: 1-based line the value was read from; ``0`` when built by hand.
            Not part of equality.
    """

    id: int | str | None
    error: SchemaError
    line: int = attrs.field(default=0, eq=False, kw_only=True)

    @classmethod
    def of(cls, obj: Any, error: SchemaError, *, line: int = 0) -> InvalidMessage:
        """The invalid message ``obj`` that ``error`` rejects, with the id to answer it with."""
        return cls(_answer_id(obj), error, line=line)

    def decode_error(self, offset: int | None = None) -> DecodeError:
        """It as a decoder reports it: a :class:`~agentproto._core.errors.DecodeError`
        with its line (and the stream ``offset``, when given), chained to :attr:`error`."""
        return _shape_error(self.error, self.line, offset)


# The classes are frozen; their attrs ``__init__`` goes through ``object.__setattr__`` for
# each field. The reader builds one message per line, so it fills the slots directly
# (same instances, half the cost).
_new = object.__new__
_set_request = (
    Request.__dict__["id"].__set__,
    Request.__dict__["method"].__set__,
    Request.__dict__["params"].__set__,
    Request.__dict__["line"].__set__,
)
_set_notification = (
    Notification.__dict__["method"].__set__,
    Notification.__dict__["params"].__set__,
    Notification.__dict__["line"].__set__,
)


def _notification(method: str, params: Any, line: int) -> Notification:
    message: Notification = _new(Notification)
    set_method, set_params, set_line = _set_notification
    set_method(message, method)
    set_params(message, params)
    set_line(message, line)
    return message


def _request(ident: int | str, method: str, params: Any, line: int) -> Request:
    message: Request = _new(Request)
    set_id, set_method, set_params, set_line = _set_request
    set_id(message, ident)
    set_method(message, method)
    set_params(message, params)
    set_line(message, line)
    return message


_JSON_TYPES: Final = (
    (type(None), "null"),
    (bool, "boolean"),  # before int: a bool is an int to isinstance
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    return next((name for tp, name in _JSON_TYPES if isinstance(value, tp)), type(value).__name__)


def _check_id(value: object) -> int | str:
    """Validate a request id (``/id``) and return it."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise SchemaError("format", "/id", "an integer id must fit in int64")
        return value
    raise SchemaError("type", "/id", f"id must be a string or an integer, not {_json_type(value)}")


def _check_params(obj: dict[str, Any]) -> Any:
    """Validate ``/params`` and return it (``None`` when absent or null)."""
    params = obj.get("params")
    if params is None or isinstance(params, dict | list):
        return params
    raise SchemaError(
        "type", "/params", f"params must be an object or an array, not {_json_type(params)}"
    )


def _check_error(error: object) -> dict[str, Any]:
    """Validate a response's ``/error`` object and return it."""
    if not isinstance(error, dict):
        raise SchemaError("type", "/error", f"error must be an object, not {_json_type(error)}")
    if "code" not in error:
        raise SchemaError("required", "/error", "missing 'code'")
    if "message" not in error:
        raise SchemaError("required", "/error", "missing 'message'")
    code = error["code"]
    if not isinstance(code, int) or isinstance(code, bool):
        raise SchemaError("type", "/error/code", f"code must be an integer, not {_json_type(code)}")
    if not _INT32_MIN <= code <= _INT32_MAX:
        raise SchemaError("format", "/error/code", "code must fit in int32")
    message = error["message"]
    if not isinstance(message, str):
        raise SchemaError(
            "type", "/error/message", f"message must be a string, not {_json_type(message)}"
        )
    return error


def parse_message(obj: Any, *, line: int = 0) -> Message:
    """Check the JSON-RPC 2.0 shape of one decoded ACP message and wrap it.

    Public as :func:`agentproto.acp.parse_jsonrpc_message`; not to be confused with
    :func:`agentproto.agui.parse_message`, which parses an AG-UI conversation message.

    ``params``, ``result`` and ``error`` are kept as given (not copied).

    Args:
        obj: one decoded JSON value (a batch array is not accepted here).
        line: the 1-based source line to record on the message, ``0`` if none.

    Returns:
        A :class:`Request` (``method`` and ``id``), :class:`Notification`
        (``method``, no ``id``) or :class:`Response` (``result`` or ``error``).

    Raises:
        SchemaError: the shape is wrong; ``keyword`` and ``location`` (a JSON
            Pointer into ``obj``) say where, e.g. ``("required", "")`` for a
            missing ``jsonrpc`` and ``("const", "/jsonrpc")`` for another
            version.
    """
    if obj.__class__ is dict:
        # fast path: a request or notification whose members all have the common types
        method = obj.get("method")
        if (
            method.__class__ is str
            and obj.get("jsonrpc") == "2.0"
            and obj["jsonrpc"].__class__ is str
            and "result" not in obj
            and "error" not in obj
        ):
            params = obj.get("params")
            if params is None or params.__class__ is dict or params.__class__ is list:
                ident = obj.get("id", _ABSENT)
                if ident is _ABSENT:
                    return _notification(method, params, line)
                if ident.__class__ is str or (
                    ident.__class__ is int and _INT64_MIN <= ident <= _INT64_MAX
                ):
                    return _request(ident, method, params, line)
    return _check_message(obj, line)


def _check_message(obj: Any, line: int) -> Message:
    """:func:`parse_message` past its fast path: every check, each with its own error."""
    if not isinstance(obj, dict):
        raise SchemaError(
            "type", "", f"a JSON-RPC message must be an object, not {_json_type(obj)}"
        )
    if "jsonrpc" not in obj:
        raise SchemaError("required", "", "missing 'jsonrpc'")
    if not isinstance(obj["jsonrpc"], str) or obj["jsonrpc"] != "2.0":
        raise SchemaError("const", "/jsonrpc", f"jsonrpc must be '2.0', not {obj['jsonrpc']!r}")
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            raise SchemaError(
                "type", "/method", f"method must be a string, not {_json_type(method)}"
            )
        if "result" in obj or "error" in obj:
            raise SchemaError(
                "oneOf", "", "a message cannot carry both 'method' and 'result'/'error'"
            )
        params = _check_params(obj)
        if "id" not in obj:
            return Notification(method, params, line=line)
        return Request(_check_id(obj["id"]), method, params, line=line)
    return _parse_response(obj, line)


def _parse_response(obj: dict[str, Any], line: int) -> Response:
    """Check a message without ``method``: a response with ``result`` or ``error``."""
    has_result = "result" in obj
    has_error = "error" in obj
    if not has_result and not has_error:
        raise SchemaError(
            "required",
            "",
            "missing 'method' (request, notification) or 'result'/'error' (response)",
        )
    if has_result and has_error:
        raise SchemaError("oneOf", "", "a response carries exactly one of 'result' and 'error'")
    if "id" not in obj:
        raise SchemaError("required", "", "missing 'id'")
    if has_error:
        error = _check_error(obj["error"])
        error_id = None if obj["id"] is None else _check_id(obj["id"])
        return Response(error_id, None, error, line=line)
    return Response(_check_id(obj["id"]), obj["result"], line=line)


def read_message(obj: Any, *, line: int = 0, location: str = "") -> Message | InvalidMessage:
    """:func:`parse_message` for a peer that answers what it cannot read: never raises.

    Args:
        obj: one decoded JSON value (a line's, or a batch member's).
        line: the 1-based source line to record, ``0`` if none.
        location: the JSON Pointer of ``obj`` in its line (``"/2"`` for a batch's
            third member), put before the error's location.

    Returns:
        The message, or an :class:`InvalidMessage` with the error and the id to
        answer it with.
    """
    try:
        return parse_message(obj, line=line)
    except SchemaError as err:
        return InvalidMessage.of(obj, err.at(location) if location else err, line=line)


def _answer_id(obj: Any) -> int | str | None:
    """The id to answer an invalid ``obj`` with (see :class:`InvalidMessage`)."""
    if not isinstance(obj, dict) or ("method" not in obj and ("result" in obj or "error" in obj)):
        return None
    try:
        return _check_id(obj.get("id"))
    except SchemaError:
        return None


def _to_dict(msg: Message) -> dict[str, Any]:
    """The wire object of ``msg``, members in the conventional order."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(msg, Request):
        out["id"] = msg.id
        out["method"] = msg.method
        if msg.params is not None:
            out["params"] = msg.params
    elif isinstance(msg, Notification):
        out["method"] = msg.method
        if msg.params is not None:
            out["params"] = msg.params
    elif isinstance(msg, Response):
        out["id"] = msg.id
        if msg.error is None or msg.result is not None:
            out["result"] = msg.result
        if msg.error is not None:
            out["error"] = msg.error
    else:
        raise UsageError(
            "jsonrpc.not-a-message",
            f"expected a Request, Notification or Response, not {type(msg).__name__}",
        )
    return out


def encode_message(msg: Message) -> bytes:
    """Encode one message as a compact JSON line ending in ``\\n``.

    Members come in the order ``jsonrpc``, ``id``, ``method``, ``params``
    (omitted when ``None``), or ``jsonrpc``, ``id``, ``result`` / ``error``.

    Args:
        msg: the message.

    Returns:
        The UTF-8 bytes of the line, newline included.

    Raises:
        SchemaError: the message would not pass :func:`parse_message` (for
            example a response with both ``result`` and ``error``, a boolean
            id, params that are neither object nor array), or a value is not
            JSON value (keyword ``"type"``, location its JSON Pointer).
            Integers of any size are written exactly.
        UsageError: ``msg`` is not a message.
    """
    obj = _to_dict(msg)
    parse_message(obj)
    return dumps(obj) + b"\n"


def encode_batch(messages: Iterable[Message]) -> bytes:
    """Encode messages as one batch: a compact JSON array on one line ending in ``\\n``.

    Each member is written as :func:`encode_message` writes it.

    Args:
        messages: the members, at least one.

    Returns:
        The UTF-8 bytes of the line, newline included.

    Raises:
        SchemaError: there is no member (``minItems``: JSON-RPC forbids an empty
            batch), or a member does not encode (as in :func:`encode_message`).
        UsageError: a member is not a message.
    """
    members = [encode_message(message)[:-1] for message in messages]
    if not members:
        raise SchemaError("minItems", "", "a batch must not be empty")
    return b"[" + b",".join(members) + b"]\n"


class MessageReader:
    """Incremental, sans-I/O decoder of newline-delimited JSON-RPC (framing and errors:
    the module documentation): feed it chunks of any size, then :meth:`close`.

    A consumer that folds the messages itself (:class:`~agentproto.acp.SessionStore`)
    uses the steps of :meth:`feed` and :meth:`close`: :meth:`push` and :meth:`end`
    take the input, :meth:`documents` decodes each line's JSON, :meth:`messages`
    checks its JSON-RPC shape, :meth:`notification_params` recognises the common
    line without building a message.

    Example:
        >>> reader = MessageReader()
        >>> reader.feed(b'{"jsonrpc":"2.0","method":"a"}\\n{"jsonrpc"')
        [Notification(method='a', params=None, line=1)]
        >>> reader.feed(b':"2.0","id":1,"result":null}')
        []
        >>> reader.close()
        [Response(id=1, result=None, error=None, line=2)]
    """

    def __init__(
        self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> None:
        """Create a reader for one stream, with the limits of its
        :class:`~agentproto._core.json.lines.JSONLinesDecoder` (a longer line is an error
        and reading resumes after it; the depth default is AG-UI input's too; a limit
        that is not a positive integer raises :class:`UsageError`)."""
        self._lines = JSONLinesDecoder(max_line_bytes=max_line_bytes, max_depth=max_depth)
        self._error: DecodeError | None = None  # raised by the next call

    @property
    def pending(self) -> bool:
        """Whether messages or an error wait for the next call (after an error)."""
        return self._error is not None or self._lines.queued > 0

    @property
    def closed(self) -> bool:
        """Whether the end of input was signalled (:meth:`close` or :meth:`end`)."""
        return self._lines.ended

    def feed(self, chunk: bytes) -> list[Message]:
        """Add bytes; return the messages of the lines they complete.

        Args:
            chunk: the next bytes of the stream (possibly empty).

        Returns:
            The messages, in stream order, up to the first bad line, if any.

        Raises:
            DecodeError: the first line waiting to be reported is bad (the
                messages before it were returned by the previous call). Call
                again to continue past it.
            UsageError: the reader was closed.
        """
        self.push(chunk)
        return self._collect()

    def close(self) -> list[Message]:
        """End the input; return the remaining messages.

        A last line without a newline is read as a line. Calling ``close()``
        again is allowed: after an error it goes on past the bad line, and once
        everything is delivered it returns ``[]``.

        Returns:
            The messages, in stream order, up to the first bad line, if any.

        Raises:
            DecodeError: the first line waiting to be reported is bad.
        """
        self._lines.end()
        return self._collect()

    # ---- the steps, for a consumer that folds messages itself ----------------------------

    def push(self, chunk: bytes) -> None:
        """Add bytes; the lines they complete wait for :meth:`documents` (UsageError if closed)."""
        if self._lines.ended:
            raise UsageError("reader.closed", "feed() after close()")
        self._lines.push(chunk)

    def end(self) -> None:
        """End the input: a last line without a newline waits for :meth:`documents`."""
        self._lines.end()

    def documents(self) -> Iterator[tuple[Any, int, int]]:
        """The JSON of each waiting line, blank lines skipped.

        Yields:
            ``(value, line, offset)``: the line's JSON value, its 1-based
            number, the stream offset where it starts.

        Raises:
            DecodeError: the next line is not JSON (bad bytes, bad JSON, too
                deep, too long). The reader has moved past it; calling again
                goes on with the following line.
        """
        return self._lines.documents()

    @staticmethod
    def notification_params(value: Any, method: str) -> dict[str, Any] | None:
        """The params of ``value`` if it is a notification of ``method`` with object params.

        A cheap look for the common line: when it answers, :meth:`messages`
        would return ``[Notification(method, params)]``; ``None`` says only
        that the value has another shape, maybe still a valid message.

        Args:
            value: a JSON value from :meth:`documents`.
            method: the method name wanted.

        Returns:
            The ``params`` object, or ``None``.
        """
        # JSON gives exact types: a value equal to a str is a str
        if (
            value.__class__ is dict
            and value.get("method") == method
            and value.get("jsonrpc") == "2.0"
            and "id" not in value
            and "result" not in value
            and "error" not in value
        ):
            params = value.get("params")
            if params.__class__ is dict:
                return params
        return None

    @staticmethod
    def messages(value: Any, line: int, offset: int | None = None) -> list[Message]:
        """The messages of one line's JSON value (several for a batch).

        Args:
            value: a JSON value from :meth:`documents`.
            line: its 1-based line number, recorded on each message.
            offset: the stream offset of the line, for the error.

        Returns:
            The message, or the members of a batch in order.

        Raises:
            DecodeError: the value is not a JSON-RPC message or batch; chained
                to the :class:`~agentproto._core.errors.SchemaError`.
        """
        if value.__class__ is not list:
            try:
                return [parse_message(value, line=line)]
            except SchemaError as err:
                raise _shape_error(err, line, offset)  # noqa: B904 (it sets __cause__)
        if not value:
            empty = SchemaError("minItems", "", "a batch must not be empty")
            raise _shape_error(empty, line, offset)
        messages: list[Message] = []
        for index, item in enumerate(value):
            try:
                messages.append(parse_message(item, line=line))
            except SchemaError as err:
                raise _shape_error(err.at(f"/{index}"), line, offset)  # noqa: B904
        return messages

    def _collect(self) -> list[Message]:
        """Decode the waiting lines up to the first bad one; raise its error if it comes first."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        out: list[Message] = []
        messages = self.messages
        try:
            for value, line, offset in self._lines.documents():
                out += messages(value, line, offset)
        except DecodeError as error:
            if not out:
                raise
            self._error = error
        return out


def _shape_error(err: SchemaError, line: int, offset: int | None) -> DecodeError:
    """The error for a line whose JSON is not a JSON-RPC message."""
    error = DecodeError(
        f"invalid JSON-RPC message: {err.detail} [{err.keyword} at {err.location or '<root>'}]",
        line=line,
        offset=offset,
    )
    error.__cause__ = err
    return error


def iter_messages(chunks: Iterable[bytes], /) -> Iterator[Message]:
    """Decode messages from an iterable of byte chunks, as they complete.

    The chunks may be split anywhere: lines read from a binary pipe (newlines
    included), or the pieces of ``httpx.Response.iter_bytes()``. A last line
    without a newline is read when the iterable ends.

    Args:
        chunks: the byte chunks of the stream.

    Yields:
        Each message, in stream order.

    Raises:
        DecodeError: at the first bad line, after yielding every message
            before it.
    """
    reader = MessageReader()
    for chunk in chunks:
        yield from reader.feed(chunk)
        while reader.pending:
            yield from reader.feed(b"")
    yield from reader.close()
    while reader.pending:
        yield from reader.close()


def read_messages(data: bytes) -> list[Message]:
    """Decode all the messages of a complete input.

    Args:
        data: the whole stream.

    Returns:
        The messages, in stream order.

    Raises:
        DecodeError: at the first bad line.
    """
    return list(iter_messages((data,)))
